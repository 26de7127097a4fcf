package ingest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
)

// sharedRefInterchange is three IFTMIN messages that all carry UNH
// reference 1: the first and third name an unknown UN/LOCODE (NLZZZ), the
// second is good.
func sharedRefInterchange() string {
	msg := func(loc string) string {
		return "UNH+1+IFTMIN:D:99B:UN'BGM+610+BK1+9'DTM+137:20261130:102'TDT+20+V1+1'LOC+9+NLRTM:139:6'LOC+11+" + loc +
			":139:6'NAD+CZ+SHIPPER1::92'NAD+CN+RECEIVER1::92'GID+1+10:CT'PIA+5+847130:HS'MEA+AAE+G+KGM:12000'" +
			"EQD+CN+MSKU9070323+22G1:6346:5'UNT+13+1'\n"
	}
	return "UNA:+.? '\nUNB+UNOC:3+CARRIER1:ZZ+LAZARET:ZZ+261130:1200+IC0031'\n" + msg("NLZZZ") + msg("SGSIN") + msg("NLZZZ") + "UNZ+3+IC0031'\n"
}

// Message identity inside an interchange is never its reference alone:
// three messages sharing reference 1 (two bad, one good) would be one
// object, one parked message's record overwriting another's. Through a
// real worker and ledger the interchange is refused whole, once, with its
// own code (edifact.duplicate-message) at the second UNH's 0062, archived,
// and a CONTRL rejects it with 0085 code 26; no message is recorded as
// accepted or parked under the shared name.
func TestSharedMessageReferenceIsRefusedWhole(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	b.worker.Outbox = filepath.Join(b.dir, "outbox")
	in := sharedRefInterchange()
	path := filepath.Join(b.dir, "shared-ref.edi")
	if err := os.WriteFile(path, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	env := fileEnvelope(t, b.dir, path, "shared-ref")
	b.start()
	b.enqueue(env)
	ev := b.settled(env.CorrelationID, 10*time.Second)
	first := strings.Index(in, "UNH+1+")
	second := first + 1 + strings.Index(in[first+1:], "UNH+1+")
	want := int64(second + len("UNH+"))
	if ev.Destination != premis.DeadLetter || ev.Code != "edifact.duplicate-message" || ev.Offset == nil || *ev.Offset != want ||
		ev.Tag != "UNH" || ev.Element != 1 || ev.Segment != 1 {
		t.Fatalf("event %s %s offset %v (want %d) tag %s segment %d element %d", ev.Destination, ev.Code, ev.Offset, want, ev.Tag, ev.Segment, ev.Element)
	}
	b.waitState(ingest.QueueIngest, env.TaskID(), asynq.TaskStateArchived, 5*time.Second)
	if n := len(b.invocations(env.TaskID())); n != 1 {
		t.Errorf("handler ran %d times", n)
	}
	if where, _ := messageOutcomes(t, b.ledger, env.BatchID); len(where) != 0 {
		t.Errorf("messages of a refused interchange have outcomes: %v", where)
	}
	if evs := b.events(messageCorr(env, "1")); len(evs) != 0 {
		t.Errorf("%d events for message 1 of a refused interchange", len(evs))
	}
	files, _ := filepath.Glob(filepath.Join(b.worker.Outbox, "*.contrl.edi"))
	if len(files) != 1 {
		t.Fatalf("%d CONTRL files", len(files))
	}
	contrl, _ := os.ReadFile(files[0])
	for _, w := range []string{"UCI+IC0031+CARRIER1:ZZ+LAZARET:ZZ+4'", "UCM+1+IFTMIN:D:99B:UN+4+26+UNH+1'"} {
		if !strings.Contains(string(contrl), w) {
			t.Errorf("CONTRL:\n%s\nwant %q", contrl, w)
		}
	}
}
