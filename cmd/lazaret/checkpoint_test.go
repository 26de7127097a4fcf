package main

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/ledgertest"
	"github.com/lazaret/lazaret/premis/postgres"
	"github.com/lazaret/lazaret/premis/sqlite"
)

// keygen runs lazaret ledger keygen and returns the key file and the
// public key it printed.
func keygen(t *testing.T) (string, string) {
	t.Helper()
	key := filepath.Join(t.TempDir(), "checkpoint.key")
	out, stderr, code := runCmd(t, "ledger", "keygen", "-o", key)
	if code != 0 {
		t.Fatalf("keygen: exit %d %s", code, stderr)
	}
	fi, err := os.Stat(key)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, mode %v, want 0600", err, fi.Mode())
	}
	if _, _, code := runCmd(t, "ledger", "keygen", "-o", key); code != 2 {
		t.Errorf("keygen over an existing key: exit %d, want 2", code)
	}
	return key, strings.TrimSpace(out)
}

// sqliteGuard is the statement that creates trigger name again, read
// from the file before an attack drops it.
func sqliteGuard(t *testing.T, path, name string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var s string
	if err := db.QueryRow(`SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?`, name).Scan(&s); err != nil {
		t.Fatalf("trigger %s: %v", name, err)
	}
	return s
}

func sqliteExec(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// TestLedgerVerifyHoldsTheCheckpoint: ledger verify with the key records
// a signed checkpoint; once the ledger is wiped (events, head and read
// model, guards put back), verify with the public key alone fails it, and
// listings say so.
func TestLedgerVerifyHoldsTheCheckpoint(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	ledgertest.Seed(t, l)
	l.Close()
	key, pub := keygen(t)
	dir := t.TempDir()
	if out, stderr, code := runCmd(t, "ledger", "verify", "--ledger", path, "--checkpoint-dir", dir, "--checkpoint-key", key); code != 0 {
		t.Fatalf("verify with the key: exit %d %s %s", code, out, stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, premis.CheckpointFile))
	if err != nil || !strings.Contains(string(b), `"status":"verified","count":4`) {
		t.Fatalf("checkpoint log: %v %s", err, b)
	}
	auditor := []string{"--ledger", path, "--checkpoint-dir", dir, "--checkpoint-pubkey", pub}
	if out, stderr, code := runCmd(t, append([]string{"ledger", "verify"}, auditor...)...); code != 0 || !strings.Contains(out, "on the signed checkpoint") {
		t.Fatalf("verify with the public key: exit %d %s %s", code, out, stderr)
	}

	sqliteExec(t, path, "DROP TRIGGER events_no_delete", "DROP TRIGGER ledger_head_forward", "DELETE FROM events", "DELETE FROM latest",
		"UPDATE ledger_head SET event_count = 0, last_hash = X'"+premis.ChainGenesis+"'", sqliteGuard(t, path, "events_no_delete"), sqliteGuard(t, path, "ledger_head_forward"))
	if out, _, code := runCmd(t, "ledger", "verify", "--ledger", path, "--no-checkpoints"); code != 0 || !strings.HasPrefix(out, "0 events, chain intact") {
		t.Fatalf("the wiped ledger on its own: exit %d %s, want it to pass (what the checkpoint is for)", code, out)
	}
	out, stderr, code := runCmd(t, append([]string{"ledger", "verify"}, auditor...)...)
	if code != 1 || !strings.Contains(out, "truncated: 0 events stored, but the signed checkpoint") {
		t.Fatalf("wiped ledger: exit %d\n%s%s", code, out, stderr)
	}
	_, stderr, code = runCmd(t, append([]string{"dlq", "ls"}, auditor...)...)
	if code != 0 || !strings.Contains(stderr, "warning: ledger "+path+" is not intact") {
		t.Errorf("dlq ls on the wiped ledger: exit %d, stderr %q", code, stderr)
	}
	// Verified with the key, the failure is recorded: listings say so from
	// the log, without walking the ledger.
	if _, _, code := runCmd(t, "ledger", "verify", "--ledger", path, "--checkpoint-dir", dir, "--checkpoint-key", key); code != 1 {
		t.Fatalf("wiped ledger, verified with the key: exit %d", code)
	}
	_, stderr, _ = runCmd(t, append([]string{"events", "ls"}, auditor...)...)
	if !strings.Contains(stderr, "failed its last verification") || !strings.Contains(stderr, "0 events stored") {
		t.Errorf("events ls after a recorded failure: stderr %q", stderr)
	}
	if _, _, code := runCmd(t, "ledger", "verify", "--ledger", path, "--checkpoint-dir", dir); code != 2 {
		t.Errorf("a checkpoint dir with no key: exit %d, want 2", code)
	}
}

// TestLedgerVerifyHoldsTheCheckpointPostgres: the newest rows cut and the
// head moved back on PostgreSQL, the read model mended, fails verify
// against the checkpoint with no --anchor.
func TestLedgerVerifyHoldsTheCheckpointPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testenv.Postgres(t)
	l, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	ledgertest.Seed(t, l)
	l.Close()
	key, pub := keygen(t)
	dir := t.TempDir()
	if out, stderr, code := runCmd(t, "ledger", "verify", "--ledger", dsn, "--checkpoint-dir", dir, "--checkpoint-key", key); code != 0 {
		t.Fatalf("verify with the key: exit %d %s %s", code, out, stderr)
	}
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	// The guards as they stand, to put back after the attack.
	var restore []string
	for _, name := range []string{"lazaret_events_no_change", "lazaret_ledger_head_forward"} {
		var def, table string
		if err := c.QueryRow(ctx, `SELECT pg_get_triggerdef(t.oid), t.tgrelid::regclass::text FROM pg_trigger t WHERE t.tgname = $1
			AND t.tgrelid::regclass::text = ANY(ARRAY['lazaret_events', 'lazaret_ledger_head'])`, name).Scan(&def, &table); err != nil {
			t.Fatal(err)
		}
		restore = append(restore, def, "ALTER TABLE "+table+" ENABLE ALWAYS TRIGGER "+name)
	}
	for _, s := range []string{"DROP TRIGGER lazaret_events_no_change ON lazaret_events", "DROP TRIGGER lazaret_ledger_head_forward ON lazaret_ledger_head",
		"DELETE FROM lazaret_events WHERE seq = (SELECT max(seq) FROM lazaret_events)",
		"DELETE FROM lazaret_latest WHERE seq NOT IN (SELECT seq FROM lazaret_events)",
		"UPDATE lazaret_ledger_head SET event_count = 3, last_hash = (SELECT hash FROM lazaret_events ORDER BY seq DESC LIMIT 1)"} {
		if _, err := c.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	for _, s := range restore {
		if _, err := c.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if out, _, code := runCmd(t, "ledger", "verify", "--ledger", dsn); code != 0 {
		t.Fatalf("the cut ledger on its own: exit %d %s, want it to pass (what the checkpoint is for)", code, out)
	}
	out, stderr, code := runCmd(t, "ledger", "verify", "--ledger", dsn, "--checkpoint-dir", dir, "--checkpoint-pubkey", pub)
	if code != 1 || !strings.Contains(out, "truncated: 3 events stored, but the signed checkpoint") {
		t.Fatalf("cut ledger: exit %d\n%s%s", code, out, stderr)
	}
}

// TestExportRefusesARewrittenLedger: one event rewritten (its guard put
// back, so the ledger opens) and events export exits 1 naming it;
// --unverified exports it, marked, and the document stays valid.
func TestExportRefusesARewrittenLedger(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	evs := ledgertest.Seed(t, l)
	l.Close()
	sqliteExec(t, path, "DROP TRIGGER events_no_update", "UPDATE events SET message = 'all fine' WHERE seq = 2", sqliteGuard(t, path, "events_no_update"))
	out, stderr, code := runCmd(t, "events", "export", "--ledger", path)
	if code != 1 || out != "" || !strings.Contains(stderr, "seq 2 (event "+evs[1].ID+")") || !strings.Contains(stderr, "not intact") {
		t.Fatalf("export of a rewritten ledger: exit %d, stdout %d bytes, stderr %s", code, len(out), stderr)
	}
	file := filepath.Join(t.TempDir(), "premis.xml")
	_, stderr, code = runCmd(t, "events", "export", "--ledger", path, "--unverified", "-o", file)
	if code != 0 || !strings.Contains(stderr, "marked unverified") {
		t.Fatalf("--unverified: exit %d %s", code, stderr)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<!-- UNVERIFIED EXPORT", `verified="false"`, evs[1].ID} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the unverified export lacks %s", want)
		}
	}
	testenv.ValidatePREMIS(t, file)
}

// TestWorkerCheckpoints: the checkpointer of a worker signs the head as
// appends move it, and the last head when it stops.
func TestWorkerCheckpoints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	key, _ := keygen(t)
	cfg := defaultConfig()
	cfg.Ledger, cfg.CheckpointDir, cfg.CheckpointKey = path, t.TempDir(), key
	cfg.CheckpointEvery, cfg.CheckpointInterval = 2, 20*time.Millisecond
	v, stop, err := startCheckpoints(ctx, &cfg, l, slog.New(slog.NewTextHandler(io.Discard, nil)), false)
	if err != nil || v == nil {
		t.Fatalf("start: %v %v", v, err)
	}
	ledgertest.Seed(t, l)
	if _, err := l.Append(ctx, ledgertest.Event("m5", premis.Validation, 1)); err != nil {
		t.Fatal(err)
	}
	stop()
	cp, err := cfg.checkpoints()
	if err != nil {
		t.Fatal(err)
	}
	cps, err := cp.read()
	if err != nil || len(cps.Problems) > 0 {
		t.Fatalf("read: %v %v", err, cps.Problems)
	}
	if n := cps.Newest(); n == nil || n.Count != 5 || n.Status != premis.CheckpointHead {
		t.Fatalf("newest checkpoint %+v, want the head of 5 events", n)
	}
}

// TestWorldReadableCheckpointKeyIsRefused: a signing key others could
// read was used silently; now ledger verify refuses it (exit 2), says
// chmod 600, records no checkpoint, and signs once the mode is fixed.
func TestWorldReadableCheckpointKeyIsRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	ledgertest.Seed(t, l)
	l.Close()
	key, _ := keygen(t)
	if err := os.Chmod(key, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out, stderr, code := runCmd(t, "ledger", "verify", "--ledger", path, "--checkpoint-dir", dir, "--checkpoint-key", key)
	if code != 2 || !strings.Contains(stderr, "chmod 600 "+key) {
		t.Fatalf("a world-readable key: exit %d, stdout %s, stderr %s; want exit 2 naming chmod 600", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, premis.CheckpointFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a checkpoint was recorded with the refused key: %v", err)
	}
	if err := os.Chmod(key, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, stderr, code := runCmd(t, "ledger", "verify", "--ledger", path, "--checkpoint-dir", dir, "--checkpoint-key", key); code != 0 {
		t.Fatalf("after chmod 600: exit %d %s %s", code, out, stderr)
	}
}
