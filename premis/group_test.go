package premis_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/lazaret/lazaret/premis"
)

// gate is a ledger whose first Append waits for release, so that the
// appends behind it queue and are committed together; like every ledger
// it prepares (and refuses invalid) events itself.
type gate struct {
	premis.Ledger
	first   sync.Once
	entered chan struct{}
	release chan struct{}
	mu      sync.Mutex
	calls   [][]*premis.Event
}

func (g *gate) Append(ctx context.Context, events ...*premis.Event) ([]bool, error) {
	g.first.Do(func() { close(g.entered); <-g.release })
	g.mu.Lock()
	g.calls = append(g.calls, events)
	g.mu.Unlock()
	if err := premis.Prepare(events...); err != nil {
		return nil, err
	}
	return make([]bool, len(events)), nil
}

func event(obj string) *premis.Event {
	return &premis.Event{Key: obj, Type: premis.Validation, Outcome: premis.Success, ObjectID: obj, CorrelationID: obj}
}

// TestGroupCommitInvalidEventFailsItsCallerAlone: an invalid event in a
// combined commit fails only the append it came with; the others are
// written, and each event is prepared by the ledger alone.
func TestGroupCommitInvalidEventFailsItsCallerAlone(t *testing.T) {
	bad := event("bad")
	bad.Outcome = "maybe"
	gc, g, done := queueBehindFirst(t, event("good"), bad)
	defer gc.Stop()
	var failed int
	for range 3 {
		if err := <-done; err != nil {
			failed++
		}
	}
	if failed != 1 {
		t.Fatalf("%d appends failed, want 1 (the invalid one)", failed)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.calls) != 4 { // first; good and bad together; then each alone
		t.Fatalf("ledger called %d times, want 4: %v", len(g.calls), g.calls)
	}
	// The combined commit failed: first, then good alone, are what held.
	if st := gc.Stats(); st != (premis.GroupStats{Commits: 2, Appends: 2}) {
		t.Errorf("stats %+v, want 2 commits of one append each", st)
	}
}

// queueBehindFirst starts a group committer over a gate, appends a first
// event that holds the gate, queues the others behind it, and then opens
// the gate: the others are committed together. done gets each append's
// error.
func queueBehindFirst(t *testing.T, others ...*premis.Event) (*premis.GroupCommit, *gate, <-chan error) {
	t.Helper()
	g := &gate{entered: make(chan struct{}), release: make(chan struct{})}
	gc := premis.NewGroupCommit(g, 0)
	ctx := context.Background()
	done := make(chan error, 1+len(others))
	go func() { _, err := gc.Append(ctx, event("first")); done <- err }()
	<-g.entered
	for _, e := range others {
		go func() { _, err := gc.Append(ctx, e); done <- err }()
	}
	for deadline := time.Now().Add(5 * time.Second); premis.Queued(gc) < len(others); runtime.Gosched() {
		if time.Now().After(deadline) {
			close(g.release)
			t.Fatalf("%d appends queued behind the first, want %d", premis.Queued(gc), len(others))
		}
	}
	close(g.release)
	return gc, g, done
}

// TestGroupCommitStats: the committer counts its commits and the appends
// they held, two queued behind a first making one of two.
func TestGroupCommitStats(t *testing.T) {
	gc, _, done := queueBehindFirst(t, event("second"), event("third"))
	defer gc.Stop()
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if st := gc.Stats(); st != (premis.GroupStats{Commits: 2, Appends: 3}) {
		t.Errorf("stats %+v, want 2 commits holding 3 appends", st)
	}
}
