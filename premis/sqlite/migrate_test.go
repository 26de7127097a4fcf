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

// writeV1 creates a ledger of the schema before events_item
// (testdata/schema-v1.sql) holding n chained events, as that version's
// Append wrote them: head moved, read model filled.
func writeV1(t testing.TB, path string, n int) []*premis.Event {
	t.Helper()
	schema, err := os.ReadFile("testdata/schema-v1.sql")
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
	if _, err := db.Exec(`INSERT INTO ledger_head (id, event_count, last_hash) VALUES (1, 0, ?)`, premis.ChainGenesis); err != nil {
		t.Fatal(err)
	}
	insert := "INSERT INTO events (" + ledgersql.ColumnsBeforeMembers + ", prev_hash, hash) VALUES (?" + strings.Repeat(",?", ledgersql.NumColumnsBeforeMembers+1) + ")"
	head := premis.Head{Hash: premis.ChainGenesis}
	var evs []*premis.Event
	for i := range n {
		e := ledgertest.Event("v1-"+string(rune('a'+i)), premis.Validation, 1)
		if err := premis.Prepare(e); err != nil {
			t.Fatal(err)
		}
		hash := premis.ChainHash(head.Hash, e)
		res, err := db.Exec(insert, e.ID, e.Key, e.Type, e.DateTime.Format(time.RFC3339Nano), e.Detail, e.Outcome,
			e.Note, e.Class, e.Code, e.Message, e.Offset, e.Page, e.Segment, e.Element, e.Component, e.Tag, e.Destination,
			e.ObjectID, e.BatchID, e.CorrelationID, e.Kind, e.SHA256, e.Size, e.PUID, e.Path, e.Attempt, e.Retries,
			e.TaskID, e.ReplayOf, e.Agent, e.Operator, e.Envelope, head.Hash, hash)
		if err != nil {
			t.Fatal(err)
		}
		seq, _ := res.LastInsertId()
		if _, err := db.Exec(`INSERT INTO latest (correlation_id, seq, destination, batch_id) VALUES (?, ?, ?, ?)`,
			e.CorrelationID, seq, e.Destination, e.BatchID); err != nil {
			t.Fatal(err)
		}
		head = premis.Head{Count: head.Count + 1, Hash: hash}
		if _, err := db.Exec(`UPDATE ledger_head SET event_count = ?, last_hash = ? WHERE id = 1`, head.Count, head.Hash); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e)
	}
	return evs
}

// TestMovesLedgerOntoItemIndex: a ledger written before events_item opens
// onto it (the index, the new replace guard, the redundant indexes gone)
// with its chain and read model intact; an event it holds is still found
// by its key, and a replace still cannot overwrite one.
func TestMovesLedgerOntoItemIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	old := writeV1(t, path, 3)
	a, err := sqlite.OpenAudit(ctx, path) // lazaret ledger verify --audit moves nothing
	if err != nil {
		t.Fatal(err)
	}
	if v := ledgertest.Verify(t, a); !v.Intact() || v.Events != 3 {
		t.Fatalf("the old ledger, audited before the move: %s\n%s", v, ledgertest.Problems(v))
	}
	ledgertest.ReadsBeforeMembers(t, a, old) // what events ls, export and batch status ask
	a.Close()
	l, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	again := ledgertest.Event("v1-b", premis.Validation, 1)
	ins, err := l.Append(ctx, again)
	if err != nil || ins[0] {
		t.Fatalf("an event the old ledger holds was appended again: inserted %v, %v", ins, err)
	}
	if again.ID != old[1].ID {
		t.Errorf("duplicate filled from id %s, want %s", again.ID, old[1].ID)
	}
	if _, err := l.Append(ctx, ledgertest.Event("after", premis.Validation, 1)); err != nil {
		t.Fatal(err)
	}
	if v := ledgertest.Verify(t, l); !v.Intact() || v.Events != 4 {
		t.Fatalf("moved ledger: %s\n%s", v, ledgertest.Problems(v))
	}
	l.Close()

	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var names string
	if err := db.QueryRow(`SELECT group_concat(name, ' ') FROM (SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events' AND name LIKE 'events_%' ORDER BY name)`).Scan(&names); err != nil {
		t.Fatal(err)
	}
	if names != "events_batch events_datetime events_item events_members events_object" {
		t.Errorf("indexes after the move: %s", names)
	}
	if _, err := db.Exec(`INSERT OR REPLACE INTO events (id, key, correlation_id, type, datetime, outcome, object_id)
		SELECT 'forged', key, correlation_id, 'ing', datetime, 'suc', object_id FROM events WHERE seq = 2`); err != nil {
		t.Fatal(err)
	}
	if v, openErr := ledgertest.VerifyAt(t, path); openErr != nil || !v.Intact() || v.Events != 4 {
		t.Errorf("a replace by item key changed the moved ledger: open %v, %s", openErr, v)
	}
}

// TestDoesNotMoveAnAlteredLedger: a ledger before events_item whose
// replace guard was altered is not moved (that would bless it).
func TestDoesNotMoveAnAlteredLedger(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	writeV1(t, path, 2)
	attack(t, path, "DROP TRIGGER events_no_replace", `CREATE TRIGGER events_no_replace BEFORE INSERT ON events WHEN 0 BEGIN SELECT RAISE(IGNORE); END`)
	if _, err := sqlite.Open(context.Background(), path); !errors.Is(err, premis.ErrTampered) || !strings.Contains(err.Error(), "events_no_replace: altered") {
		t.Fatalf("open: %v, want premis.ErrTampered naming events_no_replace", err)
	}
	if n := count(t, path, `SELECT count(*) FROM sqlite_master WHERE name = 'events_item'`); n != 0 {
		t.Fatalf("events_item created (%d)", n)
	}
}

// TestMovesOnceWhenOpenedByManyAtOnce: workers starting together on a
// ledger written before events_item move it once, and every one of them
// opens it.
func TestMovesOnceWhenOpenedByManyAtOnce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	writeV1(t, path, 3)
	openAtOnce(t, path, 4)
	v, openErr := ledgertest.VerifyAt(t, path)
	if openErr != nil || !v.Intact() || v.Events != 3 || v.Recorded.Count != 3 {
		t.Fatalf("open %v: %s\n%s", openErr, v, ledgertest.Problems(v))
	}
}
