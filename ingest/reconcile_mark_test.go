package ingest_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
)

// readCounter counts the items a reconciliation's pages hand back.
type readCounter struct {
	premis.Ledger
	latest atomic.Int64
}

func (c *readCounter) Events(ctx context.Context, f premis.Filter) ([]premis.Event, error) {
	evs, err := c.Ledger.Events(ctx, f)
	if f.Latest {
		c.latest.Add(int64(len(evs)))
	}
	return evs, err
}

// TestWorkerStartReadsOnFromTheMark: a worker restarted against the Redis
// data a pass already reconciled reads only what changed after the mark
// that pass left, and still enqueues an item whose submitter died between
// the ledger and the broker; the mark is void for other data (a restart,
// a flush), where the whole ledger is read again.
func TestWorkerStartReadsOnFromTheMark(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: b.opt.Addr, DB: b.opt.DB})
	defer rc.Close()
	id := ingest.BrokerDataID(ctx, rc)
	if id == "?" {
		t.Fatal("no data id from a running Redis")
	}
	if got := ingest.ReconciledThrough(ctx, rc, id); got != 0 {
		t.Fatalf("a broker never reconciled has a mark: %d", got)
	}

	m, dir := b.manifest(30)
	if _, err := ingest.Submit(ctx, b.ledger, b.client, m, dir, ingest.SubmitOptions{Policy: b.worker.Policy}); err != nil {
		t.Fatal(err)
	}
	counter := &readCounter{Ledger: b.ledger}
	ops := b.ops()
	ops.Ledger = counter
	rep, through, err := ops.ReconcileBrokerSince(ctx, ingest.ReconciledThrough(ctx, rc, id), false)
	if err != nil || len(rep.Reenqueued) != 0 || through == 0 {
		t.Fatalf("first pass: %+v through %d, %v", rep, through, err)
	}
	if n := counter.latest.Load(); n != 30 {
		t.Fatalf("the first pass read %d items, want all 30", n)
	}
	if err := ingest.MarkReconciled(ctx, rc, id, through); err != nil {
		t.Fatal(err)
	}

	// A submitter that recorded two more items and died before the
	// broker took them.
	more, moreDir := b.manifest(2)
	more.BatchID = "after-the-mark"
	if _, err := ingest.Submit(ctx, b.ledger, failingBroker{}, more, moreDir, ingest.SubmitOptions{Policy: b.worker.Policy}); err == nil {
		t.Fatal("a submission the broker refused reported success")
	}

	counter.latest.Store(0)
	since := ingest.ReconciledThrough(ctx, rc, id)
	if since != through {
		t.Fatalf("the mark reads back as %d, want %d", since, through)
	}
	rep, next, err := ops.ReconcileBrokerSince(ctx, since, false)
	if err != nil || len(rep.Reenqueued) != 2 {
		t.Fatalf("pass from the mark: %+v, %v; want the two unenqueued items enqueued", rep, err)
	}
	if n := counter.latest.Load(); n != 2 {
		t.Errorf("the pass from the mark read %d items, want only the 2 after it", n)
	}
	if next <= through {
		t.Errorf("the next mark %d does not move past %d", next, through)
	}

	if got := ingest.ReconciledThrough(ctx, rc, id+"x"); got != 0 {
		t.Errorf("the mark of other data reads as %d", got)
	}
	b.flushRedis()
	if got := ingest.ReconciledThrough(ctx, rc, id); got != 0 {
		t.Errorf("after a flush the mark reads as %d, want a whole pass", got)
	}
}
