package main

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
	// A ledger with events and a log with no checkpoint is not intact
	// (a log removed would otherwise pass); anchoring it is explicit.
	if out, _, code := runCmd(t, "ledger", "verify", "--ledger", path, "--checkpoint-dir", dir, "--checkpoint-key", key); code != 1 || !strings.Contains(out, "holds no checkpoint, but the ledger holds 4 events") {
		t.Fatalf("verify with the key over an empty log: exit %d %s, want 1", code, out)
	}
	if out, stderr, code := runCmd(t, "ledger", "checkpoint", "--init", "--ledger", path, "--checkpoint-dir", dir, "--checkpoint-key", key); code != 0 {
		t.Fatalf("checkpoint --init: exit %d %s %s", code, out, stderr)
	}
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
	if out, stderr, code := runCmd(t, "ledger", "checkpoint", "--init", "--ledger", dsn, "--checkpoint-dir", dir, "--checkpoint-key", key); code != 0 {
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

// TestWitnessCatchesARollback: a ledger and its checkpoint log rolled back
// together (restored from one backup) verify against the log, and fail
// against the witness a later checkpoint was published to; the
// re-anchoring that lets them pass again is explicit and stays in the
// witness. A log that is missing or empty fails verification outright.
func TestWitnessCatchesARollback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.db")
	l, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	ledgertest.Seed(t, l)
	l.Close()
	key, pub := keygen(t)
	logDir, witness := filepath.Join(dir, "log"), filepath.Join(dir, "witness")
	reader := []string{"--ledger", path, "--checkpoint-dir", logDir, "--checkpoint-pubkey", pub}
	signer := []string{"--ledger", path, "--checkpoint-dir", logDir, "--checkpoint-key", key}
	for _, empty := range []string{logDir, t.TempDir()} {
		out, _, code := runCmd(t, "ledger", "verify", "--ledger", path, "--checkpoint-dir", empty, "--checkpoint-pubkey", pub)
		if code != 1 || !strings.Contains(out, "holds no checkpoint") {
			t.Errorf("verify --checkpoint-dir %s (no log): exit %d %s, want 1", empty, code, out)
		}
	}
	if out, stderr, code := runCmd(t, append([]string{"ledger", "checkpoint", "--publish", witness}, signer...)...); code != 1 || !strings.Contains(stderr, "--init anchors it") {
		t.Fatalf("checkpoint without --init over an empty log: exit %d %s %s", code, out, stderr)
	}
	if out, stderr, code := runCmd(t, append([]string{"ledger", "checkpoint", "--init", "--publish", witness}, signer...)...); code != 0 || !strings.Contains(out, "published to the witness") {
		t.Fatalf("checkpoint --init --publish: exit %d %s %s", code, out, stderr)
	}
	if out, _, code := runCmd(t, append([]string{"ledger", "verify", "--witness", witness}, reader...)...); code != 0 || !strings.Contains(out, "and on the witness's") {
		t.Fatalf("verify --witness: exit %d %s", code, out)
	}

	// The backup: the ledger and its log as they are now.
	backup := t.TempDir()
	copyFile(t, path, filepath.Join(backup, "ledger.db"))
	copyFile(t, filepath.Join(logDir, premis.CheckpointFile), filepath.Join(backup, premis.CheckpointFile))
	l, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		id := "later-" + strconv.Itoa(i)
		if _, err := l.Append(ctx, &premis.Event{Key: premis.EventKey(id, "", premis.Validation, 1), Type: premis.Validation,
			Outcome: premis.Success, ObjectID: id, BatchID: "b2", CorrelationID: id, Kind: "tiff"}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	if out, stderr, code := runCmd(t, append([]string{"ledger", "checkpoint", "--publish", witness}, signer...)...); code != 0 {
		t.Fatalf("checkpoint --publish: exit %d %s %s", code, out, stderr)
	}
	// Restored together: the log vouches for the ledger, the witness not.
	copyFile(t, filepath.Join(backup, "ledger.db"), path)
	copyFile(t, filepath.Join(backup, premis.CheckpointFile), filepath.Join(logDir, premis.CheckpointFile))
	if out, _, code := runCmd(t, append([]string{"ledger", "verify"}, reader...)...); code != 0 {
		t.Fatalf("the restored ledger against its restored log: exit %d %s, want it to pass (what the witness is for)", code, out)
	}
	out, _, code := runCmd(t, append([]string{"ledger", "verify", "--witness", witness}, reader...)...)
	if code != 1 || !strings.Contains(out, "witness: 4 events stored, but the checkpoint of") || !strings.Contains(out, "counts 7: the ledger went back in time") {
		t.Fatalf("the restored ledger against the witness: exit %d %s", code, out)
	}
	if _, _, code := runCmd(t, append([]string{"ledger", "checkpoint", "--publish", witness}, signer...)...); code != 1 {
		t.Errorf("checkpoint --publish over a witness that holds more: exit %d, want 1 (re-anchoring is explicit)", code)
	}
	// What lazaret ledger recover records (ingest.Operator.RecoverLedger)
	// is named by the verification that still fails on the witness.
	l, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	rec := &premis.Event{Key: premis.EventKey("lost-0", "", premis.IngestionStart, 1), Type: premis.IngestionStart, Outcome: premis.Success,
		ObjectID: "lost-0", BatchID: "b2", CorrelationID: "lost-0", Kind: "tiff", Destination: premis.Submitted, Detail: premis.RecoveryDetail + "; submitted in batch b2"}
	if _, err := l.Append(ctx, rec); err != nil {
		t.Fatal(err)
	}
	l.Close()
	out, _, code = runCmd(t, append([]string{"ledger", "verify", "--witness", witness}, reader...)...)
	if code != 1 || !strings.Contains(out, "The ledger records a recovery since: 1 items re-derived by lazaret ledger recover, the first event "+rec.ID) {
		t.Errorf("verify --witness after a recover: exit %d %s", code, out)
	}
	if out, stderr, code := runCmd(t, append([]string{"ledger", "checkpoint", "--publish", witness, "--reanchor"}, signer...)...); code != 0 || !strings.Contains(out, "(reanchored)") {
		t.Fatalf("checkpoint --reanchor: exit %d %s %s", code, out, stderr)
	}
	if out, _, code := runCmd(t, append([]string{"ledger", "verify", "--witness", witness}, reader...)...); code != 0 || !strings.Contains(out, "the witness was re-anchored at") {
		t.Errorf("verify --witness after the re-anchoring: exit %d %s", code, out)
	}
	files, _ := filepath.Glob(filepath.Join(witness, "*", "*.json"))
	if len(files) != 3 {
		t.Errorf("the witness holds %d files, want 3: every publish a new file, the re-anchoring among them", len(files))
	}
	// Another key's checkpoint in the witness is not trusted.
	other, _ := keygen(t)
	otherLog := t.TempDir()
	if _, _, code := runCmd(t, "ledger", "checkpoint", "--init", "--ledger", path, "--checkpoint-dir", otherLog, "--checkpoint-key", other, "--publish", witness, "--reanchor"); code != 0 {
		t.Fatalf("a checkpoint with another key: exit %d", code)
	}
	if out, _, code := runCmd(t, append([]string{"ledger", "verify", "--witness", witness}, reader...)...); code != 1 || !strings.Contains(out, "signature does not verify") {
		t.Errorf("verify --witness with a forged re-anchoring in it: exit %d %s", code, out)
	}
	checkpointVerifiesOutside(t, files[0], pub)
}

// checkpointVerifiesOutside: the documented layout (docs/checkpoints.md)
// is enough to check a checkpoint without Lazaret: the few lines of
// Python in deploy/checkpoints rebuild the signed message from the JSON,
// and openssl verifies the signature; a count changed by one does not.
func checkpointVerifiesOutside(t *testing.T, file, pub string) {
	t.Helper()
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		if testenv.InCI() {
			t.Fatal("openssl is required in CI")
		}
		t.Skip("openssl not installed")
	}
	script := filepath.Join(testenv.RepoRoot(t), "deploy", "checkpoints", "checkpoint-verify.py")
	check := func(json string) error {
		out := t.TempDir()
		if b, err := exec.Command(testenv.SystemPython, script, json, pub, out).CombinedOutput(); err != nil {
			t.Fatalf("checkpoint-verify.py: %v %s", err, b)
		}
		b, err := exec.Command(openssl, "pkeyutl", "-verify", "-pubin", "-inkey", filepath.Join(out, "pub.pem"), "-rawin",
			"-in", filepath.Join(out, "msg"), "-sigfile", filepath.Join(out, "sig")).CombinedOutput()
		if err == nil && !strings.Contains(string(b), "Signature Verified Successfully") {
			t.Fatalf("openssl: %s", b)
		}
		return err
	}
	if err := check(file); err != nil {
		t.Errorf("openssl does not verify %s: %v", file, err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	forged := filepath.Join(t.TempDir(), "forged.json")
	if err := os.WriteFile(forged, []byte(strings.Replace(string(b), `"count":4,`, `"count":5,`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := check(forged); err == nil {
		t.Error("openssl verifies a checkpoint whose count was changed")
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
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
	if out, stderr, code := runCmd(t, "ledger", "checkpoint", "--init", "--ledger", path, "--checkpoint-dir", dir, "--checkpoint-key", key); code != 0 {
		t.Fatalf("after chmod 600: exit %d %s %s", code, out, stderr)
	}
}
