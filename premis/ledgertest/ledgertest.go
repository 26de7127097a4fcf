// Package ledgertest is the conformance suite every premis.Ledger
// implementation runs: idempotent append, append-only storage, filters,
// concurrent writers.
package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/lazaret/lazaret/premis"
)

// Open returns a fresh, empty ledger for one subtest.
type Open func(t *testing.T) premis.Ledger

// Event returns a valid event for object obj at attempt n.
func Event(obj string, t premis.EventType, n int) *premis.Event {
	off, page := int64(1234), 3
	return &premis.Event{
		Key: premis.EventKey("corr-"+obj, "sha-"+obj, t, n), Type: t, Outcome: premis.Failure,
		Class: premis.Structural, Code: "tiff.ifd-loop", Message: "loop", Position: premis.Position{Offset: &off, Page: &page},
		Destination: premis.DeadLetter, ObjectID: obj, BatchID: "batch-1", CorrelationID: "corr-" + obj,
		Kind: "tiff", SHA256: "sha-" + obj, Size: 99, Attempt: n, Agent: "lazaret/test", Envelope: []byte(`{"v":1}`),
	}
}

// Run runs the suite.
func Run(t *testing.T, open Open) {
	ctx := context.Background()
	t.Run("AppendIsIdempotentOnKey", func(t *testing.T) {
		l := open(t)
		first := Event("obj-1", premis.Validation, 1)
		ins, err := l.Append(ctx, first)
		if err != nil || !ins[0] {
			t.Fatalf("first append: inserted=%v err=%v", ins, err)
		}
		again := Event("obj-1", premis.Validation, 1)
		again.Message = "a redelivery says something else"
		ins, err = l.Append(ctx, again)
		if err != nil {
			t.Fatal(err)
		}
		if ins[0] {
			t.Fatal("second append with the same key was inserted")
		}
		if again.ID != first.ID || again.Message != "loop" {
			t.Errorf("duplicate not filled from the stored row: id %s want %s, message %q", again.ID, first.ID, again.Message)
		}
		evs, err := l.Events(ctx, premis.Filter{ObjectID: "obj-1"})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 1 {
			t.Fatalf("got %d events, want 1", len(evs))
		}
	})
	t.Run("RoundTripsEveryField", func(t *testing.T) {
		l := open(t)
		e := Event("obj-rt", premis.Quarantine, 2)
		e.Segment, e.Element, e.Component, e.Tag = 12, 2, 1, "DTM"
		e.Note, e.Detail, e.PUID, e.Path, e.Retries, e.TaskID, e.ReplayOf, e.Operator = "n", "d", "fmt/353", "/p", 1, "t", "r", "op"
		if _, err := l.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
		got, err := l.Event(ctx, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(*e, got, cmpopts.EquateApproxTime(time.Millisecond)); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
		if _, err := l.Event(ctx, "no-such-id"); !errors.Is(err, premis.ErrNotFound) {
			t.Errorf("missing event: err %v, want ErrNotFound", err)
		}
	})
	t.Run("RefusesInvalidEvents", func(t *testing.T) {
		l := open(t)
		e := Event("obj-bad", "zzz", 1)
		if _, err := l.Append(ctx, e); err == nil {
			t.Fatal("event with an unknown type was stored")
		}
	})
	t.Run("Filters", func(t *testing.T) {
		l := open(t)
		a := Event("a", premis.Validation, 1)
		b := Event("b", premis.Quarantine, 1)
		b.Class, b.Destination, b.BatchID, b.Code = premis.Semantic, premis.Quarantined, "batch-2", "manifest.color_profile.required"
		c := Event("a", premis.Ingestion, 2)
		c.Outcome, c.Class, c.Destination, c.Code = premis.Success, "", premis.Accepted, ""
		if _, err := l.Append(ctx, a, b, c); err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name string
			f    premis.Filter
			want []string
		}{
			{"object", premis.Filter{ObjectID: "a"}, []string{a.ID, c.ID}},
			{"batch", premis.Filter{BatchID: "batch-2"}, []string{b.ID}},
			{"class", premis.Filter{Class: premis.Semantic}, []string{b.ID}},
			{"destination", premis.Filter{Destination: premis.Accepted}, []string{c.ID}},
			{"types", premis.Filter{Types: []premis.EventType{premis.Validation, premis.Quarantine}}, []string{a.ID, b.ID}},
			{"outcome", premis.Filter{Outcome: premis.Success}, []string{c.ID}},
			{"code", premis.Filter{Code: "tiff.ifd-loop"}, []string{a.ID}},
			{"limit", premis.Filter{Limit: 2}, []string{a.ID, b.ID}},
			{"since", premis.Filter{Since: time.Now().Add(time.Hour)}, nil},
		}
		for _, tc := range cases {
			evs, err := l.Events(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range evs {
				got = append(got, e.ID)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.name, diff)
			}
		}
	})
	t.Run("ConcurrentWriters", func(t *testing.T) {
		l := open(t)
		const writers, each = 8, 25
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; i < each; i++ {
					// Half the keys collide across writers: duplicates must collapse.
					e := Event(fmt.Sprintf("obj-%d", i), premis.Validation, 1+(w%2))
					if _, err := l.Append(ctx, e); err != nil {
						errs <- err
						return
					}
				}
			}(w)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		evs, err := l.Events(ctx, premis.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 2*each {
			t.Fatalf("got %d events, want %d distinct keys", len(evs), 2*each)
		}
	})
}
