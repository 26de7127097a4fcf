package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/ledgersql"
	"github.com/lazaret/lazaret/premis/ledgertest"
	"github.com/lazaret/lazaret/premis/postgres"
)

// seeded writes ledgertest.Seed into a fresh ledger in a schema of its own.
func seeded(t *testing.T) (string, []*premis.Event) {
	dsn := testenv.Postgres(t)
	return dsn, ledgertest.Seeded(t, dsn)
}

// connect is a connection of its own, as someone with the owner's access
// to the database would use.
func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func attack(t *testing.T, dsn string, stmts ...string) {
	t.Helper()
	c := connect(t, dsn)
	for _, s := range stmts {
		if _, err := c.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// TestGuardsRefuse: with the guards in place, even the owner (here a
// superuser) cannot change history, and session_replication_role does not
// switch the guards off.
func TestGuardsRefuse(t *testing.T) {
	t.Parallel()
	dsn, _ := seeded(t)
	c := connect(t, dsn)
	ctx := context.Background()
	for _, stmt := range []string{
		"UPDATE lazaret_events SET outcome = 'suc'",
		"DELETE FROM lazaret_events",
		"TRUNCATE lazaret_events",
		"TRUNCATE lazaret_events, lazaret_ledger_head",
		"UPDATE lazaret_ledger_head SET event_count = 0, last_hash = '" + premis.ChainGenesis + "'",
		// Forward, but not to the last event. (A count moved forward to the
		// last event passes the trigger; Verify shows it as truncation.)
		"UPDATE lazaret_ledger_head SET event_count = event_count + 1, last_hash = '" + premis.ChainGenesis + "'",
		"DELETE FROM lazaret_ledger_head",
		"TRUNCATE lazaret_ledger_head",
		"INSERT INTO lazaret_ledger_head VALUES (1, 0, '') ON CONFLICT (id) DO UPDATE SET event_count = 0",
	} {
		for _, replica := range []bool{false, true} {
			tx, err := c.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if replica {
				if _, err := tx.Exec(ctx, "SET LOCAL session_replication_role = replica"); err != nil {
					t.Fatal(err)
				}
			}
			_, err = tx.Exec(ctx, stmt)
			tx.Rollback(ctx)
			if err == nil || !strings.Contains(err.Error(), "premis ledger") {
				t.Errorf("%s (replica %v): err = %v, want a refusal by a guard", stmt, replica, err)
			}
		}
	}
	if v, err := ledgertest.VerifyAt(t, dsn); err != nil || !v.Intact() {
		t.Fatalf("after the refusals: open %v, %s", err, v)
	}
}

// TestVerifyDetectsForgery forges the ledger the ways the issue measured
// and a few more; verify names each one. Guards an attacker puts back let
// the ledger open, so the chain must show the forgery.
func TestVerifyDetectsForgery(t *testing.T) {
	t.Parallel()
	restore := postgres.GuardSQL
	problem := ledgertest.Found
	cases := []ledgertest.Forgery{
		{Name: "update with its trigger dropped",
			Attack:  []string{"DROP TRIGGER lazaret_events_no_change ON lazaret_events", "UPDATE lazaret_events SET type = 'ing', outcome = 'suc', destination = 'accept', class = '', code = '' WHERE seq = 2"},
			OpenErr: "lazaret_events_no_change: missing",
			Want:    []ledgertest.Problem{problem(premis.ProblemGuard, 0, "lazaret_events_no_change: missing"), problem(premis.ProblemLink, 2, "changed after it was written")}},
		{Name: "update, trigger put back",
			Attack: []string{"DROP TRIGGER lazaret_events_no_change ON lazaret_events", "UPDATE lazaret_events SET outcome = 'suc' WHERE seq = 2", restore("lazaret_events_no_change")},
			Want:   []ledgertest.Problem{problem(premis.ProblemLink, 2, "changed after it was written")}},
		{Name: "edited column, trigger put back",
			Attack: []string{"DROP TRIGGER lazaret_events_no_change ON lazaret_events", "UPDATE lazaret_events SET message = 'all fine' WHERE seq = 3", restore("lazaret_events_no_change")},
			Want:   []ledgertest.Problem{problem(premis.ProblemLink, 3, "changed after it was written")}},
		{Name: "a member removed, trigger put back",
			Attack: []string{"DROP TRIGGER lazaret_events_no_change ON lazaret_events", `UPDATE lazaret_events SET members = replace(members, ',["m4#2",2,90,"IFTMIN"]', '') WHERE seq = 4`, restore("lazaret_events_no_change")},
			Want:   []ledgertest.Problem{problem(premis.ProblemLink, 4, "changed after it was written")}},
		{Name: "a member's id spelled otherwise, trigger put back",
			Attack: []string{"DROP TRIGGER lazaret_events_no_change ON lazaret_events", `UPDATE lazaret_events SET members = replace(members, '"m4#2"', '"\u006d4#2"') WHERE seq = 4`, restore("lazaret_events_no_change")},
			Want:   []ledgertest.Problem{problem(premis.ProblemLink, 4, "does not decode", "not written as the ledger writes them")}},
		{Name: "a step's outcome rewritten, trigger put back",
			Attack: []string{"DROP TRIGGER lazaret_events_no_change ON lazaret_events", `UPDATE lazaret_events SET steps = ` +
				ledgertest.ForgedSteps(t, false, func(s []premis.Step) []premis.Step { s[0].Outcome = premis.Warning; return s }) + ` WHERE seq = 1`, restore("lazaret_events_no_change")},
			Want: []ledgertest.Problem{problem(premis.ProblemLink, 1, "changed after it was written")}},
		{Name: "a step's outcome rewritten in the clear only, trigger put back",
			Attack: []string{"DROP TRIGGER lazaret_events_no_change ON lazaret_events", `UPDATE lazaret_events SET steps = replace(steps, '"outcome":"suc"', '"outcome":"war"') WHERE seq = 1`, restore("lazaret_events_no_change")},
			Want:   []ledgertest.Problem{problem(premis.ProblemLink, 1, "does not decode", "not those of the steps held")}},
		{Name: "steps the ledger never writes, trigger put back",
			Attack: []string{"DROP TRIGGER lazaret_events_no_change ON lazaret_events", `UPDATE lazaret_events SET steps = '[{"type":"fix"' WHERE seq = 1`, restore("lazaret_events_no_change")},
			Want:   []ledgertest.Problem{problem(premis.ProblemLink, 1, "does not decode", "steps")}},
		{Name: "an envelope the ledger never writes, trigger put back",
			Attack: []string{"DROP TRIGGER lazaret_events_no_change ON lazaret_events", `UPDATE lazaret_events SET envelope = '\x0001ffff'::bytea WHERE seq = 2`, restore("lazaret_events_no_change")},
			Want:   []ledgertest.Problem{problem(premis.ProblemLink, 2, "does not decode", "envelope")}},
		{Name: "members the ledger never writes, trigger put back",
			Attack: []string{"DROP TRIGGER lazaret_events_no_change ON lazaret_events", `UPDATE lazaret_events SET members = '[["m4#1", 1' WHERE seq = 4`, restore("lazaret_events_no_change")},
			Want:   []ledgertest.Problem{problem(premis.ProblemLink, 4, "does not decode", "members")}},
		{Name: "edited time, trigger disabled",
			Attack:  []string{"ALTER TABLE lazaret_events DISABLE TRIGGER lazaret_events_no_change", "UPDATE lazaret_events SET datetime = datetime - interval '1 day' WHERE seq = 1"},
			OpenErr: "lazaret_events_no_change: disabled",
			Want:    []ledgertest.Problem{problem(premis.ProblemGuard, 0, "disabled"), problem(premis.ProblemLink, 1, "changed after it was written")}},
		{Name: "trigger no longer ENABLE ALWAYS",
			Attack:  []string{"ALTER TABLE lazaret_events ENABLE TRIGGER lazaret_events_no_truncate"},
			OpenErr: "lazaret_events_no_truncate: not ENABLE ALWAYS",
			Want:    []ledgertest.Problem{problem(premis.ProblemGuard, 0, "lazaret_events_no_truncate: not ENABLE ALWAYS")}},
		{Name: "function replaced by one that lets everything through",
			Attack:  []string{"CREATE OR REPLACE FUNCTION lazaret_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN OLD; END $$"},
			OpenErr: "lazaret_events_no_change: altered",
			Want:    []ledgertest.Problem{problem(premis.ProblemGuard, 0, "lazaret_events_no_change: altered"), problem(premis.ProblemGuard, 0, "lazaret_events_no_truncate: altered")}},
		{Name: "truncate with its trigger dropped",
			Attack:  []string{"DROP TRIGGER lazaret_events_no_truncate ON lazaret_events", "TRUNCATE lazaret_events"},
			OpenErr: "lazaret_events_no_truncate: missing",
			Want:    []ledgertest.Problem{problem(premis.ProblemGuard, 0, "lazaret_events_no_truncate: missing"), problem(premis.ProblemTruncated, 0, "0 events stored", "counts 4")}},
		{Name: "truncate, trigger put back",
			Attack:  []string{"DROP TRIGGER lazaret_events_no_truncate ON lazaret_events", "TRUNCATE lazaret_events", restore("lazaret_events_no_truncate")},
			OpenErr: "head record",
			Want:    []ledgertest.Problem{problem(premis.ProblemTruncated, 0, "0 events stored")}},
		{Name: "delete in the middle, trigger put back",
			Attack: []string{"DROP TRIGGER lazaret_events_no_change ON lazaret_events", "DELETE FROM lazaret_events WHERE seq = 2", restore("lazaret_events_no_change")},
			Want:   []ledgertest.Problem{problem(premis.ProblemLink, 3, "seq 1", "removed")}},
		{Name: "row inserted past Append",
			Attack:  []string{"INSERT INTO lazaret_events (id, key, type, datetime, outcome, object_id) VALUES (gen_random_uuid(), 'x', 'ing', now(), 'suc', 'm2')"},
			OpenErr: "not the last stored event",
			Want:    []ledgertest.Problem{problem(premis.ProblemLink, 5, "no chain fields"), problem(premis.ProblemHead, 0, "written past Append")}},
		{Name: "head dropped",
			Attack:  []string{"DROP TABLE lazaret_ledger_head"},
			OpenErr: "no head record",
			Want:    []ledgertest.Problem{problem(premis.ProblemGuard, 0, "lazaret_ledger_head_forward: missing"), problem(premis.ProblemHead, 0, "gone")}},
		{Name: "newest removed and the head moved back, triggers put back",
			Attack: []string{"DROP TRIGGER lazaret_events_no_change ON lazaret_events", "DROP TRIGGER lazaret_ledger_head_forward ON lazaret_ledger_head",
				"DELETE FROM lazaret_events WHERE seq = 4",
				"UPDATE lazaret_ledger_head SET event_count = 3, last_hash = (SELECT hash FROM lazaret_events WHERE seq = 3)",
				restore("lazaret_events_no_change"), restore("lazaret_ledger_head_forward")},
			// A consistent chain: only a head recorded elsewhere shows it.
			Anchored: true,
			Want:     []ledgertest.Problem{problem(premis.ProblemAnchor, 0, "3 events stored", "counts 4")}},
	}
	ledgertest.Forge(t, ledgertest.Forger{New: newDSN, Attack: attack}, cases)
}

// TestOpenNeverRecreatesGuards: a missing trigger stays missing, and the
// ledger stays shut, however often it is opened.
func TestOpenNeverRecreatesGuards(t *testing.T) {
	t.Parallel()
	dsn, _ := seeded(t)
	attack(t, dsn, "DROP TRIGGER lazaret_events_no_truncate ON lazaret_events")
	for range 2 {
		if _, err := postgres.Open(context.Background(), dsn); !errors.Is(err, premis.ErrTampered) || !strings.Contains(err.Error(), "lazaret_events_no_truncate") {
			t.Fatalf("open: %v, want premis.ErrTampered naming lazaret_events_no_truncate", err)
		}
	}
	var n int
	if err := connect(t, dsn).QueryRow(context.Background(), `SELECT count(*) FROM pg_trigger WHERE tgname = 'lazaret_events_no_truncate'
		AND tgrelid = to_regclass('lazaret_events')`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the dropped trigger is back (%d, %v)", n, err)
	}
}

// TestMigratesLedgerWrittenBeforeTheChain: a ledger of the schema before
// the chain (testdata/schema-v0.sql) gets the columns and its rows are
// chained once, in seq order; reopening changes nothing.
func TestMigratesLedgerWrittenBeforeTheChain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testenv.Postgres(t)
	old := writeV0(t, dsn, 1200) // more than a page of the migration
	l, err := postgres.Open(ctx, dsn)
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
			t.Fatalf("event %d (%s): prev %s hash %s, not chained in seq order", i, e.ID, e.PrevHash, e.Hash)
		}
		prev = e.Hash
	}
	if v := ledgertest.Verify(t, l); !v.Intact() || v.Events != int64(len(old)) || v.Recorded.Count != int64(len(old)) {
		t.Fatalf("migrated ledger: %s\n%s", v, ledgertest.Problems(v))
	}
	if got := changedIndexes(t, connect(t, dsn)); !slices.Equal(got, []string{"lazaret_events_batch_seq"}) {
		t.Errorf("the migrated ledger holds %v, want only the batch index with seq", got)
	}
	if _, err := l.Append(ctx, ledgertest.Event("after", premis.Validation, 1)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l, err = postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if v := ledgertest.Verify(t, l); !v.Intact() || v.Events != int64(len(old))+1 {
		t.Fatalf("after reopen and an append: %s", v)
	}
	if err := postgres.Exec(ctx, l, "TRUNCATE lazaret_events"); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Errorf("migrated ledger accepts TRUNCATE: %v", err)
	}
}

// TestDoesNotMigrateAnUnguardedLedger: a ledger before the chain whose
// trigger is gone is not chained (that would bless its history).
func TestDoesNotMigrateAnUnguardedLedger(t *testing.T) {
	t.Parallel()
	dsn := testenv.Postgres(t)
	writeV0(t, dsn, 2)
	attack(t, dsn, "DROP TRIGGER lazaret_events_no_change ON lazaret_events")
	if _, err := postgres.Open(context.Background(), dsn); !errors.Is(err, premis.ErrTampered) || !strings.Contains(err.Error(), "lazaret_events_no_change: missing") {
		t.Fatalf("open: %v, want premis.ErrTampered naming lazaret_events_no_change", err)
	}
	var n int
	if err := connect(t, dsn).QueryRow(context.Background(), `SELECT count(*) FROM pg_attribute WHERE attrelid = to_regclass('lazaret_events') AND attname = 'hash'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("hash column added (%d, %v)", n, err)
	}
}

// writeV0 creates a ledger of the schema before the chain with n events,
// written as that version's Append wrote them.
func writeV0(t testing.TB, dsn string, n int) []*premis.Event {
	t.Helper()
	ctx := context.Background()
	schema, err := os.ReadFile("testdata/schema-v0.sql")
	if err != nil {
		t.Fatal(err)
	}
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, string(schema)); err != nil {
		t.Fatal(err)
	}
	var evs []*premis.Event
	b := &pgx.Batch{}
	for i := range n {
		e := ledgertest.Event(fmt.Sprint("old-", i), premis.Validation, 1)
		if err := premis.Prepare(e); err != nil {
			t.Fatal(err)
		}
		b.Queue(v0Insert, v0Args(e)...)
		evs = append(evs, e)
	}
	if err := c.SendBatch(ctx, b).Close(); err != nil {
		t.Fatal(err)
	}
	return evs
}

// v0Insert is the INSERT of the version before the chain.
var v0Insert = func() string {
	ph := make([]string, ledgersql.NumColumnsBeforeMembers)
	for i := range ph {
		ph[i] = fmt.Sprintf("$%d", i+1)
	}
	return "INSERT INTO lazaret_events (" + ledgersql.ColumnsBeforeMembers + ") VALUES (" + strings.Join(ph, ",") + ") ON CONFLICT (key) DO NOTHING"
}()

func v0Args(e *premis.Event) []any {
	return []any{e.ID, e.Key, string(e.Type), e.DateTime, e.Detail, string(e.Outcome), e.Note, string(e.Class), e.Code,
		e.Message, e.Offset, e.Page, e.Segment, e.Element, e.Component, e.Tag, string(e.Destination), e.ObjectID, e.BatchID,
		e.CorrelationID, e.Kind, e.SHA256, e.Size, e.PUID, e.Path, e.Attempt, e.Retries, e.TaskID, e.ReplayOf, e.Agent, e.Operator, e.Envelope}
}

// TestWriterRoleCannotRewriteHistory applies deploy/postgres/grants.sql to
// roles the test creates (and drops): the writer appends and verifies; it
// cannot change, remove, truncate or unguard anything.
func TestWriterRoleCannotRewriteHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, _ := seeded(t) // created by the owner (the test's superuser)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	schema := u.Query().Get("search_path")
	suffix := fmt.Sprintf("%d_%d", os.Getpid(), time.Now().UnixNano())
	writer, reader := "lazaret_test_writer_"+suffix, "lazaret_test_reader_"+suffix
	admin := connect(t, dsn)
	for _, r := range []string{writer, reader} {
		if _, err := admin.Exec(ctx, "CREATE ROLE "+r+" NOLOGIN"); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		for _, r := range []string{writer, reader} {
			c.Exec(context.Background(), "DROP OWNED BY "+r)
			c.Exec(context.Background(), "DROP ROLE "+r)
		}
	})
	grants, err := os.ReadFile("../../deploy/postgres/grants.sql")
	if err != nil {
		t.Fatal(err)
	}
	var sqlText []string
	for _, line := range strings.Split(string(grants), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), `\`) { // psql's own commands
			sqlText = append(sqlText, line)
		}
	}
	stmt := strings.NewReplacer(`:"schema"`, pgx.Identifier{schema}.Sanitize(), `:"writer"`, pgx.Identifier{writer}.Sanitize(),
		`:"reader"`, pgx.Identifier{reader}.Sanitize()).Replace(strings.Join(sqlText, "\n"))
	if _, err := admin.Exec(ctx, stmt); err != nil {
		t.Fatalf("grants.sql: %v", err)
	}

	// A ledger written before its spare indexes went and its batch index
	// held seq: the writer can change neither, and opens it all the same.
	if _, err := admin.Exec(ctx, `CREATE INDEX lazaret_events_task ON lazaret_events(task_id);
		CREATE INDEX lazaret_events_failure ON lazaret_events(class, destination);
		DROP INDEX lazaret_events_batch_seq; CREATE INDEX lazaret_events_batch ON lazaret_events(batch_id)`); err != nil {
		t.Fatal(err)
	}

	// The role parameter is sent at connection start, like SET ROLE.
	asWriter := dsn + "&role=" + writer
	l, err := postgres.Open(ctx, asWriter)
	if err != nil {
		t.Fatalf("open as the writer: %v", err)
	}
	defer l.Close()
	if got, want := changedIndexes(t, admin), []string{"lazaret_events_batch", "lazaret_events_failure", "lazaret_events_task"}; !slices.Equal(got, want) {
		t.Errorf("after the writer's open: indexes %v, want %v left to the owner", got, want)
	}
	if _, err := l.Append(ctx, ledgertest.Event("by-writer", premis.Ingestion, 1), ledgertest.Event("m1", premis.Validation, 1)); err != nil {
		t.Fatalf("append as the writer: %v", err)
	}
	for _, stmt := range []string{
		"UPDATE lazaret_events SET outcome = 'suc'",
		"DELETE FROM lazaret_events",
		"TRUNCATE lazaret_events",
		"DROP TRIGGER lazaret_events_no_change ON lazaret_events",
		"ALTER TABLE lazaret_events DISABLE TRIGGER ALL",
		"CREATE OR REPLACE FUNCTION lazaret_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN OLD; END $$",
		"UPDATE lazaret_ledger_head SET event_count = 1",
		"DELETE FROM lazaret_ledger_head",
		"TRUNCATE lazaret_ledger_head",
		"CREATE TABLE lazaret_events_copy (x int)",
	} {
		if err := postgres.Exec(ctx, l, stmt); err == nil {
			t.Errorf("the writer may %s", stmt)
		}
	}
	asReader, err := postgres.Open(ctx, dsn+"&role="+reader)
	if err != nil {
		t.Fatalf("open as the reader: %v", err)
	}
	defer asReader.Close()
	if v := ledgertest.Verify(t, asReader); !v.Intact() || v.Events != 5 {
		t.Fatalf("verify as the reader: %s\n%s", v, ledgertest.Problems(v))
	}
	if _, err := asReader.Append(ctx, ledgertest.Event("by-reader", premis.Ingestion, 1)); err == nil {
		t.Error("the reader may append")
	}
	owner, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("open as the owner: %v", err)
	}
	owner.Close()
	if got, want := changedIndexes(t, admin), []string{"lazaret_events_batch_seq"}; !slices.Equal(got, want) {
		t.Errorf("after the owner's open: indexes %v, want %v", got, want)
	}
}

// TestMigratesOnceWhenOpenedByManyAtOnce: workers starting together on a
// ledger written before the chain chain it once.
func TestMigratesOnceWhenOpenedByManyAtOnce(t *testing.T) {
	t.Parallel()
	dsn := testenv.Postgres(t)
	writeV0(t, dsn, 3)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			l, err := postgres.Open(context.Background(), dsn)
			if err == nil {
				l.Close()
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	v, openErr := ledgertest.VerifyAt(t, dsn)
	if openErr != nil || !v.Intact() || v.Events != 3 || v.Recorded.Count != 3 {
		t.Fatalf("open %v: %s\n%s", openErr, v, ledgertest.Problems(v))
	}
}

// TestOpenLeavesSpareIndexesItCannotDrop: an open that cannot drop the
// indexes no lookup needs (another session holds the table, or the
// transaction is read-only) leaves them and opens all the same, without
// waiting on the holder; the next open that can drops them.
func TestOpenLeavesSpareIndexesItCannotDrop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, _ := seeded(t)
	admin := connect(t, dsn)
	// A ledger of before: the spare indexes, and the batch index without seq.
	if _, err := admin.Exec(ctx, `CREATE INDEX lazaret_events_task ON lazaret_events(task_id);
		CREATE INDEX lazaret_events_failure ON lazaret_events(class, destination);
		DROP INDEX lazaret_events_batch_seq; CREATE INDEX lazaret_events_batch ON lazaret_events(batch_id)`); err != nil {
		t.Fatal(err)
	}
	before := []string{"lazaret_events_batch", "lazaret_events_failure", "lazaret_events_task"}
	l, err := postgres.Open(ctx, dsn+"&default_transaction_read_only=on")
	if err != nil {
		t.Fatalf("read-only open: %v", err)
	}
	l.Close()
	if got := changedIndexes(t, admin); !slices.Equal(got, before) {
		t.Errorf("after a read-only open: indexes %v, want %v", got, before)
	}
	reader := connect(t, dsn) // a long verify, say
	tx, err := reader.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT count(*) FROM lazaret_events"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if l, err = postgres.Open(ctx, dsn); err != nil {
		t.Fatalf("open while a reader holds the table: %v", err)
	}
	l.Close()
	if waited := time.Since(start); waited > 30*time.Second {
		t.Errorf("open waited %s for the reader", waited)
	}
	// The new index is built beside the reader (CONCURRENTLY waits for no
	// transaction that holds no snapshot); nothing is dropped under it.
	// Built and dropped in Open's transaction, the DROP timed out on the
	// reader and took the build back with it.
	if got, want := changedIndexes(t, admin), []string{"lazaret_events_batch", "lazaret_events_batch_seq", "lazaret_events_failure", "lazaret_events_task"}; !slices.Equal(got, want) {
		t.Errorf("beside a reader: indexes %v, want %v (the old kept, the new built)", got, want)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if l, err = postgres.Open(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if got, want := changedIndexes(t, admin), []string{"lazaret_events_batch_seq"}; !slices.Equal(got, want) {
		t.Errorf("after the owner's open: indexes %v, want %v", got, want)
	}
}

// TestOpenRebuildsAnInvalidBatchIndex: a build of lazaret_events_batch_seq
// that failed (by a DBA's hand, or an open cut short) leaves an invalid
// index of that name, which queries ignore and appends still pay for; the
// owner's next open drops it and builds the index again, and then drops
// the old one.
func TestOpenRebuildsAnInvalidBatchIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, _ := seeded(t)
	admin := connect(t, dsn)
	if _, err := admin.Exec(ctx, `DROP INDEX lazaret_events_batch_seq; CREATE INDEX lazaret_events_batch ON lazaret_events(batch_id)`); err != nil {
		t.Fatal(err)
	}
	// Unique on a column the seed repeats: the build fails, its index stays, invalid.
	if _, err := admin.Exec(ctx, `CREATE UNIQUE INDEX CONCURRENTLY lazaret_events_batch_seq ON lazaret_events(batch_id)`); err == nil {
		t.Fatal("a unique index on batch_id was built over the seed")
	}
	valid := func() (ok, exists bool) {
		t.Helper()
		err := admin.QueryRow(ctx, `SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass('lazaret_events_batch_seq')`).Scan(&ok)
		if errors.Is(err, pgx.ErrNoRows) {
			return false, false
		}
		if err != nil {
			t.Fatal(err)
		}
		return ok, true
	}
	if ok, exists := valid(); ok || !exists {
		t.Fatalf("before the open: valid %v, exists %v; want an invalid index", ok, exists)
	}
	l, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if ok, _ := valid(); !ok {
		t.Error("after the owner's open: lazaret_events_batch_seq is not valid")
	}
	if got, want := changedIndexes(t, admin), []string{"lazaret_events_batch_seq"}; !slices.Equal(got, want) {
		t.Errorf("after the owner's open: indexes %v, want %v", got, want)
	}
	var unique bool
	if err := admin.QueryRow(ctx, `SELECT indisunique FROM pg_index WHERE indexrelid = to_regclass('lazaret_events_batch_seq')`).Scan(&unique); err != nil || unique {
		t.Errorf("the rebuilt index is the failed one (unique %v, %v)", unique, err)
	}
}

// TestIndexChangesDoNotHoldAppendsUp: the owner's open that moves a ledger
// of before onto its indexes, while another process appends, fails no
// append and makes every change.
func TestIndexChangesDoNotHoldAppendsUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testenv.Postgres(t)
	w, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const items, each = 4000, 50
	for i := int64(0); i < items; i += each {
		var evs []*premis.Event
		for n := i; n < i+each; n++ {
			evs = append(evs, ledgertest.AcceptedItem(n)...)
		}
		if _, err := w.Append(ctx, evs...); err != nil {
			t.Fatal(err)
		}
	}
	admin := connect(t, dsn)
	if _, err := admin.Exec(ctx, `CREATE INDEX lazaret_events_task ON lazaret_events(task_id);
		DROP INDEX lazaret_events_batch_seq; CREATE INDEX lazaret_events_batch ON lazaret_events(batch_id)`); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	errs := make(chan error, 2)
	var appended atomic.Int64
	for g := range int64(2) {
		go func() {
			var err error
			for n := items + g; err == nil; n += 2 {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				_, err = w.Append(ctx, ledgertest.AcceptedItem(n)...)
				appended.Add(1)
			}
			errs <- err
		}()
	}
	for appended.Load() < 10 {
		time.Sleep(time.Millisecond)
	}
	l, err := postgres.Open(ctx, dsn)
	close(stop)
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("an append beside the owner's open: %v", err)
		}
	}
	if err != nil {
		t.Fatalf("the owner's open beside appends: %v", err)
	}
	l.Close()
	if got, want := changedIndexes(t, admin), []string{"lazaret_events_batch_seq"}; !slices.Equal(got, want) {
		t.Errorf("after the owner's open beside appends: indexes %v, want %v", got, want)
	}
	if v := ledgertest.Verify(t, w); !v.Intact() {
		t.Fatalf("verify: %s\n%s", v, ledgertest.Problems(v))
	}
}

// changedIndexes lists which of the indexes that an open changes (the
// spare ones it drops, the batch index it replaces) c's schema holds, by
// name.
func changedIndexes(t *testing.T, c *pgx.Conn) []string {
	t.Helper()
	var got []string
	for _, name := range []string{"lazaret_events_batch", "lazaret_events_batch_seq", "lazaret_events_failure", "lazaret_events_task"} {
		var ok bool
		if err := c.QueryRow(context.Background(), `SELECT to_regclass($1) IS NOT NULL`, name).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		if ok {
			got = append(got, name)
		}
	}
	return got
}
