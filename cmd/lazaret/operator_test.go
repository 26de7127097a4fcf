package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/sqlite"
	"github.com/lazaret/lazaret/validate"
)

// TestSettingErrorsPointAtTheSetting: a ledger path that names nothing is
// a bad setting (exit 2) whose message says what to do; it does not end
// with "Run 'lazaret dlq ls --help' for usage", which would not help.
func TestSettingErrorsPointAtTheSetting(t *testing.T) {
	t.Parallel()
	_, stderr, code := runCmd(t, "dlq", "ls", "--ledger", filepath.Join(t.TempDir(), "nope.db"))
	if code != 2 || !strings.Contains(stderr, "no ledger at") || strings.Contains(stderr, "--help") {
		t.Errorf("exit %d\n%s", code, stderr)
	}
	if _, stderr, code := runCmd(t, "dlq", "ls", "--nope"); code != 2 || !strings.Contains(stderr, "--help") {
		t.Errorf("an unknown flag still points at --help: exit %d\n%s", code, stderr)
	}
}

// noBroker takes every task and keeps none: a batch recorded as
// submitted, whose items no worker will settle.
type noBroker struct{}

func (noBroker) EnqueueContext(context.Context, *asynq.Task, ...asynq.Option) (*asynq.TaskInfo, error) {
	return &asynq.TaskInfo{}, nil
}

// TestEmptyListingsAndWatchJSON: an empty listing says it is empty under
// its header; batch watch --json prints the progress as JSON lines.
func TestEmptyListingsAndWatchJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, err := fixtures.WriteArchiveBatch(filepath.Join(dir, "batch"))
	if err != nil {
		t.Fatal(err)
	}
	ledger := filepath.Join(dir, "ledger.db")
	l, err := sqlite.Open(context.Background(), ledger)
	if err != nil {
		t.Fatal(err)
	}
	m, mdir, err := validate.ReadManifestFile(b.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Submit(context.Background(), l, noBroker{}, m, mdir, ingest.SubmitOptions{Policy: ingest.DefaultPolicy()}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	for _, q := range []string{"dlq", "quarantine", "hold"} {
		out, _, code := runCmd(t, q, "ls", "--ledger", ledger)
		if code != 0 || !strings.Contains(out, "(nothing in ") || strings.Count(out, "\n") != 2 {
			t.Errorf("%s ls on an empty queue: exit %d\n%s", q, code, out)
		}
	}
	out, _, code := runCmd(t, "batch", "watch", "--json", "--timeout", "300ms", "--ledger", ledger, m.BatchID)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var p ingest.Progress
	if code != 1 || len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &p) != nil || p.BatchID != m.BatchID || p.Pending != len(m.Items) ||
		p.ByDestination[premis.Submitted] != len(m.Items) {
		t.Errorf("batch watch --json on a batch nobody works: exit %d\n%s", code, out)
	}
}
