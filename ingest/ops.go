package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"time"

	"github.com/hibiken/asynq"

	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/validate"
)

// Failure is an item whose latest outcome in the ledger is a failure
// destination: dead-letter, quarantine or audit-hold. Its ID is the id of
// the event that put it there. The ledger, not Redis, is the source: a
// failure stays listable (and replayable from the envelope in its event)
// after the broker trimmed or lost the task.
type Failure struct {
	ID            string             `json:"id"`
	CorrelationID string             `json:"correlation_id"`
	ObjectID      string             `json:"object_id"`
	BatchID       string             `json:"batch_id"`
	Kind          string             `json:"kind"`
	Class         premis.Class       `json:"class"`
	Code          string             `json:"code"`
	Destination   premis.Destination `json:"destination"`
	Message       string             `json:"message"`
	Offset        *int64             `json:"offset"`
	Page          *int               `json:"page,omitempty"`
	Segment       int                `json:"segment,omitempty"`
	Element       int                `json:"element,omitempty"`
	Component     int                `json:"component,omitempty"`
	Attempt       int                `json:"attempt"`
	At            time.Time          `json:"at"`
	TaskID        string             `json:"task_id"`
	Event         premis.Event       `json:"-"`
}

// FailureFilter selects failures; zero fields match everything.
type FailureFilter struct {
	Class        premis.Class
	Code         string
	Kind         string
	BatchID      string
	Destination  premis.Destination
	Since, Until time.Time
	Limit        int
}

// outcomeDestinations are the destinations that say where an item is now.
var outcomeDestinations = map[premis.Destination]bool{
	premis.Accepted: true, premis.DeadLetter: true, premis.Quarantined: true, premis.AuditHold: true,
	premis.Discarded: true, premis.Replayed: true,
}

// Failures lists the open failures matching f, oldest first.
func Failures(ctx context.Context, l premis.Ledger, f FailureFilter) ([]Failure, error) {
	evs, err := l.Events(ctx, premis.Filter{BatchID: f.BatchID, Kind: f.Kind})
	if err != nil {
		return nil, err
	}
	latest := map[string]premis.Event{}
	var order []string
	for _, e := range evs {
		if !outcomeDestinations[e.Destination] {
			continue
		}
		if _, seen := latest[e.CorrelationID]; !seen {
			order = append(order, e.CorrelationID)
		}
		latest[e.CorrelationID] = e
	}
	var out []Failure
	for _, corr := range order {
		e := latest[corr]
		switch e.Destination {
		case premis.DeadLetter, premis.Quarantined, premis.AuditHold:
		default:
			continue
		}
		if (f.Class != "" && e.Class != f.Class) || (f.Code != "" && e.Code != f.Code) || (f.Destination != "" && e.Destination != f.Destination) ||
			(!f.Since.IsZero() && e.DateTime.Before(f.Since)) || (!f.Until.IsZero() && !e.DateTime.Before(f.Until)) {
			continue
		}
		out = append(out, failureOf(e))
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

func failureOf(e premis.Event) Failure {
	return Failure{ID: e.ID, CorrelationID: e.CorrelationID, ObjectID: e.ObjectID, BatchID: e.BatchID, Kind: e.Kind, Class: e.Class,
		Code: e.Code, Destination: e.Destination, Message: e.Message, Offset: e.Offset, Page: e.Page, Segment: e.Segment,
		Element: e.Element, Component: e.Component, Attempt: e.Attempt, At: e.DateTime, TaskID: e.TaskID, Event: e}
}

// ErrNotOpen: the failure was already replayed, discarded or accepted.
var ErrNotOpen = errors.New("not an open failure")

// Failure looks one failure up by its event id and returns it with the
// item's whole history. The failure must still be open.
func GetFailure(ctx context.Context, l premis.Ledger, id string) (Failure, []premis.Event, error) {
	e, err := l.Event(ctx, id)
	if err != nil {
		return Failure{}, nil, err
	}
	history, err := l.Events(ctx, premis.Filter{CorrelationID: e.CorrelationID})
	if err != nil {
		return Failure{}, nil, err
	}
	var last premis.Event
	for _, h := range history {
		if outcomeDestinations[h.Destination] {
			last = h
		}
	}
	f := failureOf(e)
	if last.ID != e.ID {
		return f, history, fmt.Errorf("%w: %s; the item's latest outcome is %s (event %s)", ErrNotOpen, id, last.Destination, last.ID)
	}
	return f, history, nil
}

// Operations are what operators do with failures.
type Operations struct {
	Worker    *Worker
	Inspector *asynq.Inspector
}

// brokerTask is where the broker holds a failure: the queue and task id.
func brokerTask(f Failure) (queue, id string) {
	switch f.Destination {
	case premis.Quarantined:
		return QueueQuarantine, HeldTaskID(f.Event.Key)
	case premis.AuditHold:
		return QueueAuditHold, HeldTaskID(f.Event.Key)
	}
	return QueueIngest, f.TaskID
}

// BrokerState says whether the broker still holds the failure's task.
func (o *Operations) BrokerState(f Failure) string {
	q, id := brokerTask(f)
	ti, err := o.Inspector.GetTaskInfo(q, id)
	if err != nil {
		return "missing from the broker (trimmed or lost): replayable from the ledger"
	}
	return fmt.Sprintf("%s in %s", ti.State, q)
}

// ReplayOptions refine a replay.
type ReplayOptions struct {
	Operator, Reason string
	// File, when set, replaces the item's file (a corrected master or
	// interchange): its digest and size are taken from it.
	File string
}

// Replay hands an open failure back to ingest as a fresh task (new task id,
// attempt + 1, replay_of = the failure's event), writing an unq event first
// and removing the broker's copy after. It works from the ledger's
// envelope, so a failure whose task Redis trimmed is replayable too.
func (o *Operations) Replay(ctx context.Context, id string, opt ReplayOptions) (*Envelope, error) {
	f, _, err := GetFailure(ctx, o.Worker.Ledger, id)
	if err != nil {
		return nil, err
	}
	env, err := DecodeEnvelope(f.Event.Envelope)
	if err != nil {
		return nil, fmt.Errorf("failure %s has no replayable envelope: %w", id, err)
	}
	if opt.File != "" {
		sum, size, err := fileDigest(opt.File)
		if err != nil {
			return nil, fmt.Errorf("corrected file: %w", err)
		}
		env.Path, env.SHA256, env.Size = opt.File, sum, size
		env.Item.SHA256, env.Item.Size = sum, size
	}
	q, taskID := brokerTask(f)
	held := Held{Envelope: *env, EventID: f.ID, Class: string(f.Class), Code: f.Code, Destination: string(f.Destination), Attempt: f.Attempt}
	reason := opt.Reason
	if reason == "" {
		reason = "replayed by " + opt.Operator
	}
	if opt.File != "" {
		reason += fmt.Sprintf(" (with corrected file %s, sha256 %s)", opt.File, env.SHA256)
	}
	return o.Worker.Replay(ctx, o.Inspector, Parked{TaskID: taskID, Queue: q, Held: held}, opt.Operator, reason)
}

func fileDigest(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// Discard removes an open failure for good: a del event naming the
// operator and the reason, then the broker's copy is deleted.
func (o *Operations) Discard(ctx context.Context, id, operator, reason string) (*premis.Event, error) {
	if reason == "" {
		return nil, errors.New("a discard needs a reason")
	}
	if operator == "" {
		return nil, errors.New("a discard needs an operator")
	}
	f, _, err := GetFailure(ctx, o.Worker.Ledger, id)
	if err != nil {
		return nil, err
	}
	env := &Envelope{CorrelationID: f.CorrelationID, ObjectID: f.ObjectID, BatchID: f.BatchID, Kind: f.Kind, SHA256: f.Event.SHA256, Attempt: f.Attempt}
	del := o.Worker.base(env, premis.Deletion, f.Attempt, 0, f.TaskID)
	del.Key = premis.EventKey(f.CorrelationID+"/discard/"+f.ID, f.Event.SHA256, premis.Deletion, f.Attempt)
	del.Outcome, del.Destination, del.Operator, del.Note = premis.Success, premis.Discarded, operator, reason
	del.Detail = fmt.Sprintf("discarded from %s by %s (%s)", f.Destination, operator, o.Worker.Software.ID())
	del.ReplayOf, del.Envelope = f.ID, f.Event.Envelope
	if _, err := o.Worker.Ledger.Append(ctx, del); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	q, tid := brokerTask(f)
	if err := o.Inspector.DeleteTask(q, tid); err != nil && !errors.Is(err, asynq.ErrTaskNotFound) && !errors.Is(err, asynq.ErrQueueNotFound) {
		return del, fmt.Errorf("discarded in the ledger, but the broker task %s could not be deleted: %w", tid, err)
	}
	o.Worker.Logger.LogAttrs(ctx, slog.LevelWarn, "item discarded", slog.String(AttrCorrelationID, f.CorrelationID),
		slog.String(AttrObjectID, f.ObjectID), slog.String("operator", operator), slog.String("reason", reason))
	return del, nil
}

// RedriveOptions bound a bulk redrive of the dead-letter queue.
type RedriveOptions struct {
	Filter   FailureFilter // Destination is forced to dead-letter
	Rate     float64       // items per second; 0 = 10
	Limit    int           // at most this many replays; 0 = no limit
	Force    bool          // redrive even when a re-check fails the same way
	Operator string
	DryRun   bool
	// Progress, when set, is told of every decision as it is made.
	Progress func(RedriveDecision)
}

// RedriveDecision is what a redrive did with one dead letter.
type RedriveDecision struct {
	Failure Failure `json:"failure"`
	Action  string  `json:"action"` // "redriven", "held" (attempt ceiling), "unchanged" (same failure), "error"
	Detail  string  `json:"detail"`
	At      time.Time
}

// Redrive replays dead letters, throttled to opt.Rate per second. Items
// whose next attempt would reach the poison cap go to audit-hold with an
// event instead. Unless Force is set, each item is re-checked first and
// left alone when it still fails with the same code: a redrive should
// follow a fix, not repeat an outage.
func (o *Operations) Redrive(ctx context.Context, opt RedriveOptions) ([]RedriveDecision, error) {
	if opt.Rate <= 0 {
		opt.Rate = 10
	}
	opt.Filter.Destination = premis.DeadLetter
	fs, err := Failures(ctx, o.Worker.Ledger, opt.Filter)
	if err != nil {
		return nil, err
	}
	tick := time.NewTicker(time.Duration(float64(time.Second) / opt.Rate))
	defer tick.Stop()
	var out []RedriveDecision
	replayed := 0
	first := true
	for _, f := range fs {
		if opt.Limit > 0 && replayed >= opt.Limit {
			break
		}
		d := RedriveDecision{Failure: f}
		env, derr := DecodeEnvelope(f.Event.Envelope)
		switch {
		case derr != nil:
			d.Action, d.Detail = "error", "no replayable envelope: "+derr.Error()
		case f.Attempt+1 >= o.Worker.Policy.PoisonCap:
			d.Action, d.Detail = "held", fmt.Sprintf("attempt %d would reach the poison cap %d", f.Attempt+1, o.Worker.Policy.PoisonCap)
			if !opt.DryRun {
				if err := o.hold(ctx, f, env, opt.Operator, d.Detail); err != nil {
					return out, err
				}
			}
		default:
			if !opt.Force {
				if same, detail := o.stillFails(ctx, env, f); same {
					d.Action, d.Detail = "unchanged", detail
					break
				}
			}
			if !first {
				select {
				case <-ctx.Done():
					return out, context.Cause(ctx)
				case <-tick.C:
				}
			}
			first = false
			d.Action = "redriven"
			if !opt.DryRun {
				if _, err := o.Replay(ctx, f.ID, ReplayOptions{Operator: opt.Operator, Reason: "dead-letter redrive"}); err != nil {
					d.Action, d.Detail = "error", err.Error()
				} else {
					replayed++
				}
			} else {
				replayed++
			}
		}
		d.At = time.Now()
		if opt.Progress != nil {
			opt.Progress(d)
		}
		out = append(out, d)
	}
	return out, nil
}

// stillFails re-runs validation without a queue and reports whether the
// item fails again with the same code.
func (o *Operations) stillFails(ctx context.Context, env *Envelope, f Failure) (bool, string) {
	_, _, err := o.Worker.check(ctx, env)
	if err == nil {
		return false, "passes now"
	}
	if code := Code(err); code == f.Code {
		return true, "still fails with " + code + ": " + err.Error()
	}
	return false, "fails differently now: " + Code(err)
}

// hold moves a dead letter at the attempt ceiling to audit-hold.
func (o *Operations) hold(ctx context.Context, f Failure, env *Envelope, operator, why string) error {
	ev := o.Worker.base(env, premis.Quarantine, f.Attempt, 0, f.TaskID)
	ev.Key = premis.EventKey(f.CorrelationID+"/hold/"+f.ID, env.SHA256, premis.Quarantine, f.Attempt)
	ev.Outcome, ev.Class, ev.Code, ev.Destination, ev.Message = premis.Failure, f.Class, f.Code, premis.AuditHold, f.Message
	ev.Offset, ev.Page, ev.Operator, ev.ReplayOf = f.Offset, f.Page, operator, f.ID
	ev.Detail = "redrive refused at the attempt ceiling; held for a person (" + o.Worker.Software.ID() + ")"
	ev.Note = why
	if _, err := o.Worker.Ledger.Append(ctx, ev); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	if err := o.Worker.park(ctx, env, ev, premis.AuditHold, nil); err != nil {
		return err
	}
	if err := o.Inspector.DeleteTask(QueueIngest, f.TaskID); err != nil && !errors.Is(err, asynq.ErrTaskNotFound) && !errors.Is(err, asynq.ErrQueueNotFound) {
		return fmt.Errorf("held, but the archived task %s could not be deleted: %w", f.TaskID, err)
	}
	return nil
}

// ItemStatus is one item's latest outcome in a batch.
type ItemStatus struct {
	ObjectID    string             `json:"object_id"`
	Kind        string             `json:"kind"`
	Destination premis.Destination `json:"destination"`
	Class       premis.Class       `json:"class,omitempty"`
	Code        string             `json:"code,omitempty"`
	EventID     string             `json:"event_id"`
	Attempt     int                `json:"attempt"`
	At          time.Time          `json:"at"`
}

// BatchStatus is every item's latest outcome in a batch, from the ledger.
func BatchStatus(ctx context.Context, l premis.Ledger, batchID string) ([]ItemStatus, error) {
	evs, err := l.Events(ctx, premis.Filter{BatchID: batchID})
	if err != nil {
		return nil, err
	}
	latest := map[string]premis.Event{}
	var order []string
	for _, e := range evs {
		if e.Destination == "" {
			continue
		}
		if _, seen := latest[e.CorrelationID]; !seen {
			order = append(order, e.CorrelationID)
		}
		latest[e.CorrelationID] = e
	}
	out := make([]ItemStatus, 0, len(order))
	for _, c := range order {
		e := latest[c]
		out = append(out, ItemStatus{ObjectID: e.ObjectID, Kind: e.Kind, Destination: e.Destination, Class: e.Class, Code: e.Code,
			EventID: e.ID, Attempt: e.Attempt, At: e.DateTime})
	}
	return out, nil
}

// QueueStats is the size of each of Lazaret's queues by task state.
type QueueStats struct {
	Queue                                                 string
	Pending, Active, Scheduled, Retry, Archived, Complete int
	Latency                                               time.Duration // age of the oldest pending task
	ProcessedTotal, FailedTotal                           int           // as asynq counts them, since the queue was created
	MemoryBytes                                           int64
	Paused                                                bool
}

// Stats reads the depth of the ingest, quarantine and audit-hold queues. A
// queue that was never used reads as empty.
func (o *Operations) Stats() ([]QueueStats, error) {
	var out []QueueStats
	known, err := o.Inspector.Queues()
	if err != nil {
		return nil, err
	}
	exists := map[string]bool{}
	for _, q := range known {
		exists[q] = true
	}
	for _, q := range []string{QueueIngest, QueueQuarantine, QueueAuditHold} {
		if !exists[q] {
			out = append(out, QueueStats{Queue: q})
			continue
		}
		info, err := o.Inspector.GetQueueInfo(q)
		if err != nil {
			return out, err
		}
		out = append(out, QueueStats{Queue: q, Pending: info.Pending, Active: info.Active, Scheduled: info.Scheduled,
			Retry: info.Retry, Archived: info.Archived, Complete: info.Completed, Latency: info.Latency,
			ProcessedTotal: info.ProcessedTotal, FailedTotal: info.FailedTotal, MemoryBytes: info.MemoryUsage, Paused: info.Paused})
	}
	return out, nil
}

// Ping reports whether the broker answers.
func (o *Operations) Ping() error {
	_, err := o.Inspector.Queues()
	return err
}

// Submit checks and enqueues the manifest at path (read where the server
// runs: payloads travel by reference).
func (o *Operations) Submit(ctx context.Context, manifestPath string) (*SubmitResult, error) {
	m, dir, err := validate.ReadManifest(manifestPath)
	if err != nil {
		return nil, err
	}
	return Submit(ctx, o.Worker.Broker, m, dir, SubmitOptions{Policy: o.Worker.Policy})
}
