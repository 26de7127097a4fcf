package pipebench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// RiverOptions say how River, the durable job queue a user would pick
// instead of Lazaret, drains no-op jobs: through the riverbench program of
// ../shared/tools/riverbench (built by make riverbench; a module of its
// own, so that River is no dependency of Lazaret's).
type RiverOptions struct {
	Bin         string // the riverbench binary
	Postgres    string // PostgreSQL URL of a database of River's own; "" drains into SQLite
	Dir         string // where the SQLite file goes (removed afterwards)
	Items       int
	Concurrency int // River's MaxWorkers
}

// River drains o.Items no-op River jobs and returns the drain's wall time
// and riverbench's own CPU over it (the client side, for PostgreSQL).
func River(ctx context.Context, o RiverOptions) (Run, error) {
	args := []string{"-n", strconv.Itoa(o.Items), "-workers", strconv.Itoa(o.Concurrency)}
	var db string
	if o.Postgres != "" {
		args = append(args, "-db", "pg", "-pg", o.Postgres)
	} else {
		db = filepath.Join(o.Dir, "river-"+randomHex(6)+".db")
		args = append(args, "-db", "sqlite", "-path", db)
		defer func() {
			for _, p := range []string{db, db + "-wal", db + "-shm"} {
				_ = os.Remove(p)
			}
		}()
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, o.Bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return Run{}, fmt.Errorf("riverbench %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return parseRiver(stdout.String(), o.Items)
}

// parseRiver reads riverbench's result line
// (river-sqlite,w=2,n=2000,seconds=1.23,items_per_s=...,cpu_us_per_item=...).
func parseRiver(out string, items int) (Run, error) {
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "river-") || !strings.Contains(line, ",") {
			continue // riverbench's progress lines
		}
		kv := map[string]string{}
		for _, f := range strings.Split(strings.TrimSpace(line), ",")[1:] {
			if k, v, ok := strings.Cut(f, "="); ok {
				kv[k] = v
			}
		}
		secs, err1 := strconv.ParseFloat(kv["seconds"], 64)
		cpu, err2 := strconv.ParseFloat(kv["cpu_us_per_item"], 64)
		n, err3 := strconv.Atoi(kv["n"])
		if err1 != nil || err2 != nil || err3 != nil || secs <= 0 || n != items {
			return Run{}, fmt.Errorf("riverbench: unreadable result %q", line)
		}
		return Run{Wall: time.Duration(secs * float64(time.Second)), CPU: time.Duration(cpu * float64(n) * float64(time.Microsecond))}, nil
	}
	return Run{}, fmt.Errorf("riverbench printed no result: %q", strings.TrimSpace(out))
}
