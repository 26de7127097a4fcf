package ingest_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
)

// crashAfterLedger takes n appends, then refuses every one: with a broker
// that refuses too, an operator's action is recorded and neither handed
// off nor rolled back, as when its process is killed in between.
type crashAfterLedger struct {
	premis.Ledger
	n atomic.Int32
}

func (c *crashAfterLedger) Append(ctx context.Context, evs ...*premis.Event) ([]bool, error) {
	if c.n.Add(-1) < 0 {
		return nil, errors.New("process killed")
	}
	return c.Ledger.Append(ctx, evs...)
}

// TestExpectationPassRepairsByItself: no reconcile-broker is run. The
// ingest queue's pending list is evicted under three submitted items, a
// dead letter's archived task is lost, and a replay is recorded but its
// process dies before the enqueue (and the rollback). The workers'
// periodic pass, run by the one worker holding its lease, puts all three
// kinds back (counted by kind), and every item gets an outcome. Before,
// the periodic pass checked only the archived set: all of it stayed
// stranded until a person ran reconcile-broker.
func TestExpectationPassRepairsByItself(t *testing.T) {
	t.Parallel()
	p := fastPolicy()
	p.MaxRetry = 0
	b := setup(t, p)
	ctx := context.Background()
	rc := b.redis()

	stop := b.run()
	dead := b.deadLetters(1, 1, "lost-dl")[0]
	quar := b.mixedBatch(0, 1)
	b.waitOutcomes(quar, 30*time.Second)
	stop()

	// A dead letter's archived task lost.
	if err := b.insp.DeleteTask(ingest.QueueIngest, dead.TaskID()); err != nil {
		t.Fatal(err)
	}
	// A replay killed between its event and its enqueue.
	fs, err := ingest.Failures(ctx, b.ledger, ingest.FailureFilter{Destination: premis.Quarantined})
	if err != nil || len(fs) != 1 {
		t.Fatalf("quarantined: %v %v", fs, err)
	}
	crashed := b.ops()
	cl := &crashAfterLedger{Ledger: b.ledger}
	cl.n.Store(1)
	crashed.Ledger, crashed.Enqueuer = cl, failingBroker{}
	if _, err := crashed.Replay(ctx, fs[0].ID, ingest.ReplayOptions{Operator: "ann", Reason: "fixed", Set: map[string]string{"resolution_dpi": "400"}}); err == nil {
		t.Fatal("a replay whose enqueue failed reported success")
	}
	// Three submissions whose pending list was evicted.
	m, dir := b.manifest(3)
	m.BatchID = "evicted"
	if _, err := ingest.Submit(ctx, b.ledger, b.client, m, dir, ingest.SubmitOptions{Policy: b.worker.Policy}); err != nil {
		t.Fatal(err)
	}
	if err := rc.Del(ctx, "asynq:{ingest}:pending").Err(); err != nil {
		t.Fatal(err)
	}

	pass := &ingest.ExpectationPass{Op: b.ops(), Redis: rc, Name: "w1", Every: time.Minute, Page: 2, Settle: time.Nanosecond}
	other := &ingest.ExpectationPass{Op: b.ops(), Redis: rc, Name: "w2", Every: time.Minute, Page: 2, Settle: time.Nanosecond}
	repaired := map[string]int{}
	for round := 0; round < 4; round++ {
		rep, ran, err := pass.Tick(ctx)
		if err != nil || !ran {
			t.Fatalf("tick %d: ran %v, %v", round, ran, err)
		}
		repaired["reenqueued"] += len(rep.Reenqueued)
		repaired["rearchived"] += len(rep.Rearchived)
		repaired["broker_lost"] += len(rep.BrokerLost)
		if _, ran, err := other.Tick(ctx); ran || err != nil {
			t.Fatalf("a second worker ran the pass while the first holds the lease: %v", err)
		}
	}
	// Three evicted submissions and the replay re-enqueued; the dead
	// letter archived again.
	if repaired["reenqueued"] != 4 || repaired["rearchived"] != 1 || repaired["broker_lost"] != 4 {
		t.Fatalf("repaired %v, want 4 reenqueued (3 lost, the replay), 1 rearchived", repaired)
	}
	stop = b.run()
	defer stop()
	b.waitOutcomes("evicted", 30*time.Second)
	b.settledAfter(fs[0].CorrelationID, premis.Accepted, 30*time.Second) // the replay, finished
	if got := b.events(dead.CorrelationID); got[len(got)-1].Destination != premis.DeadLetter {
		t.Fatalf("dead letter now %s", got[len(got)-1].Destination)
	}
	b.waitState(ingest.QueueIngest, dead.TaskID(), asynq.TaskStateArchived, 5*time.Second)
}
