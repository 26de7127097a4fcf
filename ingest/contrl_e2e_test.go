package ingest_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/validate"
)

// Through the worker, by default: an accepted interchange with one
// message parked for an unknown UN/LOCODE and one for a wrong ISO 6346
// check digit among good ones gets one APERAK naming both (segment,
// element, component), no CONTRL rejecting them (its UNB asks for none),
// and each message's failure event names the APERAK file.
func TestParkedMessagesAreRejectedByAPERAK(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	b.worker.Outbox = filepath.Join(b.dir, "outbox")
	env := fileEnvelope(t, b.dir, filepath.Join(testenv.RepoRoot(t), "validate", "testdata", "aperak", "input.edi"), "aperak-mix")
	b.start()
	b.enqueue(env)
	for _, ref := range []string{"2", "3"} {
		ev := b.settled(messageCorr(env, ref), 10*time.Second)
		if ev.Destination != premis.Quarantined || !strings.Contains(ev.Note, "APERAK aperak_aperak-mix_") || strings.Contains(ev.Note, "CONTRL") {
			t.Errorf("message %s: %s, note %q", ref, ev.Destination, ev.Note)
		}
	}
	b.waitState(ingest.QueueIngest, env.TaskID(), asynq.TaskStateCompleted, 5*time.Second)
	if files, _ := filepath.Glob(filepath.Join(b.worker.Outbox, "*.contrl.edi")); len(files) != 0 {
		t.Errorf("%d CONTRL files for an interchange whose syntax is sound", len(files))
	}
	files, _ := filepath.Glob(filepath.Join(b.worker.Outbox, "*.aperak.edi"))
	if len(files) != 1 {
		t.Fatalf("%d APERAK files", len(files))
	}
	got, _ := os.ReadFile(files[0])
	for _, want := range []string{"UNB+UNOC:3+LAZARET:ZZ+CARRIER1:ZZ+", "UNH+1+APERAK:D:01B:UN'", "RFF+ACW:2'", "ERC+LOCUNK::ZZZ'",
		"FTX+AAO+++segment 6 (LOC), element 2, component 1, byte ", "RFF+ACW:2:6'", "UNH+2+APERAK:D:01B:UN'", "RFF+ACW:3'",
		"ERC+CNTRCHK::ZZZ'", "FTX+AAO+++segment 12 (EQD), element 2, component 1, byte ", "RFF+ACW:3:12'", "UNZ+2+"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("APERAK:\n%s\nwant %q", got, want)
		}
	}
	if strings.Contains(string(got), "RFF+ACW:1'") || strings.Contains(string(got), "RFF+ACW:4'") {
		t.Errorf("the APERAK names an accepted message:\n%s", got)
	}
}

// Through the worker, a partner set to CONTRL only: its parked message is
// rejected in the CONTRL that acknowledges the interchange (and so its
// accepted messages), at its segment and element, and no APERAK is
// written.
func TestParkedMessageIsRejectedInCONTRLForContrlPartners(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	b.worker.Outbox = filepath.Join(b.dir, "outbox")
	b.worker.Replies.Partners = map[string]validate.ReplyMode{"CARRIER1": validate.ReplyContrl}
	env := b.logistics("edi-mixed")
	b.start()
	b.enqueue(env)
	if ev := b.settled(messageCorr(env, "2"), 10*time.Second); ev.Destination != premis.Quarantined || !strings.Contains(ev.Note, "CONTRL ") {
		t.Fatalf("message 2: %s, note %q", ev.Destination, ev.Note)
	}
	b.waitState(ingest.QueueIngest, env.TaskID(), asynq.TaskStateCompleted, 5*time.Second)
	files, _ := filepath.Glob(filepath.Join(b.worker.Outbox, "*.contrl.edi"))
	if len(files) != 1 {
		t.Fatalf("%d CONTRL files", len(files))
	}
	if aperaks, _ := filepath.Glob(filepath.Join(b.worker.Outbox, "*.aperak.edi")); len(aperaks) != 0 {
		t.Errorf("%d APERAK files for a CONTRL-only partner", len(aperaks))
	}
	got, _ := os.ReadFile(files[0])
	// UCI action 7 acknowledges the accepted messages without naming them;
	// the parked one is rejected at its segment and element.
	want := "UCI+IC0013+CARRIER1:ZZ+LAZARET:ZZ+7'\nUCM+2+IFTMIN:D:99B:UN+4'\nUCS+6'\nUCD+12+2:1'\nUNT+"
	if !strings.Contains(string(got), want) {
		t.Errorf("CONTRL:\n%s\nwant\n%s", got, want)
	}
}

// fileEnvelope copies the interchange at src into dir and returns the
// envelope of a task that ingests it as object.
func fileEnvelope(t *testing.T, dir, src, object string) *ingest.Envelope {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, object+".edi")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	sha := hex.EncodeToString(sum[:])
	it := validate.Item{ObjectID: object, Kind: "edifact", Path: path, SHA256: sha, Size: int64(len(data))}
	return &ingest.Envelope{V: ingest.EnvelopeVersion, CorrelationID: ingest.CorrelationID("aperak", object, sha), BatchID: "aperak",
		ObjectID: object, Kind: "edifact", Path: path, SHA256: sha, Size: it.Size, Item: it, Attempt: 1}
}
