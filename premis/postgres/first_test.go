package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/ledgertest"
	"github.com/lazaret/lazaret/premis/postgres"
)

// TestAppendFirstChecksTheSubmission: an append on a first delivery is
// written when the item's latest event is its submission by that task,
// and otherwise writes nothing and says ErrNotFirst (something recorded
// since, another task's submission, no submission), whether it chains
// onto the head in one round trip or reads it first in two; one condition
// that fails among several fails the append. The chain stays intact.
func TestAppendFirstChecksTheSubmission(t *testing.T) {
	ctx := context.Background()
	a, b := twoProcesses(t)
	if !a.AppendsFirst() {
		t.Fatal("a ledger with its read model does not check first deliveries")
	}
	submitted := func(obj string) *premis.Event {
		e := ledgertest.Event(obj, premis.IngestionStart, 1)
		e.Outcome, e.Class, e.Code, e.Message, e.Position = premis.Success, "", "", "", premis.Position{}
		e.Destination, e.TaskID = premis.Submitted, "task-"+obj
		return e
	}
	decided := func(obj string, n int) *premis.Event {
		e := ledgertest.Event(obj, premis.Validation, n)
		e.TaskID = "task-" + obj
		return e
	}
	first := func(obj, task string) premis.FirstDelivery {
		return premis.FirstDelivery{CorrelationID: "corr-" + obj, TaskID: task}
	}
	for _, obj := range []string{"a", "b", "c", "d", "e"} {
		if _, err := a.Append(ctx, submitted(obj)); err != nil {
			t.Fatal(err)
		}
	}
	count := func() int64 {
		t.Helper()
		n, err := a.CountEvents(ctx, premis.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	rows := count()
	notFirst := func(l *postgres.Ledger, why string, firsts []premis.FirstDelivery, events ...*premis.Event) {
		t.Helper()
		if _, err := l.AppendFirst(ctx, firsts, events...); !errors.Is(err, premis.ErrNotFirst) {
			t.Fatalf("%s: %v, want ErrNotFirst", why, err)
		}
		if n := count(); n != rows {
			t.Fatalf("%s: %d rows after, want %d: something was written", why, n, rows)
		}
	}
	written := func(l *postgres.Ledger, firsts []premis.FirstDelivery, events ...*premis.Event) {
		t.Helper()
		ins, err := l.AppendFirst(ctx, firsts, events...)
		if err != nil {
			t.Fatal(err)
		}
		for i, in := range ins {
			if !in {
				t.Fatalf("event %d not inserted", i)
			}
		}
		rows += int64(len(events))
	}

	// In one round trip, chained onto the head a's last append left.
	one, two, _ := postgres.AppendTrips(a)
	written(a, []premis.FirstDelivery{first("a", "task-a")}, decided("a", 1))
	notFirst(a, "decided already", []premis.FirstDelivery{first("a", "task-a")}, decided("a", 2))
	notFirst(a, "another task's submission", []premis.FirstDelivery{first("b", "task-x")}, decided("b", 1))
	notFirst(a, "never submitted", []premis.FirstDelivery{first("z", "task-z")}, decided("z", 1))
	notFirst(a, "one of two", []premis.FirstDelivery{first("b", "task-b"), first("a", "task-a")}, decided("b", 1), decided("a", 2))
	written(a, []premis.FirstDelivery{first("b", "task-b"), first("c", "task-c"), first("b", "task-b")}, decided("b", 1), decided("c", 1))
	if o, w, _ := postgres.AppendTrips(a); o-one != 2 || w != two {
		t.Fatalf("appends in one round trip %d, in two %d; want 2 and none: a condition that fails leaves the head as it was", o-one, w-two)
	}

	// In two, once another process moved the head.
	if _, err := b.Append(ctx, ledgertest.AcceptedItem(1)...); err != nil {
		t.Fatal(err)
	}
	rows = count() // the master's record and its three steps
	notFirst(a, "decided already, two trips", []premis.FirstDelivery{first("c", "task-c")}, decided("c", 2))
	written(a, []premis.FirstDelivery{first("d", "task-d")}, decided("d", 1))
	if _, w, _ := postgres.AppendTrips(a); w-two < 1 {
		t.Fatal("no append went the two-trip way")
	}

	v, err := premis.Verify(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Intact() || v.Events != rows-3 { // rows on the chain: the master's steps are in its record's
		t.Fatalf("chain: %v, %d rows, want intact with %d", v, v.Events, rows-3)
	}
	for obj, want := range map[string]premis.Destination{"a": premis.DeadLetter, "b": premis.DeadLetter, "d": premis.DeadLetter, "e": premis.Submitted} {
		lt, _, err := a.LatestOf(ctx, "corr-"+obj)
		if err != nil {
			t.Fatal(err)
		}
		if lt.Destination != want {
			t.Errorf("item %s: latest %s, want %s", obj, lt.Destination, want)
		}
	}
}
