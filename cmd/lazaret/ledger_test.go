package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/ledgertest"
	"github.com/lazaret/lazaret/premis/postgres"
	"github.com/lazaret/lazaret/premis/sqlite"
)

// verifyJSON is what lazaret ledger verify --json prints.
type verifyJSON struct {
	Ledger string `json:"ledger"`
	Intact bool   `json:"intact"`
	premis.Verification
}

func runVerifyJSON(t *testing.T, args ...string) (verifyJSON, int) {
	t.Helper()
	out, stderr, code := runCmd(t, append([]string{"ledger", "verify", "--json"}, args...)...)
	var v verifyJSON
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("verify --json: not JSON (exit %d): %s %s", code, out, stderr)
	}
	return v, code
}

func TestLedgerVerify(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	evs := ledgertest.Seed(t, l)
	l.Close()
	head := premis.Head{Count: 4, Hash: evs[3].Hash}

	out, stderr, code := runCmd(t, "ledger", "verify", "--ledger", path)
	if want := "4 events, chain intact, head " + head.Hash + "\n"; code != 0 || out != want {
		t.Fatalf("clean ledger: exit %d, %q %s, want %q", code, out, stderr, want)
	}
	if _, _, code := runCmd(t, "ledger", "verify", "--ledger", path, "--anchor", head.String(), "--anchor", fmt.Sprintf("2:%s", evs[1].Hash)); code != 0 {
		t.Errorf("clean ledger with anchors on its chain: exit %d", code)
	}
	v, code := runVerifyJSON(t, "--ledger", path)
	if code != 0 || !v.Intact || v.Events != 4 || v.Head != head.Hash || v.Recorded == nil || *v.Recorded != head {
		t.Fatalf("--json on a clean ledger: exit %d %+v", code, v)
	}
	for _, args := range [][]string{{"ledger"}, {"ledger", "nope"}, {"ledger", "verify", "--anchor", "4:zz", "--ledger", path},
		{"ledger", "verify", "--ledger", filepath.Join(t.TempDir(), "typo.db")}, {"ledger", "verify", "--ledger", path, "extra"}} {
		if _, _, code := runCmd(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}

	// The forgery of the issue, with the trigger dropped.
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"DROP TRIGGER events_no_update",
		"UPDATE events SET type = 'ing', outcome = 'suc', destination = 'accept', class = '', code = '' WHERE seq = 2"} {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	out, stderr, code = runCmd(t, "ledger", "verify", "--ledger", path)
	if code != 1 {
		t.Fatalf("forged ledger: exit %d, want 1\n%s%s", code, out, stderr)
	}
	// The forged destination also leaves the read model (the listings'
	// source) disagreeing with the events.
	for _, want := range []string{"link: seq 2 (event " + evs[1].ID + "): ", "changed after it was written", "guard: events_no_update: missing",
		"read-model: 1 items' latest outcome"} {
		if !strings.Contains(out, want) {
			t.Errorf("verify output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(stderr, "is not intact") {
		t.Errorf("stderr: %s", stderr)
	}
	v, code = runVerifyJSON(t, "--ledger", path)
	if code != 1 || v.Intact || len(v.Problems) != 3 || v.Problems[0].Seq != 2 || v.Problems[0].EventID != evs[1].ID {
		t.Errorf("--json on a forged ledger: exit %d %+v", code, v)
	}
	// Every other command refuses the ledger now, instead of showing the
	// forged history.
	if out, stderr, code := runCmd(t, "events", "ls", "--ledger", path); code == 0 || !strings.Contains(stderr, "tampered") {
		t.Errorf("events ls on a forged ledger: exit %d\n%s%s", code, out, stderr)
	}
}

func TestLedgerVerifyPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testenv.Postgres(t)
	l, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	evs := ledgertest.Seed(t, l)
	l.Close()
	if out, stderr, code := runCmd(t, "ledger", "verify", "--ledger", dsn); code != 0 || out != "4 events, chain intact, head "+evs[3].Hash+"\n" {
		t.Fatalf("clean ledger: exit %d %s %s", code, out, stderr)
	}
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "TRUNCATE lazaret_events"); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Fatalf("TRUNCATE with the guard in place: %v", err)
	}
	for _, s := range []string{"DROP TRIGGER lazaret_events_no_truncate ON lazaret_events", "TRUNCATE lazaret_events"} {
		if _, err := c.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	v, code := runVerifyJSON(t, "--ledger", dsn)
	if code != 1 || v.Intact {
		t.Fatalf("truncated ledger: exit %d %+v", code, v)
	}
	var kinds []string
	for _, p := range v.Problems {
		kinds = append(kinds, string(p.Kind)+": "+p.Detail)
	}
	got := strings.Join(kinds, "\n")
	for _, want := range []string{"guard: lazaret_events_no_truncate: missing", "truncated: 0 events stored, but the head record counts 4"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
}
