package ingest_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/ledgertest"
	"github.com/lazaret/lazaret/premis/sqlite"
)

// TestDoublesConform: the fault-injecting ledgers these tests wrap around
// a real one are whole ledgers when no fault is set: they pass the same
// conformance suite as SQLite, PostgreSQL and the group committer, so a
// test that uses one exercises the ledger, not a narrower stand-in.
func TestDoublesConform(t *testing.T) {
	open := func(t *testing.T) premis.Ledger {
		l, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	for name, wrap := range map[string]func(premis.Ledger) premis.Ledger{
		"cut":     func(l premis.Ledger) premis.Ledger { return &cutLedger{Ledger: l} },
		"hanging": func(l premis.Ledger) premis.Ledger { return &hangingLedger{Ledger: l} },
		"flaky":   func(l premis.Ledger) premis.Ledger { return &flakyLedger{Ledger: l} },
		"full":    func(l premis.Ledger) premis.Ledger { return &fullLedger{Ledger: l} },
	} {
		t.Run(name, func(t *testing.T) {
			ledgertest.Run(t, func(t *testing.T) premis.Ledger { return wrap(open(t)) })
		})
	}
}
