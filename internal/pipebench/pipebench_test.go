package pipebench_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/internal/pipebench"
	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/postgres"
	"github.com/lazaret/lazaret/premis/sqlite"
	"github.com/lazaret/lazaret/validate"
)

func redisOpt(t testing.TB, db int) asynq.RedisConnOpt {
	ro, err := asynq.ParseRedisURI(testenv.Redis(t, db))
	if err != nil {
		t.Fatal(err)
	}
	return ro
}

func worker(l premis.Ledger, opt asynq.RedisConnOpt) (*ingest.Worker, func()) {
	c := asynq.NewClient(opt)
	g := premis.NewGroupCommit(l, 0)
	w := &ingest.Worker{Ledger: g, Broker: c, Policy: ingest.DefaultPolicy(), Master: validate.DefaultMasterPolicy(),
		Software: premis.Software{Name: "lazaret", Version: "bench"}, Logger: pipebench.Discard()}
	return w, func() { g.Close(); c.Close() }
}

func sqliteLedger(t testing.TB) premis.Ledger {
	l, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func postgresLedger(t testing.TB) premis.Ledger {
	l, err := postgres.Open(context.Background(), testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// TestPipelineSettlesEveryItem runs both sides of the benchmark on a small
// batch: every item of the pipeline run is recorded where it must end
// (accepted, or dead-lettered for the failing batch), once, and the anchor
// handles every task. Over PostgreSQL, whose first deliveries are checked
// in their appends instead of looked up (premis.FirstAppender), each item
// has its one decision too, and the chain verifies.
func TestPipelineSettlesEveryItem(t *testing.T) {
	opt := redisOpt(t, 9)
	for _, c := range []struct {
		lk   string
		fail bool
	}{{"sqlite", false}, {"sqlite", true}, {"postgres", false}, {"postgres", true}} {
		fail := c.fail
		t.Run(fmt.Sprintf("%s/fail=%v", c.lk, fail), func(t *testing.T) {
			o := pipebench.Options{Redis: opt, Items: 60, Concurrency: 2, Fail: fail, Timeout: time.Minute}
			if _, err := pipebench.Bare(context.Background(), o); err != nil {
				t.Fatal(err)
			}
			b, err := pipebench.WriteBatch(t.TempDir(), o.Items, fail)
			if err != nil {
				t.Fatal(err)
			}
			var l premis.Ledger
			if c.lk == "sqlite" {
				l = sqliteLedger(t)
			} else {
				l = postgresLedger(t)
			}
			w, stop := worker(l, opt)
			defer stop()
			if _, _, err := pipebench.Pipeline(context.Background(), o, w, b); err != nil {
				t.Fatal(err)
			}
			decisions, err := l.Events(context.Background(), premis.Filter{Destinations: []premis.Destination{premis.Accepted, premis.DeadLetter}})
			if err != nil {
				t.Fatal(err)
			}
			if len(decisions) != o.Items {
				t.Errorf("%d decisions, want %d: one an item", len(decisions), o.Items)
			}
			if v, err := premis.Verify(context.Background(), l); err != nil || !v.Intact() {
				t.Errorf("chain: %v %v", v, err)
			}
			want := premis.Accepted
			if fail {
				want = premis.DeadLetter
			}
			evs, err := l.Events(context.Background(), premis.Filter{Latest: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != o.Items {
				t.Fatalf("%d latest outcomes, want %d", len(evs), o.Items)
			}
			for _, e := range evs {
				if e.Destination != want {
					t.Errorf("%s ended %s (%s), want %s", e.ObjectID, e.Destination, e.Message, want)
				}
			}
			if fail {
				if err := asynq.NewInspector(opt).DeleteQueue(ingest.QueueIngest, true); err != nil {
					t.Logf("clean up: %v", err)
				}
			}
		})
	}
}

// BenchmarkPipelineVsAsynq drains the same number of small masters through
// Lazaret's workers and no-op tasks through bare asynq, interleaved, on one
// Redis, and reports both rates and their ratio (the goal: 0.8).
func BenchmarkPipelineVsAsynq(b *testing.B) {
	const items = 1000
	opt := redisOpt(b, 9)
	for _, lk := range []string{"sqlite", "postgres"} {
		for _, fail := range []bool{false, true} {
			name := lk + "/accept"
			if fail {
				name = lk + "/dead-letter"
			}
			b.Run(name, func(b *testing.B) {
				batch, err := pipebench.WriteBatch(b.TempDir(), items, fail)
				if err != nil {
					b.Fatal(err)
				}
				o := pipebench.Options{Redis: opt, Items: items, Concurrency: 2, Fail: fail}
				var bare, pipe pipebench.Run
				for range b.N {
					bd, err := pipebench.Bare(context.Background(), o)
					if err != nil {
						b.Fatal(err)
					}
					var l premis.Ledger
					if lk == "sqlite" {
						l = sqliteLedger(b)
					} else {
						l = postgresLedger(b)
					}
					w, stop := worker(l, opt)
					pd, _, err := pipebench.Pipeline(context.Background(), o, w, batch)
					stop()
					if err != nil {
						b.Fatal(err)
					}
					if fail {
						_ = asynq.NewInspector(opt).DeleteQueue(ingest.QueueIngest, true)
					}
					bare.Add(bd)
					pipe.Add(pd)
				}
				n := float64(items * b.N)
				b.ReportMetric(n/bare.Wall.Seconds(), "asynq-items/s")
				b.ReportMetric(n/pipe.Wall.Seconds(), "items/s")
				b.ReportMetric(bare.Wall.Seconds()/pipe.Wall.Seconds(), "ratio")
				b.ReportMetric(float64(bare.CPU.Microseconds())/n, "asynq-cpu-µs/item")
				b.ReportMetric(float64(pipe.CPU.Microseconds())/n, "cpu-µs/item")
			})
		}
	}
}

// TestReadModelAnswers checks what the read-model measurement asks on a
// small filled ledger: 50 of the open failures, the whole last batch, and
// one item's five events.
func TestReadModelAnswers(t *testing.T) {
	l := sqliteLedger(t)
	batch, err := pipebench.FillLedger(context.Background(), l, 2500)
	if err != nil {
		t.Fatal(err)
	}
	qs, err := pipebench.ReadModel(context.Background(), l, batch, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{50, 500, 5} {
		if qs[i].Results != want {
			t.Errorf("%s: %d results, want %d", qs[i].Name, qs[i].Results, want)
		}
	}
}

// BenchmarkReadModel answers the operators' questions on ledgers of 10,000
// and 100,000 items (50,000 and 500,000 events): the time should follow
// the answer, not the history. `lazaret bench --ledger-items` measures
// 1,000,000 too.
func BenchmarkReadModel(b *testing.B) {
	for _, items := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("events=%d", items*5), func(b *testing.B) {
			l := sqliteLedger(b)
			batch, err := pipebench.FillLedger(context.Background(), l, items)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			var qs []pipebench.Query
			for range b.N {
				if qs, err = pipebench.ReadModel(context.Background(), l, batch, 1); err != nil {
					b.Fatal(err)
				}
			}
			for _, q := range qs {
				b.ReportMetric(float64(q.Best.Microseconds()), "µs/"+q.Short)
			}
		})
	}
}

// TestDurableAnchorWritesEachTask: the durable anchor writes one record a
// task before it acknowledges it, and a file it cannot open is an error
// before the drain begins.
func TestDurableAnchorWritesEachTask(t *testing.T) {
	path := filepath.Join(t.TempDir(), "anchor.log")
	o := pipebench.Options{Redis: redisOpt(t, 9), Items: 40, Concurrency: 2, Timeout: time.Minute, Durable: path}
	if _, err := pipebench.Bare(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Size() != int64(o.Items)*1024 {
		t.Fatalf("the anchor's file: %v, %v; want %d records of 1 KB", st, err, o.Items)
	}
	o.Durable = filepath.Join(t.TempDir(), "missing", "anchor.log")
	if _, err := pipebench.Bare(context.Background(), o); err == nil {
		t.Error("an anchor whose file cannot be made drained")
	}
}
