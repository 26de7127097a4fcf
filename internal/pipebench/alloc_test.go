package pipebench_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/internal/pipebench"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/sqlite"
	"github.com/lazaret/lazaret/validate"
)

// taken keeps the tasks a submission enqueues (from several goroutines),
// for a handler to be handed them one by one with no broker between.
type taken struct {
	mu    sync.Mutex
	tasks []*asynq.Task
}

func (k *taken) EnqueueContext(_ context.Context, t *asynq.Task, _ ...asynq.Option) (*asynq.TaskInfo, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.tasks = append(k.tasks, t)
	return &asynq.TaskInfo{}, nil
}

// delivered submits n small valid masters into a SQLite ledger of its own
// and returns a worker over that ledger and the tasks the submission
// enqueued: each task's first delivery, as a handler receives it.
func delivered(tb testing.TB, n int) (*ingest.Worker, premis.Ledger, []*asynq.Task) {
	tb.Helper()
	ctx := context.Background()
	batch, err := pipebench.WriteBatch(tb.TempDir(), n, false)
	if err != nil {
		tb.Fatal(err)
	}
	m, err := batch.Manifest()
	if err != nil {
		tb.Fatal(err)
	}
	l, err := sqlite.Open(ctx, filepath.Join(tb.TempDir(), "ledger.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	w := &ingest.Worker{Ledger: l, Broker: &taken{}, Policy: ingest.DefaultPolicy(), Master: validate.DefaultMasterPolicy(),
		Software: premis.Software{Name: "lazaret", Version: "alloc"}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	k := &taken{}
	res, err := ingest.Submit(ctx, l, k, m, batch.Dir, ingest.SubmitOptions{Policy: w.Policy, Software: w.Software})
	if err != nil {
		tb.Fatal(err)
	}
	if len(res.Enqueued) != n || len(k.tasks) != n {
		tb.Fatalf("submitted %d, enqueued %d tasks, want %d", len(res.Enqueued), len(k.tasks), n)
	}
	return w, l, k.tasks
}

// BenchmarkDeliverAcceptedMaster is the worker's first delivery of one
// small valid master, from the task's payload to its record committed in a
// SQLite ledger (no group committer, no broker): the allocations an item
// costs the handler, validation, history lookup and append included.
//
//	go test ./internal/pipebench -run '^$' -bench DeliverAcceptedMaster -benchtime 1000x
func BenchmarkDeliverAcceptedMaster(b *testing.B) {
	w, _, tasks := delivered(b, b.N)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := w.HandleValidate(ctx, tasks[i]); err != nil {
			b.Fatal(err)
		}
	}
}

// deliveryAllocs is the allocation budget of one accepted small master's
// delivery (BenchmarkDeliverAcceptedMaster): 1.2 times the 464–468 it took
// when the budget was set (2026-12-03; 504–508 before ChainHash stopped
// copying each field), so a change that adds work an item shows here, not
// only in a slower drain.
const deliveryAllocs = 560

// TestDeliveryAllocationBudget: a first delivery of a small valid master
// allocates within deliveryAllocs, and each ends accepted, recorded once.
func TestDeliveryAllocationBudget(t *testing.T) {
	const n = 60
	w, l, tasks := delivered(t, n+1)
	ctx := context.Background()
	i := 0
	var failed error
	avg := testing.AllocsPerRun(n, func() {
		if err := w.HandleValidate(ctx, tasks[i]); err != nil && failed == nil {
			failed = err
		}
		i++
	})
	if failed != nil {
		t.Fatal(failed)
	}
	accepted, err := l.Events(ctx, premis.Filter{Types: []premis.EventType{premis.Ingestion}, Destination: premis.Accepted})
	if err != nil {
		t.Fatal(err)
	}
	if len(accepted) != n+1 {
		t.Fatalf("%d accepted records, want %d", len(accepted), n+1)
	}
	t.Logf("%.0f allocations a delivery (budget %d)", avg, deliveryAllocs)
	if avg > deliveryAllocs {
		t.Errorf("a delivery allocates %.0f times, over its budget of %d", avg, deliveryAllocs)
	}
}
