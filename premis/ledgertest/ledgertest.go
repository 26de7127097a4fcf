// Package ledgertest is the conformance suite every premis.Ledger
// implementation runs: idempotent append, append-only storage, filters,
// concurrent writers, the hash chain and its verification; and the helpers
// the implementations' tamper tests share.
package ledgertest

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/ledgersql"
	"github.com/lazaret/lazaret/premis/sample"
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
	t.Run("LatestOfFollowsTheItem", func(t *testing.T) {
		l := open(t)
		ll := l
		if _, found, err := ll.LatestOf(ctx, "corr-none"); err != nil || found {
			t.Fatalf("an unknown item: found %v, %v", found, err)
		}
		steps := []struct {
			typ  premis.EventType
			dest premis.Destination
			task string
		}{{premis.IngestionStart, premis.Submitted, "task-1"}, {premis.Validation, premis.Retry, "task-1"}, {premis.FixityCheck, "", "task-1"},
			{premis.Validation, premis.DeadLetter, "task-1"}, {premis.IngestionStart, premis.Replayed, "task-2"}}
		for i, st := range steps {
			e := Event("obj-latest", st.typ, i+1)
			e.CorrelationID, e.Destination, e.TaskID = "corr-latest", st.dest, st.task
			if _, err := l.Append(ctx, e); err != nil {
				t.Fatal(err)
			}
			lt, found, err := ll.LatestOf(ctx, "corr-latest")
			if err != nil || !found {
				t.Fatalf("after %s: found %v, %v", st.typ, found, err)
			}
			want := st
			if st.dest == "" { // no destination: the latest stays the retry
				want = steps[i-1]
			}
			if lt.Destination != want.dest || lt.TaskID != want.task || lt.Seq == 0 {
				t.Errorf("after %s/%s: latest %+v, want %s of %s", st.typ, st.dest, lt, want.dest, want.task)
			}
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
		cases := []filterCase{
			{"object", premis.Filter{ObjectID: "a"}, []string{a.ID, c.ID}},
			{"batch", premis.Filter{BatchID: "batch-2"}, []string{b.ID}},
			{"class", premis.Filter{Class: premis.Semantic}, []string{b.ID}},
			{"destination", premis.Filter{Destination: premis.Accepted}, []string{c.ID}},
			{"types", premis.Filter{Types: []premis.EventType{premis.Validation, premis.Quarantine}}, []string{a.ID, b.ID}},
			{"outcome", premis.Filter{Outcome: premis.Success}, []string{c.ID}},
			{"code", premis.Filter{Code: "tiff.ifd-loop"}, []string{a.ID}},
			{"limit", premis.Filter{Limit: 2}, []string{a.ID, b.ID}},
			{"since", premis.Filter{Since: time.Now().Add(time.Hour)}, nil},
			{"destinations", premis.Filter{Destinations: []premis.Destination{premis.Quarantined, premis.Accepted}}, []string{b.ID, c.ID}},
			// a's dead letter was superseded by its ingestion at attempt 2.
			{"latest", premis.Filter{Latest: true}, []string{b.ID, c.ID}},
			{"open failures", premis.Filter{Latest: true, Destinations: []premis.Destination{premis.DeadLetter, premis.Quarantined, premis.AuditHold}}, []string{b.ID}},
			{"latest of one object", premis.Filter{Latest: true, ObjectID: "a"}, []string{c.ID}},
			{"latest, a page", premis.Filter{Latest: true, Limit: 1}, []string{b.ID}},
			{"latest, after a seq", premis.Filter{Latest: true, AfterSeq: b.Seq}, []string{c.ID}},
		}
		wantFiltered(t, l, cases)
	})
	t.Run("Members", func(t *testing.T) {
		l := open(t)
		own := Event("inv", premis.FixityCheck, 1)
		own.Outcome, own.Class, own.Code, own.Destination, own.Kind = premis.Success, "", "", "", "edifact"
		chunk := Event("inv", premis.Ingestion, 1)
		chunk.Key = premis.EventKey("corr-inv/messages/1", "sha-inv", premis.Ingestion, 1)
		chunk.Outcome, chunk.Class, chunk.Code, chunk.Destination, chunk.Kind = premis.Success, "", "", "", "edifact"
		chunk.Members = []premis.Member{{ObjectID: "inv#1", Number: 1, Offset: 100, Type: "IFTMIN"},
			{ObjectID: "inv#A_%25", Number: 2, Offset: 480, Type: "IFTMIN"}, {ObjectID: `inv#"q"`, Number: 3, Offset: 900, Type: "INVOIC"}}
		msg := Event("inv#1", premis.Validation, 1) // a message with an event of its own as well
		msg.CorrelationID, msg.Key = "corr-inv#1", premis.EventKey("corr-inv#1", "sha-inv", premis.Validation, 1)
		if _, err := l.Append(ctx, own, chunk, msg); err != nil {
			t.Fatal(err)
		}
		got, err := l.Event(ctx, chunk.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(chunk.Members, got.Members); diff != "" {
			t.Errorf("members round trip (-want +got):\n%s", diff)
		}
		cases := []filterCase{
			{"a member", premis.Filter{ObjectID: "inv#A_%25"}, []string{chunk.ID}},
			{"a member with its own events", premis.Filter{ObjectID: "inv#1"}, []string{chunk.ID, msg.ID}},
			{"a member whose id JSON escapes", premis.Filter{ObjectID: `inv#"q"`}, []string{chunk.ID}},
			{"not a member", premis.Filter{ObjectID: "inv#4"}, nil},
			{"case matters", premis.Filter{ObjectID: "inv#a_%25"}, nil},
			{"a wildcard is not one", premis.Filter{ObjectID: "inv#A%"}, nil},
			{"the prefix of a member", premis.Filter{ObjectID: "inv#A"}, nil},
			{"the interchange", premis.Filter{ObjectID: "inv"}, []string{own.ID, chunk.ID}},
			{"events with members", premis.Filter{HasMembers: true}, []string{chunk.ID}},
			{"a batch's events with members", premis.Filter{HasMembers: true, BatchID: "batch-1", Types: []premis.EventType{premis.Ingestion}}, []string{chunk.ID}},
			{"no such batch", premis.Filter{HasMembers: true, BatchID: "batch-2"}, nil},
			{"a member, limited", premis.Filter{ObjectID: "inv#1", Limit: 1}, []string{chunk.ID}},
		}
		wantFiltered(t, l, cases)
		if v := Verify(t, l); !v.Intact() {
			t.Errorf("ledger with members: %s\n%s", v, Problems(v))
		}
		big := Event("inv2", premis.Ingestion, 1)
		big.Members = make([]premis.Member, premis.MaxMembers+1)
		for i := range big.Members {
			big.Members[i] = premis.Member{ObjectID: fmt.Sprintf("inv2#%d", i+1), Number: i + 1}
		}
		if _, err := l.Append(ctx, big); err == nil {
			t.Errorf("an event with %d members was stored", len(big.Members))
		}
	})
	t.Run("Steps", func(t *testing.T) {
		l := open(t)
		sub := Event("m", premis.IngestionStart, 1)
		sub.Outcome, sub.Class, sub.Code, sub.Destination, sub.Position = premis.Success, "", "", premis.Submitted, premis.Position{}
		rec := sample.AcceptedMaster(7)[0]
		rec.CorrelationID, rec.ObjectID, rec.BatchID = sub.CorrelationID, "m", "batch-1"
		rec.Steps[2].Outcome, rec.Steps[2].Note = premis.Warning, "1 page(s); warnings: tiff.odd-resolution: 72 dpi"
		if _, err := l.Append(ctx, sub, rec); err != nil {
			t.Fatal(err)
		}
		if n := len(rec.ID); n != 36 || !strings.ContainsAny(rec.ID[35:], "048c") {
			t.Fatalf("record id %q leaves no room for its steps' ids", rec.ID)
		}
		fix, form, val := premis.StepID(rec.ID, 0), premis.StepID(rec.ID, 1), premis.StepID(rec.ID, 2)
		evs, err := l.Events(ctx, premis.Filter{CorrelationID: sub.CorrelationID})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range evs {
			got = append(got, string(e.Type)+" "+e.ID)
			if e.ID != sub.ID && (e.Seq != rec.Seq || e.Hash != rec.Hash || e.PrevHash != rec.PrevHash) {
				t.Errorf("%s: chain fields %d %s, want the record's %d %s", e.Type, e.Seq, e.Hash, rec.Seq, rec.Hash)
			}
			if len(e.Steps) > 0 {
				t.Errorf("%s handed over with its steps as well", e.Type)
			}
		}
		want := []string{"ins " + sub.ID, "fix " + fix, "for " + form, "val " + val, "ing " + rec.ID}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("an item's events (-want +got):\n%s", diff)
		}
		step := evs[1]
		if step.Record != rec.ID || step.TaskID != rec.TaskID || step.Destination != "" || step.Detail != rec.Steps[0].Detail ||
			!step.DateTime.Equal(rec.DateTime) || step.Key == rec.Key || step.PUID != "" {
			t.Errorf("the fixity step as an event: %+v", step)
		}
		if sha, size, ok := step.ReadFixity(); !ok || sha != rec.SHA256 || size != rec.Size {
			t.Errorf("the fixity step reads %s %d %v, want the record's digest and size", sha, size, ok)
		}
		for _, id := range []string{fix, val, rec.ID} {
			e, err := l.Event(ctx, id)
			if err != nil || e.ID != id || len(e.Steps) > 0 {
				t.Errorf("Event(%s): %s %s %d steps, %v", id, e.Type, e.ID, len(e.Steps), err)
			}
		}
		// An id shaped as a step of the submission's block, which holds
		// no record with steps (one that is not the submission's own id).
		none := premis.StepID(sub.ID[:35]+"0", 0)
		if none == sub.ID {
			none = premis.StepID(sub.ID[:35]+"0", 1)
		}
		if e, err := l.Event(ctx, none); !errors.Is(err, premis.ErrNotFound) {
			t.Errorf("a step of a record without steps: %s %v, want ErrNotFound", e.ID, err)
		}
		wantFiltered(t, l, []filterCase{
			{"a step's type", premis.Filter{Types: []premis.EventType{premis.Validation}}, []string{val}},
			{"a step's and a record's type", premis.Filter{Types: []premis.EventType{premis.Ingestion, premis.FixityCheck}}, []string{fix, rec.ID}},
			{"a step's outcome", premis.Filter{Outcome: premis.Warning}, []string{val}},
			{"type and outcome, of different steps", premis.Filter{Types: []premis.EventType{premis.FixityCheck}, Outcome: premis.Warning}, nil},
			{"success", premis.Filter{Outcome: premis.Success, ObjectID: "m"}, []string{sub.ID, fix, form, rec.ID}},
			{"a destination: no step has one", premis.Filter{Destination: premis.Accepted}, []string{rec.ID}},
			{"latest", premis.Filter{Latest: true, CorrelationID: sub.CorrelationID}, []string{rec.ID}},
			{"by task: the record's", premis.Filter{CorrelationID: sub.CorrelationID, TaskID: rec.TaskID}, []string{fix, form, val, rec.ID}},
			{"a page holds a record whole", premis.Filter{CorrelationID: sub.CorrelationID, AfterSeq: sub.Seq, Limit: 1}, []string{fix, form, val, rec.ID}},
			{"after the record", premis.Filter{AfterSeq: rec.Seq}, nil},
		})
		var each []string
		if err := premis.EachEvent(ctx, l, premis.Filter{}, func(e premis.Event) error { each = append(each, e.ID); return nil }); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{sub.ID, fix, form, val, rec.ID}, each); diff != "" {
			t.Errorf("EachEvent (-want +got):\n%s", diff)
		}
		again := sample.AcceptedMaster(7)[0]
		again.CorrelationID, again.ObjectID, again.BatchID = sub.CorrelationID, "m", "batch-1"
		if ins, err := l.Append(ctx, again); err != nil || ins[0] || again.ID != rec.ID || len(again.Steps) != 3 {
			t.Errorf("the record appended again: inserted %v, id %s (stored %s), %d steps, %v", ins, again.ID, rec.ID, len(again.Steps), err)
		}
		if v := Verify(t, l); !v.Intact() {
			t.Errorf("ledger with steps: %s\n%s", v, Problems(v))
		}
		bad := sample.AcceptedMaster(8)[0]
		bad.Steps = append(bad.Steps, premis.Step{Type: premis.Validation, Outcome: premis.Success})
		if _, err := l.Append(ctx, bad); err == nil {
			t.Error("a record with two validation steps was stored")
		}
		failed := sample.AcceptedMaster(9)[0]
		failed.Steps[0].Outcome = premis.Failure
		if _, err := l.Append(ctx, failed); err == nil {
			t.Error("a record with a failed step was stored")
		}
	})
	t.Run("ChainsEveryAppend", func(t *testing.T) {
		l := open(t)
		a, b, c := Event("a", premis.Validation, 1), Event("b", premis.Validation, 1), Event("c", premis.Ingestion, 1)
		if _, err := l.Append(ctx, a); err != nil {
			t.Fatal(err)
		}
		// A batch with a key stored already and a key twice in the batch.
		dupA, dupB := Event("a", premis.Validation, 1), Event("b", premis.Validation, 1)
		ins, err := l.Append(ctx, b, dupA, c, dupB)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]bool{true, false, true, false}, ins); diff != "" {
			t.Errorf("inserted (-want +got):\n%s", diff)
		}
		for _, d := range []struct{ dup, orig *premis.Event }{{dupA, a}, {dupB, b}} {
			if d.dup.Seq != d.orig.Seq || d.dup.Hash != d.orig.Hash || d.dup.PrevHash != d.orig.PrevHash {
				t.Errorf("duplicate of %s not filled with the stored chain fields: %d %s, want %d %s", d.orig.ObjectID, d.dup.Seq, d.dup.Hash, d.orig.Seq, d.orig.Hash)
			}
		}
		evs, err := l.Events(ctx, premis.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 3 {
			t.Fatalf("%d events, want 3", len(evs))
		}
		prev, prevSeq := premis.ChainGenesis, int64(0)
		for i, e := range evs {
			if e.PrevHash != prev || e.Seq <= prevSeq {
				t.Errorf("event %d: seq %d prev %s, want seq > %d and prev %s", i, e.Seq, e.PrevHash, prevSeq, prev)
			}
			if h := premis.ChainHash(e.PrevHash, &e); e.Hash != h {
				t.Errorf("event %d: hash %s, want ChainHash %s", i, e.Hash, h)
			}
			prev, prevSeq = e.Hash, e.Seq
		}
		for i, e := range []*premis.Event{a, b, c} {
			if e.Seq != evs[i].Seq || e.Hash != evs[i].Hash || e.PrevHash != evs[i].PrevHash {
				t.Errorf("appended event %d: chain fields %d %s %s, stored %d %s %s", i, e.Seq, e.PrevHash, e.Hash, evs[i].Seq, evs[i].PrevHash, evs[i].Hash)
			}
		}
		v := Verify(t, l)
		if !v.Intact() || v.Events != 3 || v.Head != c.Hash {
			t.Fatalf("clean ledger: %s", v)
		}
		if want := (premis.Head{Count: 3, Hash: c.Hash}); v.Recorded == nil || *v.Recorded != want {
			t.Errorf("recorded head %v, want %v", v.Recorded, want)
		}
		if !strings.HasPrefix(v.String(), "3 events, chain intact, head "+c.Hash) {
			t.Errorf("summary %q", v)
		}
	})
	t.Run("ChainsALargeAppend", func(t *testing.T) {
		// More events in one append than one statement writes (the
		// PostgreSQL ledger inserts 64 at a time), a stored key among them
		// and one twice.
		l := open(t)
		stored := Event("e-7", premis.Validation, 1)
		if _, err := l.Append(ctx, stored); err != nil {
			t.Fatal(err)
		}
		var batch []*premis.Event
		for i := range 150 {
			batch = append(batch, Event(fmt.Sprintf("e-%d", i), premis.Validation, 1))
		}
		batch = append(batch, Event("e-42", premis.Validation, 1))
		ins, err := l.Append(ctx, batch...)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := l.Events(ctx, premis.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 150 { // e-0 to e-149, e-7 among them once
			t.Fatalf("%d events, want 150", len(evs))
		}
		bySeq := map[int64]premis.Event{}
		for _, e := range evs {
			bySeq[e.Seq] = e
		}
		for i, e := range batch {
			if want := i != 7 && i != 150; ins[i] != want {
				t.Errorf("event %d (%s): inserted %v, want %v", i, e.ObjectID, ins[i], want)
			}
			if got, ok := bySeq[e.Seq]; !ok || got.Key != e.Key || got.Hash != e.Hash || got.PrevHash != e.PrevHash {
				t.Errorf("event %d (%s): seq %d hash %s is not what the ledger stored under that seq: %+v", i, e.ObjectID, e.Seq, e.Hash, got)
			}
		}
		if v := Verify(t, l); !v.Intact() || v.Events != 150 || v.Head != batch[149].Hash {
			t.Fatalf("after a large append: %s\n%s", v, Problems(v))
		}
	})
	t.Run("EmptyLedgerVerifies", func(t *testing.T) {
		v := Verify(t, open(t))
		if !v.Intact() || v.Events != 0 || v.Head != premis.ChainGenesis {
			t.Fatalf("empty ledger: %s", v)
		}
	})
	t.Run("ConcurrentWriters", func(t *testing.T) {
		l := open(t)
		const writers, each = 8, 25
		var wg sync.WaitGroup
		// A verifier runs alongside: appends made during a walk are not
		// tampering.
		stop := make(chan struct{})
		verified := make(chan error, 1)
		go func() {
			a := l
			for {
				v, err := premis.Verify(ctx, a)
				if err == nil && !v.Intact() {
					err = fmt.Errorf("verify during appends: %s", v)
				}
				if err != nil {
					verified <- err
					return
				}
				select {
				case <-stop:
					verified <- nil
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		}()
		defer func() {
			close(stop)
			if err := <-verified; err != nil {
				t.Error(err)
			}
		}()
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
		if v := Verify(t, l); !v.Intact() || v.Events != 2*each {
			t.Errorf("after concurrent writers: %s", v)
		}
	})
}

// Verify runs premis.Verify on l.
func Verify(t *testing.T, l premis.Ledger, anchors ...premis.Head) *premis.Verification {
	t.Helper()
	v, err := premis.Verify(context.Background(), l, anchors...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Seed appends the history the tamper tests forge: four events, the
// second a fixity failure that was dead-lettered (seq 2 in a fresh ledger).
func Seed(t *testing.T, l premis.Ledger) []*premis.Event {
	t.Helper()
	evs := seedEvents()
	for _, e := range evs {
		if _, err := l.Append(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	return evs
}

// seedEvents are the events Seed appends.
func seedEvents() []*premis.Event {
	evs := []*premis.Event{Event("m1", premis.Validation, 1), Event("m2", premis.FixityCheck, 1), Event("m3", premis.Validation, 1), Event("m4", premis.Validation, 1)}
	evs[0].Outcome, evs[0].Class, evs[0].Code, evs[0].Destination, evs[0].Position = premis.Success, "", "", premis.Accepted, premis.Position{}
	// The first is an accepted master's record, holding its steps.
	evs[0].Steps = []premis.Step{{Type: premis.FixityCheck, Outcome: premis.Success, Note: "sha256 sha-m1"},
		{Type: premis.FormatIdentification, Outcome: premis.Success, PUID: "fmt/353"}}
	evs[1].Code = "fixity.mismatch"
	// The last one holds members, as a chunk of an interchange's accepted
	// messages does.
	evs[3].Members = []premis.Member{{ObjectID: "m4#1", Number: 1, Offset: 10, Type: "IFTMIN"}, {ObjectID: "m4#2", Number: 2, Offset: 90, Type: "IFTMIN"}}
	return evs
}

// ForgedSteps is the steps column of Seed's record (seq 1) as the ledger
// would write it had forge changed its steps, as an SQL string literal:
// what a forger who knows the stored format writes, so that only the
// chain can show it. packed: the ledger is in the packed format
// (ledgersql.Pack).
func ForgedSteps(t *testing.T, packed bool, forge func([]premis.Step) []premis.Step) string {
	t.Helper()
	rec := seedEvents()[0]
	rec.Steps = forge(rec.Steps)
	encode := ledgersql.EncodeSteps
	if packed {
		encode = ledgersql.EncodeStepsPacked
	}
	text, err := encode(rec)
	if err != nil {
		t.Fatal(err)
	}
	return "'" + strings.ReplaceAll(text, "'", "''") + "'"
}

// WantProblem fails t unless v has a problem of kind at seq (0: any seq)
// whose detail contains each of detail.
func WantProblem(t *testing.T, v *premis.Verification, kind premis.ProblemKind, seq int64, detail ...string) {
	t.Helper()
	if v.Intact() {
		t.Errorf("verify found nothing wrong (%s), want a %s problem", v, kind)
		return
	}
next:
	for _, p := range v.Problems {
		if p.Kind != kind || (seq != 0 && p.Seq != seq) {
			continue
		}
		for _, d := range detail {
			if !strings.Contains(p.Detail, d) {
				continue next
			}
		}
		return
	}
	t.Errorf("no %s problem at seq %d mentioning %q; problems:\n%s", kind, seq, detail, Problems(v))
}

// Problems lists v's problems, one a line.
func Problems(v *premis.Verification) string {
	var b strings.Builder
	for _, p := range v.Problems {
		fmt.Fprintln(&b, p)
	}
	return b.String()
}

// AppendFunc appends one event, as a benchmark's writer does.
type AppendFunc func(ctx context.Context, e *premis.Event) error

var benchSeq atomic.Int64

// BenchAppend appends b.N events from writers goroutines and reports
// appends/s: the one append benchmark both ledgers run.
func BenchAppend(b *testing.B, writers int, appendOne AppendFunc) {
	benchWriters(b, writers, func(ctx context.Context) error {
		return appendOne(ctx, Event(fmt.Sprint("bench-", benchSeq.Add(1)), premis.Validation, 1))
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
}

// benchWriters runs op b.N times in all from writers goroutines, timed.
func benchWriters(b *testing.B, writers int, op func(ctx context.Context) error) {
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	var next atomic.Int64
	errs := make(chan error, writers)
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if err := op(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// AcceptedItem returns the four events a worker records for an accepted
// TIFF master (sample.AcceptedMaster).
func AcceptedItem(n int64) []*premis.Event { return sample.AcceptedMaster(n) }

// BenchAcceptedItems appends b.N accepted items (AcceptedItem, one Append
// of four events each) from writers goroutines, as a worker's handlers do,
// and reports items/s and the ledger's CPU per item. Wrap the ledger in a
// premis.GroupCommit to measure what a worker runs.
func BenchAcceptedItems(b *testing.B, writers int, l premis.Ledger) {
	benchWriters(b, writers, func(ctx context.Context) error {
		_, err := l.Append(ctx, AcceptedItem(benchSeq.Add(1))...)
		return err
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
}

// filterCase is a filter and the ids of the events it must return, in
// order.
type filterCase struct {
	name string
	f    premis.Filter
	want []string
}

func wantFiltered(t *testing.T, l premis.Ledger, cases []filterCase) {
	t.Helper()
	for _, tc := range cases {
		evs, err := l.Events(context.Background(), tc.f)
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
		c := l
		// The count is of every match, whatever the page.
		all := tc.f
		all.Limit, all.AfterSeq = 0, 0
		every, err := l.Events(context.Background(), all)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := c.CountEvents(context.Background(), tc.f); err != nil || n != int64(len(every)) {
			t.Errorf("%s: CountEvents %d, %v; want %d", tc.name, n, err, len(every))
		}
	}
}

// ReadsBeforeMembers checks what the read commands ask of a ledger written
// before the members column, opened for audit (which adds nothing): its
// events (stored as want, in order), one by id, a message's, and those
// with members (none).
func ReadsBeforeMembers(t *testing.T, l premis.Ledger, want []*premis.Event) {
	t.Helper()
	ctx := context.Background()
	evs, err := l.Events(ctx, premis.Filter{})
	if err != nil || len(evs) != len(want) {
		t.Fatalf("events of a ledger before members: %d, %v, want %d", len(evs), err, len(want))
	}
	if e, err := l.Event(ctx, want[0].ID); err != nil || e.Key != want[0].Key || len(e.Members) != 0 {
		t.Errorf("event %s by id: %+v, %v", want[0].ID, e, err)
	}
	for _, f := range []premis.Filter{{ObjectID: want[0].ObjectID + "#1"}, {HasMembers: true}, {HasMembers: true, BatchID: want[0].BatchID}} {
		if evs, err := l.Events(ctx, f); err != nil || len(evs) != 0 {
			t.Errorf("%+v on a ledger before members: %d events, %v", f, len(evs), err)
		}
	}
	if evs, err := l.Events(ctx, premis.Filter{ObjectID: want[0].ObjectID}); err != nil || len(evs) == 0 || evs[0].ID != want[0].ID {
		t.Errorf("object %s: %d events, %v", want[0].ObjectID, len(evs), err)
	}
}

// Checkpointed signs l's current head into a checkpoint log of its own, as
// a worker's premis.Verifier does, and returns the log and the key.
func Checkpointed(t *testing.T, l premis.Ledger) (*premis.CheckpointLog, ed25519.PrivateKey) {
	t.Helper()
	key, err := premis.GenerateCheckpointKey()
	if err != nil {
		t.Fatal(err)
	}
	log := &premis.CheckpointLog{Dir: t.TempDir()}
	v := &premis.Verifier{Auditor: auditor(t, l), Log: log, Key: key, Every: 1}
	c, res, err := v.Checkpoint(context.Background())
	if err != nil || c == nil || !res.Intact() {
		t.Fatalf("checkpoint: %v, %v, %s", c, err, res)
	}
	return log, key
}

// VerifyCheckpointed reads log with pub and verifies l against it.
func VerifyCheckpointed(t *testing.T, l premis.Ledger, log *premis.CheckpointLog, pub ed25519.PublicKey) *premis.Verification {
	t.Helper()
	cps, err := log.Read(pub)
	if err != nil {
		t.Fatal(err)
	}
	v, err := premis.VerifyCheckpointed(context.Background(), auditor(t, l), cps)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func auditor(t *testing.T, l premis.Ledger) premis.Auditor {
	t.Helper()
	return l
}

// Recompute is the attacker who knows the chain's encoding: it walks l
// and, from the row at seq from on, computes every hash again from the
// row's columns and calls set with the row's new prev_hash and hash. It
// returns the new head, for the head record.
func Recompute(t *testing.T, l premis.Ledger, from int64, set func(seq int64, prev, hash string)) premis.Head {
	t.Helper()
	type row struct {
		seq        int64
		prev, hash string
	}
	var rows []row
	prev, n := premis.ChainGenesis, int64(0)
	err := auditor(t, l).Walk(context.Background(), func(e premis.Event, err error) error {
		if err != nil {
			return err
		}
		n++
		if e.Seq >= from {
			e.PrevHash, e.Hash = prev, premis.ChainHash(prev, &e)
			rows = append(rows, row{e.Seq, e.PrevHash, e.Hash})
		}
		prev = e.Hash
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		set(r.seq, r.prev, r.hash)
	}
	return premis.Head{Count: n, Hash: prev}
}

// BenchVerify measures a check of a ledger of size events: full walks
// the whole chain each time (premis.Verify); otherwise a premis.Verifier
// checks the fresh events appended before each check (0: none, the cost of
// a listing on an idle ledger). Appends are not timed; bytes are the
// events the check reads.
func BenchVerify(b *testing.B, l premis.Ledger, size, fresh int, full bool) {
	ctx := context.Background()
	a := l
	batch := func(prefix string, n int) {
		evs := make([]*premis.Event, n)
		for i := range evs {
			evs[i] = Event(fmt.Sprintf("%s-%d", prefix, i), premis.Validation, 1)
		}
		for len(evs) > 0 {
			k := min(len(evs), 500)
			if _, err := l.Append(ctx, evs[:k]...); err != nil {
				b.Fatal(err)
			}
			evs = evs[k:]
		}
	}
	batch("base", size)
	v := &premis.Verifier{Auditor: a}
	if res, err := v.Check(ctx); err != nil || !res.Intact() {
		b.Fatalf("first check: %v %s", err, res)
	}
	read := fresh
	if full {
		read = size
	}
	b.SetBytes(int64(read) * 1024) // about a KB an event
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if fresh > 0 {
			b.StopTimer()
			batch(fmt.Sprintf("fresh-%d", i), fresh)
			b.StartTimer()
		}
		var res *premis.Verification
		var err error
		if full {
			res, err = premis.Verify(ctx, a)
		} else {
			res, err = v.Check(ctx)
		}
		if err != nil || !res.Intact() {
			b.Fatalf("check: %v %s", err, res)
		}
	}
	b.ReportMetric(float64(read), "events/op")
}

// Forgery is one way of forging a seeded ledger (Seed's events) past its
// Append, and what Open and Verify must make of it.
type Forgery struct {
	Name string
	// Attack are the statements run against the database, in order.
	Attack []string
	// OpenErr is what Open's refusal names; "" when Open succeeds (the
	// attacker put the guards back, so only the chain can show it).
	OpenErr string
	// Want are the problems Verify must find, each as WantProblem reads it.
	Want []Problem
	// Anchored: Verify is given the head recorded before the attack.
	Anchored bool
}

// Problem is a problem Verify must report: its kind, at seq (0: any), with
// every detail in its text.
type Problem struct {
	Kind   premis.ProblemKind
	Seq    int64
	Detail []string
}

// Forger is how a backend's tests make a ledger and forge it.
type Forger struct {
	// New is the setting of a new ledger (a file path, a postgres://
	// URL) that nothing has opened yet.
	New func(t *testing.T) string
	// Attack runs statements against the ledger at where, past Append.
	Attack func(t *testing.T, where string, stmts ...string)
}

// Forge runs each forgery on a freshly seeded ledger, in parallel, and
// checks what Open and Verify say of it.
func Forge(t *testing.T, f Forger, forgeries []Forgery) {
	for _, tc := range forgeries {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			where := f.New(t)
			evs := Seeded(t, where)
			f.Attack(t, where, tc.Attack...)
			var anchors []premis.Head
			if tc.Anchored {
				last := evs[len(evs)-1]
				anchors = append(anchors, premis.Head{Count: int64(len(evs)), Hash: last.Hash})
			}
			v, openErr := VerifyAt(t, where, anchors...)
			switch {
			case tc.OpenErr == "" && openErr != nil:
				t.Errorf("open: %v, want it to open", openErr)
			case tc.OpenErr != "" && (openErr == nil || !strings.Contains(openErr.Error(), tc.OpenErr)):
				t.Errorf("open: %v, want premis.ErrTampered naming %q", openErr, tc.OpenErr)
			}
			for _, p := range tc.Want {
				WantProblem(t, v, p.Kind, p.Seq, p.Detail...)
			}
			if t.Failed() || testing.Verbose() {
				t.Logf("open: %v\nverify: %s\n%s", openErr, v, Problems(v))
			}
		})
	}
}

// Found is the Problem of kind at seq with detail.
func Found(kind premis.ProblemKind, seq int64, detail ...string) Problem {
	return Problem{Kind: kind, Seq: seq, Detail: detail}
}

// ConsistentForgery is a forgery that leaves a ledger consistent on its own
// (guards, head and read model put back to agree): only the signed
// checkpoint taken before it can show it, as the problem Want.
type ConsistentForgery struct {
	Name string
	// Attack forges the ledger at where.
	Attack func(t *testing.T, where string)
	Want   Problem
}

// ForgeCheckpointed runs each forgery on a freshly seeded ledger that was
// checkpointed first, in parallel: Verify alone finds it intact, Verify
// against the checkpoint log finds Want.
func ForgeCheckpointed(t *testing.T, f Forger, forgeries []ConsistentForgery) {
	for _, tc := range forgeries {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			where := f.New(t)
			Seeded(t, where)
			log, key := Checkpointed(t, AuditAt(t, where))
			tc.Attack(t, where)
			if v, openErr := VerifyAt(t, where); openErr != nil || !v.Intact() {
				t.Fatalf("without the checkpoint: open %v, %s\n%s: the attack left an inconsistent ledger", openErr, v, Problems(v))
			}
			v := VerifyCheckpointed(t, AuditAt(t, where), log, key.Public().(ed25519.PublicKey))
			WantProblem(t, v, tc.Want.Kind, tc.Want.Seq, tc.Want.Detail...)
			if t.Failed() || testing.Verbose() {
				t.Logf("verify: %s\n%s", v, Problems(v))
			}
		})
	}
}

// Benches are the append and verify benchmarks every ledger backend runs,
// over its own ledgers, so that their figures compare.
type Benches struct {
	// Ledger opens a new, empty chained ledger, closed with the benchmark.
	Ledger func(b *testing.B) premis.Ledger
	// V0 appends as the version before the chain did: an INSERT and a
	// commit an event, into a v0 ledger of its own.
	V0 func(b *testing.B) AppendFunc
}

// Run runs them, as sub-benchmarks:
//
//   - AppendV0, AppendChained, AppendV0Writers4, AppendChainedWriters4:
//     one event per transaction, as a worker appends, on the ledger before
//     the chain and on the chained ledger, by one writer and by four.
//   - AppendGroupWriters4, AppendGroupWriters16: four and sixteen writers
//     through one group committer.
//   - VerifyFull, VerifierIdle, VerifierFresh100: checking a ledger of
//     20,000 events by a full walk, and by the incremental check a listing
//     runs (premis.Verifier) when nothing and when 100 events were
//     appended since the last.
func (bs Benches) Run(b *testing.B) {
	for _, c := range []struct {
		name    string
		writers int
		append  func(b *testing.B) AppendFunc
	}{
		{"AppendV0", 1, bs.V0}, {"AppendChained", 1, bs.appender(false)},
		{"AppendV0Writers4", 4, bs.V0}, {"AppendChainedWriters4", 4, bs.appender(false)},
		{"AppendGroupWriters4", 4, bs.appender(true)}, {"AppendGroupWriters16", 16, bs.appender(true)},
	} {
		b.Run(c.name, func(b *testing.B) { BenchAppend(b, c.writers, c.append(b)) })
	}
	b.Run("VerifyFull", func(b *testing.B) { BenchVerify(b, bs.Ledger(b), 20000, 0, true) })
	b.Run("VerifierIdle", func(b *testing.B) { BenchVerify(b, bs.Ledger(b), 20000, 0, false) })
	b.Run("VerifierFresh100", func(b *testing.B) { BenchVerify(b, bs.Ledger(b), 20000, 100, false) })
	b.Run("FirstDelivery", func(b *testing.B) { benchFirstDelivery(b, bs.Ledger(b)) })
}

// benchFirstDelivery is what a worker asks the ledger of a task's first
// delivery, among 5,000 submitted items: the read model's point lookup
// (premis.LatestLookup, lookup/op) and the history read it spares
// (history/op, an item's retries and decisions by correlation and task).
func benchFirstDelivery(b *testing.B, l premis.Ledger) {
	ctx := context.Background()
	ll := l
	corrs := make([]string, 0, 5000)
	for n := range int64(5000) {
		ins := sample.AcceptedMaster(n)[0]
		ins.Type, ins.Destination, ins.Key, ins.Envelope = premis.IngestionStart, premis.Submitted, ins.Key+"-ins", make([]byte, 600)
		if _, err := l.Append(ctx, ins); err != nil {
			b.Fatal(err)
		}
		corrs = append(corrs, ins.CorrelationID)
	}
	history := []premis.Destination{premis.Retry, premis.Accepted, premis.DeadLetter, premis.Quarantined, premis.AuditHold, premis.Discarded, premis.Replayed}
	b.ResetTimer()
	var lookup, read time.Duration
	for i := range b.N {
		corr := corrs[i%len(corrs)]
		start := time.Now()
		if _, _, err := ll.LatestOf(ctx, corr); err != nil {
			b.Fatal(err)
		}
		lookup += time.Since(start)
		start = time.Now()
		if _, err := l.Events(ctx, premis.Filter{CorrelationID: corr, TaskID: "task", Destinations: history}); err != nil {
			b.Fatal(err)
		}
		read += time.Since(start)
	}
	b.ReportMetric(float64(lookup.Nanoseconds())/float64(b.N), "lookup-ns/op")
	b.ReportMetric(float64(read.Nanoseconds())/float64(b.N), "history-ns/op")
}

// AcceptedItems is a worker's commit: an accepted master's events an
// Append, through the group committer, from writers handlers.
func (bs Benches) AcceptedItems(b *testing.B, writers int) {
	g := premis.NewGroupCommit(bs.Ledger(b), 0)
	defer g.Stop()
	BenchAcceptedItems(b, writers, g)
}

func (bs Benches) appender(group bool) func(b *testing.B) AppendFunc {
	return func(b *testing.B) AppendFunc {
		l := bs.Ledger(b)
		if group {
			g := premis.NewGroupCommit(l, 0)
			b.Cleanup(g.Stop)
			l = g
		}
		return func(ctx context.Context, e *premis.Event) error {
			_, err := l.Append(ctx, e)
			return err
		}
	}
}

// Seeded writes Seed's events into a new ledger at setting (a file path, a
// postgres:// URL: see premis.BackendFor), closes it, and returns them.
func Seeded(t *testing.T, setting string) []*premis.Event {
	t.Helper()
	b := backend(t, setting)
	l, err := b.Open(context.Background(), setting)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return Seed(t, l)
}

// VerifyAt opens the ledger at setting as lazaret ledger verify does (its
// backend's Open, and OpenAudit when Open reports tampering) and verifies
// it; it returns the error of Open.
func VerifyAt(t *testing.T, setting string, anchors ...premis.Head) (*premis.Verification, error) {
	t.Helper()
	ctx := context.Background()
	b := backend(t, setting)
	l, openErr := b.Open(ctx, setting)
	if openErr == nil {
		defer l.Close()
		return Verify(t, l, anchors...), nil
	}
	if !errors.Is(openErr, premis.ErrTampered) {
		t.Fatalf("open: %v, want nil or premis.ErrTampered", openErr)
	}
	a, err := b.OpenAudit(ctx, setting)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	v, err := premis.Verify(ctx, a, anchors...)
	if err != nil {
		t.Fatal(err)
	}
	return v, openErr
}

// Conformance runs Run on new ledgers at the settings newLedger gives
// (opened through their registered backend), directly and through a group
// committer: batching concurrent appends must change nothing a caller sees.
func Conformance(t *testing.T, newLedger func(t *testing.T) string) {
	open := func(t *testing.T) premis.Ledger { return OpenAt(t, newLedger(t)) }
	t.Run("direct", func(t *testing.T) { Run(t, open) })
	t.Run("group-commit", func(t *testing.T) {
		Run(t, func(t *testing.T) premis.Ledger {
			g := premis.NewGroupCommit(open(t), 0)
			t.Cleanup(g.Stop)
			return g
		})
	})
}

// OpenAt opens the ledger at setting through its backend, as a worker
// does, closed with the test.
func OpenAt(t *testing.T, setting string) premis.Ledger {
	t.Helper()
	b := backend(t, setting)
	l, err := b.Open(context.Background(), setting)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// Audited is a ledger opened for audit: its events can be read and its
// chain walked.
type Audited interface {
	premis.Ledger
	premis.Auditor
}

// AuditAt opens the ledger at setting for audit only, through its
// backend, closed with the test.
func AuditAt(t *testing.T, setting string) Audited {
	t.Helper()
	b := backend(t, setting)
	a, err := b.OpenAudit(context.Background(), setting)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	l, ok := a.(Audited)
	if !ok {
		t.Fatalf("%T, opened for audit, is not a premis.Ledger", a)
	}
	return l
}

// backend is the registered backend of setting.
func backend(t *testing.T, setting string) premis.Backend {
	t.Helper()
	b, err := premis.BackendFor(setting)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
