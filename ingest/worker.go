package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"

	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/validate"
)

// Log attribute keys, the same on every routing decision.
const (
	AttrCorrelationID = "correlation_id"
	AttrObjectID      = "object_id"
	AttrBatchID       = "batch_id"
	AttrClass         = "class"
	AttrDestination   = "destination"
	AttrOffset        = "offset"
	AttrCode          = "code"
	AttrAttempt       = "attempt"
	AttrTaskID        = "task_id"
)

// Enqueuer hands a task to the broker. *asynq.Client satisfies it; tests wrap
// it to fail on demand.
type Enqueuer interface {
	EnqueueContext(ctx context.Context, task *asynq.Task, opts ...asynq.Option) (*asynq.TaskInfo, error)
}

// Worker validates items and routes their failures.
type Worker struct {
	Ledger   premis.Ledger
	Broker   Enqueuer
	Policy   Policy
	Master   validate.MasterPolicy
	Software premis.Software
	Logger   *slog.Logger
	// Observe, when set, is told of every recorded decision (metrics,
	// alerts, tests waiting for an outcome).
	Observe func(Observation)
	// Validators overrides the registered kinds' checks (validate.Kind) by
	// item kind: a test's, or a deployment's own.
	Validators map[string]Validator
	// Registries are the code lists the logistics rules check against
	// (built-in when nil); EDI are those rules.
	Registries *validate.RegistryStore
	EDI        validate.EDIRules
	// Outbox, when set, receives the replies to interchanges (see
	// writeReplies): a CONTRL for every interchange rejected for its
	// syntax or structure and for every accepted one whose UNB asks for an
	// acknowledgement (0031 = 1) or with a message parked for its syntax;
	// an APERAK for an accepted one with messages parked by business rules
	// or registries. Replies says which a sender gets.
	Outbox  string
	Replies ReplyPolicy
	// Hardlinks are the ingest roots whose files may have more than one
	// link: the same as the submitters' (SubmitOptions.Hardlinks).
	Hardlinks validate.HardlinkRoots

	draining atomic.Bool
	// installation is the ledger-kept installation id, once read (see
	// installationID).
	installation struct {
		sync.Mutex
		id string
	}
	// pausedUntil (unix nanoseconds) and pauseCause: the ledger refused a
	// write; intake is paused until then (see pauseIntake).
	pausedUntil atomic.Int64
	pauseCause  atomic.Pointer[pauseCause]
}

// Drain asks running tasks to stop at their next checkpoint (between two
// chunks of an interchange's messages): call it before the server's
// Shutdown, so that a long interchange is not cut off unrecorded when the
// drain timeout ends.
func (w *Worker) Drain() { w.draining.Store(true) }

// Validator checks one item. It returns what it found and a typed error.
type Validator func(ctx context.Context, env *Envelope) (*validate.Report, error)

// Observation is one recorded decision, as observed.
type Observation struct {
	Kind        string
	Class       premis.Class
	Destination premis.Destination
	Code        string
	Duration    time.Duration
	Events      []*premis.Event
	// Redone is true when the decision was already in the ledger and only
	// the broker action was repeated (a lost ack, a lease expiry).
	Redone bool
}

// delivery is one run of a task, read once: the envelope, what asynq says,
// and what the ledger already knows of this task.
type delivery struct {
	env     *Envelope
	taskID  string
	retried int // asynq's count: Lazaret's retries, routing failures and lease expiries
	start   time.Time
	// From the ledger.
	retries int           // retries Lazaret decided (and recorded) for this task
	attempt int           // Lazaret's attempt: env.Attempt + retries
	decided *premis.Event // the outcome already recorded for this task, if any
	known   bool          // the ledger answered, so retries and decided are real
	// first: taken for the task's first delivery without reading the
	// ledger (takesFirst); its append checks it (premis.FirstAppender).
	first bool
}

// routingSpent is how many deliveries of this task ended without a
// recorded decision.
func (d *delivery) routingSpent() int { return max(0, d.retried-d.retries) }

// historyDestinations are the destinations readHistory looks at: a retry
// Lazaret decided, and the decisions. The ledger leaves out, in SQL, the
// rest of the item's events (the submission, with its envelope, above all),
// which it would otherwise read for every task.
var historyDestinations = []premis.Destination{premis.Retry, premis.Accepted, premis.DeadLetter, premis.Quarantined,
	premis.AuditHold, premis.Discarded, premis.Replayed}

// readHistory fills in what the ledger knows of this task: the retries
// Lazaret decided, and an outcome already recorded by an earlier delivery.
func (w *Worker) readHistory(ctx context.Context, d *delivery) error {
	if first, err := w.firstDelivery(ctx, d); err != nil || first {
		return err
	}
	evs, err := w.Ledger.Events(ctx, premis.Filter{CorrelationID: d.env.CorrelationID, TaskID: d.taskID, Destinations: historyDestinations})
	if err != nil {
		return err
	}
	retried := map[int]bool{}
	for i := range evs {
		e := &evs[i]
		if e.Destination == premis.Retry {
			retried[e.Attempt] = true
			continue
		}
		d.decided = e // every other destination of historyDestinations is a decision
	}
	d.retries, d.known = len(retried), true
	d.attempt = d.env.Attempt + d.retries
	return nil
}

// firstDelivery fills in a task's history without reading it when the
// ledger's read model says the item's latest outcome is this task's
// submission: every event of a task follows its submission, so nothing is
// recorded for it yet (no retry, no decision). That is every first
// delivery of a submitted item, the common case; a point lookup in place
// of an index range over the item's events.
func (w *Worker) firstDelivery(ctx context.Context, d *delivery) (bool, error) {
	lt, found, err := w.Ledger.LatestOf(ctx, d.env.CorrelationID)
	if err != nil || !found || lt.Destination != premis.Submitted || lt.TaskID != d.taskID {
		return false, err
	}
	d.retries, d.known, d.attempt = 0, true, d.env.Attempt
	return true, nil
}

// takesFirst says whether a delivery takes itself for the task's first
// without asking the ledger: asynq counts no earlier run of the task, the
// item is decided in one append (not an interchange, whose messages go in
// chunks), and the ledger checks the assumption in that append
// (premis.Ledger.AppendsFirst), so that a wrong one writes nothing and the
// delivery is decided again from the history (see finish). The lookup it
// saves (firstDelivery) is a round trip to a ledger across a network.
func (w *Worker) takesFirst(d *delivery) bool {
	if !w.Ledger.AppendsFirst() || d.retried > 0 {
		return false
	}
	k, _ := validate.KindNamed(d.env.Kind)
	return !k.Messages
}

// budgetSpent says whether the deliveries of this task that ended without
// a decision have used up the routing budget. For an interchange, a chunk
// that one of them recorded is progress, not a failure: chunks are written
// only once the whole interchange, its envelope too, was found sound, so
// its acceptance was decided, and the redelivery resumes it. Each recorded
// chunk buys one more delivery. Without that, a worker killed again and
// again while routing a large interchange dead-lettered it with accepted
// messages in the ledger, and a replay accepted them a second time. The
// chunks are finite, so a crash loop still ends.
func (w *Worker) budgetSpent(ctx context.Context, d *delivery) (bool, error) {
	over := d.routingSpent() - w.Policy.RoutingBudget // past the budget, less one
	if over < 0 {
		return false, nil
	}
	if k, _ := validate.KindNamed(d.env.Kind); !k.Messages {
		return true, nil
	}
	chunks, err := w.Ledger.Events(ctx, premis.Filter{CorrelationID: d.env.CorrelationID, TaskID: d.taskID,
		Types: []premis.EventType{premis.Ingestion}, HasMembers: true, Limit: over + 1})
	if err != nil {
		return false, err
	}
	return len(chunks) <= over, nil
}

// spent is the result for a task whose routing budget is used up before
// this delivery: it is not validated again (a file that kills the worker
// must not kill it forever), it is dead-lettered.
func (w *Worker) spent(d *delivery) *result {
	err := fmt.Errorf("%d deliveries ended without a recorded decision (ledger or broker unavailable, worker killed, or task timeout); routing budget %d spent",
		d.routingSpent(), w.Policy.RoutingBudget)
	r := &result{d: d, cause: err}
	r.decision = Decision{Class: premis.Transient, Code: "routing.exhausted", Destination: premis.DeadLetter, Note: err.Error()}
	return r
}

// exhaustedEvent records an item whose decision could not be routed: the
// class and code of that decision (or transient routing.exhausted when
// there was none), dead-lettered.
func (w *Worker) exhaustedEvent(d *delivery, r *result, err error, try int) *premis.Event {
	env := d.env
	if env == nil {
		env = &Envelope{CorrelationID: d.taskID, ObjectID: d.taskID, Kind: KindTask}
	}
	ev := newEvent(env, premis.Validation, d.attempt, d.taskID, w.Software)
	ev.Key = premis.EventKey(env.CorrelationID+"/routing-exhausted/"+d.taskID, env.SHA256, premis.Validation, d.attempt)
	ev.Retries, ev.Envelope = d.retried, envelopeJSON(env)
	ev.Outcome, ev.Destination = premis.Failure, premis.DeadLetter
	ev.Class, ev.Code, ev.Message = premis.Transient, "routing.exhausted", err.Error()
	what := "no decision"
	if e := d.decided; e != nil {
		// Recorded by an earlier delivery; its broker step kept failing.
		what = "decision " + string(e.Destination) + " (event " + e.ID + ")"
		if e.Class != "" {
			ev.Class, ev.Code, ev.Message, ev.Position = e.Class, e.Code, e.Message, e.Position
		}
		ev.ReplayOf = e.ID
	} else if r != nil && r.decision.Destination != "" {
		what = "decision " + string(r.decision.Destination)
		if r.decision.Class != "" {
			ev.Class, ev.Code = r.decision.Class, r.decision.Code
		}
		if r.cause != nil {
			ev.Message = r.cause.Error()
			ev.Position = positionOf(r.cause)
		}
	}
	ev.Detail = fmt.Sprintf("routing failed %d times; dead-lettered so that a person decides (%s)", try, w.Software.ID())
	ev.Note = fmt.Sprintf("%s could not be recorded or handed off after %d tries: %v", what, try, err)
	return ev
}

// toBroker is the one adapter from a destination to what asynq expects.
func toBroker(dest premis.Destination, delay time.Duration, err error) error {
	switch dest {
	case premis.Accepted, premis.Quarantined, premis.AuditHold, premis.Discarded, premis.Replayed:
		return nil // handed off durably: acknowledge the original
	case premis.Retry:
		return &retryAfter{delay: delay, err: err}
	}
	return fmt.Errorf("%w: %w", asynq.SkipRetry, err) // archived: the DLQ
}

// retryAfter carries the delay the handler chose (and recorded) to the
// broker's RetryDelayFunc.
type retryAfter struct {
	delay time.Duration
	err   error
}

func (e *retryAfter) Error() string { return e.err.Error() }
func (e *retryAfter) Unwrap() error { return e.err }

// summarized puts class, code, offset and event id in front of the message
// asynq keeps as the task's last error, so that asynqmon shows them and
// reconcile-broker can recover them from an archived task.
type summarized struct {
	ev  *premis.Event
	err error
}

func (s *summarized) Error() string {
	off := "-"
	if s.ev.Offset != nil {
		off = fmt.Sprint(*s.ev.Offset)
	}
	return fmt.Sprintf("[class=%s code=%s offset=%s event=%s] %v", s.ev.Class, s.ev.Code, off, s.ev.ID, s.err)
}
func (s *summarized) Unwrap() error { return s.err }

var summaryRE = regexp.MustCompile(`\[class=([^\]\s]*) code=([^\]\s]*) offset=([^\]\s]*) event=([^\]\s]*)\]`)

// parseSummary reads back what summarized wrote.
func parseSummary(lastErr string) (class premis.Class, code, eventID string, ok bool) {
	m := summaryRE.FindStringSubmatch(lastErr)
	if m == nil {
		return "", "", "", false
	}
	return premis.Class(m[1]), m[2], m[4], true
}

// newEvent is the one event builder: every event Lazaret writes about an
// item (a submission, a worker's verdict, an operator's action, a
// reconcile's finding) starts here, with the item's identity copied from
// its envelope, keyed by item, payload, type and attempt. Callers set
// the outcome and what happened; the operator's and the reconcile's
// events, which are not about an attempt of their own, set their key.
func newEvent(env *Envelope, t premis.EventType, attempt int, taskID string, agent premis.Software) *premis.Event {
	return &premis.Event{
		Key:           premis.EventKey(env.CorrelationID, env.SHA256, t, attempt),
		Type:          t,
		ObjectID:      env.ObjectID,
		BatchID:       env.BatchID,
		CorrelationID: env.CorrelationID,
		Kind:          env.Kind,
		SHA256:        env.SHA256,
		Size:          env.Size,
		Path:          env.Path,
		Attempt:       attempt,
		TaskID:        taskID,
		ReplayOf:      env.ReplayOf,
		Agent:         agent.ID(),
	}
}

// subjectOf is the identity of the item a recorded event is about, as an
// envelope holds it, for newEvent.
func subjectOf(e premis.Event) *Envelope {
	return &Envelope{ObjectID: e.ObjectID, BatchID: e.BatchID, CorrelationID: e.CorrelationID, Kind: e.Kind,
		SHA256: e.SHA256, Size: e.Size, Path: e.Path}
}

// append writes events in one transaction. A commit that reported an
// error may still have succeeded: the ledger is read to find out, rather
// than guessing.
func (w *Worker) append(ctx context.Context, evs ...*premis.Event) error {
	_, err := w.Ledger.Append(ctx, evs...)
	if err == nil || len(evs) == 0 || ctx.Err() != nil {
		return err
	}
	last := evs[len(evs)-1]
	if got, rerr := w.Ledger.Events(ctx, premis.Filter{CorrelationID: last.CorrelationID, Key: last.Key, Limit: 1}); rerr == nil && len(got) == 1 {
		w.Logger.LogAttrs(ctx, slog.LevelWarn, "ledger reported an error but the events are stored", slog.String("error", err.Error()),
			slog.String(AttrObjectID, last.ObjectID))
		return nil
	}
	return err
}

// appendFor is append for delivery d: for one that took itself for the
// task's first (takesFirst), on that condition, which the ledger checks
// (an error wrapping premis.ErrNotFirst when it does not hold). Such an
// append's other errors are not read back as append's are: a row found
// under its key could be an earlier delivery's, and the delivery ends as a
// routing failure, whose retry reads the history.
func (w *Worker) appendFor(ctx context.Context, d *delivery, evs []*premis.Event) error {
	if !d.first {
		return w.append(ctx, evs...)
	}
	first := []premis.FirstDelivery{{CorrelationID: d.env.CorrelationID, TaskID: d.taskID}}
	_, err := w.Ledger.AppendFirst(ctx, first, evs...)
	return err
}

// park hands a failed item to quarantine or audit-hold: a task with no
// consumer, named after its event so that a redelivery never parks it twice.
func park(ctx context.Context, b Enqueuer, h Held) error {
	dest := premis.Destination(h.Destination)
	payload, err := json.Marshal(h)
	if err != nil {
		return &RoutingError{Destination: dest, Err: err}
	}
	_, err = b.EnqueueContext(ctx, asynq.NewTask(TypeHeld, payload), asynq.Queue(QueueFor(dest)), asynq.TaskID(HeldTaskID(h.EventKey)), asynq.MaxRetry(0))
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return fmt.Errorf("park in %s: %w", QueueFor(dest), err)
	}
	return nil
}

// heldOf is the parked payload of a failure event.
func heldOf(env *Envelope, e *premis.Event) Held {
	h := Held{Envelope: *env, EventID: e.ID, EventKey: e.Key, Class: string(e.Class), Code: e.Code, Message: e.Message,
		Offset: e.Offset, Page: e.Page, Destination: string(e.Destination), Attempt: e.Attempt}
	if _, reg, ok := strings.Cut(e.Detail, "; registry "); ok {
		h.Registry = reg
	}
	return h
}

// HeldTaskID names the parked task of a failure event.
func HeldTaskID(eventKey string) string { return "held-" + eventKey[:min(32, len(eventKey))] }

func (w *Worker) observe(kind string, c premis.Class, d premis.Destination, code string, start time.Time, evs ...*premis.Event) {
	if w.Observe != nil {
		w.Observe(Observation{Kind: kind, Class: c, Destination: d, Code: code, Duration: time.Since(start), Events: evs})
	}
}

// RetryDelay is the asynq RetryDelayFunc: the delay the handler chose and
// recorded, the routing backoff for a routing failure, and for a lease
// that expired under a crashed worker a routing backoff as well.
func (p Policy) RetryDelay(n int, err error, _ *asynq.Task) time.Duration {
	var ra *retryAfter
	if errors.As(err, &ra) {
		return ra.delay
	}
	var lp *LedgerPausedError
	if errors.As(err, &lp) {
		return lp.Delay
	}
	var re *RoutingError
	if errors.As(err, &re) {
		return p.RoutingBackoff(re.Try - 1)
	}
	return p.RoutingBackoff(n)
}

// envelopeJSON is the envelope as stored with a failure, so that the
// ledger alone can replay the item.
func envelopeJSON(env *Envelope) []byte {
	b, err := json.Marshal(env)
	if err != nil {
		return nil
	}
	return capped(b)
}

func capped(b []byte) []byte {
	if len(b) > MaxEnvelopeBytes {
		return b[:MaxEnvelopeBytes]
	}
	return b
}
