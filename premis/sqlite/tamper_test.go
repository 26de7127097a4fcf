package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/ledgersql"
	"github.com/lazaret/lazaret/premis/ledgertest"
	"github.com/lazaret/lazaret/premis/sqlite"
)

// newPath is the path of a new ledger file.
func newPath(t *testing.T) string { return filepath.Join(t.TempDir(), "ledger.db") }

// newTextPath is newPath holding a new, empty ledger in the text format
// every ledger had before the packed one, which it keeps.
func newTextPath(t *testing.T) string {
	path := newPath(t)
	l, err := sqlite.OpenText(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// seeded writes ledgertest.Seed into a fresh ledger file and closes it.
func seeded(t *testing.T) (string, []*premis.Event) {
	path := newPath(t)
	return path, ledgertest.Seeded(t, path)
}

// attack runs statements against the file with a connection of its own,
// as someone with write access to the file would.
func attack(t *testing.T, path string, stmts ...string) {
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

// replaceSeq2 is the forgery of the issue: the fixity failure at seq 2
// becomes an accepted ingestion, keeping its seq, id, key and chain fields.
const replaceSeq2 = `INSERT OR REPLACE INTO events (seq, id, key, type, datetime, outcome, destination, object_id, prev_hash, hash)
	SELECT seq, id, key, 'ing', datetime, 'suc', 'accept', object_id, prev_hash, hash FROM events WHERE seq = 2`

func TestReplaceCannotOverwrite(t *testing.T) {
	t.Parallel()
	for _, stmt := range []string{
		replaceSeq2,
		// By item key alone (correlation and key), by id with a new key, by
		// seq with a new id and key.
		`INSERT OR REPLACE INTO events (id, key, correlation_id, type, datetime, outcome, object_id) SELECT 'forged', key, correlation_id, 'ing', datetime, 'suc', object_id FROM events WHERE seq = 2`,
		`INSERT OR REPLACE INTO events (id, key, type, datetime, outcome, object_id) SELECT id, 'forged', 'ing', datetime, 'suc', object_id FROM events WHERE seq = 2`,
		`INSERT OR REPLACE INTO events (seq, id, key, type, datetime, outcome, object_id) SELECT seq, 'forged', 'forged', 'ing', datetime, 'suc', object_id FROM events WHERE seq = 2`,
		`REPLACE INTO events (seq, id, key, type, datetime, outcome, object_id) SELECT seq, id, key, 'ing', datetime, 'suc', object_id FROM events WHERE seq = 2`,
		`INSERT OR REPLACE INTO ledger_head (id, event_count, last_hash) VALUES (1, 0, '` + premis.ChainGenesis + `')`,
	} {
		path, evs := seeded(t)
		db, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		_, err = db.Exec(stmt)
		db.Close()
		if err != nil && !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v", stmt, err)
		}
		v, openErr := ledgertest.VerifyAt(t, path)
		if openErr != nil || !v.Intact() || v.Events != 4 {
			t.Errorf("%s\nchanged the ledger: open %v, %s\n%s", stmt, openErr, v, ledgertest.Problems(v))
		}
		l, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := l.Event(context.Background(), evs[1].ID)
		l.Close()
		if err != nil || got.Type != premis.FixityCheck || got.Outcome != premis.Failure || got.Destination != premis.DeadLetter {
			t.Errorf("%s\nseq 2 is now %s %s %s (%v), want fix fai dead-letter", stmt, got.Type, got.Outcome, got.Destination, err)
		}
	}
}

// TestVerifyDetectsForgery forges the ledger file the ways the issue
// measured and a few more; verify names each one. Guards an attacker puts
// back let the ledger open, so the chain must show the forgery.
func TestVerifyDetectsForgery(t *testing.T) {
	t.Parallel()
	t.Run("packed", func(t *testing.T) { verifyDetectsForgery(t, true) })
	t.Run("text", func(t *testing.T) { verifyDetectsForgery(t, false) })
}

// verifyDetectsForgery runs the forgeries against a ledger packed or in
// the text format, each spelled as someone who knows the format would.
func verifyDetectsForgery(t *testing.T, packed bool) {
	newLedger, datetime, stepsWar := newPath, "1767225600000000000", `'["fix","suc"]', '["fix","war"]'`
	if !packed {
		newLedger, datetime, stepsWar = newTextPath, "'2026-01-01T00:00:00Z'", `'"outcome":"suc"', '"outcome":"war"'`
	}
	restore := func(names ...string) []string {
		var s []string
		for _, n := range names {
			s = append(s, sqlite.GuardSQL(n))
		}
		return s
	}
	join := func(parts ...[]string) []string {
		var s []string
		for _, p := range parts {
			s = append(s, p...)
		}
		return s
	}
	problem := ledgertest.Found
	cases := []ledgertest.Forgery{
		{Name: "replace with its guard dropped",
			Attack:  []string{"DROP TRIGGER events_no_replace", replaceSeq2},
			OpenErr: "events_no_replace: missing",
			Want:    []ledgertest.Problem{problem(premis.ProblemGuard, 0, "events_no_replace: missing"), problem(premis.ProblemLink, 2, "changed after it was written")}},
		{Name: "replace, guard put back",
			Attack: join([]string{"DROP TRIGGER events_no_replace", replaceSeq2}, restore("events_no_replace")),
			Want:   []ledgertest.Problem{problem(premis.ProblemLink, 2, "changed after it was written")}},
		{Name: "update with its trigger dropped",
			Attack:  []string{"DROP TRIGGER events_no_update", `UPDATE events SET type = 'ing', outcome = 'suc', destination = 'accept', class = '', code = '' WHERE seq = 2`},
			OpenErr: "events_no_update: missing",
			Want:    []ledgertest.Problem{problem(premis.ProblemGuard, 0, "events_no_update"), problem(premis.ProblemLink, 2, "changed after it was written")}},
		{Name: "update, trigger put back",
			Attack: join([]string{"DROP TRIGGER events_no_update", `UPDATE events SET outcome = 'suc' WHERE seq = 2`}, restore("events_no_update")),
			Want:   []ledgertest.Problem{problem(premis.ProblemLink, 2, "changed after it was written")}},
		{Name: "edited column, trigger put back",
			Attack: join([]string{"DROP TRIGGER events_no_update", `UPDATE events SET message = 'all fine' WHERE seq = 3`}, restore("events_no_update")),
			Want:   []ledgertest.Problem{problem(premis.ProblemLink, 3, "changed after it was written")}},
		{Name: "chain fields rewritten with the row",
			Attack: join([]string{"DROP TRIGGER events_no_update", `UPDATE events SET outcome = 'suc', hash = prev_hash WHERE seq = 2`}, restore("events_no_update")),
			Want:   []ledgertest.Problem{problem(premis.ProblemLink, 2)}},
		{Name: "a member removed, trigger put back",
			Attack: join([]string{"DROP TRIGGER events_no_update", `UPDATE events SET members = json_remove(members, '$[1]') WHERE seq = 4`}, restore("events_no_update")),
			Want:   []ledgertest.Problem{problem(premis.ProblemLink, 4, "changed after it was written")}},
		{Name: "a member's id spelled otherwise, trigger put back",
			// The same members to the chain, but a lookup would miss m4#2.
			Attack: join([]string{"DROP TRIGGER events_no_update", `UPDATE events SET members = replace(members, '"m4#2"', '"\u006d4#2"') WHERE seq = 4`}, restore("events_no_update")),
			Want:   []ledgertest.Problem{problem(premis.ProblemLink, 4, "does not decode", "not written as the ledger writes them")}},
		{Name: "a step's outcome rewritten, trigger put back",
			Attack: join([]string{"DROP TRIGGER events_no_update", `UPDATE events SET steps = ` + ledgertest.ForgedSteps(t, packed, func(s []premis.Step) []premis.Step { s[0].Outcome = premis.Warning; return s }) + ` WHERE seq = 1`}, restore("events_no_update")),
			Want:   []ledgertest.Problem{problem(premis.ProblemLink, 1, "changed after it was written")}},
		{Name: "a step removed, trigger put back",
			Attack: join([]string{"DROP TRIGGER events_no_update", `UPDATE events SET steps = ` + ledgertest.ForgedSteps(t, packed, func(s []premis.Step) []premis.Step { return s[:1] }) + ` WHERE seq = 1`}, restore("events_no_update")),
			Want:   []ledgertest.Problem{problem(premis.ProblemLink, 1, "changed after it was written")}},
		{Name: "a step's outcome rewritten in the clear only, trigger put back",
			Attack: join([]string{"DROP TRIGGER events_no_update", `UPDATE events SET steps = replace(steps, ` + stepsWar + `) WHERE seq = 1`}, restore("events_no_update")),
			Want:   []ledgertest.Problem{problem(premis.ProblemLink, 1, "does not decode", "not those of the steps held")}},
		{Name: "steps the ledger never writes",
			Attack: join([]string{"DROP TRIGGER events_no_update", `UPDATE events SET steps = '[{"type":"fix"' WHERE seq = 1`}, restore("events_no_update")),
			Want:   []ledgertest.Problem{problem(premis.ProblemLink, 1, "does not decode", "steps")}},
		{Name: "an envelope the ledger never writes",
			Attack: join([]string{"DROP TRIGGER events_no_update", `UPDATE events SET envelope = x'0001ffff' WHERE seq = 2`}, restore("events_no_update")),
			Want:   []ledgertest.Problem{problem(premis.ProblemLink, 2, "does not decode", "envelope")}},
		{Name: "members the ledger never writes",
			Attack: join([]string{"DROP TRIGGER events_no_update", `UPDATE events SET members = '[["m4#1", 1' WHERE seq = 4`}, restore("events_no_update")),
			Want:   []ledgertest.Problem{problem(premis.ProblemLink, 4, "does not decode", "members")}},
		{Name: "a value the ledger never writes",
			Attack: join([]string{"DROP TRIGGER events_no_update", `UPDATE events SET attempt = 'two' WHERE seq = 1`}, restore("events_no_update")),
			Want:   []ledgertest.Problem{problem(premis.ProblemLink, 1, "does not decode", "attempt")}},
		{Name: "delete with the triggers dropped",
			Attack:  []string{"DROP TRIGGER events_no_delete", "DROP TRIGGER events_no_update", "DELETE FROM events WHERE seq >= 3"},
			OpenErr: "events_no_delete: missing",
			Want:    []ledgertest.Problem{problem(premis.ProblemGuard, 0, "events_no_delete"), problem(premis.ProblemTruncated, 0, "2 events stored", "counts 4")}},
		{Name: "delete everything, trigger put back",
			Attack:  join([]string{"DROP TRIGGER events_no_delete", "DELETE FROM events"}, restore("events_no_delete")),
			OpenErr: "head record",
			Want:    []ledgertest.Problem{problem(premis.ProblemTruncated, 0, "0 events stored")}},
		{Name: "delete in the middle, trigger put back",
			Attack: join([]string{"DROP TRIGGER events_no_delete", "DELETE FROM events WHERE seq = 2"}, restore("events_no_delete")),
			Want:   []ledgertest.Problem{problem(premis.ProblemLink, 3, "seq 1", "removed")}},
		{Name: "delete the first, trigger put back",
			Attack: join([]string{"DROP TRIGGER events_no_delete", "DELETE FROM events WHERE seq = 1"}, restore("events_no_delete")),
			Want:   []ledgertest.Problem{problem(premis.ProblemLink, 2, "genesis")}},
		{Name: "row inserted past Append",
			Attack: []string{`INSERT INTO events (id, key, type, datetime, outcome, object_id) VALUES ('x', 'x', 'ing', ` + datetime + `, 'suc', 'm2')`},
			// The head is not the last event any more.
			OpenErr: "not the last stored event",
			Want:    []ledgertest.Problem{problem(premis.ProblemLink, 5, "no chain fields"), problem(premis.ProblemHead, 0, "written past Append")}},
		{Name: "trigger replaced by one that does nothing",
			Attack:  []string{"DROP TRIGGER events_no_update", "CREATE TRIGGER events_no_update BEFORE UPDATE ON events BEGIN SELECT 1; END"},
			OpenErr: "events_no_update: altered",
			Want:    []ledgertest.Problem{problem(premis.ProblemGuard, 0, "events_no_update: altered")}},
		{Name: "head dropped",
			Attack:  []string{"DROP TABLE ledger_head"},
			OpenErr: "no head record",
			Want:    []ledgertest.Problem{problem(premis.ProblemGuard, 0, "ledger_head_forward: missing"), problem(premis.ProblemHead, 0, "gone")}},
		{Name: "newest removed and the head moved back, triggers put back",
			Attack: join([]string{"DROP TRIGGER events_no_delete", "DROP TRIGGER ledger_head_forward", "DELETE FROM events WHERE seq = 4",
				"UPDATE ledger_head SET event_count = 3, last_hash = (SELECT hash FROM events WHERE seq = 3)"}, restore("events_no_delete", "ledger_head_forward")),
			// A consistent chain: only a head recorded elsewhere shows it.
			Anchored: true,
			Want:     []ledgertest.Problem{problem(premis.ProblemAnchor, 0, "3 events stored", "counts 4")}},
	}
	ledgertest.Forge(t, ledgertest.Forger{New: newLedger, Attack: attack}, cases)
}

// TestOpenNeverRecreatesGuards: a missing trigger stays missing, and the
// ledger stays shut, however often it is opened.
func TestOpenNeverRecreatesGuards(t *testing.T) {
	t.Parallel()
	path, _ := seeded(t)
	attack(t, path, "DROP TRIGGER events_no_delete")
	for range 2 {
		if _, err := sqlite.Open(context.Background(), path); !errors.Is(err, premis.ErrTampered) || !strings.Contains(err.Error(), "events_no_delete") {
			t.Fatalf("open: %v, want premis.ErrTampered naming events_no_delete", err)
		}
	}
	if n := count(t, path, `SELECT count(*) FROM sqlite_master WHERE name = 'events_no_delete'`); n != 0 {
		t.Fatalf("the dropped trigger is back (%d)", n)
	}
}

// count runs a count query on the file at path, past the ledger.
func count(t *testing.T, path, query string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// TestMigratesLedgerWrittenBeforeTheChain: a ledger of the schema before
// the chain (testdata/schema-v0.sql) gets the columns and its rows are
// chained once, in seq order; reopening changes nothing.
func TestMigratesLedgerWrittenBeforeTheChain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	old := writeV0(t, path, 3)
	l, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := l.Events(ctx, premis.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != len(old) {
		t.Fatalf("%d events after the migration, want %d", len(evs), len(old))
	}
	prev := premis.ChainGenesis
	for i, e := range evs {
		if e.ID != old[i].ID || e.PrevHash != prev || e.Hash != premis.ChainHash(prev, &e) {
			t.Errorf("event %d (%s): prev %s hash %s, not chained in seq order", i, e.ID, e.PrevHash, e.Hash)
		}
		prev = e.Hash
	}
	if v := ledgertest.Verify(t, l); !v.Intact() || v.Events != 3 || v.Recorded.Count != 3 {
		t.Fatalf("migrated ledger: %s\n%s", v, ledgertest.Problems(v))
	}
	if _, err := l.Append(ctx, ledgertest.Event("after", premis.Validation, 1)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	again, err := l.Events(ctx, premis.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 4 || again[0].Hash != evs[0].Hash || again[2].Hash != evs[2].Hash || again[3].PrevHash != evs[2].Hash {
		t.Fatalf("reopen changed the chain")
	}
	if v := ledgertest.Verify(t, l); !v.Intact() || v.Events != 4 {
		t.Fatalf("after an append: %s", v)
	}
	if err := sqlite.Exec(ctx, l, "UPDATE events SET outcome = 'suc'"); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Errorf("migrated ledger accepts UPDATE: %v", err)
	}
}

// TestDoesNotMigrateAnUnguardedLedger: a ledger before the chain whose
// triggers are gone is not chained (that would bless its history).
func TestDoesNotMigrateAnUnguardedLedger(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	writeV0(t, path, 2)
	attack(t, path, "DROP TRIGGER events_no_update")
	if _, err := sqlite.Open(context.Background(), path); !errors.Is(err, premis.ErrTampered) || !strings.Contains(err.Error(), "events_no_update: missing") {
		t.Fatalf("open: %v, want premis.ErrTampered naming events_no_update", err)
	}
	if n := count(t, path, `SELECT count(*) FROM pragma_table_info('events') WHERE name = 'hash'`); n != 0 {
		t.Fatalf("hash column added (%d)", n)
	}
}

// writeV0 creates a ledger of the schema before the chain with n events,
// written as that version's Append wrote them.
func writeV0(t testing.TB, path string, n int) []*premis.Event {
	t.Helper()
	schema, err := os.ReadFile("testdata/schema-v0.sql")
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(string(schema)); err != nil {
		t.Fatal(err)
	}
	insert := "INSERT INTO events (" + ledgersql.ColumnsBeforeMembers + ") VALUES (?" + strings.Repeat(",?", ledgersql.NumColumnsBeforeMembers-1) + ")"
	var evs []*premis.Event
	for i := range n {
		e := ledgertest.Event("old-"+string(rune('a'+i)), premis.Validation, 1)
		if err := premis.Prepare(e); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(insert, e.ID, e.Key, e.Type, e.DateTime.Format(time.RFC3339Nano), e.Detail, e.Outcome,
			e.Note, e.Class, e.Code, e.Message, e.Offset, e.Page, e.Segment, e.Element, e.Component, e.Tag, e.Destination,
			e.ObjectID, e.BatchID, e.CorrelationID, e.Kind, e.SHA256, e.Size, e.PUID, e.Path, e.Attempt, e.Retries,
			e.TaskID, e.ReplayOf, e.Agent, e.Operator, e.Envelope); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e)
	}
	return evs
}

// openAtOnce opens the ledger at path from n goroutines at once, as
// workers starting together do; each must open it.
func openAtOnce(t *testing.T, path string, n int) {
	t.Helper()
	errs := make(chan error, n)
	for range n {
		go func() {
			l, err := sqlite.Open(context.Background(), path)
			if err == nil {
				l.Close()
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestMigratesOnceWhenOpenedByManyAtOnce: workers starting together on a
// ledger written before the chain chain it once.
func TestMigratesOnceWhenOpenedByManyAtOnce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	writeV0(t, path, 3)
	openAtOnce(t, path, 4)
	v, openErr := ledgertest.VerifyAt(t, path)
	if openErr != nil || !v.Intact() || v.Events != 3 || v.Recorded.Count != 3 {
		t.Fatalf("open %v: %s\n%s", openErr, v, ledgertest.Problems(v))
	}
}
