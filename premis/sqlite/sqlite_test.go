package sqlite_test

import (
	"context"
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
