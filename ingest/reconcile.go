package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/hibiken/asynq"

	"github.com/lazaret/lazaret/premis"
)

// ArchivedLister lists archived tasks; *asynq.Inspector satisfies it.
type ArchivedLister interface {
	ListArchivedTasks(queue string, opts ...asynq.ListOption) ([]*asynq.TaskInfo, error)
}

// ReconcileArchived finds tasks in the ingest queue's archived set (the DLQ)
// that have no dead-letter event in the ledger and records one. asynq
// archives a task without calling any handler when its lease expires on the
// last retry (the worker was killed); this is how such a task still gets its
// PREMIS event. It returns how many events it wrote.
func (w *Worker) ReconcileArchived(ctx context.Context, insp ArchivedLister) (int, error) {
	written := 0
	const pageSize = 500
	for page := 1; ; page++ {
		if err := ctx.Err(); err != nil {
			return written, context.Cause(ctx)
		}
		tasks, err := insp.ListArchivedTasks(QueueIngest, asynq.PageSize(pageSize), asynq.Page(page))
		if errors.Is(err, asynq.ErrQueueNotFound) {
			return written, nil // nothing was ever enqueued: nothing archived
		}
		if err != nil {
			return written, fmt.Errorf("list archived: %w", err)
		}
		for _, ti := range tasks {
			ok, err := w.reconcileOne(ctx, ti)
			if err != nil {
				return written, err
			}
			if ok {
				written++
			}
		}
		if len(tasks) < pageSize {
			return written, nil
		}
	}
}

func (w *Worker) reconcileOne(ctx context.Context, ti *asynq.TaskInfo) (bool, error) {
	env, derr := DecodeEnvelope(ti.Payload)
	corr, sha, object := "", "", ti.ID
	if derr == nil {
		corr, sha, object = env.CorrelationID, env.SHA256, env.ObjectID
	} else {
		sum := sha256.Sum256(ti.Payload)
		sha = hex.EncodeToString(sum[:])
		corr = ti.ID
	}
	f := premis.Filter{CorrelationID: corr, Destination: premis.DeadLetter}
	if derr != nil {
		f = premis.Filter{ObjectID: object, Destination: premis.DeadLetter}
	}
	have, err := w.Ledger.Events(ctx, f)
	if err != nil {
		return false, err
	}
	for _, e := range have {
		if e.TaskID == ti.ID {
			return false, nil
		}
	}
	attempt := ti.Retried + 1
	if env != nil {
		attempt = env.Attempt + ti.Retried
	}
	class, code := premis.Unknown, "broker.archived-unrecorded"
	if strings.Contains(ti.LastErr, "lease expired") {
		class, code = premis.Transient, "worker.lease-expired"
	}
	ev := &premis.Event{
		Key:  premis.EventKey(corr+"/broker-archived/"+ti.ID, sha, premis.Validation, attempt),
		Type: premis.Validation, Outcome: premis.Failure, Class: class, Code: code, Destination: premis.DeadLetter,
		Message: "archived by the broker without a recorded outcome: " + ti.LastErr,
		Note:    fmt.Sprintf("found in the archived set after %d retries (last error: %s); recorded by reconciliation", ti.Retried, ti.LastErr),
		Detail:  "broker reconciliation: archived task with no ledger event", ObjectID: object, CorrelationID: corr,
		SHA256: sha, Attempt: attempt, Retries: ti.Retried, TaskID: ti.ID, Agent: w.Software.ID(), Kind: "task",
		Envelope: capped(ti.Payload),
	}
	if env != nil {
		ev.BatchID, ev.Kind, ev.Size, ev.Path, ev.ReplayOf = env.BatchID, env.Kind, env.Size, env.Path, env.ReplayOf
	}
	ins, err := w.Ledger.Append(ctx, ev)
	if err != nil {
		return false, err
	}
	if ins[0] {
		w.Logger.LogAttrs(ctx, slog.LevelError, "archived task reconciled", slog.String(AttrTaskID, ti.ID),
			slog.String(AttrCorrelationID, corr), slog.String(AttrObjectID, object), slog.String(AttrClass, string(class)),
			slog.String(AttrDestination, string(premis.DeadLetter)), slog.String(AttrCode, code))
		w.observe(ev.Kind, class, premis.DeadLetter, code, ev.DateTime, ev)
	}
	return ins[0], nil
}
