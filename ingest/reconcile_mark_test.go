package ingest_test

import (
	"context"
	"errors"
	"slices"
	"strings"
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

// noDelete is a broker that refuses deletions, as Redis out of memory or
// cut off between the discard's record and its broker step.
type noDelete struct{ ingest.Broker }

func (noDelete) DeleteTask(string, string) error { return errors.New("redis: connection refused") }

// TestReconcileRemovesADiscardedDeadLettersTask: a discard whose broker
// step failed says reconcile-broker removes the archived task it left;
// reconcile-broker does (after a dry run that only lists it), and leaves
// the archived task of a dead letter still open alone.
func TestReconcileRemovesADiscardedDeadLettersTask(t *testing.T) {
	t.Parallel()
	p := fastPolicy()
	p.MaxRetry = 0
	b := setup(t, p)
	b.start()
	b.deadLetters(2, 1, "stale")
	ctx := context.Background()
	fs, err := ingest.Failures(ctx, b.ledger, ingest.FailureFilter{Destination: premis.DeadLetter})
	if err != nil || len(fs) != 2 {
		t.Fatalf("dead letters: %d, %v", len(fs), err)
	}
	gone := fs[0]
	ops := b.ops()
	ops.Broker = noDelete{b.insp}
	_, err = ops.Discard(ctx, gone.ID, "ana", "a duplicate", false)
	if err == nil || !strings.Contains(err.Error(), "reconcile-broker removes it") {
		t.Fatalf("discard with deletions refused: %v", err)
	}
	if _, err := b.insp.GetTaskInfo(ingest.QueueIngest, gone.TaskID); err != nil {
		t.Fatalf("the archived task should still be there: %v", err)
	}
	dry, err := b.ops().ReconcileBroker(ctx, true)
	if err != nil || !slices.Equal(dry.StaleParked, []string{gone.TaskID}) {
		t.Fatalf("dry run: stale %v, %v", dry.StaleParked, err)
	}
	if _, err := b.insp.GetTaskInfo(ingest.QueueIngest, gone.TaskID); err != nil {
		t.Fatalf("a dry run removed the archived task: %v", err)
	}
	rep, err := b.ops().ReconcileBroker(ctx, false)
	if err != nil || !slices.Equal(rep.StaleParked, []string{gone.TaskID}) || len(rep.ArchivedRecorded) != 0 {
		t.Fatalf("reconcile: %+v, %v", rep, err)
	}
	if _, err := b.insp.GetTaskInfo(ingest.QueueIngest, gone.TaskID); err == nil {
		t.Error("the discarded dead letter's archived task is still there")
	}
	if _, err := b.insp.GetTaskInfo(ingest.QueueIngest, fs[1].TaskID); err != nil {
		t.Errorf("the open dead letter's archived task was removed: %v", err)
	}
}
