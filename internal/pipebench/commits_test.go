package pipebench_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lazaret/lazaret/internal/pipebench"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/sample"
	"github.com/lazaret/lazaret/premis/sqlite"
)

// failingLedger fails every Append after the first ok, counting them.
type failingLedger struct {
	premis.Ledger
	ok, calls atomic.Int64
}

var errFull = errors.New("disk full")

func (f *failingLedger) Append(ctx context.Context, events ...*premis.Event) ([]bool, error) {
	if f.calls.Add(1) > f.ok.Load() {
		return nil, errFull
	}
	return f.Ledger.Append(ctx, events...)
}

// TestLedgerCommits: every master is committed once, in groups the stats
// count; a ledger that is not empty, or that fails, stops the run with an
// error.
func TestLedgerCommits(t *testing.T) {
	ctx := context.Background()
	l := sqliteLedger(t)
	_, st, err := pipebench.LedgerCommits(ctx, l, 300, 4)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := l.Events(ctx, premis.Filter{})
	if err != nil || len(evs) != 1200 {
		t.Fatalf("the ledger holds %d events (%v), want 1200", len(evs), err)
	}
	if st.Appends != 300 || st.Commits < 75 || st.Commits > 300 {
		t.Errorf("stats %+v: want 300 appends in 75 to 300 commits", st)
	}
	if _, _, err := pipebench.LedgerCommits(ctx, l, 10, 2); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("a second run on the same ledger: %v", err)
	}
	f := &failingLedger{Ledger: sqliteLedger(t)}
	f.ok.Store(20)
	if _, _, err := pipebench.LedgerCommits(ctx, f, 5000, 4); !errors.Is(err, errFull) {
		t.Errorf("a failing ledger: %v, want %v", err, errFull)
	}
	if n := f.calls.Load(); n > 40 {
		t.Errorf("the writers went on after the failure: %d appends", n)
	}
}

// TestUnwrittenWritesNothing: the ceiling's ledger answers an append as
// inserted, with the events prepared as a ledger prepares them, and the
// ledger under it stays empty.
func TestUnwrittenWritesNothing(t *testing.T) {
	ctx := context.Background()
	l, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	u := pipebench.Unwritten(l)
	evs := sample.AcceptedMaster(1)
	ins, err := u.Append(ctx, evs...)
	if err != nil || len(ins) != len(evs) {
		t.Fatalf("append: %v %v", ins, err)
	}
	for i, e := range evs {
		if !ins[i] || e.ID == "" || e.DateTime.IsZero() {
			t.Errorf("event %d: inserted %v, id %q, time %v", i, ins[i], e.ID, e.DateTime)
		}
	}
	stored, err := u.Events(ctx, premis.Filter{})
	if err != nil || len(stored) != 0 {
		t.Errorf("the ledger under it holds %d events (%v), want none", len(stored), err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := u.Append(cancelled, sample.AcceptedMaster(2)...); err == nil {
		t.Error("an append with its context cancelled succeeded")
	}
}
