package ingest_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/alicebob/miniredis/v2"
	"github.com/hibiken/asynq"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/sqlite"
	"github.com/lazaret/lazaret/validate"
)

// Submit records a batch's items in the ledger and hands them to the
// broker; a Worker behind an asynq server decides each one, once, and
// records where it went. Here with an in-memory Redis and an SQLite ledger
// in a temporary folder, on the generated archive batch of fixtures/.
func ExampleSubmit() {
	ctx := context.Background()
	redis := miniredis.NewMiniRedis()
	if err := redis.Start(); err != nil {
		panic(err)
	}
	defer redis.Close()
	broker := asynq.RedisClientOpt{Addr: redis.Addr()}
	dir, err := os.MkdirTemp("", "lazaret-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ledger, err := sqlite.Open(ctx, filepath.Join(dir, "ledger.db"))
	if err != nil {
		panic(err)
	}
	defer ledger.Close()

	// A submitter: read and check the manifest, then submit it.
	m, batchDir, err := validate.ReadManifestFile("../fixtures/archive/manifest.json")
	if err != nil {
		panic(err)
	}
	if err := m.Check(batchDir, false); err != nil {
		panic(err)
	}
	client := asynq.NewClient(broker)
	defer client.Close()
	sub, err := ingest.Submit(ctx, ledger, client, m, batchDir, ingest.SubmitOptions{Policy: ingest.DefaultPolicy()})
	if err != nil {
		panic(err)
	}
	fmt.Printf("submitted %d items of %s\n", len(sub.Enqueued), sub.BatchID)

	// A worker: one decision an item, observed as it is recorded.
	var mu sync.Mutex
	decided := map[premis.Destination]int{}
	done := make(chan struct{})
	w := &ingest.Worker{
		Ledger: ledger, Broker: client, Policy: ingest.DefaultPolicy(), Master: validate.DefaultMasterPolicy(),
		Logger: slog.New(slog.DiscardHandler),
		Observe: func(o ingest.Observation) {
			mu.Lock()
			defer mu.Unlock()
			decided[o.Destination]++
			if n := sumOf(decided); n == len(sub.Enqueued) {
				close(done)
			}
		},
	}
	srv, mux := ingest.NewServer(broker, w, ingest.ServerConfig{Concurrency: 2})
	if err := srv.Start(mux); err != nil {
		panic(err)
	}
	<-done
	srv.Shutdown()

	mu.Lock()
	defer mu.Unlock()
	dests := make([]string, 0, len(decided))
	for d := range decided {
		dests = append(dests, string(d))
	}
	slices.Sort(dests)
	for _, d := range dests {
		fmt.Printf("%s: %d\n", d, decided[premis.Destination(d)])
	}

	// The ledger holds every decision in its hash chain.
	v, err := premis.Verify(ctx, ledger)
	if err != nil {
		panic(err)
	}
	fmt.Println("ledger intact:", v.Intact())
	// Output:
	// submitted 10 items of fixtures-archive-0001
	// accept: 2
	// dead-letter: 4
	// quarantine: 4
	// ledger intact: true
}

func sumOf(m map[premis.Destination]int) (n int) {
	for _, v := range m {
		n += v
	}
	return n
}
