package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/sqlite"
)

// TestExportToFile: events export -o replaces the file only with a whole
// document, keeping its mode, and a failed export leaves nothing behind.
func TestExportToFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ledger := filepath.Join(dir, "ledger.db")
	l, err := sqlite.Open(ctx, ledger)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, &premis.Event{Key: premis.EventKey("c1", "", premis.Validation, 1), Type: premis.Validation,
		Outcome: premis.Success, ObjectID: "master-1", BatchID: "b1", CorrelationID: "c1", Kind: "tiff"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "export.xml")
	if err := os.WriteFile(out, []byte("an earlier export"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, code := runCmd(t, "events", "export", "--ledger", ledger, "--object", "no-such-object", "-o", out); code == 0 {
		t.Error("an export that matches nothing must fail")
	}
	if b, _ := os.ReadFile(out); string(b) != "an earlier export" {
		t.Errorf("a failed export replaced the file: %q", b)
	}
	if _, err := os.Stat(out + ".partial"); !os.IsNotExist(err) {
		t.Errorf("a failed export left %s.partial: %v", out, err)
	}
	if _, stderr, code := runCmd(t, "events", "export", "--ledger", ledger, "--object", "master-1", "-o", out); code != 0 || !strings.Contains(stderr, "wrote 1 events") {
		t.Fatalf("export: exit %d %s", code, stderr)
	}
	b, _ := os.ReadFile(out)
	if !strings.HasPrefix(string(b), "<?xml") || !strings.HasSuffix(string(b), "</premis:premis>\n") || !strings.Contains(string(b), "master-1") {
		t.Errorf("the export is not the document:\n%s", b)
	}
	if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the export replaced a 0600 file as %v (%v)", fi.Mode(), err)
	}
}

// TestEventsListPages: events ls lists a ledger of more than a page, in
// order, as a table or JSON lines, and --limit counts across pages.
func TestEventsListPages(t *testing.T) {
	ctx := context.Background()
	ledger := filepath.Join(t.TempDir(), "ledger.db")
	l, err := sqlite.Open(ctx, ledger)
	if err != nil {
		t.Fatal(err)
	}
	var evs []*premis.Event
	for i := range 2500 {
		corr := fmt.Sprintf("c%d", i)
		evs = append(evs, &premis.Event{Key: premis.EventKey(corr, "", premis.Validation, 1), Type: premis.Validation,
			Outcome: premis.Success, ObjectID: fmt.Sprintf("master-%04d", i), BatchID: "b1", CorrelationID: corr, Kind: "tiff"})
	}
	if _, err := l.Append(ctx, evs...); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runCmd(t, "events", "ls", "--ledger", ledger, "--json")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != 0 || len(lines) != 2500 || !strings.Contains(lines[0], `"master-0000"`) || !strings.Contains(lines[2499], `"master-2499"`) {
		t.Fatalf("events ls --json: exit %d, %d lines %s", code, len(lines), stderr)
	}
	out, _, code = runCmd(t, "events", "ls", "--ledger", ledger, "--batch", "b1", "--limit", "1200")
	rows := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != 0 || len(rows) != 1201 || !strings.HasPrefix(rows[0], "TIME") || !strings.Contains(rows[1200], "master-1199") {
		t.Errorf("events ls --limit 1200: exit %d, %d lines, last %q", code, len(rows), rows[len(rows)-1])
	}
}
