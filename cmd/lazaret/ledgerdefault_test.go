package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDefaultLedger: without --ledger the ledger is
// $XDG_DATA_HOME/lazaret/ledger.db; a read command says it is not there
// (exit 2) instead of answering from an empty ledger, and creates nothing.
func TestDefaultLedger(t *testing.T) {
	data := t.TempDir()
	t.Setenv("XDG_DATA_HOME", data)
	t.Setenv("LAZARET_LEDGER", "")
	want := filepath.Join(data, "lazaret", "ledger.db")
	for _, args := range [][]string{{"dlq", "ls"}, {"events", "ls"}, {"batch", "status", "b1"}, {"hold", "show", "x"}, {"ledger", "verify"}} {
		out, stderr, code := runCmd(t, args...)
		if code != 2 || out != "" || !strings.Contains(stderr, "no ledger at "+want+" (the default)") {
			t.Errorf("%v without a ledger: exit %d %q %s", args, code, out, stderr)
		}
	}
	if _, err := os.Stat(filepath.Dir(want)); err == nil {
		t.Errorf("a read command created %s", filepath.Dir(want))
	}
	// A relative XDG_DATA_HOME is ignored, as the XDG spec says.
	t.Setenv("XDG_DATA_HOME", "relative/dir")
	t.Setenv("HOME", data)
	if _, stderr, _ := runCmd(t, "dlq", "ls"); !strings.Contains(stderr, filepath.Join(data, ".local", "share", "lazaret", "ledger.db")) {
		t.Errorf("fallback to ~/.local/share: %s", stderr)
	}
}

// TestReadCommandsWriteNothing: a file that is not a ledger yet (empty)
// is refused by read commands and stays as it was; opening it as workers
// do would create the schema there and report an empty queue.
func TestReadCommandsWriteNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"dlq", "ls"}, {"quarantine", "ls", "--json"}, {"events", "ls"}, {"events", "export"}, {"batch", "status", "b1"}} {
		out, stderr, code := runCmd(t, append(args, "--ledger", path)...)
		if code != 2 || out != "" || !strings.Contains(stderr, "cannot be read as a lazaret ledger") {
			t.Errorf("%v on an empty file: exit %d %q %s", args, code, out, stderr)
		}
	}
	if st, err := os.Stat(path); err != nil || st.Size() != 0 {
		t.Errorf("a read command wrote to the file: %v %v", st.Size(), err)
	}
}

// TestUnknownLedgerScheme: a ledger URL whose scheme no backend answers is
// a usage error naming the backends there are, for workers and read
// commands alike, and nothing is created under a folder named after it.
func TestUnknownLedgerScheme(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, args := range [][]string{{"dlq", "ls"}, {"events", "ls"}, {"ledger", "verify"}} {
		out, stderr, code := runCmd(t, append(args, "--ledger", "mysql://u@h/lazaret")...)
		if code != 2 || out != "" || !strings.Contains(stderr, `no ledger backend for "mysql://"`) || !strings.Contains(stderr, "postgres://") {
			t.Errorf("%v on mysql://: exit %d %q %s", args, code, out, stderr)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("an unknown scheme created %v", entries)
	}
}
