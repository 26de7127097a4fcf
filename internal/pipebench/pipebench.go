// Package pipebench measures the ingest pipeline against its broker: the
// same number of tasks drained by a bare asynq server with a no-op handler
// (the anchor) and by Lazaret's workers validating small masters and
// recording every decision, on the same Redis, at the same concurrency, in
// the same run. Figures are ratios to the anchor, so a noisy machine moves
// both sides.
package pipebench

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/validate"
)

// Options is one measurement.
type Options struct {
	Redis       asynq.RedisConnOpt
	Items       int
	Concurrency int
	// Fail makes every item a structural failure (dead-lettered at once);
	// the anchor's handler then returns asynq.SkipRetry.
	Fail bool
	// Timeout bounds one drain; 0 means 5 minutes.
	Timeout time.Duration
	// Durable, when set, is a file the anchor's handler appends one 1 KB
	// record to, and syncs, before it returns: one sync a task, as a
	// pipeline pays that acknowledges a task only once its record is
	// durable and commits one task at a time. The file is the caller's to
	// remove.
	Durable string
}

func (o Options) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return 5 * time.Minute
}

// Run is what one drain cost: the time from the server's start to the
// last task settled, and the CPU time this process spent meanwhile (user
// and system; Redis is another process). CPU per item is the steadier
// figure on a shared machine.
type Run struct {
	Wall, CPU time.Duration
}

// Add counts o in r: rounds of one measurement are summed, then divided.
func (r *Run) Add(o Run) { r.Wall, r.CPU = r.Wall+o.Wall, r.CPU+o.CPU }

// Bare drains o.Items no-op tasks from a queue of its own (each with one
// synced write when o.Durable is set). The queue is deleted afterwards.
func Bare(ctx context.Context, o Options) (Run, error) {
	queue := "pipebench-" + randomHex(6)
	c := asynq.NewClient(o.Redis)
	defer c.Close()
	insp := asynq.NewInspector(o.Redis)
	defer insp.Close()
	defer insp.DeleteQueue(queue, true) //nolint:errcheck // best effort: the queue is ours
	for i := range o.Items {
		payload := fmt.Appendf(nil, `{"v":1,"n":%d,"pad":"%0120d"}`, i, 0) // about an envelope's size
		if _, err := c.EnqueueContext(ctx, asynq.NewTask("pipebench:noop", payload), asynq.Queue(queue), asynq.MaxRetry(0)); err != nil {
			return Run{}, fmt.Errorf("anchor: enqueue: %w", err)
		}
	}
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	record := func() error { return nil }
	if o.Durable != "" {
		f, err := os.OpenFile(o.Durable, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return Run{}, fmt.Errorf("anchor: %w", err)
		}
		defer f.Close()
		line := append(bytes.Repeat([]byte{'x'}, 1023), '\n')
		record = func() error {
			if _, err := f.Write(line); err != nil {
				return err
			}
			return f.Sync()
		}
	}
	var handled atomic.Int64
	done := make(chan struct{})
	srv := asynq.NewServer(o.Redis, asynq.Config{Concurrency: o.Concurrency, Queues: map[string]int{queue: 1},
		LogLevel: asynq.FatalLevel, ShutdownTimeout: 10 * time.Second})
	mux := asynq.NewServeMux()
	mux.HandleFunc("pipebench:noop", func(ctx context.Context, t *asynq.Task) error {
		if err := record(); err != nil {
			stop(fmt.Errorf("anchor: record: %w", err))
			return err
		}
		if handled.Add(1) == int64(o.Items) {
			close(done)
		}
		if o.Fail {
			return fmt.Errorf("anchor failure: %w", asynq.SkipRetry)
		}
		return nil
	})
	start := begin()
	if err := srv.Start(mux); err != nil {
		return Run{}, fmt.Errorf("anchor: %w", err)
	}
	defer srv.Shutdown()
	return wait(ctx, start, done, o.timeout(), &handled, o.Items)
}

// Batch is a folder of small masters and its manifest, written once and
// submitted to each pipeline run under a fresh batch id.
type Batch struct {
	Dir   string
	items []validate.Item
}

// Manifest is a manifest of the batch's masters, checked against its
// folder, under a batch id of its own.
func (b *Batch) Manifest() (*validate.Manifest, error) {
	m := &validate.Manifest{BatchID: "bench-" + randomHex(6), Submitter: "lazaret bench", Items: b.items}
	if err := m.Check(b.Dir, false); err != nil {
		return nil, fmt.Errorf("bench manifest: %w", err)
	}
	return m, nil
}

// WriteBatch writes n small RGB masters (each different, 2-7 KB) into dir:
// valid ones, or when fail is set ones cut short by a third (a structural
// failure).
func WriteBatch(dir string, n int, fail bool) (*Batch, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	b := &Batch{Dir: dir}
	icc := fixtures.ICCProfile("sRGB IEC61966-2.1")
	for i := range n {
		name := fmt.Sprintf("m%06d.tif", i)
		page := fixtures.Page{Width: 24 + i%16, Height: 24, Samples: 3, RowsPerStrip: 8, DPI: 400, ICC: icc}
		var buf bytes.Buffer
		if _, err := fixtures.WriteTIFF(&buf, []fixtures.Page{page}); err != nil {
			return nil, err
		}
		data := buf.Bytes()
		if fail {
			data = data[:len(data)-len(data)/3] // cut short: a structural failure
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return nil, err
		}
		sum := sha256.Sum256(data)
		b.items = append(b.items, validate.Item{ObjectID: fmt.Sprintf("obj-%06d", i), Kind: "tiff", Path: name,
			SHA256: hex.EncodeToString(sum[:]), Format: "image/tiff", ColorProfile: "sRGB IEC61966-2.1", ResolutionDPI: "400"})
	}
	return b, nil
}

// Pipeline submits the batch under a new batch id into an empty ingest
// queue, then starts workers (w, at o.Concurrency) and returns the time from
// their start until every item's decision is recorded, and the time the
// submission took. w.Observe is replaced for the run.
func Pipeline(ctx context.Context, o Options, w *ingest.Worker, b *Batch) (drain Run, submit time.Duration, err error) {
	insp := asynq.NewInspector(o.Redis)
	defer insp.Close()
	if q, err := insp.GetQueueInfo(ingest.QueueIngest); err == nil {
		if n := q.Pending + q.Active + q.Scheduled + q.Retry + q.Archived; n > 0 {
			return Run{}, 0, fmt.Errorf("the %s queue holds %d unfinished tasks: measure on a Redis (or database) of its own", ingest.QueueIngest, n)
		}
	}
	c := asynq.NewClient(o.Redis)
	defer c.Close()
	m, err := b.Manifest()
	if err != nil {
		return Run{}, 0, err
	}
	t0 := time.Now()
	res, err := ingest.Submit(ctx, w.Ledger, c, m, b.Dir, ingest.SubmitOptions{Policy: w.Policy, Software: w.Software})
	if err != nil {
		return Run{}, 0, fmt.Errorf("submit: %w", err)
	}
	submit = time.Since(t0)
	if len(res.Enqueued) != len(b.items) {
		return Run{}, submit, fmt.Errorf("submit enqueued %d of %d items", len(res.Enqueued), len(b.items))
	}
	var settled atomic.Int64
	done := make(chan struct{})
	want := premis.Accepted
	if o.Fail {
		want = premis.DeadLetter
	}
	var wrong atomic.Int64
	w.Observe = func(ob ingest.Observation) {
		if !ob.Destination.Terminal() && ob.Destination != premis.Quarantined && ob.Destination != premis.AuditHold {
			return // a retry: not settled yet
		}
		if ob.Destination != want {
			wrong.Add(1)
		}
		if settled.Add(1) == int64(len(b.items)) {
			close(done)
		}
	}
	defer func() { w.Observe = nil }()
	srv, mux := ingest.NewServer(o.Redis, w, ingest.ServerConfig{Concurrency: o.Concurrency, ShutdownTimeout: 10 * time.Second, PollInterval: 100 * time.Millisecond})
	start := begin()
	if err := srv.Start(mux); err != nil {
		return Run{}, submit, err
	}
	defer srv.Shutdown()
	drain, err = wait(ctx, start, done, o.timeout(), &settled, len(b.items))
	if err == nil && wrong.Load() > 0 {
		err = fmt.Errorf("%d of %d items did not end %s", wrong.Load(), len(b.items), want)
	}
	return drain, submit, err
}

type mark struct {
	wall time.Time
	cpu  time.Duration
}

func begin() mark { return mark{time.Now(), cpuTime()} }

func (m mark) since() Run { return Run{Wall: time.Since(m.wall), CPU: cpuTime() - m.cpu} }

func wait(ctx context.Context, start mark, done <-chan struct{}, timeout time.Duration, n *atomic.Int64, want int) (Run, error) {
	select {
	case <-done:
		return start.since(), nil
	case <-time.After(timeout):
		return Run{}, fmt.Errorf("drain: %d of %d tasks after %s", n.Load(), want, timeout)
	case <-ctx.Done():
		return Run{}, context.Cause(ctx)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Discard is a logger for benchmark workers: decisions are counted, not
// logged.
func Discard() *slog.Logger {
	return slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError}))
}
