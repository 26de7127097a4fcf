package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hibiken/asynq"
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

// registryCodes are the failure codes that depend on a registry.
var registryCodes = map[string]bool{"edifact.locode.unknown": true, "edifact.hs.unknown": true}

// ReconcileDecision is what reconciliation did with one parked item.
type ReconcileDecision struct {
	Parked Parked
	// Action: "replayed" ("would-replay" in a dry run), "still-failing",
	// "unchanged-registry", "not-registry-dependent", "already-resolved".
	Action   string
	Detail   string
	Replayed *Envelope
}

// ReconcileOptions choose what a quarantine reconciliation looks at.
type ReconcileOptions struct {
	DryRun  bool
	BatchID string // only this batch's parked items ("": all)
	Code    string // only items parked with this code ("": all)
}

// ReconcileQuarantine re-validates every quarantined item whose failure
// depended on a registry that has since changed, and replays those that now
// pass. Others stay where they are. With DryRun nothing is replayed.
//
// Before it replays anything, every live worker must validate with the
// registry versions it loaded (see o.Fleet): a worker still on the old
// registry would quarantine the message again, spending an attempt towards
// the poison cap. While one does, it returns *FleetBehindError and
// replays nothing (a dry run reports its decisions and the same error).
func (o *Operator) ReconcileQuarantine(ctx context.Context, opt ReconcileOptions) ([]ReconcileDecision, error) {
	locode, hs := "", ""
	if o.Refresh != nil {
		var err error
		if locode, hs, err = o.Refresh(); err != nil {
			return nil, fmt.Errorf("refresh registries: %w", err)
		}
	}
	parked, err := ListParked(o.Broker, QueueQuarantine)
	if err != nil && len(parked) == 0 {
		return nil, err
	}
	var fleetErr error
	if o.Fleet != nil && o.Refresh != nil {
		fleet, ferr := o.Fleet(ctx)
		if ferr != nil {
			return nil, fmt.Errorf("read the workers' registry versions: %w", ferr)
		}
		if late := behind(fleet, locode, hs); len(late) > 0 {
			fleetErr = &FleetBehindError{LOCODE: locode, HS: hs, Behind: late}
			if !opt.DryRun {
				return nil, fleetErr
			}
		}
	}
	var out []ReconcileDecision
	for _, p := range parked {
		if ctx.Err() != nil {
			return out, context.Cause(ctx)
		}
		if opt.BatchID != "" && p.Held.Envelope.BatchID != opt.BatchID || opt.Code != "" && p.Held.Code != opt.Code {
			continue
		}
		d := ReconcileDecision{Parked: p}
		current := locode
		if strings.HasPrefix(p.Held.Registry, "HS@") {
			current = hs
		}
		switch {
		case !registryCodes[p.Held.Code]:
			d.Action, d.Detail = "not-registry-dependent", p.Held.Code
		case p.Held.Registry == current:
			d.Action, d.Detail = "unchanged-registry", current
		case o.Check == nil:
			d.Action, d.Detail = "still-failing", "no validator to re-check with"
		default:
			env := p.Held.Envelope
			v := o.Check(ctx, &env)
			switch {
			case v.Err != nil:
				d.Action, d.Detail = "still-failing", v.Err.Error()
			case len(v.Messages) == 1 && v.Messages[0].Message.Err != nil:
				d.Action, d.Detail = "still-failing", v.Messages[0].Message.Err.Error()
			default:
				d.Action = "replayed"
				if opt.DryRun {
					d.Action = "would-replay"
				}
				d.Detail = fmt.Sprintf("registry changed from %s to %s; the message now passes", p.Held.Registry, current)
				res, err := o.Replay(ctx, p.Held.EventID, ReplayOptions{Operator: "lazaret-reconcile", Reason: d.Detail, DryRun: opt.DryRun})
				switch {
				case errors.Is(err, ErrNotOpen), errors.Is(err, ErrConflict):
					d.Action, d.Detail = "already-resolved", err.Error()
				case err != nil:
					return out, err
				default:
					d.Replayed = res.Replay
				}
			}
		}
		out = append(out, d)
	}
	if err == nil {
		err = fleetErr
	}
	return out, err
}
