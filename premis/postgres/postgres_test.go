package postgres_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/ledgertest"
	"github.com/lazaret/lazaret/premis/postgres"
)

// newDSN is a new ledger: a schema of its own, dropped after the test.
func newDSN(t *testing.T) string { return testenv.Postgres(t) }

func TestConformance(t *testing.T) { ledgertest.Conformance(t, newDSN) }

func TestAppendOnly(t *testing.T) {
	ctx := context.Background()
	dsn := testenv.Postgres(t)
	l, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(ctx, ledgertest.Event("obj", premis.Validation, 1)); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{"UPDATE lazaret_events SET outcome = 'suc'", "DELETE FROM lazaret_events"} {
		if err := postgres.Exec(ctx, l, stmt); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: err = %v, want the append-only refusal", stmt, err)
		}
	}
}

// TestAuditReadsALedgerBeforeMembers: the read commands (which open for
// audit) answer on a ledger written before the members column.
func TestAuditReadsALedgerBeforeMembers(t *testing.T) {
	ctx := context.Background()
	dsn := testenv.Postgres(t)
	l, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	evs := []*premis.Event{ledgertest.Event("old-a", premis.Validation, 1), ledgertest.Event("old-b", premis.Validation, 1)}
	if _, err := l.Append(ctx, evs...); err != nil {
		t.Fatal(err)
	}
	// What a ledger of the version before holds: no members column.
	if err := postgres.Exec(ctx, l, "ALTER TABLE lazaret_events DROP COLUMN members"); err != nil {
		t.Fatal(err)
	}
	l.Close()
	a, err := postgres.OpenAudit(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ledgertest.ReadsBeforeMembers(t, a, evs)
	if v := ledgertest.Verify(t, a); !v.Intact() || v.Events != 2 {
		t.Errorf("audit of a ledger before members: %s\n%s", v, ledgertest.Problems(v))
	}
}

// TestManyProcessesOneLedger: several ledgers (as on several machines) open
// the same database at once and append the same redelivered events; each
// key is stored once.
func TestManyProcessesOneLedger(t *testing.T) {
	ctx := context.Background()
	dsn := testenv.Postgres(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for n := 0; n < 4; n++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := postgres.Open(ctx, dsn)
			if err != nil {
				errs <- err
				return
			}
			defer l.Close()
			for i := 0; i < 20; i++ {
				if _, err := l.Append(ctx, ledgertest.Event("shared", premis.Validation, i)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	l, _ := postgres.Open(ctx, dsn)
	defer l.Close()
	evs, err := l.Events(ctx, premis.Filter{ObjectID: "shared"})
	if err != nil || len(evs) != 20 {
		t.Fatalf("%d events (err %v), want 20", len(evs), err)
	}
}

// TestAppendsUseTheKeyIndex: a ledger that starts empty keeps looking its
// appends' keys up through the key index as it grows, on connections that
// have run the same statements hundreds of times. Without noSeqScan the
// generic plan PostgreSQL settles on for a few rows is a sequential scan,
// two for each append (611 in these 300), and an append costs the whole
// table.
func TestAppendsUseTheKeyIndex(t *testing.T) {
	ctx := context.Background()
	dsn := testenv.Postgres(t)
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var counts string
	if err := c.QueryRow(ctx, "SHOW track_counts").Scan(&counts); err != nil || counts != "on" {
		if testenv.InCI() {
			t.Fatalf("this PostgreSQL counts no scans (track_counts %q, %v)", counts, err)
		}
		t.Skipf("this PostgreSQL counts no scans (track_counts %q, %v)", counts, err)
	}
	l, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	const appends = 300
	for i := range appends {
		if _, err := l.Append(ctx, ledgertest.AcceptedItem(int64(i))...); err != nil {
			t.Fatal(err)
		}
	}
	l.Close() // a backend reports its table counts as it exits
	var seq, idx int64
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		err := c.QueryRow(ctx, `SELECT seq_scan, idx_scan FROM pg_stat_user_tables
			WHERE schemaname = current_schema() AND relname = 'lazaret_events'`).Scan(&seq, &idx)
		if err != nil {
			t.Fatal(err)
		}
		// Every append reads the last event by seq (the head's trigger).
		if idx >= appends || time.Now().After(deadline) {
			break
		}
	}
	if idx < appends {
		t.Fatalf("the table's counts were not reported: %d index scans after %d appends", idx, appends)
	}
	if seq > 20 {
		t.Errorf("%d sequential scans of the events in %d appends (%d index scans), want none past the first few", seq, appends, idx)
	}
}
