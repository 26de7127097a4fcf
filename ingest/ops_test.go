package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/hibiken/asynq"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/validate"
)

func (b *bundle) ops() *ingest.Operator {
	return &ingest.Operator{Ledger: b.ledger, Enqueuer: b.client, Broker: b.insp, Policy: b.worker.Policy, Software: b.worker.Software,
		Logger: b.worker.Logger, Check: b.worker.Check, PublishQueues: ingest.QueuePublisher(b.opt), Redis: b.redis(), Refresh: func() (string, string, error) {
			store := b.worker.Registries
			if store == nil {
				r := validate.Builtin()
				return r.LOCODE.Version(), r.HS.Version(), nil
			}
			if _, err := store.Refresh(); err != nil {
				return "", "", err
			}
			return store.Current().LOCODE.Version(), store.Current().HS.Version(), nil
		}}
}

// deadLetters enqueues n items whose files do not exist yet, with no
// retries, and waits until all are dead letters. It returns their
// envelopes and the data to write later.
func (b *bundle) deadLetters(n int, attempt int, prefix string) []*ingest.Envelope {
	b.t.Helper()
	data := master(b.t, goodPage)
	_, sha := b.file("template.tif", data)
	var envs []*ingest.Envelope
	for i := 0; i < n; i++ {
		env := b.envelope(fmt.Sprintf("%s-%03d", prefix, i), filepath.Join(b.dir, fmt.Sprintf("%s-%03d.tif", prefix, i)), sha)
		env.Attempt = attempt
		b.enqueue(env)
		envs = append(envs, env)
	}
	for _, env := range envs {
		if ev := b.settled(env.CorrelationID, 30*time.Second); ev.Destination != premis.DeadLetter {
			b.t.Fatalf("%s: %s", env.ObjectID, ev.Destination)
		}
		// The decision is recorded before the handler returns: wait for
		// asynq to have archived the task too.
		deadline := time.Now().Add(10 * time.Second)
		for {
			ti, err := b.insp.GetTaskInfo(ingest.QueueIngest, env.TaskID())
			if err == nil && ti.State == asynq.TaskStateArchived {
				break
			}
			if time.Now().After(deadline) {
				b.t.Fatalf("%s: recorded as dead-letter but not archived: %v %v", env.ObjectID, ti, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return envs
}

func TestFilteredListing(t *testing.T) {
	t.Parallel()
	p := fastPolicy()
	p.MaxRetry = 0
	b := setup(t, p)
	b.start()
	b.deadLetters(3, 1, "missing")
	path, sha := b.file("m.tif", master(t, goodPage))
	q := b.envelope("no-profile", path, sha)
	q.Item.ColorProfile = ""
	b.enqueue(q)
	b.settled(q.CorrelationID, 10*time.Second)
	ctx := context.Background()
	cases := []struct {
		f    ingest.FailureFilter
		want int
	}{
		{ingest.FailureFilter{}, 4},
		{ingest.FailureFilter{Class: premis.Transient}, 3},
		{ingest.FailureFilter{Destination: premis.Quarantined}, 1},
		{ingest.FailureFilter{Code: "manifest.color_profile.required"}, 1},
		{ingest.FailureFilter{Kind: "edifact"}, 0},
		{ingest.FailureFilter{BatchID: "batch-t", Class: premis.Semantic}, 1},
		{ingest.FailureFilter{Since: time.Now().Add(time.Minute)}, 0},
		{ingest.FailureFilter{Limit: 2}, 2},
	}
	for _, tc := range cases {
		fs, err := ingest.Failures(ctx, b.ledger, tc.f)
		if err != nil || len(fs) != tc.want {
			t.Errorf("%+v: %d failures (err %v), want %d", tc.f, len(fs), err, tc.want)
		}
	}
}

func TestReplayAndDiscard(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	b.start()
	ctx := context.Background()
	data := master(t, goodPage)
	path, sha := b.file("m.tif", data)
	// A quarantined item, replayed after its manifest was fixed upstream:
	// the replay carries the envelope; here the fix is a corrected file.
	q := b.envelope("dpi-abc", path, sha)
	q.Item.ResolutionDPI = "abc"
	b.enqueue(q)
	qua := b.settled(q.CorrelationID, 10*time.Second)
	if _, err := b.ops().Replay(ctx, qua.ID, ingest.ReplayOptions{Operator: "ana"}); err != nil {
		t.Fatal(err)
	}
	// It fails again the same way (the manifest still says abc): a second
	// qua, attempt 2, linked to the first by replay_of.
	deadline := time.Now().Add(10 * time.Second)
	var chain []string
	for time.Now().Before(deadline) {
		chain = chain[:0]
		for _, e := range b.events(q.CorrelationID) {
			chain = append(chain, fmt.Sprintf("%s/%d", e.Type, e.Attempt))
		}
		if len(chain) >= 3 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if strings.Join(chain, ",") != "qua/1,unq/2,qua/2" {
		t.Fatalf("chain %v", chain)
	}
	if _, err := b.ops().Replay(ctx, qua.ID, ingest.ReplayOptions{Operator: "ana"}); !errors.Is(err, ingest.ErrNotOpen) {
		t.Errorf("replaying a replayed failure: %v", err)
	}
	// Discard the second one with a reason.
	fs, _ := ingest.Failures(ctx, b.ledger, ingest.FailureFilter{Code: "manifest.resolution_dpi.numeric"})
	if len(fs) != 1 || fs[0].Attempt != 2 {
		t.Fatalf("open failures %+v", fs)
	}
	if _, err := b.ops().Discard(ctx, fs[0].ID, "ana", "", false); err == nil {
		t.Error("a discard without a reason was accepted")
	}
	del, err := b.ops().Discard(ctx, fs[0].ID, "ana", "duplicate scan, the 2026-11-29 batch holds the master", false)
	if err != nil {
		t.Fatal(err)
	}
	if ev := del.Event; ev.Type != premis.Deletion || ev.Operator != "ana" || !strings.Contains(ev.Note, "duplicate scan") {
		t.Errorf("del event %+v", ev)
	}
	if q, _ := b.insp.ListPendingTasks(ingest.QueueQuarantine); len(q) != 0 {
		t.Errorf("%d parked after discard", len(q))
	}
	if fs, _ := ingest.Failures(ctx, b.ledger, ingest.FailureFilter{}); len(fs) != 0 {
		t.Errorf("%d open failures after discard", len(fs))
	}
}

// TestDiscardRecordsBeforeItDeletes: a discard writes its del event
// before it deletes the broker's copy, so a ledger that refuses the write
// leaves the item parked and open (the operator is told, nothing is lost);
// deleting first would leave a failure the ledger still calls open with
// no task behind it. Once the ledger is back, the discard goes through.
func TestDiscardRecordsBeforeItDeletes(t *testing.T) {
	t.Parallel()
	b := setup(t, fastPolicy())
	b.start()
	ctx := context.Background()
	path, sha := b.file("m.tif", master(t, goodPage))
	env := b.envelope("discard-cut", path, sha)
	env.Item.ResolutionDPI = "abc"
	b.enqueue(env)
	b.settled(env.CorrelationID, 10*time.Second)
	fs, err := ingest.Failures(ctx, b.ledger, ingest.FailureFilter{Destination: premis.Quarantined})
	if err != nil || len(fs) != 1 || fs[0].Destination != premis.Quarantined {
		t.Fatalf("open failures %+v (%v), want one quarantined", fs, err)
	}
	held := ingest.HeldTaskID(fs[0].Key)
	if _, err := b.insp.GetTaskInfo(ingest.QueueQuarantine, held); err != nil {
		t.Fatalf("no parked task %s: %v", held, err)
	}
	ops := b.ops()
	cut := &flakyLedger{Ledger: b.ledger}
	cut.fail.Store(1 << 20)
	ops.Ledger = cut
	if _, err := ops.Discard(ctx, fs[0].ID, "ana", "duplicate", false); err == nil {
		t.Fatal("a discard whose del event was refused reported success")
	}
	if _, err := b.insp.GetTaskInfo(ingest.QueueQuarantine, held); err != nil {
		t.Errorf("the ledger refused the discard, yet the parked task is gone: %v", err)
	}
	if open, _ := ingest.Failures(ctx, b.ledger, ingest.FailureFilter{Destination: premis.Quarantined}); len(open) != 1 {
		t.Errorf("%d open failures after a refused discard, want 1", len(open))
	}
	if _, err := b.ops().Discard(ctx, fs[0].ID, "ana", "duplicate", false); err != nil {
		t.Fatalf("discard with the ledger back: %v", err)
	}
	if _, err := b.insp.GetTaskInfo(ingest.QueueQuarantine, held); err == nil {
		t.Error("discarded, yet the parked task is still there")
	}
}

// TestArchivedReplaySucceedsOnceEvenAfterRedisLostIt: a dead letter whose
// archived task was deleted behind Lazaret's back is still listed (from the
// ledger) and replayable (from the envelope in its event).
func TestArchivedReplaySucceedsOnceEvenAfterRedisLostIt(t *testing.T) {
	t.Parallel()
	p := fastPolicy()
	p.MaxRetry = 0
	b := setup(t, p)
	b.start()
	envs := b.deadLetters(1, 1, "lost")
	env := envs[0]
	if err := b.insp.DeleteTask(ingest.QueueIngest, env.TaskID()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	fs, err := ingest.Failures(ctx, b.ledger, ingest.FailureFilter{Destination: premis.DeadLetter})
	if err != nil || len(fs) != 1 {
		t.Fatalf("listing after Redis lost the task: %+v %v", fs, err)
	}
	if state := b.ops().BrokerState(fs[0]); !strings.Contains(state, "missing") {
		t.Errorf("broker state %q", state)
	}
	// The file arrives; replay from the ledger.
	data := master(t, goodPage)
	b.file(filepath.Base(env.Path), data)
	if _, err := b.ops().Replay(ctx, fs[0].ID, ingest.ReplayOptions{Operator: "ops"}); err != nil {
		t.Fatal(err)
	}
	ev := b.settledAfter(env.CorrelationID, premis.Accepted, 10*time.Second)
	if ev.Attempt != 2 || ev.ReplayOf != fs[0].ID {
		t.Errorf("accepted attempt %d replay_of %s", ev.Attempt, ev.ReplayOf)
	}
	ings := 0
	for _, e := range b.events(env.CorrelationID) {
		switch {
		case e.Type == premis.Ingestion && e.Outcome == premis.Success:
			ings++
		case e.ID == fs[0].ID && (e.Type != premis.Ingestion || e.Outcome != premis.Failure):
			// The file was not there: nothing was validated.
			t.Errorf("the missing file's failure is %s %s, want ing fai (a read that failed, not a failed validation)", e.Type, e.Outcome)
		case e.Destination == premis.Replayed && e.Type != premis.IngestionStart:
			// It was never quarantined: its replay is no unq.
			t.Errorf("the dead letter's replay is recorded as %s, want ins", e.Type)
		}
	}
	if ings != 1 {
		t.Errorf("%d ing events", ings)
	}
}

// settledAfter waits until the item's latest event has destination want.
func (b *bundle) settledAfter(corr string, want premis.Destination, timeout time.Duration) premis.Event {
	b.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		wake := b.next()
		evs := b.events(corr)
		if len(evs) > 0 && evs[len(evs)-1].Destination == want {
			return evs[len(evs)-1]
		}
		select {
		case <-wake:
		case <-time.After(250 * time.Millisecond):
		case <-deadline.C:
			b.t.Fatalf("%s never reached %s", corr, want)
		}
	}
}

func TestRedriveIsThrottledAndRespectsTheCeiling(t *testing.T) {
	t.Parallel()
	p := fastPolicy()
	p.MaxRetry = 0
	b := setup(t, p)
	b.start()
	envs := b.deadLetters(200, 1, "outage")
	ceiling := b.deadLetters(5, 4, "tired") // attempt 4: the next would be the cap (5)
	ctx := context.Background()
	// Nothing changed yet: a redrive refuses to repeat the outage.
	ds, err := b.ops().Redrive(ctx, ingest.RedriveOptions{Rate: 1000, Operator: "ops", DryRun: true, Filter: ingest.FailureFilter{Code: "io.not-found"}})
	if err != nil {
		t.Fatal(err)
	}
	unchanged := 0
	for _, d := range ds {
		if d.Action == "unchanged" {
			unchanged++
		}
	}
	if unchanged != 200 {
		t.Fatalf("%d unchanged before the files arrived, want 200", unchanged)
	}
	// The storage comes back.
	data := master(t, goodPage)
	for _, env := range append(envs, ceiling...) {
		b.file(filepath.Base(env.Path), data)
	}
	start := time.Now()
	ds, err = b.ops().Redrive(ctx, ingest.RedriveOptions{Rate: 50, Operator: "ops"})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, d := range ds {
		counts[d.Action]++
	}
	if counts["redriven"] != 200 || counts["held"] != 5 {
		t.Fatalf("decisions %v", counts)
	}
	t.Logf("redrove 200 dead letters at 50/s in %s; 5 at the ceiling held", took.Round(time.Millisecond))
	// The throttle is a floor: 199 gaps of 20 ms. No ceiling: a loaded
	// machine may take longer, and that proves nothing about the throttle.
	if took < 3500*time.Millisecond {
		t.Errorf("200 items at 50/s took %s, want at least about 4 s", took)
	}
	// Not all at once: in any 1-second window at most ~50 replays.
	var at []time.Time
	for _, d := range ds {
		if d.Action == "redriven" {
			at = append(at, d.At)
		}
	}
	for i := range at {
		j := i
		for j < len(at) && at[j].Sub(at[i]) < time.Second {
			j++
		}
		if j-i > 52 {
			t.Fatalf("%d replays within one second starting at #%d", j-i, i)
		}
	}
	for _, env := range envs[:5] {
		b.settledAfter(env.CorrelationID, premis.Accepted, 20*time.Second)
	}
	for _, env := range ceiling {
		evs := b.events(env.CorrelationID)
		last := evs[len(evs)-1]
		if last.Destination != premis.AuditHold || last.Operator != "ops" {
			t.Errorf("%s at the ceiling: %s", env.ObjectID, last.Destination)
		}
	}
	if info, err := b.insp.GetQueueInfo(ingest.QueueAuditHold); err != nil || info.Pending != 5 {
		t.Errorf("audit-hold %+v %v", info, err)
	}
}
