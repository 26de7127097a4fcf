package ingest_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/sqlite"
)

// redis is a client of the test's own Redis, closed when the test ends.
func (b *bundle) redis() redis.UniversalClient {
	rc := redis.NewClient(&redis.Options{Addr: b.opt.Addr, DB: b.opt.DB})
	b.t.Cleanup(func() { rc.Close() })
	return rc
}

// run starts a worker server for the bundle's worker and returns its stop.
func (b *bundle) run() (stop func()) {
	b.t.Helper()
	srv, mux := ingest.NewServer(b.opt, b.worker, ingest.ServerConfig{Concurrency: 4, PollInterval: 50 * time.Millisecond, ShutdownTimeout: 5 * time.Second})
	if err := srv.Start(mux); err != nil {
		b.t.Fatal(err)
	}
	return srv.Shutdown
}

// mixedBatch submits n good masters and q whose resolution is not a
// number (quarantined), and returns the batch id.
func (b *bundle) mixedBatch(n, q int) string {
	b.t.Helper()
	m, dir := b.manifest(n + q)
	for i := n; i < n+q; i++ {
		m.Items[i].ResolutionDPI = "abc"
	}
	if _, err := ingest.Submit(context.Background(), b.ledger, b.client, m, dir, ingest.SubmitOptions{Policy: b.worker.Policy}); err != nil {
		b.t.Fatal(err)
	}
	return m.BatchID
}

// owed lists the items of a batch whose latest event still expects
// broker work (no outcome yet).
func (b *bundle) owed(batch string) []string {
	b.t.Helper()
	st, err := ingest.BatchStatus(context.Background(), b.ledger, batch)
	if err != nil {
		b.t.Fatal(err)
	}
	var out []string
	for _, s := range st {
		switch s.Destination {
		case premis.Submitted, premis.Retry, premis.Replayed:
			out = append(out, s.ObjectID+"="+string(s.Destination))
		}
	}
	return out
}

// waitOutcomes waits until every item of a batch has an outcome.
func (b *bundle) waitOutcomes(batch string, timeout time.Duration) {
	b.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		owed := b.owed(batch)
		if len(owed) == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("%d items have no outcome after %s: %v", len(owed), timeout, owed)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// parkedOnce checks that no task id and no item is parked twice.
func (b *bundle) parkedOnce() int {
	b.t.Helper()
	ids, items := map[string]bool{}, map[string]string{}
	n := 0
	for _, q := range []string{ingest.QueueQuarantine, ingest.QueueAuditHold} {
		parked, err := ingest.ListParked(b.insp, q)
		if err != nil {
			b.t.Fatal(err)
		}
		for _, p := range parked {
			if ids[p.TaskID] {
				b.t.Errorf("task %s parked twice", p.TaskID)
			}
			ids[p.TaskID] = true
			if other, ok := items[p.Held.Envelope.CorrelationID]; ok {
				b.t.Errorf("item %s parked twice: %s and %s", p.Held.Envelope.ObjectID, other, p.TaskID)
			}
			items[p.Held.Envelope.CorrelationID] = p.TaskID
			n++
		}
	}
	return n
}

// copyLedger copies a closed SQLite ledger's files from one folder to
// another (a backup, or its restore).
func copyLedger(t *testing.T, from, to string) {
	t.Helper()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(filepath.Join(to, "ledger.db"+suffix))
		src, err := os.Open(filepath.Join(from, "ledger.db"+suffix))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		dst, err := os.Create(filepath.Join(to, "ledger.db"+suffix))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(dst, src); err != nil {
			t.Fatal(err)
		}
		src.Close()
		if err := dst.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// reopen closes the bundle's ledger, calls between, and opens it again.
func (b *bundle) reopen(between func()) {
	b.t.Helper()
	if err := b.ledger.Close(); err != nil {
		b.t.Fatal(err)
	}
	between()
	l, err := sqlite.Open(context.Background(), filepath.Join(b.dir, "ledger.db"))
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { l.Close() })
	b.ledger, b.worker.Ledger = l, l
}

// TestRestoredLedgerBackupIsRunAgain: the ledger is restored from a backup
// taken after submission, once the workers had decided every item (Redis
// keeps the completed tasks, their ids retained). Before, reconcile-broker
// took those completed tasks for held work and the items stayed submitted
// for good; now it sees the ledger is behind, removes them and enqueues
// the items again under the same ids, and the workers decide them anew:
// every item has an outcome, and no item is parked twice.
func TestRestoredLedgerBackupIsRunAgain(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	ctx := context.Background()
	batch := b.mixedBatch(12, 4)
	backup := t.TempDir()
	b.reopen(func() { copyLedger(t, b.dir, backup) })

	stop := b.run()
	b.waitOutcomes(batch, 30*time.Second)
	stop()
	if n := b.parkedOnce(); n != 4 {
		t.Fatalf("%d parked before the restore, want 4", n)
	}

	b.reopen(func() { copyLedger(t, backup, b.dir) })
	if owed := b.owed(batch); len(owed) != 16 {
		t.Fatalf("after the restore %d items are owed, want 16: %v", len(owed), owed)
	}
	rep, err := b.ops().ReconcileBroker(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Reenqueued) != 16 || len(rep.LedgerBehind) != 16 {
		t.Fatalf("reenqueued %d (ledger behind %d), want 16: %+v", len(rep.Reenqueued), len(rep.LedgerBehind), rep)
	}
	stop = b.run()
	defer stop()
	b.waitOutcomes(batch, 30*time.Second)
	// The old parked copies name events the restored ledger lost; a second
	// pass replaces them with those of the re-derived outcomes.
	if _, err := b.ops().ReconcileBroker(ctx, false); err != nil {
		t.Fatal(err)
	}
	if n := b.parkedOnce(); n != 4 {
		t.Fatalf("%d parked after recovery, want 4", n)
	}
	for _, q := range []string{ingest.QueueQuarantine} {
		parked, _ := ingest.ListParked(b.insp, q)
		for _, p := range parked {
			if _, _, err := ingest.GetFailure(ctx, b.ledger, p.Held.EventID); err != nil {
				t.Errorf("parked %s names event %s: %v", p.TaskID, p.Held.EventID, err)
			}
		}
	}
}

// TestEvictedPendingListIsRunAgain: what an evicting Redis leaves: the
// ingest queue's pending list is gone while the task records survive
// (state "pending", in no list), and a parked task's list entry is gone
// too, another's record. Before, reconcile-broker read the records, took
// the tasks for held and enqueued nothing: no worker ever ran them. Now
// they are enqueued again, every item gets an outcome, and no id is
// parked twice.
func TestEvictedPendingListIsRunAgain(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	ctx := context.Background()
	rc := b.redis()

	// Two quarantined first, then their parked copies half-evicted.
	first := b.mixedBatch(0, 2)
	stop := b.run()
	b.waitOutcomes(first, 30*time.Second)
	stop()
	parked, err := ingest.ListParked(b.insp, ingest.QueueQuarantine)
	if err != nil || len(parked) != 2 {
		t.Fatalf("parked %d, %v", len(parked), err)
	}
	// The first's list entry is evicted (its record stays); the second's
	// record is evicted (its list entry stays).
	if err := rc.LRem(ctx, "asynq:{quarantine}:pending", 0, parked[0].TaskID).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.Del(ctx, "asynq:{quarantine}:t:"+parked[1].TaskID).Err(); err != nil {
		t.Fatal(err)
	}

	m, dir := b.manifest(20)
	m.BatchID = "evicted"
	for i := range m.Items {
		m.Items[i].ObjectID = fmt.Sprintf("ev-%02d", i)
	}
	for i := 15; i < 20; i++ {
		m.Items[i].ResolutionDPI = "abc"
	}
	if _, err := ingest.Submit(ctx, b.ledger, b.client, m, dir, ingest.SubmitOptions{Policy: b.worker.Policy}); err != nil {
		t.Fatal(err)
	}
	if err := rc.Del(ctx, "asynq:{ingest}:pending").Err(); err != nil {
		t.Fatal(err)
	}

	rep, err := b.ops().ReconcileBroker(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Reenqueued) != 20 || len(rep.Reparked) != 2 {
		t.Fatalf("reenqueued %d, reparked %d; want 20 and 2: %+v", len(rep.Reenqueued), len(rep.Reparked), rep)
	}
	stop = b.run()
	defer stop()
	b.waitOutcomes("evicted", 30*time.Second)
	if _, err := b.ops().ReconcileBroker(ctx, false); err != nil {
		t.Fatal(err)
	}
	if n := b.parkedOnce(); n != 7 {
		t.Fatalf("%d parked, want 7", n)
	}
}

// TestLedgerRecoverRederivesWhatTheBackupLacks: the backup was taken after
// one batch was submitted and before another; both were decided, then the
// backup restored. The second batch is unknown to the ledger altogether.
// RecoverLedger records its submissions again from the broker's completed
// tasks (with a note saying why), runs every item of both batches again,
// and the workers decide them: every item has an outcome. A second
// recovery finds nothing more to do.
func TestLedgerRecoverRederivesWhatTheBackupLacks(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	ctx := context.Background()
	first := b.mixedBatch(4, 1)
	backup := t.TempDir()
	b.reopen(func() { copyLedger(t, b.dir, backup) })
	m, dir := b.manifest(3)
	m.BatchID = "after-the-backup"
	for i := range m.Items {
		m.Items[i].ObjectID = fmt.Sprintf("late-%d", i)
	}
	if _, err := ingest.Submit(ctx, b.ledger, b.client, m, dir, ingest.SubmitOptions{Policy: b.worker.Policy}); err != nil {
		t.Fatal(err)
	}
	stop := b.run()
	b.waitOutcomes(first, 30*time.Second)
	b.waitOutcomes("after-the-backup", 30*time.Second)
	stop()

	b.reopen(func() { copyLedger(t, backup, b.dir) })
	if st, _ := ingest.BatchStatus(ctx, b.ledger, "after-the-backup"); len(st) != 0 {
		t.Fatalf("the restored ledger knows the later batch: %v", st)
	}
	rep, err := b.ops().RecoverLedger(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Unknown) != 3 || len(rep.Reconcile.LedgerBehind) != 8 {
		t.Fatalf("unknown %v, run again %v; want 3 and 8", rep.Unknown, rep.Reconcile.LedgerBehind)
	}
	stop = b.run()
	defer stop()
	b.waitOutcomes(first, 30*time.Second)
	b.waitOutcomes("after-the-backup", 30*time.Second)
	if st, _ := ingest.BatchStatus(ctx, b.ledger, "after-the-backup"); len(st) != 3 {
		t.Fatalf("the later batch after recovery: %v", st)
	}
	evs, err := b.ledger.Events(ctx, premis.Filter{BatchID: "after-the-backup", Destination: premis.Submitted})
	if err != nil || len(evs) != 3 || !strings.Contains(evs[0].Note, "re-derived by ledger recover") {
		t.Fatalf("recorded submissions %v, %v", evs, err)
	}
	again, err := b.ops().RecoverLedger(ctx, false)
	if err != nil || len(again.Unknown) != 0 || len(again.Reconcile.LedgerBehind) != 0 || len(again.Reconcile.Reenqueued) != 0 {
		t.Fatalf("a second recovery: %+v %+v, %v", again, again.Reconcile, err)
	}
}

// TestUnexpectedTasksAreReported: the whole pass reports what the broker
// holds that the ledger does not expect: a task of an item the ledger has
// no event of, and one of an item already accepted; a submitted item's
// task is expected and not reported. Nothing is removed.
func TestUnexpectedTasksAreReported(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	ctx := context.Background()
	batch := b.mixedBatch(2, 0)
	stop := b.run()
	b.waitOutcomes(batch, 30*time.Second)
	stop()
	st, err := ingest.BatchStatus(ctx, b.ledger, batch)
	if err != nil || len(st) != 2 || st[0].Destination != premis.Accepted {
		t.Fatalf("status %v, %v", st, err)
	}
	path, sha := b.file("stray.tif", master(t, goodPage))
	stray := b.envelope("stray", path, sha)
	b.enqueue(stray)
	evs, err := b.ledger.Events(ctx, premis.Filter{ObjectID: st[0].ObjectID, Destination: premis.Submitted})
	if err != nil || len(evs) != 1 {
		t.Fatalf("submission of %s: %v %v", st[0].ObjectID, evs, err)
	}
	again, err := ingest.DecodeEnvelope(evs[0].Envelope)
	if err != nil {
		t.Fatal(err)
	}
	again.Attempt = 2 // another task id for the accepted item
	b.enqueue(again)
	m, dir := b.manifest(1)
	m.BatchID, m.Items[0].ObjectID = "waiting", "waiting-0"
	if _, err := ingest.Submit(ctx, b.ledger, b.client, m, dir, ingest.SubmitOptions{Policy: b.worker.Policy}); err != nil {
		t.Fatal(err)
	}
	rep, err := b.ops().ReconcileBroker(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{stray.TaskID(): true, again.TaskID(): true}
	if len(rep.Unexpected) != 2 {
		t.Fatalf("unexpected %v, want the stray task and the accepted item's", rep.Unexpected)
	}
	for _, u := range rep.Unexpected {
		id, _, _ := strings.Cut(u, " ")
		if !want[id] {
			t.Errorf("reported %s", u)
		}
	}
}

// TestRestoredLedgerRepairedByTheWorkersAlone: as
// TestRestoredLedgerBackupIsRunAgain, but nobody runs reconcile-broker:
// the workers run, and their expectation pass (a page of five items a
// tick) re-runs the items as it reaches them. A quarantined item re-run
// before the pass reaches the parked copies finds its old copy in place
// (same task id, an event id the ledger lost); the pass parks it again
// from the recorded failure, so every parked copy names an event the
// ledger holds, and no item is parked twice.
func TestRestoredLedgerRepairedByTheWorkersAlone(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	ctx := context.Background()
	batch := b.mixedBatch(12, 4)
	backup := t.TempDir()
	b.reopen(func() { copyLedger(t, b.dir, backup) })
	stop := b.run()
	b.waitOutcomes(batch, 30*time.Second)
	stop()
	b.reopen(func() { copyLedger(t, backup, b.dir) })

	stop = b.run()
	defer stop()
	pass := &ingest.ExpectationPass{Op: b.ops(), Redis: b.redis(), Name: "w1", Every: time.Minute, Page: 5, Settle: time.Nanosecond}
	// Ticks until two whole rounds are done (a tick that ends a round
	// resets the cursor: the next starts from the first item).
	reparked, rounds := 0, 0
	for tick := 0; tick < 40 && rounds < 2; tick++ {
		rep, ran, err := pass.Tick(ctx)
		if err != nil || !ran {
			t.Fatalf("tick %d: %v %v", tick, ran, err)
		}
		reparked += len(rep.Reparked)
		if v, _ := b.redis().Get(ctx, "lazaret:expect:cursor").Result(); v == "0" {
			rounds++
		}
		// The workers re-run what the tick put back before the next tick.
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			owed := strings.Join(b.owed(batch), " ")
			waiting := false
			for _, id := range rep.Reenqueued {
				waiting = waiting || strings.Contains(owed, id+"=")
			}
			if !waiting {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("tick %d: %v not run again: %s", tick, rep.Reenqueued, owed)
			}
		}
	}
	b.waitOutcomes(batch, 30*time.Second)
	if reparked == 0 {
		t.Fatal("no parked copy was replaced: the case under test did not arise")
	}
	if n := b.parkedOnce(); n != 4 {
		t.Fatalf("%d parked, want 4", n)
	}
	parked, err := ingest.ListParked(b.insp, ingest.QueueQuarantine)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parked {
		if _, _, err := ingest.GetFailure(ctx, b.ledger, p.Held.EventID); err != nil {
			t.Errorf("parked %s names event %s: %v", p.TaskID, p.Held.EventID, err)
		}
	}
}
