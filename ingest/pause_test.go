package ingest_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
)

// fullLedger refuses every write (Append and AppendFirst) while full is
// set, as SQLite does when its disk is full (mapped to premis.ErrBusy);
// reads go on.
type fullLedger struct {
	premis.Ledger
	full    atomic.Bool
	refused atomic.Int64
}

func (f *fullLedger) Append(ctx context.Context, evs ...*premis.Event) ([]bool, error) {
	if f.full.Load() {
		f.refused.Add(1)
		return nil, fmt.Errorf("%w: sqlite: database or disk is full (13)", premis.ErrBusy)
	}
	return f.Ledger.Append(ctx, evs...)
}

func (f *fullLedger) AppendFirst(ctx context.Context, firsts []premis.FirstDelivery, evs ...*premis.Event) ([]bool, error) {
	if f.full.Load() {
		f.refused.Add(1)
		return nil, fmt.Errorf("%w: sqlite: database or disk is full (13)", premis.ErrBusy)
	}
	return f.Ledger.AppendFirst(ctx, firsts, evs...)
}

// TestLedgerUnwritableSendsNoGoodMasterToTheDLQ: the ledger refuses every
// write for far longer than the routing schedule (budget 3, at most 200 ms
// apart: spent in a few seconds; the outage lasts 5 s, as a 5-minute
// disk-full does against the default schedule). Before, every task spent
// its routing budget and asynq archived the good masters as
// routing.exhausted (1,110 of them in the fault campaign); now intake
// pauses, the tasks wait in the broker without spending a budget, and
// when the ledger is back every master is accepted and none is archived.
func TestLedgerUnwritableSendsNoGoodMasterToTheDLQ(t *testing.T) {
	t.Parallel()
	p := fastPolicy()
	p.RoutingBudget, p.RoutingBase, p.RoutingMax = 3, 20*time.Millisecond, 200*time.Millisecond
	b := setup(t, p)
	ctx := context.Background()
	batch := b.mixedBatch(10, 0)
	fl := &fullLedger{Ledger: b.ledger}
	fl.full.Store(true)
	b.worker.Ledger = fl
	stop := b.run()
	defer stop()
	time.Sleep(5 * time.Second)
	if fl.refused.Load() <= int64(p.RoutingBudget) {
		t.Fatalf("the workers tried the full ledger %d times: the outage was not exercised", fl.refused.Load())
	}
	if owed := b.owed(batch); len(owed) != 10 {
		t.Fatalf("during the outage %d items are owed, want all 10", len(owed))
	}
	fl.full.Store(false)
	b.waitOutcomes(batch, 30*time.Second)
	st, err := ingest.BatchStatus(ctx, b.ledger, batch)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		if s.Destination != premis.Accepted {
			t.Errorf("%s: %s %s, want accepted", s.ObjectID, s.Destination, s.Code)
		}
	}
	if q, err := b.insp.GetQueueInfo(ingest.QueueIngest); err != nil || q.Archived != 0 {
		t.Errorf("archived %+v, %v; want none", q, err)
	}
	tasks, _ := b.insp.ListCompletedTasks(ingest.QueueIngest)
	for _, ti := range tasks {
		if ti.Retried > 0 {
			t.Errorf("task %s: %d retries counted for a ledger outage", ti.ID, ti.Retried)
		}
	}
}
