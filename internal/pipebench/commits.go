package pipebench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/sample"
)

// LedgerCommits appends items accepted masters (sample.AcceptedMaster, one
// Append of one record, four events, each) to the empty ledger l from writers
// goroutines through a premis.GroupCommit, as a worker's handlers do, with
// no worker and no broker: what the ledger alone allows. It returns the
// time and CPU, and how the committer grouped the appends. The first
// error stops every writer; a master found stored already is an error (the
// ledger was not empty, and the run would measure deduplication).
func LedgerCommits(ctx context.Context, l premis.Ledger, items, writers int) (Run, premis.GroupStats, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	g := premis.NewGroupCommit(l, 0)
	defer g.Stop()
	var next atomic.Int64
	var wg sync.WaitGroup
	c0, t0 := cpuTime(), time.Now()
	for range max(1, writers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := next.Add(1); n <= int64(items) && ctx.Err() == nil; n = next.Add(1) {
				ins, err := g.Append(ctx, sample.AcceptedMaster(n)...)
				if err == nil && slices.Contains(ins, false) {
					err = fmt.Errorf("master %d was stored already: the ledger is not empty", n)
				}
				if err != nil {
					cancel(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	run := Run{Wall: time.Since(t0), CPU: cpuTime() - c0}
	return run, g.Stats(), context.Cause(ctx)
}
