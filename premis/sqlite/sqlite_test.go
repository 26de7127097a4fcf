package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/ledgertest"
	"github.com/lazaret/lazaret/premis/sqlite"
)

func TestConformance(t *testing.T) { ledgertest.Conformance(t, newPath) }

func TestAppendOnly(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(ctx, ledgertest.Event("obj", premis.Validation, 1)); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{"UPDATE events SET outcome = 'suc'", "DELETE FROM events"} {
		if err := sqlite.Exec(ctx, l, stmt); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: err = %v, want the append-only refusal", stmt, err)
		}
	}
}

func TestSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	e := ledgertest.Event("obj", premis.Validation, 1)
	if _, err := l.Append(ctx, e); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got, err := l.Event(ctx, e.ID)
	if err != nil || got.Key != e.Key {
		t.Fatalf("after reopen: %+v, %v", got, err)
	}
}

// TestOpenedByManyAtOnce: a worker and a CLI command (or several workers on
// one machine) open the same ledger file at the same moment.
func TestOpenedByManyAtOnce(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		go func(i int) {
			l, err := sqlite.Open(ctx, path)
			if err == nil {
				_, err = l.Append(ctx, ledgertest.Event(fmt.Sprint("obj-", i), premis.Validation, 1))
				l.Close()
			}
			errs <- err
		}(i)
	}
	for i := 0; i < 8; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestConcurrentReadsReuseConnections: eight workers reading their items'
// history while one appends, as a worker at concurrency 8 does, keep their
// connections. Each new one reads the schema and prepares every statement
// again; with database/sql's default of two idle, nearly every read opened
// one.
func TestConcurrentReadsReuseConnections(t *testing.T) {
	ctx := context.Background()
	l, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	g := premis.NewGroupCommit(l, 0)
	defer g.Stop()
	const workers, items = 8, 40
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	start := make(chan struct{}) // the first reads all at once
	for w := range workers {
		wg.Go(func() {
			<-start
			for i := range items {
				evs := ledgertest.AcceptedItem(int64(w*items + i))
				if _, err := g.Events(ctx, premis.Filter{CorrelationID: evs[0].CorrelationID}); err != nil {
					errs <- err
					return
				}
				if _, err := g.Append(ctx, evs...); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := sqlite.Stats(l)
	if st.MaxIdleClosed > 0 || st.OpenConnections > workers+1 {
		t.Errorf("%d connections closed for want of an idle slot, %d open, after %d reads by %d workers; want none closed, at most %d open",
			st.MaxIdleClosed, st.OpenConnections, workers*items, workers, workers+1)
	}
}
