package ingest_test

// Tests of the promise at the seams: an item's fate is decided once, in
// one place, recorded once, and never lost, whatever asynq, Redis, the
// ledger or two operators do around it. Each would fail on main 496f9b1.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/validate"
)

// cutLedger is a ledger whose every call fails while down is set, like a
// PostgreSQL cut off or an SQLite file locked by another process.
type cutLedger struct {
	premis.Ledger
	down atomic.Bool
}

// errLedgerCut is not an outage the workers wait out (premis.ErrBusy
// pauses intake instead: TestLedgerUnwritableSendsNoGoodMasterToTheDLQ):
// a write refused for good, as a ledger that fails its tamper check does.
var errLedgerCut = fmt.Errorf("ledger cut: %w", premis.ErrTampered)

func (c *cutLedger) Append(ctx context.Context, evs ...*premis.Event) ([]bool, error) {
	if c.down.Load() {
		return nil, errLedgerCut
	}
	return c.Ledger.Append(ctx, evs...)
}

func (c *cutLedger) Events(ctx context.Context, f premis.Filter) ([]premis.Event, error) {
	if c.down.Load() {
		return nil, errLedgerCut
	}
	return c.Ledger.Events(ctx, f)
}

// failingBroker refuses every hand-off, like a parked task that can never
// be written.
type failingBroker struct{ ingest.Enqueuer }

func (failingBroker) EnqueueContext(context.Context, *asynq.Task, ...asynq.Option) (*asynq.TaskInfo, error) {
	return nil, errors.New("redis: OOM command not allowed when used memory > 'maxmemory'")
}

// waitState waits until the task reaches state, waking at every decision.
func (b *bundle) waitState(queue, id string, want asynq.TaskState, timeout time.Duration) {
	b.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		wake := b.next()
		if b.stateOK(queue, id) == want {
			return
		}
		select {
		case <-wake:
		case <-time.After(100 * time.Millisecond):
		case <-deadline.C:
			b.t.Fatalf("task %s in %s: state %v, want %v", id, queue, b.stateOK(queue, id), want)
		}
	}
}

// TestRoutingFaultOnTheLastTryKeepsTheRealVerdict: with no retries in the
// policy, a ledger busy once used to let asynq archive the task itself with
// "routing to quarantine failed" and no event; the real class was lost.
func TestRoutingFaultOnTheLastTryKeepsTheRealVerdict(t *testing.T) {
	t.Parallel()
	p := fastPolicy()
	p.MaxRetry = 0
	b := setup(t, p)
	fl := &flakyLedger{Ledger: b.ledger}
	fl.fail.Store(1)
	b.worker.Ledger = fl
	path, sha := b.file("m.tif", master(t, goodPage))
	env := b.envelope("busy-once", path, sha)
	env.Item.ResolutionDPI = "abc"
	b.start()
	b.enqueue(env)
	ev := b.settled(env.CorrelationID, 15*time.Second)
	if ev.Destination != premis.Quarantined || ev.Class != premis.Semantic || ev.Code != "manifest.resolution_dpi.numeric" || ev.Attempt != 1 {
		t.Fatalf("decided %s %s %s attempt %d, want quarantine semantic manifest.resolution_dpi.numeric attempt 1", ev.Destination, ev.Class, ev.Code, ev.Attempt)
	}
	b.waitState(ingest.QueueQuarantine, ingest.HeldTaskID(ev.Key), asynq.TaskStatePending, 5*time.Second)
	if s := b.stateOK(ingest.QueueIngest, env.TaskID()); s == asynq.TaskStateArchived {
		t.Error("the original task was archived by asynq: the item is in two places")
	}
	if n := len(b.events(env.CorrelationID)); n != 1 {
		t.Errorf("%d events, want 1", n)
	}
}

// TestRoutingFaultThatNeverClearsEnds: a hand-off that fails every time
// (before: a loop without end, no event, nothing logged) ends within the
// routing budget, dead-lettered with the verdict it could not route.
func TestRoutingFaultThatNeverClearsEnds(t *testing.T) {
	t.Parallel()
	p := fastPolicy()
	p.RoutingBudget = 3
	b := setup(t, p)
	b.worker.Broker = failingBroker{}
	path, sha := b.file("m.tif", master(t, goodPage))
	env := b.envelope("never-parks", path, sha)
	env.Item.ColorProfile = ""
	b.start()
	b.enqueue(env)
	b.waitState(ingest.QueueIngest, env.TaskID(), asynq.TaskStateArchived, 20*time.Second)
	evs := b.events(env.CorrelationID)
	if len(evs) != 2 || evs[0].Destination != premis.Quarantined || evs[1].Destination != premis.DeadLetter {
		t.Fatalf("events %v, want the quarantine decision then the dead letter that replaces it", destinations(evs))
	}
	dl := evs[1]
	if dl.Class != premis.Semantic || dl.Code != "manifest.color_profile.required" || !strings.Contains(dl.Note, "after 3 tries") ||
		!strings.Contains(dl.Note, "maxmemory") {
		t.Errorf("dead letter %s %s %q", dl.Class, dl.Code, dl.Note)
	}
	if n := len(b.invocations(env.TaskID())); n != 3 {
		t.Errorf("handler ran %d times, want the routing budget (3)", n)
	}
	fs, err := ingest.Failures(context.Background(), b.ledger, ingest.FailureFilter{})
	if err != nil || len(fs) != 1 || fs[0].Destination != premis.DeadLetter {
		t.Errorf("open failures %v %v, want the one dead letter", fs, err)
	}
}

// TestLedgerDownForTheWholeBudgetIsReconciled: when even the dead letter
// cannot be recorded (the ledger refuses writes for good, not for an
// outage, which pauses intake), the archived task carries class and code,
// and reconcile-broker records them once the ledger is back.
func TestLedgerDownForTheWholeBudgetIsReconciled(t *testing.T) {
	t.Parallel()
	p := fastPolicy()
	p.RoutingBudget = 2
	b := setup(t, p)
	cl := &cutLedger{Ledger: b.ledger}
	b.worker.Ledger = cl
	path, sha := b.file("m.tif", master(t, goodPage))
	env := b.envelope("ledger-gone", path, sha)
	cl.down.Store(true)
	b.start()
	b.enqueue(env)
	b.waitState(ingest.QueueIngest, env.TaskID(), asynq.TaskStateArchived, 20*time.Second)
	ti, _ := b.insp.GetTaskInfo(ingest.QueueIngest, env.TaskID())
	if !strings.Contains(ti.LastErr, "code=routing.exhausted") {
		t.Errorf("last error %q does not carry the code", ti.LastErr)
	}
	cl.down.Store(false)
	rep, err := b.ops().ReconcileBroker(context.Background(), false)
	if err != nil || len(rep.ArchivedRecorded) != 1 {
		t.Fatalf("reconcile: %+v %v", rep, err)
	}
	evs := b.events(env.CorrelationID)
	if len(evs) != 1 || evs[0].Code != "routing.exhausted" || evs[0].Class != premis.Transient || evs[0].Destination != premis.DeadLetter {
		t.Fatalf("events %+v", evs)
	}
}

// TestLostAckRedoesOnlyTheBrokerStep: the handler's work is recorded but
// asynq never hears of it (Redis restarted, the worker killed right after
// the event): the redelivery, counted by asynq as a retry, must find the
// decision and write nothing new. Before, the attempt included asynq's
// count, so it wrote a second terminal event and parked a second copy.
func TestLostAckRedoesOnlyTheBrokerStep(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	var lost sync.Map
	path, sha := b.file("m.tif", master(t, goodPage))
	good := b.envelope("ack-lost-good", path, sha)
	bad := b.envelope("ack-lost-bad", path, sha)
	bad.Item.ResolutionDPI = "abc"
	b.start(func(id string, err error) error {
		if _, seen := lost.LoadOrStore(id, true); !seen && err == nil {
			return errors.New("ack lost") // asynq retries it, as after a lease expiry
		}
		return err
	})
	b.enqueue(good)
	b.enqueue(bad)
	b.waitState(ingest.QueueIngest, good.TaskID(), asynq.TaskStateCompleted, 15*time.Second)
	b.waitState(ingest.QueueIngest, bad.TaskID(), asynq.TaskStateCompleted, 15*time.Second)
	for _, env := range []*ingest.Envelope{good, bad} {
		if n := len(b.invocations(env.TaskID())); n != 2 {
			t.Errorf("%s: handler ran %d times, want 2 (the redelivery)", env.ObjectID, n)
		}
	}
	b.recordedOnce(good, bad)
}

// recordedOnce checks that an accepted item has its four events and a
// quarantined one its one event at attempt 1 and one parked copy.
func (b *bundle) recordedOnce(good, bad *ingest.Envelope) {
	b.t.Helper()
	if got := destinations(b.events(good.CorrelationID)); got != ",,,accept" {
		b.t.Errorf("accepted item: events %s, want fix, for, val, ing once", got)
	}
	if evs := b.events(bad.CorrelationID); len(evs) != 1 || evs[0].Attempt != 1 {
		b.t.Errorf("quarantined item: events %s", destinations(evs))
	}
	if q, _ := b.insp.ListPendingTasks(ingest.QueueQuarantine); len(q) != 1 {
		b.t.Errorf("%d parked copies, want 1", len(q))
	}
}

// TestConcurrentReplayAndDiscard: two operators act on the same failures at
// once. Before, both succeeded (8 of 10): the item was reprocessed and open
// again although "discarded". Exactly one must win, the other be told.
func TestConcurrentReplayAndDiscard(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	b.start()
	path, sha := b.file("m.tif", master(t, goodPage))
	var envs []*ingest.Envelope
	for i := 0; i < 10; i++ {
		env := b.envelope(fmt.Sprintf("race-%d", i), path, sha)
		env.Item.ColorProfile = ""
		b.enqueue(env)
		envs = append(envs, env)
	}
	var failures []premis.Event
	for _, env := range envs {
		failures = append(failures, b.settled(env.CorrelationID, 15*time.Second))
	}
	ctx := context.Background()
	for _, f := range failures {
		var wg sync.WaitGroup
		var replayErr, discardErr error
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, replayErr = b.ops().Replay(ctx, f.ID, ingest.ReplayOptions{Operator: "ana"})
		}()
		go func() { defer wg.Done(); _, discardErr = b.ops().Discard(ctx, f.ID, "ben", "duplicate", false) }()
		wg.Wait()
		if (replayErr == nil) == (discardErr == nil) {
			t.Errorf("%s: replay %v, discard %v: want exactly one to win", f.ObjectID, replayErr, discardErr)
			continue
		}
		lost := replayErr
		if lost == nil {
			lost = discardErr
		}
		if !errors.Is(lost, ingest.ErrConflict) && !errors.Is(lost, ingest.ErrNotOpen) {
			t.Errorf("%s: the loser got %v, want ErrConflict or ErrNotOpen", f.ObjectID, lost)
		}
		resolutions := 0
		for _, e := range b.events(f.CorrelationID) {
			if e.ReplayOf == f.ID && (e.Destination == premis.Replayed || e.Destination == premis.Discarded) {
				resolutions++
			}
		}
		if resolutions != 1 {
			t.Errorf("%s: %d resolutions recorded, want 1", f.ObjectID, resolutions)
		}
		if discardErr == nil {
			if _, err := b.insp.GetTaskInfo(ingest.QueueIngest, replayTaskID(f)); err == nil {
				t.Errorf("%s: discarded, yet a replay task exists", f.ObjectID)
			}
		}
	}
}

func replayTaskID(f premis.Event) string {
	env, _ := ingest.DecodeEnvelope(f.Envelope)
	env.Attempt = f.Attempt + 1
	return env.TaskID()
}

// TestReplayWithRedisDownLosesNothing: the unq was written and the enqueue
// failed, so the item vanished from dlq ls and no command found it again.
// Now a rollback puts it back, open; a later replay succeeds.
func TestReplayWithRedisDownLosesNothing(t *testing.T) {
	t.Parallel()
	p := fastPolicy()
	p.MaxRetry = 0
	b := setup(t, p)
	b.start()
	envs := b.deadLetters(1, 1, "replay-down")
	ctx := context.Background()
	fs, _ := ingest.Failures(ctx, b.ledger, ingest.FailureFilter{})
	if len(fs) != 1 {
		t.Fatalf("%d failures", len(fs))
	}
	op := b.ops()
	op.Enqueuer = failingBroker{}
	if _, err := op.Replay(ctx, fs[0].ID, ingest.ReplayOptions{Operator: "ana"}); err == nil || !strings.Contains(err.Error(), "rolled back") {
		t.Fatalf("replay with Redis down: %v", err)
	}
	open, _ := ingest.Failures(ctx, b.ledger, ingest.FailureFilter{})
	if len(open) != 1 || open[0].ObjectID != envs[0].ObjectID || open[0].Destination != premis.DeadLetter || open[0].Code != fs[0].Code {
		t.Fatalf("after the failed replay the open failures are %+v, want the item back in the DLQ", open)
	}
	b.file(envs[0].ObjectID+".tif", master(t, goodPage))
	res, err := b.ops().Replay(ctx, open[0].ID, ingest.ReplayOptions{Operator: "ana"})
	if err != nil {
		t.Fatal(err)
	}
	if ev := b.settledAfter(envs[0].CorrelationID, premis.Accepted, 15*time.Second); ev.Attempt != res.Replay.Attempt {
		t.Errorf("accepted at attempt %d, want %d", ev.Attempt, res.Replay.Attempt)
	}
}

// TestSubmittedNeverSettledIsReenqueued: a Redis that keeps nothing on
// disk restarts mid-batch. Before, the lost items left no trace (1,348 of
// 2000 in a fault run); now the ledger knows them and reconcile-broker
// enqueues them again.
func TestSubmittedNeverSettledIsReenqueued(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	m, dir := b.manifest(20)
	ctx := context.Background()
	if _, err := ingest.Submit(ctx, b.ledger, b.client, m, dir, ingest.SubmitOptions{Policy: b.worker.Policy}); err != nil {
		t.Fatal(err)
	}
	if err := b.client.Close(); err != nil {
		t.Fatal(err)
	}
	b.flushRedis() // the restart: every queued task is gone
	b.client = asynq.NewClient(b.opt)
	b.worker.Broker = b.client
	st, _ := ingest.BatchStatus(ctx, b.ledger, m.BatchID)
	if len(st) != 20 || st[0].Destination != premis.Submitted {
		t.Fatalf("batch status after the loss: %d items, first %s", len(st), st[0].Destination)
	}
	dry, err := b.ops().ReconcileBroker(ctx, true)
	if err != nil || len(dry.Reenqueued) != 20 {
		t.Fatalf("dry run: %+v %v", dry, err)
	}
	if q, _ := b.insp.Queues(); len(q) != 0 {
		t.Fatalf("a dry run enqueued into %v", q)
	}
	rep, err := b.ops().ReconcileBroker(ctx, false)
	if err != nil || len(rep.Reenqueued) != 20 {
		t.Fatalf("reconcile: %+v %v", rep, err)
	}
	b.start()
	for _, it := range m.Items {
		if ev := b.settled(ingest.CorrelationID(m.BatchID, it.ObjectID, it.SHA256), 15*time.Second); ev.Destination != premis.Accepted {
			t.Errorf("%s: %s", it.ObjectID, ev.Destination)
		}
	}
	// Settled now: a second reconcile and a resubmission do nothing.
	if rep, err := b.ops().ReconcileBroker(ctx, false); err != nil || len(rep.Reenqueued) != 0 {
		t.Errorf("second reconcile: %+v %v", rep, err)
	}
	res, err := ingest.Submit(ctx, b.ledger, b.client, m, dir, ingest.SubmitOptions{Policy: b.worker.Policy})
	if err != nil || len(res.Enqueued) != 0 || len(res.Skipped) != 20 || res.Skipped[0].Reason != "already accepted" {
		t.Errorf("resubmission: %+v %v", res, err)
	}
}

// TestResubmissionAfterReplayAndDiscardRevivesNothing: discarded items
// came back into the quarantine when the manifest was submitted again.
func TestResubmissionAfterReplayAndDiscardRevivesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	b.start()
	m, dir := b.manifest(4)
	for i := range m.Items {
		m.Items[i].ColorProfile = "" // all quarantined
	}
	ctx := context.Background()
	if _, err := ingest.Submit(ctx, b.ledger, b.client, m, dir, ingest.SubmitOptions{Policy: b.worker.Policy}); err != nil {
		t.Fatal(err)
	}
	var fs []premis.Event
	for _, it := range m.Items {
		fs = append(fs, b.settled(ingest.CorrelationID(m.BatchID, it.ObjectID, it.SHA256), 15*time.Second))
	}
	if _, err := b.ops().Discard(ctx, fs[0].ID, "ana", "wrong batch", false); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ops().Replay(ctx, fs[1].ID, ingest.ReplayOptions{Operator: "ana"}); err != nil {
		t.Fatal(err)
	}
	b.settledAfter(fs[1].CorrelationID, premis.Quarantined, 15*time.Second)
	res, err := ingest.Submit(ctx, b.ledger, b.client, m, dir, ingest.SubmitOptions{Policy: b.worker.Policy})
	if err != nil || len(res.Enqueued)+len(res.Duplicates) != 0 || len(res.Skipped) != 4 {
		t.Fatalf("resubmission: %+v %v", res, err)
	}
	if !strings.HasPrefix(res.Skipped[0].Reason, "discarded by ana") {
		t.Errorf("skip reason %q", res.Skipped[0].Reason)
	}
	if q, _ := b.insp.ListPendingTasks(ingest.QueueQuarantine); len(q) != 3 {
		t.Errorf("%d parked, want 3 (the discarded one stays gone)", len(q))
	}
}

func destinations(evs []premis.Event) string {
	var out []string
	for _, e := range evs {
		out = append(out, string(e.Destination))
	}
	return strings.Join(out, ",")
}

// manifest writes n good masters and returns a checked manifest for them.
func (b *bundle) manifest(n int) (*validate.Manifest, string) {
	b.t.Helper()
	data := master(b.t, goodPage)
	m := &validate.Manifest{BatchID: "batch-m", Submitter: "tests"}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("item-%03d.tif", i)
		_, sha := b.file(name, data)
		m.Items = append(m.Items, validate.Item{ObjectID: fmt.Sprintf("item-%03d", i), Kind: "tiff", Path: name, SHA256: sha,
			ColorProfile: "sRGB", ResolutionDPI: "400"})
	}
	return m, b.dir
}

// flushRedis empties the test's Redis database (a private server's, see
// testenv): a Redis without persistence that restarted.
func (b *bundle) flushRedis() {
	b.t.Helper()
	rc := redis.NewClient(&redis.Options{Addr: b.opt.Addr, DB: b.opt.DB})
	defer rc.Close()
	if err := rc.FlushDB(context.Background()).Err(); err != nil {
		b.t.Fatal(err)
	}
}

// TestSwappedFilesAreNotRead: after submit, an attacker with the batch
// folder swaps a master for a link to a secret, another for a FIFO, a
// third for a hard link to the secret, and a fourth for another file with
// the same bytes. Before, the worker (running as root) read /etc/shadow
// and recorded its digest, the FIFO held a worker slot for the whole task
// timeout, and the hard link passed openat2 (it sees names, not inodes):
// the secret was read and its SHA-256 printed in the failure.
func TestSwappedFilesAreNotRead(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	m, dir := b.manifest(4)
	ctx := context.Background()
	if _, err := ingest.Submit(ctx, b.ledger, b.client, m, dir, ingest.SubmitOptions{Policy: b.worker.Policy}); err != nil {
		t.Fatal(err)
	}
	secretBytes := []byte("root:$6$secret")
	secret := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(secret, secretBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	secretSum := sha256.Sum256(secretBytes)
	path := func(i int) string { return filepath.Join(dir, m.Items[i].Path) }
	for i := range 3 {
		os.Remove(path(i))
	}
	if err := os.Symlink(secret, path(0)); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path(1), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, path(2)); err != nil {
		t.Fatal(err)
	}
	// The same bytes under a new inode: the digest would pass, the file
	// is still not the one submitted.
	same, err := os.ReadFile(path(3))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path(3)+".new", same, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path(3)+".new", path(3)); err != nil {
		t.Fatal(err)
	}
	b.start()
	for i, code := range []string{"io.symlink", "file.not-regular", "io.hardlink", "io.file-changed"} {
		it := m.Items[i]
		ev := b.settled(ingest.CorrelationID(m.BatchID, it.ObjectID, it.SHA256), 10*time.Second)
		if ev.Destination != premis.DeadLetter || ev.Class != premis.Structural || ev.Code != code {
			t.Errorf("%s: %s %s %s, want dead-letter structural %s", it.ObjectID, ev.Destination, ev.Class, ev.Code, code)
		}
		if ev.SHA256 != it.SHA256 || strings.Contains(ev.Message, "secret") {
			t.Errorf("%s: the event records %s / %q: something was read", it.ObjectID, ev.SHA256, ev.Message)
		}
	}
	all, err := b.ledger.Events(ctx, premis.Filter{BatchID: m.BatchID})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all {
		j, _ := json.Marshal(e)
		if bytes.Contains(j, []byte(hex.EncodeToString(secretSum[:]))) || bytes.Contains(j, []byte("$6$secret")) {
			t.Errorf("event %s %s records the secret: %s", e.ID, e.Type, j)
		}
	}
}

// TestLostDeadLetterIsArchivedAgain: a Redis that keeps nothing on disk
// restarts; the ledger's dead letter is put back into the archived set
// under its own task id, and no worker runs it.
func TestLostDeadLetterIsArchivedAgain(t *testing.T) {
	t.Parallel()
	p := fastPolicy()
	p.MaxRetry = 0
	b := setup(t, p)
	b.start()
	env := b.deadLetters(1, 1, "lost-dlq")[0]
	b.flushRedis()
	rep, err := b.ops().ReconcileBroker(context.Background(), false)
	if err != nil || len(rep.Rearchived) != 1 || len(rep.Missing) != 0 {
		t.Fatalf("reconcile: %+v %v", rep, err)
	}
	b.waitState(ingest.QueueIngest, env.TaskID(), asynq.TaskStateArchived, 5*time.Second)
	if n := len(b.invocations(env.TaskID())); n != 1 {
		t.Errorf("handler ran %d times, want 1 (the re-archived task is not run)", n)
	}
	if got := destinations(b.events(env.CorrelationID)); got != "dead-letter" {
		t.Errorf("events %s: reconcile wrote something", got)
	}
}

// brokerDownAfter enqueues n tasks, then refuses every hand-off.
type brokerDownAfter struct {
	ingest.Enqueuer
	left atomic.Int32
}

func (f *brokerDownAfter) EnqueueContext(ctx context.Context, t *asynq.Task, opts ...asynq.Option) (*asynq.TaskInfo, error) {
	if f.left.Add(-1) < 0 {
		return nil, errors.New("redis: connection refused")
	}
	return f.Enqueuer.EnqueueContext(ctx, t, opts...)
}

// TestSubmitBrokerLostMidBatch: submission enqueues concurrently; when the
// broker goes away part-way, Submit says how many went through, every item
// is recorded as submitted, and a second submission enqueues exactly the
// rest (the others are duplicates of tasks already queued).
func TestSubmitBrokerLostMidBatch(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	ctx := context.Background()
	m, dir := b.manifest(200)
	down := &brokerDownAfter{Enqueuer: b.client}
	down.left.Store(70)
	res, err := ingest.Submit(ctx, b.ledger, down, m, dir, ingest.SubmitOptions{Policy: b.worker.Policy})
	if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "reconcile-broker") {
		t.Fatalf("submit with the broker down: %v", err)
	}
	if len(res.Enqueued) != 70 {
		t.Errorf("%d enqueued before the broker went away, want 70", len(res.Enqueued))
	}
	recorded, err := b.ledger.Events(ctx, premis.Filter{BatchID: m.BatchID, Latest: true})
	if err != nil || len(recorded) != 200 {
		t.Fatalf("%d items recorded as submitted, want 200: %v", len(recorded), err)
	}
	again, err := ingest.Submit(ctx, b.ledger, b.client, m, dir, ingest.SubmitOptions{Policy: b.worker.Policy})
	if err != nil || len(again.Enqueued) != 130 || len(again.Duplicates) != 70 {
		t.Fatalf("second submission: %d enqueued, %d duplicates (want 130, 70): %v", len(again.Enqueued), len(again.Duplicates), err)
	}
	queued := map[string]bool{}
	for _, id := range append(res.Enqueued, again.Enqueued...) {
		if queued[id] {
			t.Errorf("%s enqueued twice", id)
		}
		queued[id] = true
	}
	if len(queued) != 200 {
		t.Errorf("%d distinct items enqueued, want 200", len(queued))
	}
}
