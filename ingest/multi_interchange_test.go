package ingest_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
)

// TestTwoInterchangesInOneFile: a file that holds the mixed interchange
// (messages 1 to 3, message 2 naming an unknown port) and, after it, the
// VGM-below-the-floor one (its message 1 again) is routed message by
// message: all four settle once, under four object ids (the second
// interchange's message 1 is "<file>#2#1"), neither interchange is
// refused as data after UNZ, the parked message of the second carries its
// interchange so that a replay checks that message, and each interchange
// gets its own APERAK, which the failure event of its message names.
func TestTwoInterchangesInOneFile(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	b.worker.Outbox = filepath.Join(b.dir, "outbox")
	mixed, low := b.logistics("edi-mixed"), b.logistics("edi-vgm-low")
	first, _ := os.ReadFile(mixed.Path)
	second, _ := os.ReadFile(low.Path)
	data := append(append(first, '\n'), second...)
	path := filepath.Join(filepath.Dir(mixed.Path), "two.edi")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	env := *mixed
	env.ObjectID, env.Path, env.SHA256 = "edi-two", path, hex.EncodeToString(sum[:])
	env.Item.ObjectID, env.Item.Path, env.Item.SHA256, env.Item.Size = env.ObjectID, "two.edi", env.SHA256, int64(len(data))
	env.CorrelationID = ingest.CorrelationID(env.BatchID, env.ObjectID, env.SHA256)
	b.start()
	b.enqueue(&env)
	if ev := b.settled(env.CorrelationID, 10*time.Second); ev.Destination != premis.Accepted {
		t.Fatalf("the file: %s %s %s", ev.Destination, ev.Code, ev.Message)
	}
	where, settled := messageOutcomes(t, b.ledger, env.BatchID)
	want := map[string]premis.Destination{"edi-two#1": premis.Accepted, "edi-two#2": premis.Quarantined, "edi-two#3": premis.Accepted,
		"edi-two#2#1": premis.Quarantined}
	for id, d := range want {
		if where[id] != d || settled[id] != 1 {
			t.Errorf("%s: %q settled %d times, want %s once", id, where[id], settled[id], d)
		}
	}
	if len(where) != len(want) {
		t.Errorf("settled %v, want %v", where, want)
	}
	vgmAt := int64(len(first) + 1 + strings.Index(string(second), "UNH+1"))
	ev := b.settled(ingest.CorrelationID(env.BatchID, "edi-two#2#1", env.SHA256), time.Second)
	if ev.Code != "edifact.vgm.implausible" || ev.Offset == nil || *ev.Offset < vgmAt {
		t.Errorf("message 1 of the second interchange: %s offset %v, want after byte %d", ev.Code, ev.Offset, vgmAt)
	}
	aperaks, _ := filepath.Glob(filepath.Join(b.worker.Outbox, "*.aperak.edi"))
	var i2 string
	for _, f := range aperaks {
		if strings.HasSuffix(f, ".i2.aperak.edi") {
			i2 = filepath.Base(f)
		}
	}
	if len(aperaks) != 2 || i2 == "" || !strings.Contains(ev.Note, "APERAK "+i2) {
		t.Errorf("APERAKs %v; the second interchange's message names %q", aperaks, ev.Note)
	}
	if i2 != "" {
		reply, _ := os.ReadFile(filepath.Join(b.worker.Outbox, i2))
		if !strings.Contains(string(reply), "RFF+ZZZ:IC0010'") || strings.Contains(string(reply), "IC0013") {
			t.Errorf("the second interchange's APERAK:\n%s", reply)
		}
	}
	parked, err := ingest.ListParked(b.insp, ingest.QueueQuarantine)
	if err != nil {
		t.Fatal(err)
	}
	var held *ingest.Envelope
	for _, p := range parked {
		if p.Held.Envelope.ObjectID == "edi-two#2#1" {
			e := p.Held.Envelope
			held = &e
		}
	}
	if held == nil || held.Message != "1" || held.Interchange != 2 {
		t.Fatalf("parked %+v", parked)
	}
	v := b.worker.Check(context.Background(), held)
	if len(v.Messages) != 1 || v.Messages[0].Message.Type != "VERMAS" || v.Messages[0].Message.Interchange != 2 {
		t.Errorf("replay check of %s: %+v", held.ObjectID, v.Messages)
	}
}
