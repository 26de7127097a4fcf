package ingest_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/validate"
)

// TestSoak pushes many items of every kind through real workers while the
// broker hand-off fails now and then, and checks that every item settles
// exactly once, where its kind says, with nothing lost. LAZARET_SOAK_ITEMS
// sets the size (make soak runs thousands; the default is a smoke run).
func TestSoak(t *testing.T) {
	t.Parallel()
	n := 60
	if v := os.Getenv("LAZARET_SOAK_ITEMS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("LAZARET_SOAK_ITEMS=%q", v)
		}
	}
	p := fastPolicy()
	p.Jitter = func(int64) int64 { return 0 }
	// The flaky broker below fails up to two hand-offs in every 50-150 ms,
	// also after the batch has drained, when a lone item's park retries meet
	// an armed failure two times in three: ten in a row (the default
	// routing budget, after which an item is rightly dead-lettered) happened
	// in about one run in twenty. The soak is about outages that clear.
	p.RoutingBudget = 60
	b := setup(t, p)
	batch, err := fixtures.WriteArchiveBatch(filepath.Join(b.dir, "batch"))
	if err != nil {
		t.Fatal(err)
	}
	m, dir, err := validate.ReadManifestFile(batch.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	fb := &flakyBroker{Enqueuer: b.client}
	b.worker.Broker = fb
	b.start()
	stopFlaky := make(chan struct{})
	go func() { // every so often the next few hand-offs fail
		for {
			select {
			case <-stopFlaky:
				return
			case <-time.After(time.Duration(50+rand.IntN(100)) * time.Millisecond):
				fb.fail.Store(int32(rand.IntN(3)))
			}
		}
	}()
	defer close(stopFlaky)

	want := map[string]string{} // correlation id -> destination
	ctx := context.Background()
	start := time.Now()
	for i := 0; i < n; i++ {
		it := m.Items[i%len(m.Items)]
		path, _ := validate.ResolvePath(dir, it.Path)
		env := &ingest.Envelope{V: ingest.EnvelopeVersion, BatchID: "soak", ObjectID: fmt.Sprintf("%s-%05d", it.ObjectID, i), Kind: "tiff",
			Path: path, SHA256: it.SHA256, Item: it, Attempt: 1}
		env.CorrelationID = ingest.CorrelationID(env.BatchID, env.ObjectID, env.SHA256)
		if _, err := ingest.Enqueue(ctx, b.client, env, ingest.SubmitOptions{Policy: p}); err != nil {
			t.Fatal(err)
		}
		want[env.CorrelationID] = batch.Expect[it.ObjectID].Destination
	}
	deadline := time.Now().Add(time.Duration(n)*50*time.Millisecond + 30*time.Second)
	for {
		evs, err := b.ledger.Events(ctx, premis.Filter{BatchID: "soak"})
		if err != nil {
			t.Fatal(err)
		}
		terminal := map[string][]premis.Destination{}
		for _, e := range evs {
			if e.Destination.Terminal() {
				terminal[e.CorrelationID] = append(terminal[e.CorrelationID], e.Destination)
			}
		}
		if len(terminal) == n {
			for corr, ds := range terminal {
				if len(ds) != 1 || string(ds[0]) != want[corr] {
					t.Errorf("%s: settled as %v, want once at %s", corr, ds, want[corr])
				}
			}
			t.Logf("%d items settled in %s (%.0f items/s)", n, time.Since(start).Round(time.Millisecond), float64(n)/time.Since(start).Seconds())
			b.waitParked(want)
			// Parked where the ledger says, and still settled once.
			evs, err := b.ledger.Events(ctx, premis.Filter{BatchID: "soak", Latest: true})
			if err != nil || len(evs) != n {
				t.Fatalf("latest outcomes: %d (err %v), want %d", len(evs), err, n)
			}
			for _, e := range evs {
				if string(e.Destination) != want[e.CorrelationID] {
					t.Errorf("%s: ends in %s, want %s", e.ObjectID, e.Destination, want[e.CorrelationID])
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d items settled", len(terminal), n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitParked waits until the quarantine queue holds exactly the items whose
// destination is quarantine: the ledger says so first, the broker follows.
func (b *bundle) waitParked(want map[string]string) {
	b.t.Helper()
	q := 0
	for _, d := range want {
		if d == string(premis.Quarantined) {
			q++
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, err := b.insp.GetQueueInfo(ingest.QueueQuarantine)
		if err == nil && info.Pending == q {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("quarantine holds %v (err %v), want %d", info, err, q)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
