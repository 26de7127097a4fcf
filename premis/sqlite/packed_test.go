package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/ledgertest"
	"github.com/lazaret/lazaret/premis/sqlite"
)

// TestConformanceTextFormat: a ledger in the text format every ledger had
// before the packed one passes the whole conformance suite still, the
// build appending to it and reading it in that format.
func TestConformanceTextFormat(t *testing.T) { ledgertest.Conformance(t, newTextPath) }

// submission is an event as a submission writes it: identifiers in their
// canonical forms, a detail that repeats the row's batch and task.
func submission(obj string) *premis.Event {
	e := ledgertest.Event(obj, premis.IngestionStart, 1)
	e.CorrelationID = "4fcc9464-8b3d-5f1b-af43-eaa2d22f9a73"
	e.SHA256 = strings.Repeat("0123456789abcdef", 4)
	e.BatchID, e.TaskID = "bench-f2c68c2c1df2", "ing-83c143c8aed1e94bffeb5af943e879fb"
	e.Destination = premis.Submitted
	e.Detail = "submitted in batch " + e.BatchID + "; expected in the ingest queue as task " + e.TaskID
	return e
}

type column struct {
	typ string
	n   int
}

// stored is how the file holds each named column of the event with id.
func stored(t *testing.T, path, id string, cols ...string) map[string]column {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]column{}
	for _, c := range cols {
		var col column
		q := `SELECT typeof(` + c + `), length(CAST(` + c + ` AS BLOB)) FROM events WHERE seq = (SELECT max(seq) FROM events)`
		if err := db.QueryRow(q).Scan(&col.typ, &col.n); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		out[c] = col
	}
	return out
}

// TestPackedFormat: a new ledger stores identifiers and digests as their
// bytes, the time as an integer and a submission's detail compressed, and
// reads back the event it was given; finding it by id, item key and
// correlation, and its item in the read model, work on the packed values.
func TestPackedFormat(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	e := submission("obj-1")
	if _, err := l.Append(ctx, e); err != nil {
		t.Fatal(err)
	}
	want := map[string]column{"id": {"blob", 16}, "key": {"blob", 32}, "correlation_id": {"blob", 16}, "sha256": {"blob", 32},
		"prev_hash": {"blob", 4}, "hash": {"blob", 32}, "datetime": {"integer", 19}}
	got := stored(t, path, e.ID, "id", "key", "correlation_id", "sha256", "prev_hash", "hash", "datetime", "detail")
	for c, w := range want {
		if got[c] != w {
			t.Errorf("%s stored as %+v, want %+v", c, got[c], w)
		}
	}
	declared := map[string]string{}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT m.name || '.' || p.name, p.type FROM sqlite_master m JOIN pragma_table_info(m.name) p WHERE m.type = 'table'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var col, typ string
		if err := rows.Scan(&col, &typ); err != nil {
			t.Fatal(err)
		}
		declared[col] = typ
	}
	rows.Close()
	for _, c := range []string{"events.id", "events.key", "events.detail", "events.correlation_id", "events.sha256", "events.prev_hash",
		"events.hash", "latest.correlation_id", "ledger_head.last_hash"} {
		if declared[c] != "BLOB" {
			t.Errorf("%s declared %q, want BLOB", c, declared[c])
		}
	}
	if declared["events.datetime"] != "INTEGER" {
		t.Errorf("events.datetime declared %q", declared["events.datetime"])
	}
	if d := got["detail"]; d.typ != "blob" || d.n >= 40 {
		t.Errorf("the submission's %d-byte detail stored as %+v, want compressed under 40 bytes", len(e.Detail), d)
	}
	for _, f := range []premis.Filter{{CorrelationID: e.CorrelationID}, {Key: e.Key}, {CorrelationID: e.CorrelationID, Latest: true},
		{Destination: premis.Submitted, Latest: true, Limit: 5}} {
		evs, err := l.Events(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 1 {
			t.Fatalf("%+v: %d events, want 1", f, len(evs))
		}
		if g := evs[0]; g.ID != e.ID || g.Detail != e.Detail || g.SHA256 != e.SHA256 || !g.DateTime.Equal(e.DateTime) ||
			g.PrevHash != premis.ChainGenesis || g.Hash != premis.ChainHash(g.PrevHash, &g) {
			t.Errorf("%+v: read back %+v, want %+v", f, g, *e)
		}
	}
	byID, err := l.Event(ctx, e.ID)
	if err != nil || byID.Hash != e.Hash {
		t.Fatalf("Event(%s) = %+v, %v", e.ID, byID, err)
	}
	lt, ok, err := l.LatestOf(ctx, e.CorrelationID)
	if err != nil || !ok || lt.Destination != premis.Submitted {
		t.Fatalf("LatestOf = %+v %v %v", lt, ok, err)
	}
	all, err := l.LatestOfAll(ctx, []string{e.CorrelationID, "not-a-uuid"})
	if err != nil || len(all) != 1 || all[e.CorrelationID].Seq != lt.Seq {
		t.Fatalf("LatestOfAll = %+v %v", all, err)
	}
	// The same item again: found by its packed key, not stored twice.
	again := *e
	again.ID = ""
	if ins, err := l.Append(ctx, &again); err != nil || ins[0] || again.ID != e.ID {
		t.Fatalf("a duplicate appended: inserted %v, id %s, %v", ins, again.ID, err)
	}
	verifyIntact(t, l)
	// A build from before the format would insert its time as text: the
	// ledger refuses the row.
	err = sqlite.Exec(ctx, l, `INSERT INTO events (id, key, type, datetime, outcome, object_id) VALUES ('x', 'x', 'ing', '2026-01-01T00:00:00Z', 'suc', 'm2')`)
	if err == nil || !strings.Contains(err.Error(), "CHECK constraint failed") {
		t.Fatalf("a row with a text time: %v, want it refused", err)
	}
}

// TestTextLedgerStaysText: a ledger written in the text format is
// appended to in that format by this build, and reopens.
func TestTextLedgerStaysText(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := sqlite.OpenText(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, ledgertest.Event("a", premis.Validation, 1)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if l, err = sqlite.Open(ctx, path); err != nil { // as a build that creates packed ledgers opens it
		t.Fatal(err)
	}
	defer l.Close()
	e := submission("obj-2")
	if _, err := l.Append(ctx, e); err != nil {
		t.Fatal(err)
	}
	got := stored(t, path, e.ID, "id", "correlation_id", "hash", "datetime", "detail")
	for c, col := range got {
		if col.typ != "text" {
			t.Errorf("%s stored as %+v in a text ledger", c, col)
		}
	}
	evs, err := l.Events(ctx, premis.Filter{CorrelationID: e.CorrelationID})
	if err != nil || len(evs) != 1 || evs[0].Detail != e.Detail {
		t.Fatalf("read back %+v, %v", evs, err)
	}
	verifyIntact(t, l)
}

// TestPackedRefusesTimesItCannotStore: an event dated where nanoseconds
// since 1970 overflow is refused with a clear error, and nothing is
// stored.
func TestPackedRefusesTimesItCannotStore(t *testing.T) {
	ctx := context.Background()
	l, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	e := ledgertest.Event("old", premis.Validation, 1)
	e.DateTime = time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := l.Append(ctx, e); err == nil || !strings.Contains(err.Error(), "1678 to 2262") {
		t.Fatalf("err = %v, want the range refused", err)
	}
	if n, err := l.CountEvents(ctx, premis.Filter{}); err != nil || n != 0 {
		t.Fatalf("%d events stored, %v", n, err)
	}
	// A filter bound outside the range still bounds.
	if _, err := l.Events(ctx, premis.Filter{Since: time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC), Until: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
}

// TestPackedCanonicalTextIsDamage: a canonical identifier stored as text
// in a packed ledger (written past the ledger: lookups by it would miss
// it) reads as a damaged row, not as the identifier.
func TestPackedCanonicalTextIsDamage(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	e := submission("obj-3")
	if _, err := l.Append(ctx, e); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{"DROP TRIGGER events_no_update",
		"UPDATE events SET correlation_id = '" + e.CorrelationID + "'", sqlite.GuardSQL("events_no_update")} {
		if err := sqlite.Exec(ctx, l, stmt); err != nil {
			t.Fatal(err)
		}
	}
	_, err = l.Events(ctx, premis.Filter{})
	if err == nil || !strings.Contains(err.Error(), "correlation_id") || !strings.Contains(err.Error(), "canonical text stored as text") {
		t.Fatalf("err = %v, want the correlation_id refused", err)
	}
	l.Close()
	a, err := sqlite.OpenAudit(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	v, err := premis.Verify(ctx, a)
	if err != nil || v.Intact() || !strings.Contains(v.String(), "does not decode") {
		t.Fatalf("verify: %v %v, want the row reported", v, err)
	}
}

func verifyIntact(t *testing.T, a premis.Auditor) {
	t.Helper()
	v, err := premis.Verify(context.Background(), a)
	if err != nil || !v.Intact() {
		t.Fatalf("verify: %v %v", v, err)
	}
}
