package pipebench

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
)

// FillLedger appends the history of items masters to l as the pipeline
// writes it — submission, fixity, format, validation, then accepted, or
// for one item in ten a quarantine — five events an item, in batches of a
// thousand items (batch ids "fill-000000", ...). It returns the id of the
// last batch.
func FillLedger(ctx context.Context, l premis.Ledger, items int) (lastBatch string, err error) {
	const perBatch = 1000
	evs := make([]*premis.Event, 0, 5*200)
	now := time.Now().UTC()
	for i := range items {
		batch := fmt.Sprintf("fill-%06d", i/perBatch)
		obj := fmt.Sprintf("item-%08d", i)
		corr := fmt.Sprintf("corr-%08d", i)
		sha := fmt.Sprintf("%064x", i)
		types := []premis.EventType{premis.IngestionStart, premis.FixityCheck, premis.FormatIdentification, premis.Validation, premis.Ingestion}
		for j, t := range types {
			e := &premis.Event{Key: premis.EventKey(corr, sha, t, 1), Type: t, DateTime: now.Add(time.Duration(i*5+j) * time.Microsecond),
				ObjectID: obj, BatchID: batch, CorrelationID: corr, Kind: "tiff", SHA256: sha, Size: 4096, Path: obj + ".tif",
				Attempt: 1, TaskID: "task-" + corr, Agent: "lazaret/bench", Outcome: premis.Success}
			switch {
			case j == 0:
				e.Destination = premis.Submitted
			case j == 4 && i%10 == 0:
				e.Type, e.Key = premis.Quarantine, premis.EventKey(corr, sha, premis.Quarantine, 1)
				e.Destination, e.Outcome, e.Class, e.Code, e.Message = premis.Quarantined, premis.Failure, premis.Semantic, "tiff.resolution", "no absolute XResolution"
			case j == 4:
				e.Destination = premis.Accepted
			}
			evs = append(evs, e)
		}
		if len(evs) >= cap(evs) || i == items-1 {
			if _, err := l.Append(ctx, evs...); err != nil {
				return "", fmt.Errorf("fill ledger: %w", err)
			}
			evs = evs[:0]
		}
		lastBatch = batch
	}
	return lastBatch, nil
}

// Query is one read-model measurement: the best time of a few runs, what
// one run allocated, and how many records it returned.
type Query struct {
	Name    string
	Short   string // for benchmark metric units
	Best    time.Duration
	Alloc   uint64
	Results int
}

// ReadModel times what operators ask of a ledger filled by FillLedger:
// the first 50 open failures (dlq ls / GET /v1/failures), the status of
// one batch of a thousand items, and one item's history.
func ReadModel(ctx context.Context, l premis.Ledger, batch string, rounds int) ([]Query, error) {
	qs := []struct {
		name, short string
		run         func() (int, error)
	}{
		{"50 open failures (dlq ls --limit 50)", "failures", func() (int, error) {
			fs, err := ingest.Failures(ctx, l, ingest.FailureFilter{Limit: 50})
			return len(fs), err
		}},
		{"status of one 1,000-item batch", "batch", func() (int, error) {
			st, err := ingest.BatchStatus(ctx, l, batch)
			return len(st), err
		}},
		{"one item's history", "history", func() (int, error) {
			evs, err := l.Events(ctx, premis.Filter{CorrelationID: "corr-00000007"})
			return len(evs), err
		}},
	}
	var out []Query
	for _, q := range qs {
		r := Query{Name: q.name, Short: q.short, Best: time.Duration(1 << 62)}
		for range max(1, rounds) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			n, err := q.run()
			d := time.Since(start)
			runtime.ReadMemStats(&after)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", q.name, err)
			}
			r.Best, r.Results = min(r.Best, d), n
			r.Alloc = after.TotalAlloc - before.TotalAlloc
		}
		out = append(out, r)
	}
	return out, nil
}

// StartRedis runs a private redis-server (from PATH) on a free loopback
// port that keeps nothing on disk, so a measurement never touches a Redis
// somebody else uses. stop ends it.
func StartRedis(dir string) (addr string, stop func(), err error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", nil, fmt.Errorf("redis-server is not installed (or say --redis): %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
	cmd.Stdout, cmd.Stderr = nil, os.Stderr
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop = func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	addr = "127.0.0.1:" + strconv.Itoa(port)
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c.Ping(context.Background()).Err() == nil {
			return addr, stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("redis-server on %s did not answer", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
