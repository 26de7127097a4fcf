package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/lazaret/lazaret/premis"
)

// ReconcileReport says what a broker reconciliation found, and did unless
// it was a dry run.
type ReconcileReport struct {
	DryRun bool `json:"dry_run"`
	// ArchivedRecorded: archived tasks with no ledger event, now recorded.
	ArchivedRecorded []string `json:"archived_recorded"`
	// Reenqueued: items the ledger expects in the ingest queue (submitted,
	// retrying, or replayed) that the broker had lost, enqueued again.
	Reenqueued []string `json:"reenqueued"`
	// Reparked: quarantined or held items whose parked copy was lost,
	// parked again from the ledger.
	Reparked []string `json:"reparked"`
	// StaleParked: parked copies of failures already resolved, removed:
	// quarantine and audit-hold tasks, and the archived tasks of dead
	// letters discarded or replayed since.
	StaleParked []string `json:"stale_parked"`
	// Rearchived: dead letters whose archived task the broker lost, put
	// back into the archived set.
	Rearchived []string `json:"rearchived"`
	// Missing: dead letters the broker no longer holds; they stay listable
	// and replayable from the ledger.
	Missing []string `json:"missing"`
	// LedgerBehind: items the ledger expects work for whose task the
	// broker completed: the broker acted on an outcome the ledger no longer
	// holds (a ledger restored from a backup, a lagging replica promoted).
	// They are run again (in Reenqueued or Reparked), which re-derives
	// their outcome; see docs/reconcile.md.
	LedgerBehind []string `json:"ledger_behind"`
	// BrokerLost: items whose expected task the broker had lost, with what
	// was left of it: "missing" (no record), or the state of a record no
	// worker would run (its list entry evicted, a lease stale for long).
	BrokerLost []string `json:"broker_lost"`
	// Deduplicated: task ids found more than once in a pending list, cut
	// to one.
	Deduplicated []string `json:"deduplicated"`
	// Unexpected: tasks waiting in the ingest queue (pending, scheduled,
	// retry) that the ledger does not expect: of an item it holds no event
	// of, or whose outcome is final (accepted, discarded). Reported, not
	// removed: a worker that runs one finds what the ledger says (and an
	// unknown one is recorded when it is decided); see ledger recover. The
	// whole pass only.
	Unexpected []string `json:"unexpected"`
}

// ReconcileBroker makes broker and ledger agree, with the ledger as the
// system of record:
//   - a task asynq archived with no recorded outcome (a lease expired on the
//     last retry, or the ledger was down when the routing budget ran out)
//     gets its dead-letter event, with the class and code the worker put in
//     the task's last error when it had them;
//   - an item the ledger says was submitted, is retrying or was replayed,
//     but whose task the broker does not hold, is enqueued again from the
//     envelope in its event;
//   - an open quarantine or audit-hold failure whose parked copy is gone is
//     parked again; a parked copy of a failure already resolved is removed.
//
// A task counts as held only if a worker will run it (see checkTask): a
// completed task, a record whose list entry was evicted, or an active task
// under a long-expired lease does not; it is removed and enqueued again
// under its own id.
//
// It reads the whole ledger: the workers run it when they see Redis
// restart, and reconcile-broker on demand; on a timer the workers run
// ExpectationPass, the same checks a page at a time.
func (o *Operator) ReconcileBroker(ctx context.Context, dryRun bool) (*ReconcileReport, error) {
	rep, _, err := o.ReconcileBrokerSince(ctx, 0, dryRun)
	return rep, err
}

// ReconcileBrokerSince is ReconcileBroker for the items whose latest event
// was stored after seq: what changed since a pass that read through seq,
// against the same broker data (see ReconciledThrough). It returns the seq
// to start the next such pass after. Appends are ordered (the ledger's
// write lock, PostgreSQL's head row lock), so an item changed while the
// pass runs either is read by it or is stored after every seq it saw.
func (o *Operator) ReconcileBrokerSince(ctx context.Context, seq int64, dryRun bool) (*ReconcileReport, int64, error) {
	rep := newReconcileReport(dryRun)
	through, err := o.reconcileBroker(ctx, rep, seq)
	return rep, through, err
}

func (o *Operator) reconcileBroker(ctx context.Context, rep *ReconcileReport, since int64) (int64, error) {
	dryRun := rep.DryRun
	if o.PublishQueues != nil && !dryRun {
		if err := o.PublishQueues(ctx); err != nil {
			return since, err
		}
	}
	if err := o.reconcileArchived(ctx, rep, true); err != nil {
		return since, err
	}
	whole := since == 0
	through, _, err := o.reconcileItems(ctx, rep, since, 0, 0)
	if err != nil {
		return since, err
	}
	since = through
	if whole {
		if err := o.reportUnexpected(ctx, rep); err != nil {
			return since, err
		}
	}
	if err := o.reconcileParked(ctx, rep); err != nil {
		return since, err
	}
	o.logReport(ctx, rep)
	return since, nil
}

// reconcileParked removes parked copies that are not owed: of a failure
// resolved since, of an event the ledger does not hold (it went back in
// time: the item's re-run parks what it decides), and a second parked
// copy of one item. Before that, with direct access to Redis, ids that
// appear more than once in a parked queue's list, or whose record is gone
// (evicted), are cut from it.
func (o *Operator) reconcileParked(ctx context.Context, rep *ReconcileReport) error {
	for _, q := range []string{QueueQuarantine, QueueAuditHold} {
		if err := o.cleanPendingList(ctx, q, rep); err != nil {
			return err
		}
		parked, err := ListParked(o.Broker, q)
		if err != nil && len(parked) == 0 {
			return err
		}
		seen := map[string]bool{}
		for _, p := range parked {
			if p.Held.EventID == "" {
				continue
			}
			if seen[p.TaskID] {
				continue // listed twice: without o.Redis it is left as it is
			}
			seen[p.TaskID] = true
			stale, again, err := o.staleParked(ctx, p)
			if err != nil {
				return err
			}
			if again != nil {
				// The item's failure recorded anew (its re-run after the
				// ledger went back): the copy is parked again from it, so
				// that it names an event the ledger holds.
				rep.Reparked = append(rep.Reparked, again.ObjectID)
				if rep.DryRun {
					continue
				}
				env, derr := DecodeEnvelope(again.Envelope)
				if derr != nil {
					continue
				}
				if err := o.take(ctx, step{do: stepDelete, queue: q, id: p.TaskID}); err != nil {
					return fmt.Errorf("replace parked task %s: %w", p.TaskID, err)
				}
				if err := o.take(ctx, step{do: stepPark, env: env, ev: again}); err != nil {
					return err
				}
				continue
			}
			if !stale {
				continue
			}
			rep.StaleParked = append(rep.StaleParked, p.TaskID)
			if !rep.DryRun {
				if err := o.take(ctx, step{do: stepDelete, queue: q, id: p.TaskID}); err != nil {
					return fmt.Errorf("remove stale parked task %s: %w", p.TaskID, err)
				}
			}
		}
	}
	return nil
}

// staleParked says whether a parked copy is owed no more: its failure is
// resolved, or the ledger holds neither its event nor an open failure of
// its item parked under its task id (the event was lost with a ledger
// that went back in time, and the item is to run again). again is that
// open failure when the ledger holds it under another event id than the
// copy names (the item ran again and recorded the same failure; its park
// found the old copy in place): the copy is to be parked again from it.
func (o *Operator) staleParked(ctx context.Context, p Parked) (stale bool, again *premis.Event, err error) {
	_, _, err = GetFailure(ctx, o.Ledger, p.Held.EventID)
	switch {
	case errors.Is(err, ErrNotOpen):
		return true, nil, nil
	case !errors.Is(err, premis.ErrNotFound):
		return false, nil, err
	}
	latest, err := o.Ledger.Events(ctx, premis.Filter{CorrelationID: p.Held.Envelope.CorrelationID, Latest: true, Limit: 1})
	if err != nil {
		return false, nil, err
	}
	if len(latest) == 1 && latest[0].Destination.Parked() {
		if q, id := brokerTask(Failure{latest[0]}); q == p.Queue && id == p.TaskID {
			return false, &latest[0], nil
		}
	}
	return true, nil, nil
}

// cleanPendingList cuts from a queue's pending list the ids that appear
// in it more than once and those whose task record is gone: what an
// evicting Redis leaves (a record evicted, then the task parked again,
// pushes its id a second time). It needs o.Redis; without it nothing is
// done.
func (o *Operator) cleanPendingList(ctx context.Context, q string, rep *ReconcileReport) error {
	if o.Redis == nil {
		return nil
	}
	key := "asynq:{" + q + "}:pending"
	const page = 1000
	count := map[string]int{}
	for start := int64(0); ; start += page {
		ids, err := o.Redis.LRange(ctx, key, start, start+page-1).Result()
		if err != nil {
			return fmt.Errorf("read %s: %w", key, err)
		}
		for _, id := range ids {
			count[id]++
		}
		if len(ids) < page {
			break
		}
	}
	for id, n := range count {
		exists, err := o.Redis.Exists(ctx, "asynq:{"+q+"}:t:"+id).Result()
		if err != nil {
			return fmt.Errorf("read %s: %w", key, err)
		}
		switch {
		case exists == 0:
			rep.BrokerLost = append(rep.BrokerLost, id+" (record evicted from "+q+")")
			if !rep.DryRun {
				if err := o.Redis.LRem(ctx, key, 0, id).Err(); err != nil {
					return err
				}
			}
		case n > 1:
			rep.Deduplicated = append(rep.Deduplicated, id)
			if !rep.DryRun {
				if _, _, _, err := o.checkTask(ctx, q, id, false); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// reportUnexpected lists the tasks waiting in the ingest queue that the
// ledger does not expect (see ReconcileReport.Unexpected).
func (o *Operator) reportUnexpected(ctx context.Context, rep *ReconcileReport) error {
	const pageSize = 500
	lists := []func(string, ...asynq.ListOption) ([]*asynq.TaskInfo, error){o.Broker.ListPendingTasks, o.Broker.ListScheduledTasks, o.Broker.ListRetryTasks}
	for _, list := range lists {
		for page := 1; ; page++ {
			if err := ctx.Err(); err != nil {
				return context.Cause(ctx)
			}
			tasks, err := list(QueueIngest, asynq.PageSize(pageSize), asynq.Page(page))
			if errors.Is(err, asynq.ErrQueueNotFound) {
				break
			}
			if err != nil {
				return fmt.Errorf("list ingest: %w", err)
			}
			for _, ti := range tasks {
				env, err := DecodeEnvelope(ti.Payload)
				if err != nil {
					continue // a poisoned payload: the worker dead-letters it
				}
				known, err := o.Ledger.Events(ctx, premis.Filter{CorrelationID: env.CorrelationID, Limit: 1})
				if err != nil {
					return err
				}
				if len(known) == 0 {
					rep.Unexpected = append(rep.Unexpected, ti.ID+" ("+env.ObjectID+": unknown to the ledger)")
					continue
				}
				final, err := o.Ledger.Events(ctx, premis.Filter{CorrelationID: env.CorrelationID, Destinations: []premis.Destination{premis.Accepted, premis.Discarded}, Limit: 1})
				if err != nil {
					return err
				}
				if len(final) > 0 {
					rep.Unexpected = append(rep.Unexpected, ti.ID+" ("+env.ObjectID+": "+string(final[0].Destination)+" already)")
				}
			}
			if len(tasks) < pageSize {
				break
			}
		}
	}
	return nil
}

// expectedDestinations are the latest outcomes that expect something of
// the broker: a task that will run (submitted, retry, replayed), a parked
// copy (quarantined, audit-hold), an archived task (dead-letter).
var expectedDestinations = []premis.Destination{premis.Submitted, premis.Retry, premis.Replayed, premis.Quarantined,
	premis.AuditHold, premis.DeadLetter}

// reconcileItems checks the items whose latest event expects the broker
// and was stored after seq (see reconcileItem), a page at a time, at most
// max of them (0: all), leaving those whose latest event is younger than
// settle (a submitter or operator between its event and its enqueue) to a
// later pass. It returns the seq it read through and whether it reached
// the end. Only items the broker must hold are read (accepted and
// discarded ones need nothing of it): memory follows the page, not the
// ledger.
func (o *Operator) reconcileItems(ctx context.Context, rep *ReconcileReport, seq int64, max int, settle time.Duration) (through int64, end bool, err error) {
	page := premis.Filter{Latest: true, Limit: reconcilePage, Destinations: expectedDestinations, AfterSeq: seq}
	if max > 0 && max < page.Limit {
		page.Limit = max
	}
	read := 0
	for {
		latest, err := o.Ledger.Events(ctx, page)
		if err != nil {
			return seq, false, err
		}
		for _, e := range latest {
			if err := ctx.Err(); err != nil {
				return seq, false, context.Cause(ctx)
			}
			if settle <= 0 || time.Since(e.DateTime) >= settle {
				if err := o.reconcileItem(ctx, e, rep); err != nil {
					return seq, false, err
				}
			}
			seq = e.Seq
		}
		read += len(latest)
		if len(latest) < page.Limit {
			return seq, true, nil
		}
		if max > 0 && read >= max {
			return seq, false, nil
		}
		page.AfterSeq = latest[len(latest)-1].Seq
	}
}

// reconcilePage is how many items reconcile-broker reads at once.
const reconcilePage = 1000

func newReconcileReport(dryRun bool) *ReconcileReport {
	return &ReconcileReport{DryRun: dryRun, ArchivedRecorded: []string{}, Reenqueued: []string{}, Reparked: []string{}, StaleParked: []string{}, Rearchived: []string{}, Missing: []string{},
		LedgerBehind: []string{}, BrokerLost: []string{}, Deduplicated: []string{}, Unexpected: []string{}}
}

// ReconcileArchived records the tasks in the ingest queue's archived set
// that have no outcome in the ledger. It reads only the archived set.
func (o *Operator) ReconcileArchived(ctx context.Context, dryRun bool) (*ReconcileReport, error) {
	rep := newReconcileReport(dryRun)
	err := o.reconcileArchived(ctx, rep, false)
	o.logReport(ctx, rep)
	return rep, err
}

func (o *Operator) logReport(ctx context.Context, rep *ReconcileReport) {
	if o.Repaired != nil && !rep.DryRun {
		o.Repaired(rep)
	}
	if n := len(rep.ArchivedRecorded) + len(rep.Reenqueued) + len(rep.Reparked) + len(rep.StaleParked) + len(rep.Rearchived) + len(rep.Deduplicated); n > 0 {
		o.Logger.LogAttrs(ctx, slog.LevelWarn, "broker reconciled against the ledger", slog.Bool("dry_run", rep.DryRun),
			slog.Int("archived_recorded", len(rep.ArchivedRecorded)), slog.Int("reenqueued", len(rep.Reenqueued)),
			slog.Int("reparked", len(rep.Reparked)), slog.Int("stale_parked", len(rep.StaleParked)), slog.Int("rearchived", len(rep.Rearchived)),
			slog.Int("missing", len(rep.Missing)), slog.Int("broker_lost", len(rep.BrokerLost)), slog.Int("deduplicated", len(rep.Deduplicated)))
	}
	if n := len(rep.Unexpected); n > 0 {
		o.Logger.LogAttrs(ctx, slog.LevelWarn, "the broker holds tasks the ledger does not expect (unknown items, or items already accepted or discarded)",
			slog.Int("tasks", n), slog.Bool("dry_run", rep.DryRun))
	}
	if n := len(rep.LedgerBehind); n > 0 {
		o.Logger.LogAttrs(ctx, slog.LevelError, "the ledger is behind the broker: it lacks outcomes the broker already acted on "+
			"(a ledger restored from a backup, or a replica promoted before it received the last writes); those items are run again "+
			"to re-derive their outcomes (see lazaret ledger recover)", slog.Int("items", n), slog.Bool("dry_run", rep.DryRun))
	}
}

// reconcileItem checks that the broker holds what the ledger says of one
// item (its latest outcome e).
func (o *Operator) reconcileItem(ctx context.Context, e premis.Event, rep *ReconcileReport) error {
	switch e.Destination {
	case premis.Submitted, premis.Retry, premis.Replayed:
		env, err := DecodeEnvelope(e.Envelope)
		if err != nil {
			return nil // nothing to enqueue from; it is listed by batch status
		}
		held, state, err := o.expect(ctx, e, QueueIngest, env.TaskID(), holdLive, rep)
		if err != nil || held {
			return err
		}
		rep.Reenqueued = append(rep.Reenqueued, env.ObjectID)
		o.noteLost(rep, env.ObjectID, state)
		if rep.DryRun {
			return nil
		}
		if err := o.take(ctx, step{do: stepEnqueue, env: env}); err != nil {
			return fmt.Errorf("enqueue %s again: %w", env.ObjectID, err)
		}
	case premis.Quarantined, premis.AuditHold:
		f := Failure{e}
		q, id := brokerTask(f)
		held, state, err := o.expect(ctx, e, q, id, holdLive, rep)
		if err != nil || held {
			return err
		}
		env, err := DecodeEnvelope(e.Envelope)
		if err != nil {
			rep.Missing = append(rep.Missing, e.ID)
			return nil
		}
		rep.Reparked = append(rep.Reparked, e.ObjectID)
		o.noteLost(rep, e.ObjectID, state)
		if rep.DryRun {
			return nil
		}
		if err := o.take(ctx, step{do: stepPark, env: env, ev: &e}); err != nil {
			return err
		}
	case premis.DeadLetter:
		held, _, err := o.expect(ctx, e, QueueIngest, e.TaskID, holdArchived, rep)
		if err != nil || held {
			return err
		}
		env, derr := DecodeEnvelope(e.Envelope)
		if derr != nil || env.TaskID() != e.TaskID {
			rep.Missing = append(rep.Missing, e.ID) // listable and replayable from the ledger all the same
			return nil
		}
		rep.Rearchived = append(rep.Rearchived, e.ObjectID)
		if rep.DryRun {
			return nil
		}
		return o.rearchive(ctx, env, e)
	}
	return nil
}

// expect says whether the broker holds task id in queue the way the
// ledger's latest event e of an item expects (want: live, or archived for
// a dead letter). When it does not, and the item's latest event is still
// e (a worker may have recorded an outcome since the page was read: then
// nothing is owed), what is left of the task is removed (not in a dry
// run), so that it can be put back under the same id; state is the state
// its record was in ("" for none).
func (o *Operator) expect(ctx context.Context, e premis.Event, queue, id string, want taskHold, rep *ReconcileReport) (held bool, state string, err error) {
	hold, state, dupes, err := o.checkTask(ctx, queue, id, false)
	if err != nil {
		return false, "", err
	}
	if dupes > 0 {
		rep.Deduplicated = append(rep.Deduplicated, id)
	}
	if hold == want || (want == holdArchived && hold == holdLive) {
		// A dead letter whose task runs again: an operator's replay or
		// redrive under way; nothing is owed.
		return true, state, nil
	}
	if hold == holdArchived && want == holdLive && queue == QueueIngest {
		// Archived without the outcome the ledger expects of a live task:
		// the archived pass records it (reconcileArchived runs first).
		return true, state, nil
	}
	// An outcome (or a submission, a replay) stored since: a worker or an
	// operator moved the item on. A chunk of an interchange's messages
	// (an ing event with members and no destination) is not one: the
	// interchange's delivery is resumed from it.
	later, err := o.Ledger.Events(ctx, premis.Filter{CorrelationID: e.CorrelationID, AfterSeq: e.Seq, Limit: 1,
		Destinations: append([]premis.Destination{premis.Submitted}, historyDestinations...)})
	if err != nil {
		return false, "", err
	}
	if len(later) > 0 {
		return true, state, nil // moved on since the page was read
	}
	if rep.DryRun {
		return false, state, nil
	}
	if _, state, _, err = o.checkTask(ctx, queue, id, true); err != nil {
		return false, "", err
	}
	return false, state, nil
}

// noteLost records why an expected task was put back: a record left
// completed means the broker acted on an outcome the ledger does not hold
// (the ledger went back in time: a backup restored, a lagging replica
// promoted); a record left in another state, or none, means the broker
// lost it (eviction, a failover, a flush).
func (o *Operator) noteLost(rep *ReconcileReport, object, state string) {
	if state == "completed" {
		rep.LedgerBehind = append(rep.LedgerBehind, object)
		return
	}
	rep.BrokerLost = append(rep.BrokerLost, object+" ("+lostWhat(state)+")")
}

// rearchive puts a dead letter the broker lost back into the archived
// set, under its own task id, with class and code in its last error. It
// is enqueued far in the future and archived at once, so no worker runs it
// in between; one that did would find the decision and archive it again.
func (o *Operator) rearchive(ctx context.Context, env *Envelope, e premis.Event) error {
	payload, err := env.Encode()
	if err != nil {
		return err
	}
	_, err = o.Enqueuer.EnqueueContext(ctx, asynq.NewTask(TypeValidate, payload), asynq.Queue(QueueIngest), asynq.TaskID(e.TaskID),
		asynq.MaxRetry(o.Policy.BrokerRetries()), asynq.ProcessIn(30*24*time.Hour), asynq.Retention(24*time.Hour))
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return fmt.Errorf("archive %s again: %w", env.ObjectID, err)
	}
	if err := o.Broker.ArchiveTask(QueueIngest, e.TaskID); err != nil && !errors.Is(err, asynq.ErrTaskNotFound) {
		return fmt.Errorf("archive %s again: %w", env.ObjectID, err)
	}
	return nil
}

// allQueuesKey is where asynq (v0.26) lists the queues its inspector
// knows. A client adds a queue there at its first enqueue and never again,
// so after a Redis restart a long-running worker's parks and retries go to
// queues the inspector (asynqmon, reconcile) reports as not found.
const allQueuesKey = "asynq:queues"

// QueuePublisher returns a function that lists Lazaret's three queues where
// asynq's inspector looks for them again.
func QueuePublisher(opt asynq.RedisConnOpt) func(context.Context) error {
	return func(ctx context.Context) error {
		rc, ok := opt.MakeRedisClient().(redis.UniversalClient)
		if !ok {
			return errors.New("publish queues: not a go-redis client")
		}
		defer rc.Close()
		if err := rc.SAdd(ctx, allQueuesKey, QueueIngest, QueueQuarantine, QueueAuditHold).Err(); err != nil {
			return fmt.Errorf("publish queues: %w", err)
		}
		return nil
	}
}

// brokerLost reports whether a task lookup says the broker holds no such
// task (as opposed to the broker not answering, which is returned).
func brokerLost(err error) bool {
	return errors.Is(err, asynq.ErrTaskNotFound) || errors.Is(err, asynq.ErrQueueNotFound)
}

// reconcileArchived records archived tasks in the ingest queue that have
// no outcome in the ledger. With stale, it also removes the archived task
// of a dead letter already resolved (discarded, or replayed as a new
// task), as the whole pass removes parked copies of resolved failures: a
// discard whose broker step failed leaves one behind.
func (o *Operator) reconcileArchived(ctx context.Context, rep *ReconcileReport, stale bool) error {
	const pageSize = 500
	for page := 1; ; page++ {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		tasks, err := o.Broker.ListArchivedTasks(QueueIngest, asynq.PageSize(pageSize), asynq.Page(page))
		if errors.Is(err, asynq.ErrQueueNotFound) {
			return nil // nothing was ever enqueued: nothing archived
		}
		if err != nil {
			return fmt.Errorf("list archived: %w", err)
		}
		removed := 0
		for _, ti := range tasks {
			if stale {
				gone, err := o.removeResolved(ctx, ti, rep)
				if err != nil {
					return err
				}
				if gone {
					removed++
					continue
				}
			}
			ok, err := o.reconcileOne(ctx, ti, rep.DryRun)
			if err != nil {
				return err
			}
			if ok {
				rep.ArchivedRecorded = append(rep.ArchivedRecorded, ti.ID)
			}
		}
		if len(tasks) < pageSize {
			return nil
		}
		if removed > 0 && !rep.DryRun {
			page-- // the rest moved up into this page: read it again
		}
	}
}

// removeResolved removes ti, an archived task, when the dead letter it
// records is no longer open (see GetFailure), and says whether it did (or,
// in a dry run, would).
func (o *Operator) removeResolved(ctx context.Context, ti *asynq.TaskInfo, rep *ReconcileReport) (bool, error) {
	_, _, eventID, summarized := parseSummary(ti.LastErr)
	if !summarized || eventID == "" {
		return false, nil
	}
	if _, _, err := GetFailure(ctx, o.Ledger, eventID); !errors.Is(err, ErrNotOpen) {
		if errors.Is(err, premis.ErrNotFound) {
			err = nil // not recorded: reconcileOne records it
		}
		return false, err
	}
	rep.StaleParked = append(rep.StaleParked, ti.ID)
	if rep.DryRun {
		return true, nil
	}
	if err := o.take(ctx, step{do: stepDelete, queue: QueueIngest, id: ti.ID}); err != nil {
		return false, fmt.Errorf("remove the archived task %s of a resolved dead letter: %w", ti.ID, err)
	}
	return true, nil
}

func (o *Operator) reconcileOne(ctx context.Context, ti *asynq.TaskInfo, dryRun bool) (bool, error) {
	class, code, eventID, summarized := parseSummary(ti.LastErr)
	if summarized && eventID != "" {
		if _, err := o.Ledger.Event(ctx, eventID); err == nil {
			return false, nil
		} else if !errors.Is(err, premis.ErrNotFound) {
			return false, err
		}
	}
	env, derr := DecodeEnvelope(ti.Payload)
	corr, sha, object := ti.ID, "", ti.ID
	if derr == nil {
		corr, sha, object = env.CorrelationID, env.SHA256, env.ObjectID
	} else {
		sum := sha256.Sum256(ti.Payload)
		sha = hex.EncodeToString(sum[:])
	}
	have, err := o.Ledger.Events(ctx, premis.Filter{CorrelationID: corr, TaskID: ti.ID})
	if err != nil {
		return false, err
	}
	for _, e := range have {
		switch e.Destination {
		case premis.DeadLetter, premis.Discarded, premis.Replayed:
			return false, nil // recorded (and perhaps already resolved)
		}
	}
	if derr != nil {
		if got, err := o.Ledger.Events(ctx, premis.Filter{ObjectID: object, Destination: premis.DeadLetter}); err != nil || len(got) > 0 {
			return false, err
		}
	}
	if dryRun {
		return true, nil
	}
	attempt := ti.Retried + 1
	if env != nil {
		attempt = env.Attempt
	}
	if !summarized || class == "" {
		class, code = premis.Unknown, "broker.archived-unrecorded"
		if strings.Contains(ti.LastErr, "lease expired") {
			class, code = premis.Transient, "worker.lease-expired"
		}
	}
	subject := env
	if subject == nil {
		subject = &Envelope{ObjectID: object, CorrelationID: corr, SHA256: sha, Kind: KindTask}
	}
	ev := newEvent(subject, premis.Validation, attempt, ti.ID, o.Software)
	ev.Key = premis.EventKey(corr+"/broker-archived/"+ti.ID, sha, premis.Validation, attempt)
	ev.Outcome, ev.Class, ev.Code, ev.Destination, ev.Retries = premis.Failure, class, code, premis.DeadLetter, ti.Retried
	ev.Message = "archived by the broker without a recorded outcome: " + ti.LastErr
	ev.Note = fmt.Sprintf("found in the archived set after %d retries (last error: %s); recorded by reconciliation", ti.Retried, ti.LastErr)
	ev.Detail = "broker reconciliation: archived task with no ledger event"
	ev.Envelope = capped(ti.Payload)
	ins, err := o.Ledger.Append(ctx, ev)
	if err != nil {
		return false, err
	}
	if ins[0] {
		o.Logger.LogAttrs(ctx, slog.LevelError, "archived task reconciled", slog.String(AttrTaskID, ti.ID),
			slog.String(AttrCorrelationID, corr), slog.String(AttrObjectID, object), slog.String(AttrClass, string(class)),
			slog.String(AttrDestination, string(premis.DeadLetter)), slog.String(AttrCode, code))
	}
	return ins[0], nil
}

// reconciledKey is where the broker keeps the mark of the last
// reconciliation against its data: "<data id> <seq>" (see MarkReconciled).
const reconciledKey = "lazaret:reconciled"

// BrokerDataID names the Redis data rc talks to: the server's run_id, which
// changes at every restart, and its master_replid, which changes at every
// promotion and full resync. Behind Sentinel the primary can move away and
// back (A -> B -> A): A keeps its run_id, but it dropped its data to resync
// from B and took a new replication id when promoted again. "?" when it
// cannot be read, which names no data (a pass is tried again next time).
func BrokerDataID(ctx context.Context, rc redis.UniversalClient) string {
	if rc == nil {
		return "?"
	}
	info, err := rc.Info(ctx, "server", "replication").Result()
	if err != nil {
		return "?"
	}
	var run, repl string
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "run_id:"); ok {
			run = v
		} else if v, ok := strings.CutPrefix(line, "master_replid:"); ok {
			repl = v
		}
	}
	if run == "" {
		return "?"
	}
	return run + "/" + repl
}

// ReconciledThrough is the seq a reconciliation against the broker data
// called id read through, as MarkReconciled left it in that broker: a
// worker starting against the same data reconciles only what changed
// after it (ReconcileBrokerSince). 0 — a whole pass — when the mark names
// other data or is gone: Redis restarted (a Redis that keeps nothing on
// disk lost its queues), the primary changed, or the keys were flushed.
func ReconciledThrough(ctx context.Context, rc redis.UniversalClient, id string) int64 {
	if rc == nil || id == "?" {
		return 0
	}
	v, err := rc.Get(ctx, reconciledKey).Result()
	if err != nil {
		return 0
	}
	markID, seqText, ok := strings.Cut(v, " ")
	seq, err := strconv.ParseInt(seqText, 10, 64)
	if !ok || markID != id || err != nil || seq < 0 {
		return 0
	}
	return seq
}

// MarkReconciled records in the broker that a reconciliation against its
// data called id read the ledger through seq. Any worker's mark is true of
// what it read; a lower one only makes the next start read more.
func MarkReconciled(ctx context.Context, rc redis.UniversalClient, id string, seq int64) error {
	if rc == nil || id == "?" {
		return nil
	}
	return rc.Set(ctx, reconciledKey, id+" "+strconv.FormatInt(seq, 10), 0).Err()
}
