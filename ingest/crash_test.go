package ingest_test

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/sqlite"
	"github.com/lazaret/lazaret/validate"
)

// TestMain lets this test binary double as a worker process that a test can
// kill with SIGKILL, or measure (bombWorker).
//
// It also runs more parallel tests at once than go test's default (one per
// CPU): the tests here mostly wait on Redis, timers and asynq's polling,
// each with a redis-server of its own (setup), so on two cores two at a
// time left the machine idle. An explicit -parallel is kept.
func TestMain(m *testing.M) {
	if url := os.Getenv(bombWorkerEnv); url != "" {
		os.Exit(bombWorker(url))
	}
	if url := os.Getenv("LAZARET_TEST_CHILD_WORKER"); url != "" {
		childWorker(url, os.Getenv("LAZARET_TEST_CHILD_LEDGER"))
		return
	}
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		flag.Set("test.parallel", strconv.Itoa(max(parallelTests, runtime.GOMAXPROCS(0))))
	}
	os.Exit(m.Run())
}

// parallelTests is how many of this package's parallel tests run at once
// unless -parallel says otherwise.
const parallelTests = 8

func childWorker(url, ledgerPath string) {
	ro, err := asynq.ParseRedisURI(url)
	if err != nil {
		panic(err)
	}
	l, err := sqlite.Open(context.Background(), ledgerPath)
	if err != nil {
		panic(err)
	}
	client := asynq.NewClient(ro)
	// Its validator hangs, like a read from a hung storage mount, until the
	// test kills the process.
	hang := func(ctx context.Context, _ *ingest.Envelope) (*validate.Report, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	w := &ingest.Worker{Ledger: l, Broker: client, Policy: ingest.DefaultPolicy(), Master: validate.DefaultMasterPolicy(),
		Software: premis.Software{Name: "lazaret", Version: "child"}, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
		Validators: map[string]ingest.Validator{"tiff": hang}}
	if n, err := strconv.Atoi(os.Getenv(childHangAppendEnv)); err == nil {
		// Instead: validators as in production, and the n-th append (a
		// chunk of an interchange) never returns, as if the process died
		// in the middle of it.
		w.Ledger, w.Validators = &hangingLedger{Ledger: l, at: int32(n)}, nil
	}
	srv, mux := ingest.NewServer(ro, w, ingest.ServerConfig{Concurrency: 1, PollInterval: 50 * time.Millisecond})
	if err := srv.Run(mux); err != nil {
		panic(err)
	}
}

// childHangAppendEnv tells a child worker to hang in its n-th append.
const childHangAppendEnv = "LAZARET_TEST_CHILD_HANG_APPEND"

// hangingLedger blocks forever in its at-th Append.
type hangingLedger struct {
	premis.Ledger
	n, at int32
}

func (h *hangingLedger) Append(ctx context.Context, evs ...*premis.Event) ([]bool, error) {
	if atomic.AddInt32(&h.n, 1) == h.at {
		select {}
	}
	return h.Ledger.Append(ctx, evs...)
}

// killedMidTask starts a child worker, waits until it is stuck inside the
// task (its validator hangs), kills it with SIGKILL, and ages the task's
// lease so the next server's recoverer finds it at once (instead of 30-90 s
// later).
func killedMidTask(t *testing.T, b *bundle, env *ingest.Envelope, childEnv ...string) {
	t.Helper()
	killedWhen(t, b, env, nil, childEnv...)
}

// killedWhen is killedMidTask that, once the task is running, waits for
// ready (if not nil) to say the child has got far enough.
func killedWhen(t *testing.T, b *bundle, env *ingest.Envelope, ready func() bool, childEnv ...string) {
	t.Helper()
	b.enqueue(env)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LAZARET_TEST_CHILD_WORKER="+b.url, "LAZARET_TEST_CHILD_LEDGER="+filepath.Join(b.dir, "ledger.db"))
	cmd.Env = append(cmd.Env, childEnv...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		active, _ := b.insp.ListActiveTasks(ingest.QueueIngest)
		if len(active) == 1 && active[0].ID == env.TaskID() && (ready == nil || ready()) {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the child worker never picked up the task")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	rc := redis.NewClient(&redis.Options{Addr: b.opt.Addr, DB: b.opt.DB})
	defer rc.Close()
	key := "asynq:{" + ingest.QueueIngest + "}:lease"
	if err := rc.ZAdd(context.Background(), key, redis.Z{Score: float64(time.Now().Add(-2 * time.Minute).Unix()), Member: env.TaskID()}).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestWorkerKilledMidTaskLosesNothing(t *testing.T) {
	t.Parallel()
	p := fastPolicy()
	p.Jitter = func(int64) int64 { return 0 }
	b := setup(t, p)
	data := master(t, goodPage)
	env := b.envelope("killed-mid-task", filepath.Join(b.dir, "scan.tif"), "")
	sumPath, sha := b.file("scan-ready.tif", data)
	env.SHA256, env.Item.SHA256 = sha, sha
	env.CorrelationID = ingest.CorrelationID(env.BatchID, env.ObjectID, sha)
	killedMidTask(t, b, env)
	// The storage comes back: the file is there now.
	if err := os.Rename(sumPath, env.Path); err != nil {
		t.Fatal(err)
	}
	b.start() // its recoverer hands the task back for a retry
	ev := b.settled(env.CorrelationID, 15*time.Second)
	// The lease expiry is asynq's retry (retries 1), not one of Lazaret's
	// attempts: the item is accepted at attempt 1.
	if ev.Type != premis.Ingestion || ev.Destination != premis.Accepted || ev.Attempt != 1 || ev.Retries != 1 {
		t.Fatalf("after the crash: %s %s attempt %d retries %d", ev.Type, ev.Destination, ev.Attempt, ev.Retries)
	}
}

// TestWorkerKilledMidInterchangeLosesNothing: a worker killed with
// SIGKILL inside the third chunk's append of a 600-message interchange
// (two chunks recorded, the quarantined message 300 parked) is resumed by
// the next: every message ends in one place, accepted as a member once or
// quarantined once, and the interchange's own ing comes last.
func TestWorkerKilledMidInterchangeLosesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	env := bigInterchange(b, "killed")
	// The first two chunks recorded (the second holds message 300's
	// quarantine) and message 300 parked: the child is in its third
	// append. The park follows its chunk's append, so the ledger alone
	// could say "two chunks" a moment before it (a kill then, under load,
	// left nothing parked to prove the resume does not park it again).
	twoChunks := func() bool {
		if where, _ := messageOutcomes(t, b.ledger, "killed"); len(where) != 512 {
			return false
		}
		parked, _ := ingest.ListParked(b.insp, ingest.QueueQuarantine)
		return len(parked) == 1
	}
	killedWhen(t, b, env, twoChunks, childHangAppendEnv+"=3")
	if parked, _ := ingest.ListParked(b.insp, ingest.QueueQuarantine); len(parked) != 1 {
		t.Fatalf("%d parked before the kill, want message 300", len(parked))
	}
	b.start()
	last := b.settled(env.CorrelationID, 30*time.Second)
	if last.Type != premis.Ingestion || last.Retries != 1 {
		t.Fatalf("interchange: %s %s retries %d, want its ing after one lease expiry", last.Type, last.Destination, last.Retries)
	}
	where, settled := messageOutcomes(t, b.ledger, "killed")
	wantOnce(t, env, where, settled, 600, map[string]premis.Destination{"300": premis.Quarantined})
	if parked, _ := ingest.ListParked(b.insp, ingest.QueueQuarantine); len(parked) != 1 || parked[0].Held.Envelope.Message != "300" {
		t.Errorf("parked %+v, want message 300 once", parked)
	}
}

// TestBudgetSpentMidInterchangeResumesIt: with a routing budget of one, a
// worker killed after two chunks of an interchange were recorded spends
// it. The chunks say the interchange was accepted, so the next delivery
// resumes it rather than dead-letter it, which left 512 messages accepted
// under a dead-lettered interchange (and a replay accepted them again).
func TestBudgetSpentMidInterchangeResumesIt(t *testing.T) {
	t.Parallel()
	p := fastPolicy()
	p.RoutingBudget = 1
	b := setup(t, p)
	env := bigInterchange(b, "budget")
	twoChunks := func() bool { where, _ := messageOutcomes(t, b.ledger, "budget"); return len(where) == 512 }
	killedWhen(t, b, env, twoChunks, childHangAppendEnv+"=3")
	b.start()
	last := b.settled(env.CorrelationID, 30*time.Second)
	if last.Type != premis.Ingestion || last.Destination != premis.Accepted || last.Retries != 1 {
		t.Fatalf("interchange: %s %s %s retries %d, want its ing after one lease expiry", last.Type, last.Destination, last.Code, last.Retries)
	}
	where, settled := messageOutcomes(t, b.ledger, "budget")
	wantOnce(t, env, where, settled, 600, map[string]premis.Destination{"300": premis.Quarantined})
}

// TestLeaseExpiryOnTheLastTryIsDecidedByLazaret: with no retries left in
// the policy, a worker killed mid-task used to let asynq archive the task
// with no event. asynq's budget now has Lazaret's routing budget and a
// reserve above the policy, so the task comes back to a handler, which
// decides and records it.
func TestLeaseExpiryOnTheLastTryIsDecidedByLazaret(t *testing.T) {
	t.Parallel()
	p := fastPolicy()
	p.MaxRetry = 0
	b := setup(t, p)
	env := b.envelope("killed-on-last-try", filepath.Join(b.dir, "hung.tif"), strings.Repeat("c", 64))
	killedMidTask(t, b, env) // the storage is still not there: a transient failure, no retries left
	b.start()
	ev := b.settled(env.CorrelationID, 15*time.Second)
	if ev.Destination != premis.DeadLetter || ev.Code != "io.not-found" || ev.Attempt != 1 || ev.TaskID != env.TaskID() {
		t.Fatalf("decided: %s %s attempt %d", ev.Destination, ev.Code, ev.Attempt)
	}
	if !strings.Contains(ev.Note, "retries exhausted after 0 retries") {
		t.Errorf("note %q", ev.Note)
	}
	b.waitState(ingest.QueueIngest, env.TaskID(), asynq.TaskStateArchived, 5*time.Second)
	rep, err := b.ops().ReconcileBroker(context.Background(), false)
	if err != nil || len(rep.ArchivedRecorded) != 0 {
		t.Fatalf("reconcile recorded %v (err %v): the decision was already recorded", rep.ArchivedRecorded, err)
	}
	if n := len(b.events(env.CorrelationID)); n != 1 {
		t.Errorf("%d events, want 1", n)
	}
}

// TestAFileThatKillsTheWorkerEndsWithinTheRoutingBudget: a task whose every
// delivery dies (an OOM-killed worker) is not validated forever: once the
// routing budget is spent, the next delivery dead-letters it unvalidated.
func TestAFileThatKillsTheWorkerEndsWithinTheRoutingBudget(t *testing.T) {
	t.Parallel()
	p := fastPolicy()
	p.RoutingBudget = 1
	b := setup(t, p)
	env := b.envelope("kills-workers", filepath.Join(b.dir, "bomb.tif"), strings.Repeat("d", 64))
	killedMidTask(t, b, env)
	b.start()
	ev := b.settled(env.CorrelationID, 15*time.Second)
	if ev.Destination != premis.DeadLetter || ev.Code != "routing.exhausted" || ev.Class != premis.Transient {
		t.Fatalf("decided: %s %s %s", ev.Destination, ev.Class, ev.Code)
	}
	if !strings.Contains(ev.Message, "1 deliveries ended without a recorded decision") {
		t.Errorf("message %q", ev.Message)
	}
	b.waitState(ingest.QueueIngest, env.TaskID(), asynq.TaskStateArchived, 5*time.Second)
	if n := len(b.invocations(env.TaskID())); n != 1 {
		t.Errorf("handler ran %d times after the crash, want 1", n)
	}
}

func (b *bundle) stateOK(queue, id string) asynq.TaskState {
	ti, err := b.insp.GetTaskInfo(queue, id)
	if err != nil {
		return 0
	}
	return ti.State
}
