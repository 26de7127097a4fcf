package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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

// TestExportToDevices: -o onto what is not a regular file never renames
// over it. /dev/null (also through a symbolic link) and a FIFO are written
// through and stay what they were (as root, the rename replaced /dev/null
// with a regular file); a directory is refused and left as it was.
func TestExportToDevices(t *testing.T) {
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
	link := filepath.Join(dir, "null")
	if err := os.Symlink("/dev/null", link); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{"/dev/null", link} {
		if _, stderr, code := runCmd(t, "events", "export", "--ledger", ledger, "-o", out); code != 0 {
			t.Errorf("export -o %s: exit %d %s", out, code, stderr)
		}
		if fi, err := os.Stat("/dev/null"); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
			t.Fatalf("after export -o %s, /dev/null is %v (%v), not a character device", out, fi.Mode(), err)
		}
		if _, err := os.Stat(out + ".partial"); !os.IsNotExist(err) {
			t.Errorf("export -o %s left a .partial: %v", out, err)
		}
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := os.ReadFile(fifo)
		got <- b
	}()
	if _, stderr, code := runCmd(t, "events", "export", "--ledger", ledger, "-o", fifo); code != 0 {
		t.Errorf("export -o FIFO: exit %d %s", code, stderr)
	}
	select {
	case b := <-got:
		if !strings.HasSuffix(string(b), "</premis:premis>\n") {
			t.Errorf("the FIFO's reader got %q, not the document", b)
		}
	case <-time.After(30 * time.Second):
		t.Error("the FIFO's reader got nothing: the export did not write through it")
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("after the export the FIFO is %v (%v)", fi.Mode(), err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCmd(t, "events", "export", "--ledger", ledger, "-o", sub); code == 0 || !strings.Contains(stderr, "is a directory") {
		t.Errorf("export -o DIR: exit %d %s, want a refusal naming the directory", code, stderr)
	}
	if fi, err := os.Lstat(sub); err != nil || !fi.IsDir() {
		t.Errorf("after the refused export the directory is %v (%v)", fi.Mode(), err)
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
