package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/hibiken/asynq"

	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/validate"
)

// Parked is an item waiting in quarantine or audit-hold.
type Parked struct {
	TaskID string
	Queue  string
	Held   Held
}

// ParkedLister lists and deletes parked tasks; *asynq.Inspector satisfies it.
type ParkedLister interface {
	ListPendingTasks(queue string, opts ...asynq.ListOption) ([]*asynq.TaskInfo, error)
	DeleteTask(queue, id string) error
}

// ListParked returns every item parked in queue (quarantine or audit-hold).
// A parked task whose payload does not decode is returned with an empty
// Held and reported in the error, never dropped silently.
func ListParked(insp ParkedLister, queue string) ([]Parked, error) {
	var out []Parked
	var bad []string
	const size = 500
	for page := 1; ; page++ {
		tasks, err := insp.ListPendingTasks(queue, asynq.PageSize(size), asynq.Page(page))
		if errors.Is(err, asynq.ErrQueueNotFound) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("list %s: %w", queue, err)
		}
		for _, t := range tasks {
			p := Parked{TaskID: t.ID, Queue: queue}
			if t.Type != TypeHeld || json.Unmarshal(t.Payload, &p.Held) != nil {
				bad = append(bad, t.ID)
			}
			out = append(out, p)
		}
		if len(tasks) < size {
			break
		}
	}
	if len(bad) > 0 {
		return out, fmt.Errorf("%d parked task(s) in %s do not decode: %s", len(bad), queue, strings.Join(bad, ", "))
	}
	return out, nil
}

// Replay hands a parked item back to ingest as a fresh task: new task id,
// attempt + 1, replay_of the event that parked it. The unq event is written
// first; the parked task is deleted only after the new task is enqueued, so
// a crash in between replays at most once more (the event and the task id
// are idempotent) and never loses the item.
func (w *Worker) Replay(ctx context.Context, insp ParkedLister, p Parked, operator, reason string) (*Envelope, error) {
	env := p.Held.Envelope
	if env.CorrelationID == "" {
		return nil, fmt.Errorf("parked task %s has no envelope to replay", p.TaskID)
	}
	env.Attempt = p.Held.Attempt + 1
	if env.Attempt <= p.Held.Envelope.Attempt {
		env.Attempt = p.Held.Envelope.Attempt + 1
	}
	env.ReplayOf = p.Held.EventID
	unq := w.base(&env, premis.Unquarantine, env.Attempt, 0, p.TaskID)
	unq.Outcome, unq.Destination, unq.Operator = premis.Success, premis.Replayed, operator
	unq.Detail = fmt.Sprintf("replayed from %s as attempt %d (%s)", p.Queue, env.Attempt, w.Software.ID())
	unq.Note = reason
	if _, err := w.Ledger.Append(ctx, unq); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	if _, err := Enqueue(ctx, w.Broker, &env, SubmitOptions{Policy: w.Policy}); err != nil {
		return nil, fmt.Errorf("enqueue replay: %w", err)
	}
	if err := insp.DeleteTask(p.Queue, p.TaskID); err != nil && !errors.Is(err, asynq.ErrTaskNotFound) {
		return &env, fmt.Errorf("replayed, but the parked task %s could not be removed: %w", p.TaskID, err)
	}
	w.Logger.LogAttrs(ctx, slog.LevelInfo, "item replayed", slog.String(AttrCorrelationID, env.CorrelationID),
		slog.String(AttrObjectID, env.ObjectID), slog.String("from", p.Queue), slog.Int(AttrAttempt, env.Attempt),
		slog.String("operator", operator), slog.String("replay_of", env.ReplayOf))
	return &env, nil
}

// registryCodes are the failure codes that depend on a registry.
var registryCodes = map[string]bool{"edifact.locode.unknown": true, "edifact.hs.unknown": true}

// ReconcileDecision is what reconciliation did with one parked item.
type ReconcileDecision struct {
	Parked   Parked
	Action   string // "replayed", "still-failing", "unchanged-registry", "not-registry-dependent"
	Detail   string
	Replayed *Envelope
}

// ReconcileQuarantine re-validates every quarantined item whose failure
// depended on a registry that has since changed, and replays those that now
// pass. Others stay where they are. With dryRun nothing is replayed.
func (w *Worker) ReconcileQuarantine(ctx context.Context, insp ParkedLister, dryRun bool) ([]ReconcileDecision, error) {
	if w.Registries != nil {
		if _, err := w.Registries.Refresh(); err != nil {
			return nil, fmt.Errorf("refresh registries: %w", err)
		}
	}
	regs := w.registries()
	parked, err := ListParked(insp, QueueQuarantine)
	if err != nil && len(parked) == 0 {
		return nil, err
	}
	var out []ReconcileDecision
	for _, p := range parked {
		if ctx.Err() != nil {
			return out, context.Cause(ctx)
		}
		d := ReconcileDecision{Parked: p}
		current := ""
		if strings.HasPrefix(p.Held.Registry, "HS@") {
			current = regs.HS.Version()
		} else {
			current = regs.LOCODE.Version()
		}
		switch {
		case !registryCodes[p.Held.Code]:
			d.Action, d.Detail = "not-registry-dependent", p.Held.Code
		case p.Held.Registry == current:
			d.Action, d.Detail = "unchanged-registry", current
		default:
			env := p.Held.Envelope
			it := env.Item
			it.SHA256, it.Size = env.SHA256, env.Size
			_, res, verr := validate.CheckInterchange(ctx, env.Path, &it, regs, w.EDI, env.Message)
			switch {
			case verr != nil:
				d.Action, d.Detail = "still-failing", verr.Error()
			case len(res.Messages) == 1 && res.Messages[0].Err != nil:
				d.Action, d.Detail = "still-failing", res.Messages[0].Err.Error()
			default:
				d.Action = "replayed"
				d.Detail = fmt.Sprintf("registry changed from %s to %s; the message now passes", p.Held.Registry, current)
				if !dryRun {
					env, err := w.Replay(ctx, insp, p, "lazaret-reconcile", d.Detail)
					if err != nil {
						return out, err
					}
					d.Replayed = env
				}
			}
		}
		out = append(out, d)
	}
	return out, err
}
