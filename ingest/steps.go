package ingest

import (
	"context"
	"fmt"

	"github.com/lazaret/lazaret/premis"
)

// step is one thing an operator action does, in order: record its event,
// then the broker steps. An ActionResult's Steps are these values' lines,
// so what a dry run says an action would do is what the action does.
type step struct {
	do    stepKind
	ev    *premis.Event // record: the event; park: the recorded event the parked task is named by
	on    string        // record: the failure it resolves
	env   *Envelope     // park: the item; enqueue: the task
	queue string        // delete: where the task is
	id    string        // delete: the task
}

type stepKind int

const (
	stepRecord  stepKind = iota // the ledger's compare-and-set on the failure
	stepEnqueue                 // a fresh ingest task
	stepPark                    // a parked copy, named by its event
	stepDelete                  // a broker task removed (a task already gone is not an error)
)

// String is the step as ActionResult.Steps lists it.
func (s step) String() string {
	switch s.do {
	case stepRecord:
		return fmt.Sprintf("ledger: %s event (destination %s) on failure %s", s.ev.Type, s.ev.Destination, s.on)
	case stepEnqueue:
		return fmt.Sprintf("broker: enqueue task %s in %s (attempt %d)", s.env.TaskID(), QueueIngest, s.env.Attempt)
	case stepPark:
		return "broker: park in " + QueueFor(s.ev.Destination)
	case stepDelete:
		return fmt.Sprintf("broker: delete task %s from %s", s.id, s.queue)
	}
	return fmt.Sprintf("step %d", s.do)
}

// lines is what steps list in an ActionResult.
func lines(steps []step) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.String()
	}
	return out
}

// take does one broker step (stepRecord is record's, which says whether
// it was recorded before).
func (o *Operator) take(ctx context.Context, s step) error {
	switch s.do {
	case stepEnqueue:
		_, err := Enqueue(ctx, o.Enqueuer, s.env, o.SubmitOptions())
		return err
	case stepPark:
		return park(ctx, o.Enqueuer, heldOf(s.env, s.ev))
	case stepDelete:
		if err := o.Broker.DeleteTask(s.queue, s.id); err != nil && !brokerLost(err) {
			return err
		}
		return nil
	}
	return fmt.Errorf("ingest: %s is not a broker step", s)
}

// brokerSteps takes the broker steps of an action whose event is recorded,
// in order, and stops at the first that fails: it returns that step and
// its error.
func (o *Operator) brokerSteps(ctx context.Context, steps []step) (step, error) {
	for _, s := range steps {
		if s.do == stepRecord {
			continue
		}
		if err := o.take(ctx, s); err != nil {
			return s, err
		}
	}
	return step{}, nil
}
