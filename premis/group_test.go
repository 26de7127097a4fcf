package premis_test

import (
	"context"
	"errors"
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

// AppendsFirst: a gate checks no first delivery.
func (g *gate) AppendsFirst() bool { return false }

// AppendFirst: premis.ErrNotImplemented, as AppendsFirst says.
func (g *gate) AppendFirst(context.Context, []premis.FirstDelivery, ...*premis.Event) ([]bool, error) {
	return nil, premis.ErrNotImplemented
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

// lookups is a ledger that answers lookups, the first of which waits for
// release, and records each call: LatestOf's item, or LatestOfEach's.
type lookups struct {
	premis.Ledger
	first   sync.Once
	entered chan struct{}
	release chan struct{}
	known   map[string]premis.Latest
	fail    error
	mu      sync.Mutex
	calls   [][]string
}

func (l *lookups) LatestOf(_ context.Context, id string) (premis.Latest, bool, error) {
	l.first.Do(func() { close(l.entered); <-l.release })
	l.mu.Lock()
	l.calls = append(l.calls, []string{id})
	l.mu.Unlock()
	lt, ok := l.known[id]
	return lt, ok, nil
}

func (l *lookups) LatestOfEach(_ context.Context, ids []string) (map[string]premis.Latest, error) {
	l.mu.Lock()
	l.calls = append(l.calls, ids)
	l.mu.Unlock()
	if l.fail != nil {
		return nil, l.fail
	}
	out := map[string]premis.Latest{}
	for _, id := range ids {
		if lt, ok := l.known[id]; ok {
			out[id] = lt
		}
	}
	return out, nil
}

// TestGroupCommitLooksUpTogether: over a ledger that answers several
// lookups in one query, the lookups that arrive while one is under way go
// together in one, and each caller gets its own item's row, or none; a
// combined lookup that fails fails each of its callers.
func TestGroupCommitLooksUpTogether(t *testing.T) {
	for _, fail := range []error{nil, errors.New("connection reset")} {
		l := &lookups{entered: make(chan struct{}), release: make(chan struct{}), fail: fail, known: map[string]premis.Latest{
			"a": {Seq: 1, Destination: premis.Submitted, TaskID: "ta"},
			"b": {Seq: 2, Destination: premis.Accepted, TaskID: "tb"},
			"d": {Seq: 4, Destination: premis.Retry, TaskID: "td"},
		}}
		gc := premis.NewGroupCommit(l, 0)
		ctx := context.Background()
		type answer struct {
			id    string
			lt    premis.Latest
			found bool
			err   error
		}
		answers := make(chan answer, 4)
		ask := func(id string) {
			lt, found, err := gc.LatestOf(ctx, id)
			answers <- answer{id, lt, found, err}
		}
		go ask("a")
		<-l.entered
		for _, id := range []string{"b", "c", "d"} {
			go ask(id)
		}
		for deadline := time.Now().Add(5 * time.Second); premis.QueuedLookups(gc) < 3; runtime.Gosched() {
			if time.Now().After(deadline) {
				close(l.release)
				t.Fatalf("%d lookups queued behind the first, want 3", premis.QueuedLookups(gc))
			}
		}
		close(l.release)
		for range 4 {
			a := <-answers
			want, known := l.known[a.id]
			switch {
			case a.id == "a" && (a.err != nil || !a.found || a.lt != want):
				t.Errorf("the lone lookup: %+v, want %+v", a, want)
			case a.id != "a" && fail != nil && !errors.Is(a.err, fail):
				t.Errorf("lookup of %s in a failed query: error %v, want %v", a.id, a.err, fail)
			case a.id != "a" && fail == nil && (a.err != nil || a.found != known || a.lt != want):
				t.Errorf("lookup of %s: %+v, want found %v %+v", a.id, a, known, want)
			}
		}
		gc.Stop()
		l.mu.Lock()
		if len(l.calls) != 2 || len(l.calls[0]) != 1 || len(l.calls[1]) != 3 {
			t.Errorf("the ledger was asked %v, want the first alone, then the other three together", l.calls)
		}
		l.mu.Unlock()
	}
}

// TestGroupCommitAnswersAfterStop: an append or a lookup made after Stop
// fails with ErrStopped at once, even one whose request the select queued
// after the committer had drained its queue (which then nobody answers);
// it never waits for its context to end.
func TestGroupCommitAnswersAfterStop(t *testing.T) {
	l := &lookups{entered: make(chan struct{}), release: make(chan struct{}), known: map[string]premis.Latest{}}
	close(l.release)
	gc := premis.NewGroupCommit(l, 0)
	gc.Stop()
	for i := range 200 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, aerr := gc.Append(ctx, event("late"))
		_, _, lerr := gc.LatestOf(ctx, "late")
		cancel()
		if !errors.Is(aerr, premis.ErrStopped) || !errors.Is(lerr, premis.ErrStopped) {
			t.Fatalf("call %d after Stop: append %v, lookup %v, want %v for both", i+1, aerr, lerr, premis.ErrStopped)
		}
	}
}
