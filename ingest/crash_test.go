package ingest_test

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/sqlite"
	"github.com/lazaret/lazaret/validate"
)

// TestMain lets this test binary double as a worker process that a test can
// kill with SIGKILL.
func TestMain(m *testing.M) {
	if url := os.Getenv("LAZARET_TEST_CHILD_WORKER"); url != "" {
		childWorker(url, os.Getenv("LAZARET_TEST_CHILD_LEDGER"))
		return
	}
	os.Exit(m.Run())
}

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
	w := &ingest.Worker{Ledger: l, Broker: client, Policy: ingest.DefaultPolicy(), Master: validate.DefaultMasterPolicy(),
		Software: premis.Software{Name: "lazaret", Version: "child"}, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	srv, mux := ingest.NewServer(ro, w, ingest.ServerConfig{Concurrency: 1, PollInterval: 50 * time.Millisecond})
	if err := srv.Run(mux); err != nil {
		panic(err)
	}
}

// killedMidTask starts a child worker, waits until it is stuck inside the
// task (its file is a FIFO nobody writes: the open blocks, like a hung
// storage mount), kills it with SIGKILL, and ages the task's lease so the
// next server's recoverer finds it at once (instead of 30-90 s later).
func killedMidTask(t *testing.T, b *bundle, env *ingest.Envelope, url string) {
	t.Helper()
	if err := syscall.Mkfifo(env.Path, 0o644); err != nil {
		t.Fatal(err)
	}
	b.enqueue(env)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LAZARET_TEST_CHILD_WORKER="+url, "LAZARET_TEST_CHILD_LEDGER="+filepath.Join(b.dir, "ledger.db"))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		active, _ := b.insp.ListActiveTasks(ingest.QueueIngest)
		if len(active) == 1 && active[0].ID == env.TaskID() {
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
	p := fastPolicy()
	p.Jitter = func(int64) int64 { return 0 }
	b := setup(t, p)
	url := testenv.Redis(t, redisDB)
	data := master(t, goodPage)
	env := b.envelope("killed-mid-task", filepath.Join(b.dir, "scan.tif"), "")
	sumPath, sha := b.file("scan-ready.tif", data)
	env.SHA256, env.Item.SHA256 = sha, sha
	env.CorrelationID = ingest.CorrelationID(env.BatchID, env.ObjectID, sha)
	killedMidTask(t, b, env, url)
	// The storage comes back: the file is there now.
	os.Remove(env.Path)
	if err := os.Rename(sumPath, env.Path); err != nil {
		t.Fatal(err)
	}
	b.start() // its recoverer hands the task back for a retry
	ev := b.settled(env.CorrelationID, 15*time.Second)
	if ev.Type != premis.Ingestion || ev.Destination != premis.Accepted || ev.Attempt != 2 || ev.Retries != 1 {
		t.Fatalf("after the crash: %s %s attempt %d retries %d", ev.Type, ev.Destination, ev.Attempt, ev.Retries)
	}
}

func TestLeaseExpiredOnLastTryIsReconciled(t *testing.T) {
	p := fastPolicy()
	p.MaxRetry = 0 // the lease expiry spends the last try: asynq archives without a handler
	b := setup(t, p)
	url := testenv.Redis(t, redisDB)
	env := b.envelope("killed-on-last-try", filepath.Join(b.dir, "hung.tif"), strings.Repeat("c", 64))
	killedMidTask(t, b, env, url)
	b.start()
	deadline := time.Now().Add(10 * time.Second)
	for b.stateOK(ingest.QueueIngest, env.TaskID()) != asynq.TaskStateArchived {
		if time.Now().After(deadline) {
			t.Fatal("the task was not archived by the recoverer")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := len(b.events(env.CorrelationID)); n != 0 {
		t.Fatalf("%d events before reconciliation; asynq bypassed the handler, so want 0", n)
	}
	ctx := context.Background()
	n, err := b.worker.ReconcileArchived(ctx, b.insp)
	if err != nil || n != 1 {
		t.Fatalf("reconcile wrote %d events, err %v; want 1", n, err)
	}
	evs := b.events(env.CorrelationID)
	if len(evs) != 1 || evs[0].Code != "worker.lease-expired" || evs[0].Destination != premis.DeadLetter || evs[0].TaskID != env.TaskID() {
		t.Fatalf("reconciled events: %+v", evs)
	}
	if n, err := b.worker.ReconcileArchived(ctx, b.insp); err != nil || n != 0 {
		t.Fatalf("second reconcile wrote %d (err %v), want 0", n, err)
	}
}

func (b *bundle) stateOK(queue, id string) asynq.TaskState {
	ti, err := b.insp.GetTaskInfo(queue, id)
	if err != nil {
		return 0
	}
	return ti.State
}
