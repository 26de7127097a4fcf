package ingest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/sqlite"
	"github.com/lazaret/lazaret/validate"
)

// BenchmarkWorkerStart measures a worker starting over a backlog of
// submitted, unprocessed items (100,000; 10,000 with -short), in the ledger
// and in Redis, as `lazaret worker` starts: the ledger opened, the asynq
// server started, the first task decided (ms-to-first-task, issue 26's
// target < 1 s), and the start's broker reconciliation run beside it, from
// the mark the last pass left against the same Redis data
// (ms-start-pass). The whole-ledger pass a worker runs against Redis data
// it has no mark for (a restarted Redis) is measured once, for scale
// (ms-whole-pass). Each round decides a few items, which the next does not
// find pending: the backlog shrinks by a handful.
//
//	go test ./ingest -run '^$' -bench WorkerStart -benchtime 3x
func BenchmarkWorkerStart(b *testing.B) {
	items := 100_000
	if testing.Short() {
		items = 10_000
	}
	ctx := context.Background()
	ro, err := asynq.ParseRedisURI(testenv.OwnRedis(b, 0))
	if err != nil {
		b.Fatal(err)
	}
	opt := ro.(asynq.RedisClientOpt)
	dir := b.TempDir()
	ledgerPath := filepath.Join(dir, "ledger.db")
	var tif bytes.Buffer
	if _, err := fixtures.WriteTIFF(&tif, []fixtures.Page{{Width: 32, Height: 24, Samples: 3, Deflate: true, RowsPerStrip: 8, DPI: 400}}); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "m.tif")
	if err := os.WriteFile(path, tif.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	sum := sha256.Sum256(tif.Bytes())
	sha := hex.EncodeToString(sum[:])
	f, _, err := validate.Open(validate.Source{Root: dir, Rel: "m.tif", Path: path})
	if err != nil {
		b.Fatal(err)
	}
	id := validate.IDOf(f)
	f.Close()

	// The backlog: every item recorded as submitted, then enqueued, as
	// Submit does (its chunks, its concurrent hand-offs).
	l, err := sqlite.Open(ctx, ledgerPath)
	if err != nil {
		b.Fatal(err)
	}
	sw := premis.Software{Name: "lazaret", Version: "bench"}
	now := time.Now().UTC()
	envs := make([]*Envelope, items)
	record := make([]*premis.Event, items)
	for i := range envs {
		it := validate.Item{ObjectID: fmt.Sprintf("obj-%06d", i), Kind: "tiff", Path: "m.tif", SHA256: sha, ColorProfile: "sRGB", ResolutionDPI: "400"}
		envs[i] = &Envelope{V: EnvelopeVersion, CorrelationID: CorrelationID("start-bench", it.ObjectID, sha), BatchID: "start-bench",
			Submitter: "bench", ObjectID: it.ObjectID, Kind: "tiff", Path: path, Root: dir, Rel: "m.tif", SHA256: sha, Size: int64(tif.Len()),
			Dev: id.Dev, Ino: id.Ino, Item: it, Attempt: 1, SubmittedAt: now}
		record[i] = submissionEvent(envs[i], sw, now)
	}
	for i := 0; i < items; i += submitChunk {
		if _, err := l.Append(ctx, record[i:min(i+submitChunk, items)]...); err != nil {
			b.Fatal(err)
		}
	}
	client := asynq.NewClient(opt)
	defer client.Close()
	if _, err := enqueueAll(ctx, client, envs, SubmitOptions{}); err != nil {
		b.Fatal(err)
	}
	l.Close()
	insp := asynq.NewInspector(opt)
	defer insp.Close()
	rc := redis.NewClient(&redis.Options{Addr: opt.Addr, DB: opt.DB})
	defer rc.Close()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))

	// start is one worker start: what `lazaret worker` does before its
	// first task, then its start pass beside the tasks.
	start := func(b *testing.B) (toFirst, pass time.Duration) {
		t0 := time.Now()
		l, err := sqlite.Open(ctx, ledgerPath)
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		g := premis.NewGroupCommit(l, 0)
		defer g.Stop()
		var once sync.Once
		first := make(chan time.Duration, 1)
		var firstDest premis.Destination
		w := &Worker{Ledger: g, Broker: client, Policy: DefaultPolicy(), Master: validate.DefaultMasterPolicy(), Software: sw, Logger: logger,
			Observe: func(o Observation) { once.Do(func() { firstDest = o.Destination; first <- time.Since(t0) }) }}
		srv, mux := NewServer(opt, w, ServerConfig{Concurrency: 2, ShutdownTimeout: 10 * time.Second})
		if err := srv.Start(mux); err != nil {
			b.Fatal(err)
		}
		op := &Operator{Ledger: g, Enqueuer: client, Broker: insp, Policy: w.Policy, Software: sw, Logger: logger}
		dataID := BrokerDataID(ctx, rc)
		p0 := time.Now()
		rep, through, err := op.ReconcileBrokerSince(ctx, ReconciledThrough(ctx, rc, dataID), false)
		pass = time.Since(p0)
		if err != nil {
			b.Fatal(err)
		}
		if n := len(rep.Reenqueued); n > 0 {
			b.Fatalf("the start pass enqueued %d items the broker held", n)
		}
		if err := MarkReconciled(ctx, rc, dataID, through); err != nil {
			b.Fatal(err)
		}
		if n := len(rep.Reparked) + len(rep.StaleParked); n > 0 {
			b.Fatalf("the start pass moved %d parked tasks", n)
		}
		select {
		case toFirst = <-first:
			if firstDest != premis.Accepted {
				b.Fatalf("the first task ended %s, want accepted", firstDest)
			}
		case <-time.After(time.Minute):
			b.Fatal("no task decided in a minute")
		}
		srv.Shutdown()
		return toFirst, pass
	}

	// The first start: no mark, so the whole ledger is read.
	_, whole := start(b)
	b.ResetTimer()
	var toFirst, pass time.Duration
	for range b.N {
		f, p := start(b)
		toFirst, pass = toFirst+f, pass+p
	}
	b.ReportMetric(float64(toFirst.Milliseconds())/float64(b.N), "ms-to-first-task")
	b.ReportMetric(float64(pass.Microseconds())/1000/float64(b.N), "ms-start-pass")
	b.ReportMetric(float64(whole.Milliseconds()), "ms-whole-pass")
	b.ReportMetric(float64(items), "items")
}
