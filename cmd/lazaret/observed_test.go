package main

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/ledgertest"
	"github.com/lazaret/lazaret/premis/sqlite"
)

// TestObservedLedgerConforms: the ledger workers and serve write through
// (a group committer whose appends are timed) is a whole ledger: it passes
// the conformance suite SQLite and PostgreSQL pass, and every append it
// forwards is observed.
func TestObservedLedgerConforms(t *testing.T) {
	var observed atomic.Int64
	ledgertest.Run(t, func(t *testing.T) premis.Ledger {
		l, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"))
		if err != nil {
			t.Fatal(err)
		}
		g := premis.NewGroupCommit(l, 0)
		t.Cleanup(func() { g.Close() })
		return observeAppends(g, func(time.Duration, error) { observed.Add(1) })
	})
	if observed.Load() == 0 {
		t.Error("no append was observed")
	}
}
