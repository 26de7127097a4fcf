package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/validate"
)

// Failure is an item whose latest outcome in the ledger is a failure
// destination: dead-letter, quarantine or audit-hold. It is the event that
// put it there (its ID is the failure's id). The ledger, not Redis, is the
// source: a failure stays listable (and replayable from the envelope in its
// event) after the broker trimmed or lost the task.
type Failure struct {
	premis.Event
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
	// AfterSeq keeps failures whose event was stored after that ledger seq:
	// with Limit, one page of a listing (pass the last Seq of the page
	// before; premis.Filter.AfterSeq).
	AfterSeq int64
}

// lastOutcome is the latest event of one item's history that says where
// the item is (an event with a destination: the rule premis.Filter.Latest
// applies in SQL).
func lastOutcome(history []premis.Event) (premis.Event, bool) {
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Destination != "" {
			return history[i], true
		}
	}
	return premis.Event{}, false
}

// failureDestinations are where an open failure is.
var failureDestinations = []premis.Destination{premis.DeadLetter, premis.Quarantined, premis.AuditHold}

// Failures lists the open failures matching f, oldest first. The ledger
// answers in SQL (premis.Filter.Latest): the cost follows the failures
// listed, not the history.
func Failures(ctx context.Context, l premis.Ledger, f FailureFilter) ([]Failure, error) {
	evs, err := l.Events(ctx, f.query())
	if err != nil {
		return nil, err
	}
	out := make([]Failure, 0, len(evs))
	for _, e := range evs {
		out = append(out, Failure{e})
	}
	return out, nil
}

// query is the ledger filter of f.
func (f FailureFilter) query() premis.Filter {
	q := premis.Filter{BatchID: f.BatchID, Kind: f.Kind, Class: f.Class, Code: f.Code, Since: f.Since, Until: f.Until,
		Limit: f.Limit, AfterSeq: f.AfterSeq, Latest: true, Destinations: failureDestinations}
	if f.Destination != "" {
		q.Destinations = []premis.Destination{f.Destination}
	}
	return q
}

// CountFailures counts the open failures matching f, ignoring its Limit
// and AfterSeq: the total a paged listing reports, counted in the
// database.
func CountFailures(ctx context.Context, l premis.Ledger, f FailureFilter) (int, error) {
	q := f.query()
	q.Limit, q.AfterSeq = 0, 0
	n, err := l.CountEvents(ctx, q)
	return int(n), err
}

// ErrNotOpen: the failure was already replayed, discarded or accepted.
var ErrNotOpen = errors.New("not an open failure")

// ErrConflict: another operator action on the same failure won.
var ErrConflict = errors.New("another action on this failure was recorded first")

// GetFailure looks one failure up by its event id, or by object id (its
// open failure), and returns it with the item's whole history. The error
// wraps ErrNotOpen (with the history) when the failure is no longer open.
func GetFailure(ctx context.Context, l premis.Ledger, id string) (Failure, []premis.Event, error) {
	e, err := l.Event(ctx, id)
	if errors.Is(err, premis.ErrNotFound) {
		// An object id: its latest failure (asked for in SQL: a message's
		// chunk events, which hold no failure, are not searched).
		evs, qerr := l.Events(ctx, premis.Filter{ObjectID: id, Destinations: failureDestinations})
		if qerr != nil {
			return Failure{}, nil, qerr
		}
		for i := len(evs) - 1; i >= 0 && err != nil; i-- {
			switch evs[i].Destination {
			case premis.DeadLetter, premis.Quarantined, premis.AuditHold:
				e, err = evs[i], nil
			}
		}
		if err != nil {
			return Failure{}, nil, fmt.Errorf("%w (no event and no failing object has id %q; see dlq ls)", premis.ErrNotFound, id)
		}
	}
	if err != nil {
		return Failure{}, nil, err
	}
	history, err := l.Events(ctx, premis.Filter{CorrelationID: e.CorrelationID})
	if err != nil {
		return Failure{}, nil, err
	}
	last, _ := lastOutcome(history)
	f := Failure{e}
	if last.ID != e.ID {
		return f, history, fmt.Errorf("%w: %s; the item's latest outcome is %s (event %s)", ErrNotOpen, e.ID, last.Destination, last.ID)
	}
	switch e.Destination {
	case premis.DeadLetter, premis.Quarantined, premis.AuditHold:
	default:
		return f, history, fmt.Errorf("%w: event %s is a %s event, not a failure", ErrNotOpen, e.ID, e.Destination)
	}
	return f, history, nil
}

// Broker is what operators need of asynq; *asynq.Inspector satisfies it.
type Broker interface {
	GetTaskInfo(queue, id string) (*asynq.TaskInfo, error)
	DeleteTask(queue, id string) error
	ArchiveTask(queue, id string) error
	ListPendingTasks(queue string, opts ...asynq.ListOption) ([]*asynq.TaskInfo, error)
	ListArchivedTasks(queue string, opts ...asynq.ListOption) ([]*asynq.TaskInfo, error)
	ListCompletedTasks(queue string, opts ...asynq.ListOption) ([]*asynq.TaskInfo, error)
	ListScheduledTasks(queue string, opts ...asynq.ListOption) ([]*asynq.TaskInfo, error)
	ListRetryTasks(queue string, opts ...asynq.ListOption) ([]*asynq.TaskInfo, error)
	Queues() ([]string, error)
	GetQueueInfo(queue string) (*asynq.QueueInfo, error)
}

// Operator is what people do with items: replay, discard, redrive,
// reconcile. Every action is a recorded intent: the event first (a
// compare-and-set on the failure: of two actions on one failure exactly
// one is recorded), then the broker, then a rollback event if the broker
// step failed. With DryRun nothing is written anywhere.
type Operator struct {
	Ledger   premis.Ledger
	Enqueuer Enqueuer
	Broker   Broker
	Policy   Policy
	Software premis.Software
	Logger   *slog.Logger
	Submit   SubmitOptions
	// Check re-runs an item's validation (redrive's re-check, quarantine
	// reconciliation): the worker's Check, so the rules exist once.
	Check func(ctx context.Context, env *Envelope) Verdict
	// Refresh reloads the registries before a quarantine reconciliation
	// and says which versions are in force ("" when not applicable).
	Refresh func() (locode, hs string, err error)
	// Roots are the ingest roots corrected files must lie beneath; with
	// none, a corrected file must lie beside the original, beneath the
	// batch folder the item was read from (never anywhere else).
	Roots []string
	// Fleet, when set, lists the live workers' registry versions (see
	// FleetRegistries): a quarantine reconciliation replays nothing while
	// one of them validates with another version than it loaded.
	Fleet func(context.Context) ([]WorkerRegistries, error)
	// PublishQueues, when set, makes the queues known to asynq's inspector
	// again before a broker reconciliation (see QueuePublisher).
	PublishQueues func(context.Context) error
	// Redis, when set, is the broker's Redis, read directly by a
	// reconciliation to tell a task that will run from a record no worker
	// will take (its list entry evicted); without it asynq's inspector is
	// asked, which sees only the record (see checkTask).
	Redis redis.UniversalClient
	// Repaired, when set, is told what each reconciliation (not a dry
	// run) repaired: the metrics count it.
	Repaired func(*ReconcileReport)
}

// brokerTask is where the broker holds a failure: the queue and task id.
func brokerTask(f Failure) (queue, id string) {
	if f.Destination.Parked() {
		return QueueFor(f.Destination), HeldTaskID(f.Key)
	}
	return QueueIngest, f.TaskID
}

// BrokerState says whether the broker still holds the failure's task.
func (o *Operator) BrokerState(f Failure) string {
	q, id := brokerTask(f)
	ti, err := o.Broker.GetTaskInfo(q, id)
	if err != nil {
		return "missing from the broker (trimmed or lost): replayable from the ledger"
	}
	return fmt.Sprintf("%s in %s", ti.State, q)
}

// ActionResult is what an operator action did, or with DryRun would do.
type ActionResult struct {
	Action  string        `json:"action"` // replay, discard, hold
	DryRun  bool          `json:"dry_run"`
	Failure Failure       `json:"failure"`
	Event   *premis.Event `json:"event"`            // the event written (or that would be)
	Replay  *Envelope     `json:"replay,omitempty"` // the fresh task, for a replay
	TaskID  string        `json:"task_id,omitempty"`
	Already bool          `json:"already,omitempty"` // recorded before; only the broker step was finished
	Steps   []string      `json:"steps"`             // what happens, in order
}

// ReplayOptions refine a replay.
type ReplayOptions struct {
	Operator, Reason string
	// File, when set, replaces the item's file (a corrected master or
	// interchange): resolved to an absolute path now, its digest and size
	// taken now.
	File string
	// Set corrects manifest fields of the item (json name → value, "" to
	// clear), checked by the manifest's rules: a fixed color_profile, a
	// resolution_dpi, a sha256 the manifest got wrong. Not with File for
	// sha256 or size.
	Set map[string]string
	// Resubmitted, when set, is the item as submitted again with a
	// changed manifest entry: its entry, file and digest replace the
	// failed attempt's (the object and its correlation stay).
	Resubmitted *Envelope
	DryRun      bool
}

// resolutionKey is the key every action that resolves failure f records
// its event under: replay, discard, release, reject and a redrive's hold
// share it, so the ledger's idempotency guard is the compare-and-set.
func resolutionKey(f Failure) string {
	return premis.EventKey(f.CorrelationID+"/resolve/"+f.ID, f.SHA256, premis.Unquarantine, f.Attempt)
}

// replayType is the event type of a replay from dest: a parked item
// (quarantine, audit-hold, both recorded as qua) leaves it, unq; a dead
// letter was never set aside, so its replay starts a new ingestion, ins.
func replayType(dest premis.Destination) premis.EventType {
	if dest.Parked() {
		return premis.Unquarantine
	}
	return premis.IngestionStart
}

// operatorEvent starts an event about failure f by a person.
func (o *Operator) operatorEvent(f Failure, t premis.EventType, operator string) *premis.Event {
	ev := newEvent(subjectOf(f.Event), t, f.Attempt, f.TaskID, o.Software)
	ev.Key, ev.Outcome, ev.ReplayOf, ev.Operator = resolutionKey(f), premis.Success, f.ID, operator
	return ev
}

// record appends an operator's event as the resolution of its failure. If
// another resolution was recorded first, it returns that event: the same
// action means only the broker step is left to finish (already); another
// action is ErrConflict.
func (o *Operator) record(ctx context.Context, ev *premis.Event) (already bool, err error) {
	want := ev.Destination
	ins, err := o.Ledger.Append(ctx, ev)
	if err != nil {
		return false, fmt.Errorf("ledger: %w", err)
	}
	if ins[0] {
		return false, nil
	}
	if ev.Destination != want {
		return false, fmt.Errorf("%w: %s (event %s by %s at %s)", ErrConflict, ev.Destination, ev.ID, ev.Operator, ev.DateTime.Format(time.RFC3339))
	}
	return true, nil
}

// Replay hands an open failure back to ingest as a fresh task (new task
// id, attempt + 1, replay_of = the failure's event): the unq event with the
// new envelope first, then the enqueue, then the broker's old copy is
// removed. If the enqueue fails, a rollback event puts the item back where
// it was, open and listable; if even that cannot be written,
// reconcile-broker finds the replay recorded but never enqueued and
// enqueues it. It works from the ledger's envelope, so a failure whose
// task Redis trimmed is replayable too.
func (o *Operator) Replay(ctx context.Context, id string, opt ReplayOptions) (*ActionResult, error) {
	f, history, err := GetFailure(ctx, o.Ledger, id)
	if err != nil && !errors.Is(err, ErrNotOpen) {
		return nil, err
	}
	if errors.Is(err, ErrNotOpen) {
		// A replay of this very failure recorded as the item's latest
		// outcome may not have reached the broker: finish it, nothing else.
		if last, ok := lastOutcome(history); ok && last.Key == resolutionKey(f) && last.Destination == premis.Replayed {
			if res, ok := o.unfinishedReplay(ctx, f, last, opt); ok {
				return res, nil
			}
		}
		return nil, err
	}
	if opt.Operator == "" {
		return nil, errors.New("a replay needs an operator")
	}
	env, err := DecodeEnvelope(f.Envelope)
	if err != nil {
		return nil, fmt.Errorf("failure %s has no replayable envelope: %w", f.ID, err)
	}
	if opt.File != "" {
		src, sum, size, err := CorrectedFile(o.Roots, env.Source().Root, o.Submit.Hardlinks, opt.File)
		if err != nil {
			return nil, fmt.Errorf("corrected file: %w", err)
		}
		env.Path, env.Root, env.Rel, env.SHA256, env.Size, env.Dev, env.Ino = src.Path, src.Root, src.Rel, sum, size, src.ID.Dev, src.ID.Ino
		env.Item.SHA256, env.Item.Size = sum, size
	}
	if r := opt.Resubmitted; r != nil {
		env.Item, env.Path, env.Root, env.Rel, env.SHA256, env.Size, env.Submitter = r.Item, r.Path, r.Root, r.Rel, r.SHA256, r.Size, r.Submitter
		env.Dev, env.Ino = r.Dev, r.Ino
	}
	if opt.File != "" {
		for _, k := range []string{"sha256", "size"} {
			if _, ok := opt.Set[k]; ok {
				return nil, fmt.Errorf("--set %s with --file: the corrected file's digest and size are taken from the file", k)
			}
		}
	}
	corrected, err := correctItem(env, opt.Set, o.Submit.Hardlinks)
	if err != nil {
		return nil, err
	}
	env.Attempt = max(f.Attempt, env.Attempt) + 1
	env.ReplayOf = f.ID
	env.SubmittedAt = time.Now().UTC()
	reason := opt.Reason
	if reason == "" {
		reason = "replayed by " + opt.Operator
	}
	if opt.File != "" {
		reason += fmt.Sprintf(" (with corrected file %s, sha256 %s)", env.Path, env.SHA256)
	}
	if corrected != "" {
		reason += " (" + corrected + ")"
	}
	unq := o.operatorEvent(f, replayType(f.Destination), opt.Operator)
	unq.Destination, unq.Note, unq.Envelope, unq.Attempt = premis.Replayed, reason, envelopeJSON(env), env.Attempt
	unq.Detail = fmt.Sprintf("replayed from %s as attempt %d, task %s (%s)", f.Destination, env.Attempt, env.TaskID(), o.Software.ID())
	res := &ActionResult{Action: "replay", DryRun: opt.DryRun, Failure: f, Event: unq, Replay: env, TaskID: env.TaskID(),
		Steps: lines(replaySteps(f, unq, env))}
	if opt.DryRun {
		return res, nil
	}
	already, err := o.record(ctx, unq)
	if err != nil {
		return nil, err
	}
	res.Already = already
	if already {
		if stored, derr := DecodeEnvelope(unq.Envelope); derr == nil {
			res.Replay, res.TaskID = stored, stored.TaskID()
		}
	}
	return res, o.finishReplay(ctx, f, res)
}

// unfinishedReplay finds a replay of f that was recorded as its
// resolution, and finishes its broker steps.
func (o *Operator) unfinishedReplay(ctx context.Context, f Failure, unq premis.Event, opt ReplayOptions) (*ActionResult, bool) {
	env, err := DecodeEnvelope(unq.Envelope)
	if err != nil {
		return nil, false
	}
	res := &ActionResult{Action: "replay", DryRun: opt.DryRun, Failure: f, Event: &unq, Replay: env, TaskID: env.TaskID(), Already: true,
		Steps: []string{fmt.Sprintf("broker: make sure task %s is enqueued (the replay was recorded by %s)", env.TaskID(), unq.Operator)}}
	if opt.DryRun {
		return res, true
	}
	if err := o.finishReplay(ctx, f, res); err != nil {
		return nil, false
	}
	return res, true
}

// replaySteps are a replay's steps: its event on failure f, the fresh
// task env, and the broker's old copy removed.
func replaySteps(f Failure, ev *premis.Event, env *Envelope) []step {
	q, old := brokerTask(f)
	return []step{{do: stepRecord, ev: ev, on: f.ID}, {do: stepEnqueue, env: env}, {do: stepDelete, queue: q, id: old}}
}

// finishReplay does a recorded replay's broker steps; on an enqueue
// failure it rolls the item back to where it was. The old copy is removed
// only once the fresh task is in, and a copy left behind is harmless (a
// worker finds the replay recorded): it is logged, not returned.
func (o *Operator) finishReplay(ctx context.Context, f Failure, res *ActionResult) error {
	s, err := o.brokerSteps(ctx, replaySteps(f, res.Event, res.Replay))
	if err != nil && s.do == stepDelete {
		o.Logger.Warn("replayed, but the old broker copy could not be removed", slog.String(AttrTaskID, s.id), slog.String("error", err.Error()))
	} else if err != nil {
		if res.Already {
			return fmt.Errorf("enqueue replay %s: %w (the replay stays recorded; reconcile-broker enqueues it)", res.TaskID, err)
		}
		back := f.Event
		back.ID, back.DateTime, back.Operator = "", time.Time{}, res.Event.Operator
		back.Key = premis.EventKey(f.CorrelationID+"/rollback/"+res.Event.ID, f.SHA256, f.Type, f.Attempt)
		back.ReplayOf = res.Event.ID
		back.Note = fmt.Sprintf("replay %s could not be enqueued (%v); the item is back in %s", res.Event.ID, err, f.Destination)
		back.Detail = "operator action rolled back (" + o.Software.ID() + ")"
		if _, lerr := o.Ledger.Append(ctx, &back); lerr != nil {
			return fmt.Errorf("enqueue replay: %w; the rollback could not be recorded either (%v): reconcile-broker enqueues the replay", err, lerr)
		}
		return fmt.Errorf("enqueue replay: %w; rolled back: the item is open again as failure %s", err, back.ID)
	}
	o.Logger.LogAttrs(ctx, slog.LevelInfo, "item replayed", slog.String(AttrCorrelationID, f.CorrelationID),
		slog.String(AttrObjectID, f.ObjectID), slog.String("from", string(f.Destination)), slog.Int(AttrAttempt, res.Replay.Attempt),
		slog.String("operator", res.Event.Operator), slog.String("replay_of", f.ID), slog.Bool("already", res.Already))
	return nil
}

// SubmitOptions are the options a submission (or a replay's enqueue)
// through this operator uses: its policy and software, and changed entries
// of open failures replayed.
func (o *Operator) SubmitOptions() SubmitOptions {
	opt := o.Submit
	opt.Policy, opt.Software, opt.Replayer = o.Policy, o.Software, o
	return opt
}

// CorrectedFile resolves a corrected file to where the worker will read
// it — beneath one of roots, or with none configured beneath beside (the
// folder the original item was read from) — and reads its digest and size
// once, through validate.Open (no links, no FIFOs, never past the size
// seen at open). A path outside them is refused (io.outside-root) before
// anything is read or recorded: a replay must not turn any file the
// operator's account can read (/etc/passwd) into an item of the archive.
//
// The Source it returns carries the file's identity (Source.ID), which
// the replay's envelope records as submit does, and allows hard links
// where hardlinks does.
func CorrectedFile(roots []string, beside string, hardlinks validate.HardlinkRoots, path string) (src validate.Source, sha string, size int64, err error) {
	if len(roots) == 0 && beside != "" {
		src, err = validate.Within([]string{beside}, path)
		if oe := (*validate.OpenError)(nil); errors.As(err, &oe) {
			oe.Reason = fmt.Sprintf("not beside the original (beneath %s), and no ingest root is configured (ingest_roots): nothing was read", beside)
		}
	} else {
		src, err = validate.Within(roots, path)
	}
	if err != nil {
		return src, "", 0, err
	}
	src.Hardlinks = hardlinks.Allow(src.Root)
	f, size, err := validate.Open(src)
	if err != nil {
		return src, "", 0, err
	}
	defer f.Close()
	src.ID = validate.IDOf(f)
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, size+1))
	if err != nil {
		return src, "", 0, err
	}
	if n != size {
		return src, "", 0, fmt.Errorf("%s changed while it was read (%d bytes, then %d): %w", src, size, n, validate.ErrFileChanged)
	}
	return src, hex.EncodeToString(h.Sum(nil)), n, nil
}

// Discard removes an open failure for good: a del event naming the
// operator and the reason, then the broker's copy is deleted.
func (o *Operator) Discard(ctx context.Context, id, operator, reason string, dryRun bool) (*ActionResult, error) {
	if reason == "" {
		return nil, errors.New("a discard needs a reason")
	}
	if operator == "" {
		return nil, errors.New("a discard needs an operator")
	}
	f, _, err := GetFailure(ctx, o.Ledger, id)
	if err != nil {
		return nil, err
	}
	del := o.operatorEvent(f, premis.Deletion, operator)
	del.Destination, del.Note, del.Envelope = premis.Discarded, reason, f.Envelope
	del.Detail = fmt.Sprintf("discarded from %s by %s (%s)", f.Destination, operator, o.Software.ID())
	q, tid := brokerTask(f)
	steps := []step{{do: stepRecord, ev: del, on: f.ID}, {do: stepDelete, queue: q, id: tid}}
	res := &ActionResult{Action: "discard", DryRun: dryRun, Failure: f, Event: del, Steps: lines(steps)}
	if dryRun {
		return res, nil
	}
	if res.Already, err = o.record(ctx, del); err != nil {
		return nil, err
	}
	if s, err := o.brokerSteps(ctx, steps); err != nil {
		return res, fmt.Errorf("discarded in the ledger, but the broker task %s could not be deleted: %w (reconcile-broker removes it)", s.id, err)
	}
	o.Logger.LogAttrs(ctx, slog.LevelInfo, "item discarded", slog.String(AttrCorrelationID, f.CorrelationID),
		slog.String(AttrObjectID, f.ObjectID), slog.String("operator", operator), slog.String("reason", reason))
	return res, nil
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
	Failure Failure   `json:"failure"`
	Action  string    `json:"action"` // "redriven", "held" (attempt ceiling), "unchanged" (same failure), "error"
	Detail  string    `json:"detail"`
	At      time.Time `json:"at"`
}

// Redrive replays dead letters, throttled to opt.Rate per second. Items
// whose next attempt would reach the poison cap go to audit-hold with an
// event instead. Unless Force is set, each item is re-checked first and
// left alone when it still fails with the same code: a redrive should
// follow a fix, not repeat an outage.
func (o *Operator) Redrive(ctx context.Context, opt RedriveOptions) ([]RedriveDecision, error) {
	if opt.Rate <= 0 {
		opt.Rate = 10
	}
	opt.Filter.Destination = premis.DeadLetter
	fs, err := Failures(ctx, o.Ledger, opt.Filter)
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
		env, derr := DecodeEnvelope(f.Envelope)
		switch {
		case derr != nil:
			d.Action, d.Detail = "error", "no replayable envelope: "+derr.Error()
		case f.Attempt+1 >= o.Policy.PoisonCap:
			d.Action, d.Detail = "held", fmt.Sprintf("attempt %d would reach the poison cap %d", f.Attempt+1, o.Policy.PoisonCap)
			if _, err := o.hold(ctx, f, env, opt.Operator, d.Detail, opt.DryRun); err != nil {
				d.Action, d.Detail = "error", err.Error()
			}
		default:
			if !opt.Force && o.Check != nil {
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
			if _, err := o.Replay(ctx, f.ID, ReplayOptions{Operator: opt.Operator, Reason: "dead-letter redrive", DryRun: opt.DryRun}); err != nil {
				d.Action, d.Detail = "error", err.Error()
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
func (o *Operator) stillFails(ctx context.Context, env *Envelope, f Failure) (bool, string) {
	v := o.Check(ctx, env)
	if v.Err == nil {
		return false, "passes now"
	}
	if v.Code == f.Code {
		return true, "still fails with " + v.Code + ": " + v.Err.Error()
	}
	return false, "fails differently now: " + v.Code
}

// hold moves a dead letter at the attempt ceiling to audit-hold: the hold
// event is the failure's resolution, and the new open failure.
func (o *Operator) hold(ctx context.Context, f Failure, env *Envelope, operator, why string, dryRun bool) (*ActionResult, error) {
	ev := o.operatorEvent(f, premis.Quarantine, operator)
	ev.Outcome, ev.Class, ev.Code, ev.Destination, ev.Message, ev.Position = premis.Failure, f.Class, f.Code, premis.AuditHold, f.Message, f.Position
	ev.Envelope = f.Envelope
	ev.Detail = "redrive refused at the attempt ceiling; held for a person (" + o.Software.ID() + ")"
	ev.Note = why
	steps := []step{{do: stepRecord, ev: ev, on: f.ID}, {do: stepPark, env: env, ev: ev}, {do: stepDelete, queue: QueueIngest, id: f.TaskID}}
	res := &ActionResult{Action: "hold", DryRun: dryRun, Failure: f, Event: ev, Steps: lines(steps)}
	if dryRun {
		return res, nil
	}
	var err error
	if res.Already, err = o.record(ctx, ev); err != nil {
		return nil, err
	}
	switch s, err := o.brokerSteps(ctx, steps); {
	case err != nil && s.do == stepPark:
		return res, fmt.Errorf("held in the ledger, but parking failed: %w (reconcile-broker parks it)", err)
	case err != nil:
		return res, fmt.Errorf("held, but the archived task %s could not be deleted: %w", s.id, err)
	}
	return res, nil
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

// BatchStatus is every item's latest outcome in a batch, from the ledger:
// submitted items that no worker has settled show as submitted; a message
// accepted with its chunk (premis.Member) shows as accepted by the chunk's
// ing event, unless it has events of its own.
func BatchStatus(ctx context.Context, l premis.Ledger, batchID string) ([]ItemStatus, error) {
	latest, err := l.Events(ctx, premis.Filter{BatchID: batchID, Latest: true})
	if err != nil {
		return nil, err
	}
	chunks, err := acceptedChunks(ctx, l, batchID)
	if err != nil {
		return nil, err
	}
	out := make([]ItemStatus, 0, len(latest))
	listed := map[string]bool{}
	for _, e := range latest {
		out = append(out, ItemStatus{ObjectID: e.ObjectID, Kind: e.Kind, Destination: e.Destination, Class: e.Class, Code: e.Code,
			EventID: e.ID, Attempt: e.Attempt, At: e.DateTime})
		listed[e.ObjectID] = true
	}
	for _, e := range chunks {
		for _, m := range e.Members {
			if !listed[m.ObjectID] {
				listed[m.ObjectID] = true
				out = append(out, ItemStatus{ObjectID: m.ObjectID, Kind: e.Kind, Destination: premis.Accepted, EventID: e.ID, Attempt: e.Attempt, At: e.DateTime})
			}
		}
	}
	return out, nil
}

// QueueStats is the size of each of Lazaret's queues by task state.
type QueueStats struct {
	Queue          string  `json:"queue"`
	Pending        int     `json:"pending"`
	Active         int     `json:"active"`
	Scheduled      int     `json:"scheduled"`
	Retry          int     `json:"retry"`
	Archived       int     `json:"archived"`
	Complete       int     `json:"completed"`
	LatencySeconds float64 `json:"latency_seconds"` // age of the oldest pending task
	ProcessedTotal int     `json:"processed_total"` // as asynq counts them, since the queue was created
	FailedTotal    int     `json:"failed_total"`
	MemoryBytes    int64   `json:"memory_bytes"`
	Paused         bool    `json:"paused"`
}

// Stats reads the depth of the ingest, quarantine and audit-hold queues. A
// queue that was never used reads as empty.
func (o *Operator) Stats() ([]QueueStats, error) {
	var out []QueueStats
	known, err := o.Broker.Queues()
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
		info, err := o.Broker.GetQueueInfo(q)
		if err != nil {
			return out, err
		}
		out = append(out, QueueStats{Queue: q, Pending: info.Pending, Active: info.Active, Scheduled: info.Scheduled,
			Retry: info.Retry, Archived: info.Archived, Complete: info.Completed, LatencySeconds: info.Latency.Seconds(),
			ProcessedTotal: info.ProcessedTotal, FailedTotal: info.FailedTotal, MemoryBytes: info.MemoryUsage, Paused: info.Paused})
	}
	return out, nil
}

// Ping reports whether the broker answers.
func (o *Operator) Ping() error {
	_, err := o.Broker.Queues()
	return err
}

// SubmitManifest checks, records and enqueues the manifest at src (read
// where the server runs: payloads travel by reference). src.Hardlinks is
// set here from the operator's submit options.
func (o *Operator) SubmitManifest(ctx context.Context, src validate.Source, dryRun bool) (*SubmitResult, error) {
	src.Hardlinks = o.Submit.Hardlinks.Allow(src.Root)
	m, dir, err := validate.ReadManifest(src)
	if err != nil {
		return nil, err
	}
	opt := o.SubmitOptions()
	opt.DryRun = dryRun
	return Submit(ctx, o.Ledger, o.Enqueuer, m, dir, opt)
}
