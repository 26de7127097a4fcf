package pipebench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseRiver(t *testing.T) {
	out := "river-sqlite insert 2000 in 0.043s\nriver-sqlite,w=2,n=2000,seconds=2.5000,items_per_s=800.0,cpu_us_per_item=1500.0\n"
	r, err := parseRiver(out, 2000)
	if err != nil {
		t.Fatal(err)
	}
	if r.Wall != 2500*time.Millisecond || r.CPU != 3*time.Second {
		t.Errorf("got %+v, want 2.5 s wall and 3 s CPU", r)
	}
	for _, bad := range []string{"", "river-sqlite,w=2,n=1999,seconds=1,cpu_us_per_item=1", "river-pg,w=2,n=2000,seconds=x,cpu_us_per_item=1", "river-pg,w=2,n=2000,seconds=0,cpu_us_per_item=1"} {
		if _, err := parseRiver(bad, 2000); err == nil {
			t.Errorf("%q read as a result", bad)
		}
	}
}

// TestRiverRunsTheProgram stands in a script for riverbench: the arguments
// reach it and its SQLite file is removed afterwards.
func TestRiverRunsTheProgram(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "riverbench")
	script := "#!/bin/sh\nfor a; do case $prev in -path) : > \"$a\";; esac; prev=$a; done\necho \"river-sqlite,w=2,n=10,seconds=0.5,items_per_s=20.0,cpu_us_per_item=100.0\"\nprintf '%s ' \"$@\" > " + filepath.Join(dir, "args") + "\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := River(context.Background(), RiverOptions{Bin: bin, Dir: dir, Items: 10, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r.Wall != 500*time.Millisecond || r.CPU != time.Millisecond {
		t.Errorf("got %+v", r)
	}
	args, _ := os.ReadFile(filepath.Join(dir, "args"))
	if got := string(args); len(got) == 0 || !strings.Contains(got, "-db sqlite") || !strings.Contains(got, "-n 10 -workers 2") {
		t.Errorf("riverbench ran with %q", got)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "river-*.db")); len(m) != 0 {
		t.Errorf("left behind %v", m)
	}
}
