package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hibiken/asynq"

	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/sqlite"
)

// stepRecorder is a broker that writes down what it is asked to do, in
// the words ActionResult.Steps uses.
type stepRecorder struct {
	Broker // unused methods panic
	did    []string
}

func (s *stepRecorder) EnqueueContext(_ context.Context, t *asynq.Task, opts ...asynq.Option) (*asynq.TaskInfo, error) {
	var queue, id string
	for _, o := range opts {
		switch o.Type() {
		case asynq.QueueOpt:
			queue = o.Value().(string)
		case asynq.TaskIDOpt:
			id = o.Value().(string)
		}
	}
	switch t.Type() {
	case TypeHeld:
		s.did = append(s.did, "broker: park in "+queue)
	default:
		var env Envelope
		if err := json.Unmarshal(t.Payload(), &env); err != nil {
			return nil, err
		}
		s.did = append(s.did, fmt.Sprintf("broker: enqueue task %s in %s (attempt %d)", id, queue, env.Attempt))
	}
	return &asynq.TaskInfo{ID: id, Queue: queue}, nil
}

func (s *stepRecorder) DeleteTask(queue, id string) error {
	s.did = append(s.did, fmt.Sprintf("broker: delete task %s from %s", id, queue))
	return nil
}

// TestActionsDoTheStepsTheyList: what a dry run of an operator action
// lists is what the action then does at the broker, step for step, after
// the event its first line names. Both come from the same step values;
// a broker call added to an action without its step would show here.
func TestActionsDoTheStepsTheyList(t *testing.T) {
	ctx := context.Background()
	l, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	failure := func(obj string, dest premis.Destination, attempt int) premis.Event {
		env := &Envelope{V: EnvelopeVersion, BatchID: "b", ObjectID: obj, CorrelationID: CorrelationID("b", obj, "sha"), Kind: "tiff",
			SHA256: "sha", Size: 1, Path: "/in/" + obj + ".tif", Attempt: attempt}
		ev := newEvent(env, premis.Validation, attempt, env.TaskID(), premis.Software{Name: "lazaret", Version: "test"})
		if dest.Parked() {
			ev.Type = premis.Quarantine
			ev.Key = premis.EventKey(env.CorrelationID, env.SHA256, ev.Type, attempt)
		}
		ev.Outcome, ev.Class, ev.Code, ev.Destination, ev.Envelope = premis.Failure, premis.Structural, "tiff.truncated", dest, envelopeJSON(env)
		if _, err := l.Append(ctx, ev); err != nil {
			t.Fatal(err)
		}
		return *ev
	}
	actions := []struct {
		name string
		fail premis.Event
		do   func(o *Operator, id string, dry bool) (*ActionResult, error)
	}{
		{"replay a dead letter", failure("dl", premis.DeadLetter, 1), func(o *Operator, id string, dry bool) (*ActionResult, error) {
			return o.Replay(ctx, id, ReplayOptions{Operator: "ana", DryRun: dry})
		}},
		{"replay a quarantined item", failure("qa", premis.Quarantined, 1), func(o *Operator, id string, dry bool) (*ActionResult, error) {
			return o.Replay(ctx, id, ReplayOptions{Operator: "ana", DryRun: dry})
		}},
		{"discard", failure("ds", premis.AuditHold, 2), func(o *Operator, id string, dry bool) (*ActionResult, error) {
			return o.Discard(ctx, id, "ana", "duplicate", dry)
		}},
		{"hold at the ceiling", failure("hd", premis.DeadLetter, 4), func(o *Operator, id string, dry bool) (*ActionResult, error) {
			f, _, err := GetFailure(ctx, o.Ledger, id)
			if err != nil {
				return nil, err
			}
			env, err := DecodeEnvelope(f.Envelope)
			if err != nil {
				return nil, err
			}
			return o.hold(ctx, f, env, "ana", "attempt 5 would reach the poison cap 5", dry)
		}},
	}
	for _, a := range actions {
		t.Run(a.name, func(t *testing.T) {
			rec := &stepRecorder{}
			o := &Operator{Ledger: l, Enqueuer: rec, Broker: rec, Policy: DefaultPolicy(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
				Software: premis.Software{Name: "lazaret", Version: "test"}}
			plan, err := a.do(o, a.fail.ID, true)
			if err != nil {
				t.Fatalf("dry run: %v", err)
			}
			if len(rec.did) != 0 {
				t.Fatalf("a dry run did %q", rec.did)
			}
			done, err := a.do(o, a.fail.ID, false)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(plan.Steps, done.Steps); diff != "" {
				t.Errorf("steps listed by the dry run and the action differ (-dry +real):\n%s", diff)
			}
			want := fmt.Sprintf("ledger: %s event (destination %s) on failure %s", done.Event.Type, done.Event.Destination, a.fail.ID)
			if len(plan.Steps) == 0 || plan.Steps[0] != want {
				t.Errorf("first step %q, want %q", plan.Steps, want)
			}
			if diff := cmp.Diff(plan.Steps[1:], rec.did); diff != "" {
				t.Errorf("broker steps listed vs done (-listed +done):\n%s", diff)
			}
			if stored, err := l.Event(ctx, done.Event.ID); err != nil || stored.Key != resolutionKey(Failure{a.fail}) {
				t.Errorf("the action's event %s is not the failure's recorded resolution (%v)", done.Event.ID, err)
			}
		})
	}
}
