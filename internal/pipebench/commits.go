package pipebench

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/sample"
)

// LedgerCommits appends items accepted masters (sample.AcceptedMaster, one
// Append of four events each) to l from writers goroutines through a
// premis.GroupCommit, as a worker's handlers do, with no worker and no
// broker: what the ledger alone allows. It returns the time and CPU, and
// how the committer grouped the appends. The masters are numbered from
// first, so that runs on one ledger do not collide.
func LedgerCommits(ctx context.Context, l premis.Ledger, items, writers int, first int64) (Run, premis.GroupStats, error) {
	g := premis.NewGroupCommit(l, 0)
	defer g.Stop()
	var next atomic.Int64
	next.Store(first - 1)
	last := first + int64(items) - 1
	var wg sync.WaitGroup
	var once sync.Once
	var ferr error
	c0, t0 := cpuTime(), time.Now()
	for range max(1, writers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := next.Add(1); n <= last; n = next.Add(1) {
				if _, err := g.Append(ctx, sample.AcceptedMaster(n)...); err != nil {
					once.Do(func() { ferr = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	run := Run{Wall: time.Since(t0), CPU: cpuTime() - c0}
	return run, g.Stats(), ferr
}
