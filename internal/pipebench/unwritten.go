package pipebench

import (
	"context"

	"github.com/lazaret/lazaret/premis"
)

// Unwritten is l with its appends left out: Append prepares the events
// (ids, times), as a ledger does, and reports every one as inserted, but
// writes nothing; every read goes to l, which stays as it was. Draining
// the pipeline into it measures what the worker and the broker cost with
// no ledger writes (no commit, no fsync, and reader caches that no commit
// clears): the most that any cheaper record or commit could reach. It
// keeps no promise, so it is for lazaret bench alone.
func Unwritten(l premis.Ledger) premis.Ledger { return unwritten{l} }

type unwritten struct{ premis.Ledger }

func (u unwritten) Append(ctx context.Context, events ...*premis.Event) ([]bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	if err := premis.Prepare(events...); err != nil {
		return nil, err
	}
	inserted := make([]bool, len(events))
	for i := range inserted {
		inserted[i] = true
	}
	return inserted, nil
}
