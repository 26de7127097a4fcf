package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"

	"github.com/lazaret/lazaret/premis"
)

// ending is how one delivery of a task ends. Every way is a value of this
// type, made without writing anything (deliver); finish is the one function
// that turns it into the ledger write, the parked copies and what asynq is
// told. A reader learns every ending from finish's switch.
type ending struct {
	how endingKind
	r   *result // decided: what to commit; routingFailed, draining: the decision that could not be routed, if any
	err error   // interrupted: the cause; routingFailed, draining: what failed
}

// endingKind names the ways a delivery ends.
type endingKind int

const (
	// decided: a decision made by this delivery (a verdict, a poisoned
	// payload, a spent routing budget) is committed: replies, ledger,
	// parked copies; then logged, observed, and asynq told.
	decided endingKind = iota
	// redone: an earlier delivery recorded the decision; only its broker
	// step is repeated (park again, archive, acknowledge).
	redone
	// interrupted: shutdown or task timeout before a verdict: nothing is
	// recorded, asynq redelivers.
	interrupted
	// draining: the worker is shutting down and an interchange stopped at
	// a checkpoint; what it recorded stays, the redelivery resumes.
	draining
	// routingFailed: the decision could not be read, recorded or handed
	// off: retried with backoff within the routing budget, then
	// dead-lettered.
	routingFailed
	// paused: the ledger cannot be written (disk full, a read-only or
	// recovering primary, unreachable, locked: premis.ErrBusy). Nothing is
	// recorded and the routing budget is not spent: the task waits in the
	// broker and this worker takes no item until the ledger is tried
	// again (see pauseIntake). An outage of any length dead-letters no
	// good master.
	paused
)

// HandleValidate is the asynq handler for TypeValidate: read the delivery,
// find how it ends, finish it.
func (w *Worker) HandleValidate(ctx context.Context, t *asynq.Task) error {
	d := &delivery{start: time.Now()}
	d.retried, _ = asynq.GetRetryCount(ctx)
	d.taskID, _ = asynq.GetTaskID(ctx)
	if err := w.intakePaused(); err != nil {
		return w.finish(ctx, d, ending{how: paused, err: err})
	}
	return w.finish(ctx, d, w.deliver(ctx, t, d))
}

// deliver reads the task and the ledger's history of it and decides how
// the delivery ends: it validates only a task with no recorded decision
// and budget left. It writes nothing.
func (w *Worker) deliver(ctx context.Context, t *asynq.Task, d *delivery) ending {
	env, derr := DecodeEnvelope(t.Payload())
	if derr != nil {
		return ending{how: decided, r: w.poisoned(t, d, derr)}
	}
	d.env, d.attempt = env, env.Attempt
	d.first = w.takesFirst(d)
	return w.decide(ctx, d)
}

// decide is deliver once the envelope is read: what the ledger knows of the
// task (unless the delivery takes itself for the task's first, see
// takesFirst), then the decision.
func (w *Worker) decide(ctx context.Context, d *delivery) ending {
	if d.first {
		d.retries, d.attempt, d.decided = 0, d.env.Attempt, nil
	} else if err := w.readHistory(ctx, d); err != nil {
		return ending{how: routingFailed, err: fmt.Errorf("ledger: %w", err)}
	}
	if d.decided != nil {
		return ending{how: redone}
	}
	spent, err := w.budgetSpent(ctx, d)
	if err != nil {
		return ending{how: routingFailed, err: fmt.Errorf("ledger: %w", err)}
	}
	if spent {
		return ending{how: decided, r: w.spent(d)}
	}
	r := w.execute(ctx, d)
	if r.interrupted {
		return ending{how: interrupted, err: context.Cause(ctx)}
	}
	return ending{how: decided, r: r}
}

// finish carries out an ending and returns what asynq is told (see
// toBroker). A commit or broker step that fails becomes another ending
// here, so every transition of a delivery passes through this switch.
func (w *Worker) finish(ctx context.Context, d *delivery, e ending) error {
	switch e.how {
	case decided:
		t, err := w.commit(ctx, e.r)
		switch {
		case err == nil:
			w.report(ctx, e.r, t)
			return e.r.broker(t)
		case errors.Is(err, premis.ErrNotFirst):
			// The delivery took itself for the task's first, and the
			// ledger holds more of the item than its submission by this
			// task (a redelivery asynq did not count, a resubmission):
			// nothing was written; decided again from the history.
			d.first = false
			return w.finish(ctx, d, w.decide(ctx, d))
		case t.rereadFirst(ctx, e.r):
			// The second read of the interchange found it changed before
			// anything was recorded: that is this attempt's verdict, as if
			// the first read had found it. (Once a chunk may be recorded,
			// the attempt is not over: the redelivery resumes it.)
			return w.finish(ctx, d, ending{how: decided, r: w.redecide(e.r, t.reread)})
		case errors.Is(err, ErrDraining):
			return w.finish(ctx, d, ending{how: draining, r: e.r, err: err})
		default:
			return w.finish(ctx, d, ending{how: routingFailed, r: e.r, err: err})
		}
	case redone:
		return w.redo(ctx, d)
	case interrupted:
		return e.err
	case draining:
		w.Logger.LogAttrs(ctx, slog.LevelInfo, "stopped at a checkpoint for shutdown; the rest is done on redelivery",
			slog.String(AttrObjectID, d.env.ObjectID), slog.String(AttrTaskID, d.taskID), slog.String("detail", e.err.Error()))
		return &RoutingError{Try: d.routingSpent() + 1, Err: e.err}
	case routingFailed:
		if errors.Is(e.err, premis.ErrBusy) {
			return w.finish(ctx, d, ending{how: paused, r: e.r, err: e.err})
		}
		return w.routingFailed(ctx, d, e.r, e.err)
	case paused:
		return w.pauseIntake(ctx, d, e.err)
	}
	return fmt.Errorf("ingest: delivery of task %s ended in an unknown way (%d)", d.taskID, e.how)
}

// redecide is the result of an interchange whose second read failed with
// err before anything was recorded: decided on err at this attempt.
func (w *Worker) redecide(r *result, err error) *result {
	return &result{d: r.d, rep: r.rep, ires: r.ires, cause: err, replies: r.replies,
		decision: w.Policy.Decide(err, r.d.attempt, r.d.retries)}
}

// redo repeats only the broker action of a decision an earlier delivery
// recorded: park again under the same task id, archive, or acknowledge.
func (w *Worker) redo(ctx context.Context, d *delivery) error {
	e := d.decided
	if e.Destination.Parked() {
		if err := park(ctx, w.Broker, heldOf(d.env, e)); err != nil {
			return w.finish(ctx, d, ending{how: routingFailed, err: err})
		}
	}
	w.Logger.LogAttrs(ctx, slog.LevelInfo, "decision already recorded; broker action repeated",
		slog.String(AttrCorrelationID, d.env.CorrelationID), slog.String(AttrObjectID, d.env.ObjectID),
		slog.String(AttrTaskID, d.taskID), slog.String(AttrDestination, string(e.Destination)),
		slog.String("event_id", e.ID), slog.Int("delivery", d.retried+1))
	if w.Observe != nil {
		w.Observe(Observation{Kind: d.env.Kind, Class: e.Class, Destination: e.Destination, Code: e.Code,
			Duration: time.Since(d.start), Events: []*premis.Event{e}, Redone: true})
	}
	return toBroker(e.Destination, 0, &summarized{ev: e, err: errors.New(e.Message)})
}

// routingFailed handles a decision that could not be read, recorded or
// handed off (r is nil when there was none yet). Within the routing budget
// the task is retried with backoff (asynq counts the try). When the budget
// is spent the item is dead-lettered with an event that keeps the original
// class and code, if the ledger answers; if it does not, the archived
// task's last error carries them for reconcile-broker.
func (w *Worker) routingFailed(ctx context.Context, d *delivery, r *result, err error) error {
	try := d.routingSpent() + 1
	dest := premis.Destination("")
	if r != nil {
		dest = r.decision.Destination
	}
	attrs := []slog.Attr{slog.String(AttrTaskID, d.taskID), slog.Int("routing_try", try), slog.Int("routing_budget", w.Policy.RoutingBudget),
		slog.String(AttrDestination, string(dest)), slog.String("error", err.Error())}
	if d.env != nil {
		attrs = append(attrs, slog.String(AttrCorrelationID, d.env.CorrelationID), slog.String(AttrObjectID, d.env.ObjectID),
			slog.String(AttrBatchID, d.env.BatchID), slog.Int(AttrAttempt, d.attempt))
	}
	if r != nil {
		attrs = append(attrs, slog.String(AttrClass, string(r.decision.Class)), slog.String(AttrCode, r.decision.Code))
	}
	if try < w.Policy.RoutingBudget && d.retried+1 < w.Policy.BrokerRetries() {
		w.Logger.LogAttrs(ctx, slog.LevelWarn, "routing failed; the task will be retried", attrs...)
		return &RoutingError{Destination: dest, Try: try, Err: err}
	}
	var aerr error
	if d.first {
		// Taken for the task's first delivery, unconfirmed: its history
		// is read before anything is written on it.
		d.first = false
		aerr = w.readHistory(ctx, d)
	}
	ev := w.exhaustedEvent(d, r, err, try)
	if aerr == nil {
		aerr = w.append(ctx, ev)
	}
	if aerr != nil {
		attrs = append(attrs, slog.String("ledger_error", aerr.Error()))
		w.Logger.LogAttrs(ctx, slog.LevelError, "routing budget spent and the ledger does not answer: archived unrecorded, reconcile-broker records it", attrs...)
	} else {
		attrs = append(attrs, slog.String("event_id", ev.ID))
		w.Logger.LogAttrs(ctx, slog.LevelError, "routing budget spent: dead-lettered", attrs...)
		w.observe(ev.Kind, ev.Class, premis.DeadLetter, ev.Code, d.start, ev)
	}
	return toBroker(premis.DeadLetter, 0, &summarized{ev: ev, err: err})
}

// poisoned is the result for a payload that does not decode into an
// envelope: dead-lettered with one event keyed by the payload, so that a
// redelivery finds it instead of writing another.
func (w *Worker) poisoned(t *asynq.Task, d *delivery, perr error) *result {
	sum := sha256.Sum256(t.Payload())
	sha := hex.EncodeToString(sum[:])
	id := d.taskID
	if id == "" {
		id = "task-" + sha[:16]
	}
	d.env = &Envelope{CorrelationID: id, ObjectID: id, Kind: KindTask, SHA256: sha, Size: int64(len(t.Payload())), Attempt: 1}
	d.attempt = 1
	ev := newEvent(d.env, premis.Validation, 1, d.taskID, w.Software)
	ev.Outcome, ev.Destination, ev.Retries = premis.Failure, premis.DeadLetter, d.retried
	ev.Class, ev.Code, ev.Message = Classify(perr), Code(perr), perr.Error()
	ev.Detail, ev.Envelope, ev.Path = "task payload did not decode into a lazaret envelope", capped(t.Payload()), ""
	return &result{d: d, cause: perr, events: []*premis.Event{ev},
		decision: Decision{Class: ev.Class, Code: ev.Code, Destination: premis.DeadLetter}}
}
