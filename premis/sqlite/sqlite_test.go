package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/ledgertest"
	"github.com/lazaret/lazaret/premis/sqlite"
)

func open(t *testing.T) premis.Ledger {
	t.Helper()
	l, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestConformance(t *testing.T) { ledgertest.Run(t, open) }

// TestConformanceGroupCommit: batching concurrent appends changes nothing
// a caller can see.
func TestConformanceGroupCommit(t *testing.T) {
	ledgertest.Run(t, func(t *testing.T) premis.Ledger {
		g := premis.NewGroupCommit(open(t), 0)
		t.Cleanup(g.Stop)
		return g
	})
}

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
