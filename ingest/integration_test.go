package ingest_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/postgres"
	"github.com/lazaret/lazaret/premis/sqlite"
	"github.com/lazaret/lazaret/validate"
)

// redisDB is this package's own database on a LAZARET_TEST_REDIS server
// (packages test in parallel, each in its own); there the tests take turns
// on it. Otherwise each test has a redis-server of its own (see setup).
const redisDB = 11

type bundle struct {
	t      *testing.T
	url    string // the test's own Redis (testenv.OwnRedis)
	opt    asynq.RedisClientOpt
	client *asynq.Client
	insp   *asynq.Inspector
	ledger premis.Ledger
	worker *ingest.Worker
	dir    string

	mu    sync.Mutex
	calls map[string][]time.Time // task id -> handler invocations
	// decided is closed and replaced whenever the worker observes a
	// decision: waits wake on it instead of sleeping.
	decided chan struct{}
}

// observe is the worker's Observe hook in tests.
func (b *bundle) observe(ingest.Observation) {
	b.mu.Lock()
	close(b.decided)
	b.decided = make(chan struct{})
	b.mu.Unlock()
}

// next returns a channel closed at the next observed decision.
func (b *bundle) next() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.decided
}

// setup gives the test a Redis of its own (testenv.OwnRedis), so that it
// may run in parallel with the others, and a SQLite ledger in its own
// t.TempDir.
func setup(t *testing.T, policy ingest.Policy) *bundle {
	t.Helper()
	url := testenv.OwnRedis(t, redisDB)
	ro, err := asynq.ParseRedisURI(url)
	if err != nil {
		t.Fatal(err)
	}
	opt := ro.(asynq.RedisClientOpt)
	dir := t.TempDir()
	l, err := sqlite.Open(context.Background(), filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	b := &bundle{t: t, url: url, opt: opt, client: asynq.NewClient(opt), insp: asynq.NewInspector(opt), ledger: l, dir: dir, calls: map[string][]time.Time{},
		decided: make(chan struct{})}
	b.worker = &ingest.Worker{Ledger: l, Broker: b.client, Policy: policy, Master: validate.DefaultMasterPolicy(),
		Software: premis.Software{Name: "lazaret", Version: "test"}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Observe: b.observe}
	t.Cleanup(func() {
		b.client.Close()
		b.insp.Close()
		l.Close()
	})
	return b
}

// start runs an asynq server for the bundle's worker until the test ends.
// after, when given, sees each handler result and may replace it (an ack
// that never reaches Redis).
func (b *bundle) start(after ...func(taskID string, err error) error) {
	b.t.Helper()
	srv, mux := ingest.NewServer(b.opt, b.worker, ingest.ServerConfig{Concurrency: 2, PollInterval: 50 * time.Millisecond, ShutdownTimeout: 5 * time.Second})
	mux.Use(func(h asynq.Handler) asynq.Handler {
		return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
			id, _ := asynq.GetTaskID(ctx)
			b.mu.Lock()
			b.calls[id] = append(b.calls[id], time.Now())
			b.mu.Unlock()
			err := h.ProcessTask(ctx, t)
			for _, f := range after {
				err = f(id, err)
			}
			return err
		})
	})
	if err := srv.Start(mux); err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(srv.Shutdown)
}

func (b *bundle) invocations(taskID string) []time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]time.Time(nil), b.calls[taskID]...)
}

// file writes a generated master and returns its path and digest.
func (b *bundle) file(name string, data []byte) (string, string) {
	b.t.Helper()
	p := filepath.Join(b.dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		b.t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return p, hex.EncodeToString(sum[:])
}

func master(t *testing.T, pages ...fixtures.Page) []byte {
	var buf bytes.Buffer
	if _, err := fixtures.WriteTIFF(&buf, pages); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

var goodPage = fixtures.Page{Width: 32, Height: 24, Samples: 3, Deflate: true, RowsPerStrip: 8, DPI: 400}

func (b *bundle) envelope(object, path, sha string) *ingest.Envelope {
	return &ingest.Envelope{V: ingest.EnvelopeVersion, CorrelationID: ingest.CorrelationID("batch-t", object, sha), BatchID: "batch-t",
		ObjectID: object, Kind: "tiff", Path: path, SHA256: sha, Attempt: 1,
		Item: validate.Item{ObjectID: object, Kind: "tiff", Path: filepath.Base(path), SHA256: sha, ColorProfile: "sRGB", ResolutionDPI: "400"}}
}

func (b *bundle) enqueue(env *ingest.Envelope) {
	b.t.Helper()
	if _, err := ingest.Enqueue(context.Background(), b.client, env, ingest.SubmitOptions{Policy: b.worker.Policy}); err != nil {
		b.t.Fatal(err)
	}
}

// settled waits until the item has an event with a terminal destination.
// It reads the ledger each time the worker observes a decision (and at
// least every 250 ms, for decisions made elsewhere: reconcile, operators).
func (b *bundle) settled(corr string, timeout time.Duration) premis.Event {
	b.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		wake := b.next()
		evs, err := b.ledger.Events(context.Background(), premis.Filter{CorrelationID: corr})
		if err != nil {
			b.t.Fatal(err)
		}
		for _, e := range evs {
			if e.Destination.Terminal() {
				return e
			}
		}
		select {
		case <-wake:
		case <-time.After(250 * time.Millisecond):
		case <-deadline.C:
			b.t.Fatalf("item %s did not settle within %s", corr, timeout)
		}
	}
}

func (b *bundle) events(corr string) []premis.Event {
	b.t.Helper()
	evs, err := b.ledger.Events(context.Background(), premis.Filter{CorrelationID: corr})
	if err != nil {
		b.t.Fatal(err)
	}
	return evs
}

func fastPolicy() ingest.Policy {
	p := ingest.DefaultPolicy()
	p.RetryBase, p.RetryMax = 100*time.Millisecond, 2*time.Second
	p.RoutingBase, p.RoutingMax = 100*time.Millisecond, 500*time.Millisecond
	return p
}

func TestCorruptMasterArchivedAfterOneAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	var buf bytes.Buffer
	lay, _ := fixtures.WriteTIFF(&buf, []fixtures.Page{goodPage})
	data := buf.Bytes()
	for i := int64(0); i < 6; i++ {
		data[lay.StripOffsets[0][1]+2+i] ^= 0x5A
	}
	path, sha := b.file("corrupt.tif", data)
	env := b.envelope("corrupt", path, sha)
	b.start()
	b.enqueue(env)
	ev := b.settled(env.CorrelationID, 10*time.Second)
	time.Sleep(300 * time.Millisecond) // room for a wrongful retry to show up
	if n := len(b.invocations(env.TaskID())); n != 1 {
		t.Fatalf("handler ran %d times, want exactly 1", n)
	}
	if ev.Destination != premis.DeadLetter || ev.Class != premis.Structural || ev.Code != "tiff.undecodable" {
		t.Fatalf("event %s/%s/%s", ev.Destination, ev.Class, ev.Code)
	}
	if ev.SHA256 != sha {
		t.Errorf("event sha256 %s, the file's is %s", ev.SHA256, sha)
	}
	if ev.Offset == nil || *ev.Offset != lay.StripOffsets[0][1] || ev.Page == nil || *ev.Page != 1 {
		t.Errorf("position: offset %v page %v, want the second strip at %d on page 1", ev.Offset, ev.Page, lay.StripOffsets[0][1])
	}
	b.waitState(ingest.QueueIngest, env.TaskID(), asynq.TaskStateArchived, 5*time.Second)
}

// Not parallel: it times asynq's retries, and a second's delay from the
// other tests' load on a small machine (a first gap of 5 s, seen at -parallel
// 8 beside the memory tests) makes the growing gaps look shrinking.
func TestTransientRetriedWithGrowingDelaysThenArchived(t *testing.T) {
	p := fastPolicy()
	// asynq keeps retry times in whole seconds and polls an idle queue about
	// once a second, so delays are made long enough to tell apart: 2, 4, 8 s.
	p.RetryBase, p.RetryMax = 2*time.Second, 20*time.Second
	p.Jitter = func(n int64) int64 { return n } // full jitter at its ceiling: predictable delays
	b := setup(t, p)
	env := b.envelope("not-yet-copied", filepath.Join(b.dir, "still-on-the-scanner.tif"), strings.Repeat("a", 64))
	b.start()
	b.enqueue(env)
	ev := b.settled(env.CorrelationID, 40*time.Second)
	calls := b.invocations(env.TaskID())
	if len(calls) != 1+p.MaxRetry {
		t.Fatalf("handler ran %d times, want %d", len(calls), 1+p.MaxRetry)
	}
	var prev time.Duration
	for i := 1; i < len(calls); i++ {
		gap := calls[i].Sub(calls[i-1])
		want := p.RetryBase << (i - 1)
		// asynq keeps retry times in whole seconds (a Unix-time score), so a
		// retry may come up to a second before the exact delay.
		if gap < want-time.Second {
			t.Errorf("retry %d came after %s, the recorded backoff was %s", i, gap, want)
		}
		if gap <= prev {
			t.Errorf("retry %d gap %s is not longer than the previous %s", i, gap, prev)
		}
		prev = gap
	}
	if ev.Destination != premis.DeadLetter || ev.Class != premis.Transient || !strings.Contains(ev.Note, "retries exhausted after 3 retries") {
		t.Fatalf("final event %s/%s %q", ev.Destination, ev.Class, ev.Note)
	}
	var retries int
	for _, e := range b.events(env.CorrelationID) {
		if e.Destination == premis.Retry {
			want := fmt.Sprintf("retry %d of 3 in %s", retries+1, p.RetryBase<<retries)
			if !strings.Contains(e.Note, want) {
				t.Errorf("retry event note %q lacks %q", e.Note, want)
			}
			retries++
		}
	}
	if retries != p.MaxRetry {
		t.Errorf("%d retry events, want %d", retries, p.MaxRetry)
	}
	b.waitState(ingest.QueueIngest, env.TaskID(), asynq.TaskStateArchived, 5*time.Second)
}

func TestSemanticFailureIsQuarantinedNotArchived(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	path, sha := b.file("m.tif", master(t, goodPage))
	env := b.envelope("no-profile", path, sha)
	env.Item.ColorProfile = ""
	b.start()
	b.enqueue(env)
	ev := b.settled(env.CorrelationID, 10*time.Second)
	if ev.Type != premis.Quarantine || ev.Destination != premis.Quarantined || ev.Code != "manifest.color_profile.required" {
		t.Fatalf("event %s %s %s", ev.Type, ev.Destination, ev.Code)
	}
	held, err := b.insp.GetTaskInfo(ingest.QueueQuarantine, ingest.HeldTaskID(ev.Key))
	if err != nil || held.State != asynq.TaskStatePending || !strings.Contains(string(held.Payload), ev.ID) {
		t.Fatalf("held task: %+v %v", held, err)
	}
	if arch, _ := b.insp.ListArchivedTasks(ingest.QueueIngest); len(arch) != 0 {
		t.Errorf("%d archived tasks, want none", len(arch))
	}
	time.Sleep(200 * time.Millisecond)
	if n := len(b.invocations(env.TaskID())); n != 1 {
		t.Errorf("handler ran %d times", n)
	}
}

func TestPoisonCapGoesToAuditHold(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	path, sha := b.file("m.tif", master(t, goodPage))
	semantic := b.envelope("replayed-too-often", path, sha)
	semantic.Item.ResolutionDPI = "abc"
	semantic.Attempt = 5
	transient := b.envelope("flaky-at-cap", filepath.Join(b.dir, "gone.tif"), sha)
	transient.Attempt = 5
	b.start()
	b.enqueue(semantic)
	b.enqueue(transient)
	for _, env := range []*ingest.Envelope{semantic, transient} {
		ev := b.settled(env.CorrelationID, 10*time.Second)
		if ev.Destination != premis.AuditHold || ev.Type != premis.Quarantine || !strings.Contains(ev.Note, "poison cap") {
			t.Fatalf("%s: %s %s %q", env.ObjectID, ev.Destination, ev.Type, ev.Note)
		}
		b.waitState(ingest.QueueAuditHold, ingest.HeldTaskID(ev.Key), asynq.TaskStatePending, 5*time.Second)
	}
}

func TestRedeliveryDoesNotAddEvents(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	path, sha := b.file("m.tif", master(t, goodPage))
	good := b.envelope("good", path, sha)
	bad := b.envelope("bad", path, sha)
	bad.Item.ResolutionDPI = "abc"
	ctx := context.Background()
	for _, env := range []*ingest.Envelope{good, bad} {
		payload, _ := env.Encode()
		task := asynq.NewTask(ingest.TypeValidate, payload)
		for i := 0; i < 3; i++ { // the same delivery, three times
			if err := b.worker.HandleValidate(ctx, task); err != nil {
				t.Fatalf("%s delivery %d: %v", env.ObjectID, i, err)
			}
		}
	}
	b.recordedOnce(good, bad)
}

// TestRedeliveryKeepsTheRecordedDecision: a task decided by one delivery
// and delivered again (a lost ack) must find that decision and repeat only
// its broker step, not validate again: here the file was swapped in
// between, so validating again would decide a second time (a fixity
// failure on top of the acceptance) for one task. Both the accepted and
// the quarantined item keep their one decision. Over PostgreSQL, whose
// group committer checks a first delivery in its append
// (premis.FirstAppender), a delivery asynq did not count as a retry takes
// itself for the first: the append finds the decision and writes nothing,
// and the delivery is decided again from the history.
func TestRedeliveryKeepsTheRecordedDecision(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			b := setup(t, fastPolicy())
			if backend == "postgres" {
				b.usePostgres()
			}
			redeliveryKeepsTheRecordedDecision(t, b)
		})
	}
}

func redeliveryKeepsTheRecordedDecision(t *testing.T, b *bundle) {
	ctx := context.Background()
	goodPath, goodSHA := b.file("good.tif", master(t, goodPage))
	badPath, badSHA := b.file("bad.tif", master(t, goodPage))
	good := b.envelope("decided-then-swapped", goodPath, goodSHA)
	bad := b.envelope("parked-then-swapped", badPath, badSHA)
	bad.Item.ResolutionDPI = "abc"
	for _, tc := range []struct {
		env  *ingest.Envelope
		path string
		want string
	}{{good, goodPath, ",,,accept"}, {bad, badPath, "quarantine"}} {
		payload, _ := tc.env.Encode()
		task := asynq.NewTask(ingest.TypeValidate, payload)
		first := tc.env.ObjectID + ": first delivery"
		firstErr := b.worker.HandleValidate(ctx, task)
		if firstErr != nil {
			t.Fatalf("%s: %v (acknowledged, even when parked)", first, firstErr)
		}
		if got := destinations(b.events(tc.env.CorrelationID)); got != tc.want {
			t.Fatalf("%s: events %s, want %s", first, got, tc.want)
		}
		if err := os.WriteFile(tc.path, []byte("II*\x00 not the file that was decided on"), 0o644); err != nil {
			t.Fatal(err)
		}
		// The same task, delivered again: the same broker step (an ack),
		// and nothing new in the ledger.
		if err := b.worker.HandleValidate(ctx, task); err != nil {
			t.Errorf("%s: the redelivery was not acknowledged: %v", tc.env.ObjectID, err)
		}
		if got := destinations(b.events(tc.env.CorrelationID)); got != tc.want {
			t.Errorf("%s: after a redelivery events %s, want %s: the task was decided twice", tc.env.ObjectID, got, tc.want)
		}
	}
	if q, _ := b.insp.ListPendingTasks(ingest.QueueQuarantine); len(q) != 1 {
		t.Errorf("%d parked copies, want 1", len(q))
	}
}

// usePostgres puts a PostgreSQL ledger (a schema of the test's own)
// behind a group committer in the worker, as lazaret worker runs it.
func (b *bundle) usePostgres() {
	b.t.Helper()
	l, err := postgres.Open(context.Background(), testenv.Postgres(b.t))
	if err != nil {
		b.t.Fatal(err)
	}
	g := premis.NewGroupCommit(l, 0)
	b.t.Cleanup(func() { g.Close() })
	b.ledger, b.worker.Ledger = g, g
}

func TestUndecodablePayloadIsArchivedWithEvent(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	b.start()
	payload := []byte(`{"v":1,"object_id":`)
	info, err := b.client.Enqueue(asynq.NewTask(ingest.TypeValidate, payload), asynq.Queue(ingest.QueueIngest), asynq.MaxRetry(3))
	if err != nil {
		t.Fatal(err)
	}
	ev := b.settled(info.ID, 10*time.Second)
	sum := sha256.Sum256(payload)
	if ev.Code != "task.undecodable" || ev.Class != premis.Structural || ev.SHA256 != hex.EncodeToString(sum[:]) || ev.ObjectID != info.ID {
		t.Fatalf("event %+v", ev)
	}
	time.Sleep(200 * time.Millisecond)
	if n := len(b.invocations(info.ID)); n != 1 {
		t.Errorf("handler ran %d times", n)
	}
	b.waitState(ingest.QueueIngest, info.ID, asynq.TaskStateArchived, 5*time.Second)
}

func TestPanicIsRecoveredAndQuarantined(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	b.worker.Validators = map[string]ingest.Validator{"boom": func(context.Context, *ingest.Envelope) (*validate.Report, error) {
		var pages []int
		return nil, fmt.Errorf("page %d", pages[len(os.Args)]) // index out of range: a real runtime panic
	}}
	env := b.envelope("panics", "/nowhere", strings.Repeat("b", 64))
	env.Kind = "boom"
	b.start()
	b.enqueue(env)
	ev := b.settled(env.CorrelationID, 10*time.Second)
	if ev.Class != premis.Unknown || ev.Code != "panic" || ev.Destination != premis.Quarantined {
		t.Fatalf("event %s %s %s", ev.Class, ev.Code, ev.Destination)
	}
}

// flakyBroker fails the first n hand-offs, like a Redis that is down.
type flakyBroker struct {
	ingest.Enqueuer
	fail atomic.Int32
}

func (f *flakyBroker) EnqueueContext(ctx context.Context, t *asynq.Task, opts ...asynq.Option) (*asynq.TaskInfo, error) {
	if f.fail.Add(-1) >= 0 {
		return nil, errors.New("redis: connection refused")
	}
	return f.Enqueuer.EnqueueContext(ctx, t, opts...)
}

// flakyLedger fails the first n appends, like a locked database.
type flakyLedger struct {
	premis.Ledger
	fail atomic.Int32
}

func (f *flakyLedger) Append(ctx context.Context, evs ...*premis.Event) ([]bool, error) {
	if f.fail.Add(-1) >= 0 {
		return nil, fmt.Errorf("sqlite: %w", premis.ErrBusy)
	}
	return f.Ledger.Append(ctx, evs...)
}

func TestOutagesDuringRoutingLoseNothing(t *testing.T) {
	t.Parallel()
	p := fastPolicy()
	p.MaxRetry = 1 // outages must not spend this
	b := setup(t, p)
	fb := &flakyBroker{Enqueuer: b.client}
	fb.fail.Store(3)
	fl := &flakyLedger{Ledger: b.ledger}
	fl.fail.Store(2)
	b.worker.Broker, b.worker.Ledger = fb, fl
	path, sha := b.file("m.tif", master(t, goodPage))
	env := b.envelope("outage", path, sha)
	env.Item.ResolutionDPI = "abc"
	b.start()
	b.enqueue(env)
	ev := b.settled(env.CorrelationID, 20*time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if q, _ := b.insp.ListPendingTasks(ingest.QueueQuarantine); len(q) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the item never reached quarantine")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ev.Destination != premis.Quarantined {
		t.Fatalf("destination %s", ev.Destination)
	}
	if n := len(b.events(env.CorrelationID)); n != 1 {
		t.Errorf("%d events, want 1: redeliveries collapse", n)
	}
	if calls := len(b.invocations(env.TaskID())); calls != 6 {
		t.Errorf("handler ran %d times, want 6 (2 ledger failures, 3 hand-off failures, then success)", calls)
	}
	b.waitState(ingest.QueueIngest, env.TaskID(), asynq.TaskStateCompleted, 5*time.Second)
}

func TestSubmitIsIdempotent(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	batch, err := fixtures.WriteArchiveBatch(filepath.Join(b.dir, "batch"))
	if err != nil {
		t.Fatal(err)
	}
	m, dir, err := validate.ReadManifestFile(batch.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r1, err := ingest.Submit(ctx, b.ledger, b.client, m, dir, ingest.SubmitOptions{Policy: b.worker.Policy})
	if err != nil || len(r1.Enqueued) != len(m.Items) {
		t.Fatalf("first submit: %+v %v", r1, err)
	}
	r2, err := ingest.Submit(ctx, b.ledger, b.client, m, dir, ingest.SubmitOptions{Policy: b.worker.Policy})
	if err != nil || len(r2.Enqueued) != 0 || len(r2.Duplicates) != len(m.Items) {
		t.Fatalf("second submit: %+v %v", r2, err)
	}
	m.Items[0].Path = "missing.tif"
	m.Items[1].Path = "also-missing.tif"
	_, err = ingest.Submit(ctx, b.ledger, b.client, m, dir, ingest.SubmitOptions{Policy: b.worker.Policy})
	if err == nil || !strings.Contains(err.Error(), "missing.tif") || !strings.Contains(err.Error(), "also-missing.tif") {
		t.Fatalf("submit with missing files: %v (want both named)", err)
	}
}
