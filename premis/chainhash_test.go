package premis_test

import (
	"testing"
	"time"

	"github.com/lazaret/lazaret/premis"
)

// TestChainHashIsStableForEveryShape: the hash of an event is what every
// ledger ever written stored for it, so ChainHash may change how it
// computes it but never what it computes (TestChainHashIsStable pins one
// event). These were computed at ca1b69c, before ChainHash gathered its
// message in one buffer: a chain of an event of each shape it knows, bare
// (no position), with a position and a non-ASCII message, with members,
// with steps.
func TestChainHashIsStableForEveryShape(t *testing.T) {
	at := time.Date(2026, 12, 3, 9, 30, 15, 123456789, time.FixedZone("x", 3600))
	off, page := int64(1234), 3
	bare := premis.Event{ID: "20000000-0000-4000-8000-000000000001", Key: "k1", Type: premis.IngestionStart, DateTime: at,
		Outcome: premis.Success, ObjectID: "o", BatchID: "b", CorrelationID: "c", Kind: "tiff", SHA256: "ab", Size: 7,
		Envelope: []byte(`{"v":1}`), Agent: "lazaret/test", Destination: premis.Submitted}
	failed := bare
	failed.ID, failed.Key, failed.Type, failed.Outcome = "20000000-0000-4000-8000-000000000002", "k2", premis.Validation, premis.Failure
	failed.Class, failed.Code, failed.Message, failed.Offset, failed.Page = premis.Structural, "tiff.ifd-loop", "loop é", &off, &page
	failed.Segment, failed.Element, failed.Component, failed.Tag, failed.Destination = 4, 2, 1, "UNH", premis.DeadLetter
	failed.Attempt, failed.Retries, failed.TaskID, failed.ReplayOf, failed.Operator, failed.Envelope = 2, 1, "t", "r", "ana", nil
	members := bare
	members.ID, members.Key, members.Type, members.Destination = "20000000-0000-4000-8000-000000000003", "k3", premis.Ingestion, ""
	members.Members = []premis.Member{{ObjectID: "inv#M1", Number: 1, Offset: 10, Type: "INVOIC"}, {ObjectID: "inv#M2", Number: 2, Offset: 99, Type: "ORDERS"}}
	steps := bare
	steps.ID, steps.Key, steps.Type, steps.Destination, steps.PUID = "20000000-0000-4000-8000-000000000004", "k4", premis.Ingestion, premis.Accepted, "fmt/353"
	steps.Steps = []premis.Step{{Type: premis.FixityCheck, Outcome: premis.Success, Detail: "d", Note: "n"},
		{Type: premis.Validation, Outcome: premis.Warning, Detail: "v", Note: "w", PUID: "fmt/353"}}
	prev := premis.ChainGenesis
	for _, c := range []struct {
		name string
		e    premis.Event
		want string
	}{
		{"bare", bare, "110d39cd7ccae4a1a9c815986d7e76752d59b89bb90b4e3ecf74759dbf0f1147"},
		{"failed", failed, "0eec51a378639fe0ffa54900d24d951ad98fb4b1a4f478d83c4782fee7cf9744"},
		{"members", members, "ea9ce22059126ccbe15b7910cfd05c0dbf683efc78be1d27fef85b72c478ad4e"},
		{"steps", steps, "0b38218979c0b314f4a36dddb652bf0865fbb7185bbc3c2d5d9ee6211a8df1a9"},
	} {
		got := premis.ChainHash(prev, &c.e)
		if got != c.want {
			t.Errorf("%s: hash %s, want %s", c.name, got, c.want)
		}
		prev = got
	}
}

// TestChainHashAllocatesItsResultAlone: hashing an event allocates the
// hex string it returns and nothing per field (it was some 40 an event).
func TestChainHashAllocatesItsResultAlone(t *testing.T) {
	e := chainEvent()
	if n := testing.AllocsPerRun(100, func() { premis.ChainHash(premis.ChainGenesis, &e) }); n > 1 {
		t.Errorf("ChainHash allocates %.0f times an event, want 1", n)
	}
}
