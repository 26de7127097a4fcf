package premis_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/lazaret/lazaret/premis"
)

// firstGate is a gate whose ledger checks first deliveries: an item
// called "taken" has a history.
type firstGate struct {
	gate
	firsts [][]premis.FirstDelivery // of each AppendFirst call
}

func (g *firstGate) AppendsFirst() bool { return true }

func (g *firstGate) AppendFirst(ctx context.Context, firsts []premis.FirstDelivery, events ...*premis.Event) ([]bool, error) {
	g.first.Do(func() { close(g.entered); <-g.release })
	g.mu.Lock()
	g.firsts = append(g.firsts, firsts)
	g.mu.Unlock()
	for _, f := range firsts {
		if f.CorrelationID == "taken" {
			return nil, premis.ErrNotFirst
		}
	}
	return g.gate.Append(ctx, events...)
}

// TestGroupCommitFirstDeliveryFailsItsCallerAlone: appends on a first
// delivery queued together are written on all their conditions at once;
// when one does not hold, each is written on its own, and only its caller
// gets ErrNotFirst.
func TestGroupCommitFirstDeliveryFailsItsCallerAlone(t *testing.T) {
	g := &firstGate{gate: gate{entered: make(chan struct{}), release: make(chan struct{})}}
	gc := premis.NewGroupCommit(g, 0)
	defer gc.Stop()
	if !gc.AppendsFirst() {
		t.Fatal("a group committer over a ledger that checks first deliveries does not say so")
	}
	ctx := context.Background()
	type answer struct {
		id  string
		err error
	}
	done := make(chan answer, 3)
	appendFirst := func(id string) {
		_, err := gc.AppendFirst(ctx, []premis.FirstDelivery{{CorrelationID: id, TaskID: "task-" + id}}, event(id))
		done <- answer{id, err}
	}
	go appendFirst("first")
	<-g.entered
	go appendFirst("fresh")
	go appendFirst("taken")
	for deadline := time.Now().Add(5 * time.Second); premis.Queued(gc) < 2; runtime.Gosched() {
		if time.Now().After(deadline) {
			close(g.release)
			t.Fatalf("%d appends queued behind the first, want 2", premis.Queued(gc))
		}
	}
	close(g.release)
	for range 3 {
		a := <-done
		if want := a.id == "taken"; errors.Is(a.err, premis.ErrNotFirst) != want || (!want && a.err != nil) {
			t.Errorf("%s: %v", a.id, a.err)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.firsts) != 4 || len(g.firsts[1]) != 2 { // first; both together; each alone
		t.Fatalf("conditions of each call %v, want the first's, both, then each alone", g.firsts)
	}
	if st := gc.Stats(); st != (premis.GroupStats{Commits: 2, Appends: 2}) {
		t.Errorf("stats %+v, want 2 commits of one append each", st)
	}
}

// TestGroupCommitOverALedgerThatCannotCheckFirstDeliveries: the committer
// says it cannot, and refuses such an append rather than write it
// unchecked.
func TestGroupCommitOverALedgerThatCannotCheckFirstDeliveries(t *testing.T) {
	g := &gate{entered: make(chan struct{}), release: make(chan struct{})}
	g.first.Do(func() {}) // no gate
	gc := premis.NewGroupCommit(g, 0)
	defer gc.Stop()
	if gc.AppendsFirst() {
		t.Fatal("AppendsFirst over a ledger that is no FirstAppender")
	}
	if _, err := gc.AppendFirst(context.Background(), []premis.FirstDelivery{{CorrelationID: "a", TaskID: "t"}}, event("a")); err == nil {
		t.Fatal("AppendFirst wrote unchecked")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.calls) != 0 {
		t.Fatalf("ledger called %d times", len(g.calls))
	}
}
