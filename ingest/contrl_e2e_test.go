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

// Through the worker: an accepted interchange with a parked message gets,
// with ContrlParked, one CONTRL that acknowledges the interchange (and so
// its accepted messages) and rejects the parked one at its segment and
// element.
func TestParkedMessageIsRejectedInCONTRL(t *testing.T) {
	b := setup(t, fastPolicy())
	b.worker.Outbox = filepath.Join(b.dir, "outbox")
	b.worker.ContrlParked = true
	env := b.logistics("edi-mixed")
	b.start()
	b.enqueue(env)
	if ev := b.settled(messageCorr(env, "2"), 10*time.Second); ev.Destination != premis.Quarantined {
		t.Fatalf("message 2: %s", ev.Destination)
	}
	b.waitState(ingest.QueueIngest, env.TaskID(), asynq.TaskStateCompleted, 5*time.Second)
	files, _ := filepath.Glob(filepath.Join(b.worker.Outbox, "*.contrl.edi"))
	if len(files) != 1 {
		t.Fatalf("%d CONTRL files", len(files))
	}
	got, _ := os.ReadFile(files[0])
	// UCI action 7 acknowledges the accepted messages without naming them;
	// the parked one is rejected at its segment and element.
	want := "UCI+IC0013+CARRIER1:ZZ+LAZARET:ZZ+7'\nUCM+2+IFTMIN:D:99B:UN+4'\nUCS+6'\nUCD+12+2:1'\nUNT+"
	if !strings.Contains(string(got), want) {
		t.Errorf("CONTRL:\n%s\nwant\n%s", got, want)
	}
}
