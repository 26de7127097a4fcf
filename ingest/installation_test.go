package ingest_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/validate"
)

var unbReference = regexp.MustCompile(`(?m)^UNB\+[^']*\+([0-9A-F]{14})'$`)

// answer submits the broken interchange (its UNZ names another
// reference) to a fresh installation, SQLite or PostgreSQL, lets its
// worker reject it, and returns the control reference of the CONTRL it
// wrote, and the CONTRL.
func answer(t *testing.T, postgres bool, installation string) (string, string) {
	t.Helper()
	b := setup(t, fastPolicy())
	if postgres {
		b.usePostgres()
	}
	b.worker.Outbox = filepath.Join(b.dir, "outbox")
	b.worker.Replies.Installation = installation
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "fixtures", "logistics", "unz-mismatch.edi"))
	if err != nil {
		t.Fatal(err)
	}
	_, sha := b.file("unz-mismatch.edi", data)
	m := &validate.Manifest{BatchID: "batch-i", Submitter: "tests", Items: []validate.Item{{ObjectID: "ic-1", Kind: "edifact", Path: "unz-mismatch.edi", SHA256: sha}}}
	if _, err := ingest.Submit(context.Background(), b.ledger, b.client, m, b.dir, ingest.SubmitOptions{Policy: b.worker.Policy}); err != nil {
		t.Fatal(err)
	}
	b.start()
	corr := ingest.CorrelationID("batch-i", "ic-1", sha)
	b.settled(corr, 10*time.Second)
	files, _ := filepath.Glob(filepath.Join(b.worker.Outbox, "*.contrl.edi"))
	if len(files) != 1 {
		t.Fatalf("%d CONTRL files", len(files))
	}
	contrl, _ := os.ReadFile(files[0])
	ref := unbReference.FindStringSubmatch(string(contrl))
	if ref == nil {
		t.Fatalf("no UNB reference in\n%s", contrl)
	}
	return ref[1], string(contrl)
}

// Two fresh installations answering the same interchange (same bytes,
// batch, object, attempt) pick different control references for their
// CONTRL: each names itself by the id its ledger keeps (the first event's),
// on SQLite and on PostgreSQL alike; a configured installation id
// (Replies.Installation) is used instead, so that two workers given the
// same id answer alike.
func TestReplyReferencesDifferPerInstallation(t *testing.T) {
	t.Parallel()
	for _, pg := range []bool{false, true} {
		a, _ := answer(t, pg, "")
		b, _ := answer(t, pg, "")
		if a == b {
			t.Errorf("postgres %v: two installations answered with reference %s", pg, a)
		}
	}
	x, _ := answer(t, false, "site-a")
	y, _ := answer(t, true, "site-a")
	if x != y {
		t.Errorf("one configured installation id, two references: %s, %s", x, y)
	}
	if z, _ := answer(t, false, "site-b"); z == x {
		t.Errorf("installations site-a and site-b share reference %s", z)
	}
}
