package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"

	"github.com/lazaret/lazaret/premis"
)

// RecoverReport says what a ledger recovery found and did (or, in a dry
// run, would do).
type RecoverReport struct {
	DryRun bool `json:"dry_run"`
	// Unknown: tasks the broker completed of which the ledger holds no
	// event at all (submitted, or replayed, after the point the ledger went
	// back to): their submission is recorded again from the task's
	// envelope, and they are run again.
	Unknown []string `json:"unknown"`
	// Reconcile is the full reconciliation that follows: LedgerBehind
	// lists the items whose outcome the ledger lost and that are run again.
	Reconcile *ReconcileReport `json:"reconcile"`
}

// RecoverLedger re-derives what a ledger that went back in time (restored
// from a backup, a replica promoted before it received the last writes)
// lost, from what the broker still holds:
//   - a completed task of which the ledger holds no event is recorded as
//     submitted again, from its envelope, with a note that says why;
//   - then the full reconciliation runs: every item whose latest event
//     expects broker work and whose task the broker completed is run again
//     (its outcome is decided anew, under the same task id), archived
//     tasks without an event are recorded, parked copies that name lost
//     events are replaced.
//
// What the broker no longer holds (completed tasks past their retention,
// operator actions on items that are then not in the broker) cannot be
// re-derived: the report and the log say how many items were re-run, the
// ledger's own events say what each re-run decided.
func (o *Operator) RecoverLedger(ctx context.Context, dryRun bool) (*RecoverReport, error) {
	rep := &RecoverReport{DryRun: dryRun, Unknown: []string{}}
	const pageSize = 500
	for page := 1; ; page++ {
		if err := ctx.Err(); err != nil {
			return rep, context.Cause(ctx)
		}
		tasks, err := o.Broker.ListCompletedTasks(QueueIngest, asynq.PageSize(pageSize), asynq.Page(page))
		if errors.Is(err, asynq.ErrQueueNotFound) {
			break
		}
		if err != nil {
			return rep, fmt.Errorf("list completed: %w", err)
		}
		for _, ti := range tasks {
			if err := o.rederive(ctx, ti, rep); err != nil {
				return rep, err
			}
		}
		if len(tasks) < pageSize {
			break
		}
	}
	rr, err := o.ReconcileBroker(ctx, dryRun)
	rep.Reconcile = rr
	if err != nil {
		return rep, err
	}
	o.Logger.LogAttrs(ctx, slog.LevelWarn, "ledger recovered from the broker", slog.Bool("dry_run", dryRun),
		slog.Int("unknown_recorded", len(rep.Unknown)), slog.Int("run_again", len(rr.LedgerBehind)),
		slog.Int("archived_recorded", len(rr.ArchivedRecorded)))
	return rep, nil
}

// rederive records the submission of a completed task the ledger holds no
// event of.
func (o *Operator) rederive(ctx context.Context, ti *asynq.TaskInfo, rep *RecoverReport) error {
	env, err := DecodeEnvelope(ti.Payload)
	if err != nil || env.TaskID() != ti.ID {
		return nil // not a task Lazaret enqueued under its own id
	}
	have, err := o.Ledger.Events(ctx, premis.Filter{CorrelationID: env.CorrelationID, TaskID: ti.ID, Limit: 1})
	if err != nil || len(have) > 0 {
		return err
	}
	rep.Unknown = append(rep.Unknown, env.ObjectID)
	if rep.DryRun {
		return nil
	}
	ev := submissionEvent(env, o.Software, time.Now().UTC())
	ev.Detail = premis.RecoveryDetail + "; " + ev.Detail
	ev.Note = fmt.Sprintf("re-derived by ledger recover: the broker completed task %s at %s, but the ledger held no event of it "+
		"(it went back in time: restored from a backup, or a replica promoted before it received the last writes); run again",
		ti.ID, ti.CompletedAt.UTC().Format(time.RFC3339))
	if env.ReplayOf != "" {
		ev.Note += "; it was a replay of event " + env.ReplayOf + ", which the ledger lost too"
	}
	_, err = o.Ledger.Append(ctx, ev)
	return err
}
