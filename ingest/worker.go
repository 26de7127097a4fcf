package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
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
	// Observe, when set, is told of every routing decision (metrics).
	Observe func(Decision)
	// Validators adds or overrides validators by item kind; "tiff" and
	// "edifact" are built in.
	Validators map[string]Validator
	// Registries are the code lists the logistics rules check against
	// (built-in when nil); EDI are those rules.
	Registries *validate.RegistryStore
	EDI        validate.EDIRules
	// Outbox, when set, receives a CONTRL report for every interchange
	// rejected for its syntax or structure.
	Outbox string
}

// Validator checks one item. It returns what it found and a typed error.
type Validator func(ctx context.Context, env *Envelope) (*validate.Report, error)

// Decision is one routing decision, as logged and observed.
type Decision struct {
	Kind        string
	Class       premis.Class
	Destination premis.Destination
	Code        string
	Duration    time.Duration
	Events      []*premis.Event
}

// retryAfter carries the delay the handler chose (and recorded) to the
// broker's RetryDelayFunc.
type retryAfter struct {
	delay time.Duration
	err   error
}

func (e *retryAfter) Error() string { return e.err.Error() }
func (e *retryAfter) Unwrap() error { return e.err }

// HandleValidate is the asynq handler for TypeValidate.
func (w *Worker) HandleValidate(ctx context.Context, t *asynq.Task) (err error) {
	start := time.Now()
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	taskID, _ := asynq.GetTaskID(ctx)
	env, derr := DecodeEnvelope(t.Payload())
	if derr != nil {
		return w.poison(ctx, t, taskID, retried, derr)
	}
	attempt := env.Attempt + retried
	rep, ires, verr := w.check(ctx, env)
	if verr != nil && ctx.Err() != nil {
		// Shutdown or task timeout, not a verdict on the data: the broker
		// keeps the task; nothing is recorded for an attempt that did not end.
		return context.Cause(ctx)
	}
	if verr == nil && ires != nil {
		return w.routeMessages(ctx, env, rep, ires, attempt, retried, maxRetry, taskID, start)
	}
	if verr == nil {
		return w.accept(ctx, env, rep, attempt, retried, taskID, start)
	}
	class := Classify(verr)
	dest := w.Policy.Route(class, attempt, retried, maxRetry)
	ev := w.failureEvent(env, rep, verr, class, dest, attempt, retried, taskID)
	var delay, ceiling time.Duration
	switch dest {
	case premis.Retry:
		delay, ceiling = w.Policy.Backoff(retried)
		ev.Note = fmt.Sprintf("retry %d of %d in %s (backoff ceiling %s): %s", retried+1, maxRetry, delay.Round(time.Millisecond), ceiling, verr)
	case premis.DeadLetter:
		if class == premis.Transient {
			ev.Note = fmt.Sprintf("retries exhausted after %d retries: %s", retried, verr)
		}
	case premis.AuditHold:
		ev.Note = fmt.Sprintf("poison cap reached at attempt %d (cap %d): %s", attempt, w.Policy.PoisonCap, verr)
	}
	if ires != nil && class == premis.Structural {
		if err := w.writeContrl(env, ires, verr, attempt); err != nil {
			return &RoutingError{Destination: dest, Err: fmt.Errorf("CONTRL outbox: %w", err)}
		}
	}
	if _, err := w.Ledger.Append(ctx, ev); err != nil {
		return &RoutingError{Destination: dest, Err: fmt.Errorf("ledger: %w", err)}
	}
	if dest == premis.Quarantined || dest == premis.AuditHold {
		if err := w.park(ctx, env, ev, dest, verr); err != nil {
			return err
		}
	}
	w.log(ctx, env, ev, verr)
	w.observe(env.Kind, class, dest, ev.Code, start, ev)
	return toBroker(dest, delay, &summarized{ev: ev, err: verr})
}

// toBroker is the one adapter from a routing decision to what asynq expects.
func toBroker(dest premis.Destination, delay time.Duration, err error) error {
	switch dest {
	case premis.Accepted, premis.Quarantined, premis.AuditHold:
		return nil // handed off durably: acknowledge the original
	case premis.Retry:
		return &retryAfter{delay: delay, err: err}
	}
	return fmt.Errorf("%w: %w", asynq.SkipRetry, err) // archived: the DLQ
}

// summarized puts class, code and offset in front of the message asynq
// keeps as the task's last error, so asynqmon and asynq's own tools show
// them too.
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

// check runs validation for one item, turning a panic into a *PanicError.
// For an interchange it also returns the per-message verdicts.
func (w *Worker) check(ctx context.Context, env *Envelope) (rep *validate.Report, ires *validate.InterchangeResult, err error) {
	defer func() {
		if v := recover(); v != nil {
			rep, ires, err = nil, nil, &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	if v, ok := w.Validators[env.Kind]; ok {
		rep, err = v(ctx, env)
		return rep, nil, err
	}
	it := env.Item
	it.SHA256, it.Size = env.SHA256, env.Size
	switch env.Kind {
	case "tiff":
		rep, err = validate.CheckMaster(ctx, env.Path, &it, w.Master)
		return rep, nil, err
	case "edifact":
		return validate.CheckInterchange(ctx, env.Path, &it, w.registries(), w.EDI, env.Message)
	}
	return nil, nil, &validate.PolicyError{Page: 0, Code: "kind.unsupported", Reason: fmt.Sprintf("kind %q has no validator in this build", env.Kind)}
}

func (w *Worker) registries() *validate.Registries {
	if w.Registries == nil {
		return validate.Builtin()
	}
	return w.Registries.Current()
}

func (w *Worker) base(env *Envelope, t premis.EventType, attempt, retried int, taskID string) *premis.Event {
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
		Retries:       retried,
		TaskID:        taskID,
		ReplayOf:      env.ReplayOf,
		Agent:         w.Software.ID(),
		Envelope:      mustJSON(env),
	}
}

func (w *Worker) accept(ctx context.Context, env *Envelope, rep *validate.Report, attempt, retried int, taskID string, start time.Time) error {
	fix := w.base(env, premis.FixityCheck, attempt, retried, taskID)
	fix.Outcome, fix.SHA256 = premis.Success, rep.SHA256
	fix.Detail = "SHA-256 of the file compared with the manifest"
	fix.Note = "sha256 " + rep.SHA256
	form := w.base(env, premis.FormatIdentification, attempt, retried, taskID)
	form.Outcome, form.PUID, form.SHA256 = premis.Success, rep.PUID, rep.SHA256
	form.Detail = "magic bytes, extension and declared format (PRONOM)"
	form.Note = fmt.Sprintf("%s (%s)", rep.Format, rep.PUID)
	val := w.base(env, premis.Validation, attempt, retried, taskID)
	val.Outcome, val.PUID, val.SHA256 = premis.Success, rep.PUID, rep.SHA256
	val.Detail = fmt.Sprintf("TIFF structure of every IFD and pixel data of every page (%s)", w.Software.ID())
	val.Note = fmt.Sprintf("%d page(s), %d checked to the pixel data", rep.Pages, rep.Decoded)
	if len(rep.Warnings) > 0 {
		val.Outcome = premis.Warning
		msgs := make([]string, 0, len(rep.Warnings))
		for _, wr := range rep.Warnings {
			msgs = append(msgs, wr.Code+": "+wr.Message)
		}
		val.Note += "; warnings: " + strings.Join(msgs, "; ")
	}
	ing := w.base(env, premis.Ingestion, attempt, retried, taskID)
	ing.Outcome, ing.PUID, ing.SHA256, ing.Destination = premis.Success, rep.PUID, rep.SHA256, premis.Accepted
	ing.Detail = "accepted into the repository by lazaret"
	if env.ReplayOf != "" {
		ing.Note = "accepted on replay of event " + env.ReplayOf
	}
	events := []*premis.Event{fix, form, val, ing}
	if _, err := w.Ledger.Append(ctx, events...); err != nil {
		return &RoutingError{Destination: premis.Accepted, Err: fmt.Errorf("ledger: %w", err)}
	}
	w.Logger.LogAttrs(ctx, slog.LevelInfo, "item accepted",
		slog.String(AttrCorrelationID, env.CorrelationID), slog.String(AttrObjectID, env.ObjectID),
		slog.String(AttrBatchID, env.BatchID), slog.String(AttrDestination, string(premis.Accepted)),
		slog.Int(AttrAttempt, attempt), slog.Int("warnings", len(rep.Warnings)))
	w.observe(env.Kind, "", premis.Accepted, "", start, events...)
	return nil
}

func (w *Worker) failureEvent(env *Envelope, rep *validate.Report, err error, class premis.Class, dest premis.Destination, attempt, retried int, taskID string) *premis.Event {
	t := premis.Validation
	var se *validate.StageError
	if errors.As(err, &se) {
		switch se.Stage {
		case validate.StageFixity:
			t = premis.FixityCheck
		case validate.StageFormat:
			t = premis.FormatIdentification
		}
	}
	if dest == premis.Quarantined || dest == premis.AuditHold {
		t = premis.Quarantine
	}
	ev := w.base(env, t, attempt, retried, taskID)
	ev.Outcome = premis.Failure
	ev.Class, ev.Destination, ev.Code, ev.Message = class, dest, Code(err), err.Error()
	loc := Locate(err)
	ev.Offset, ev.Page, ev.Segment, ev.Element, ev.Component, ev.Tag = loc.Offset, loc.Page, loc.Segment, loc.Element, loc.Component, loc.Tag
	if rep != nil {
		if rep.SHA256 != "" {
			ev.SHA256 = rep.SHA256 // the digest of the bytes actually read
		}
		ev.PUID = rep.PUID
		if rep.Size > 0 {
			ev.Size = rep.Size
		}
	}
	stage := "validation"
	if se != nil {
		stage = string(se.Stage)
	}
	ev.Detail = fmt.Sprintf("%s stage failed; class %s routed to %s (%s)", stage, class, dest, w.Software.ID())
	var rule *validate.RuleError
	if errors.As(err, &rule) && rule.Registry != "" {
		ev.Detail += "; registry " + rule.Registry
	}
	return ev
}

// park hands a failed item to quarantine or audit-hold: a task with no
// consumer, named after the event so that a redelivery does not park it twice.
func (w *Worker) park(ctx context.Context, env *Envelope, ev *premis.Event, dest premis.Destination, cause error) error {
	h := Held{Envelope: *env, EventID: ev.ID, Class: string(ev.Class), Code: ev.Code, Message: ev.Message,
		Offset: ev.Offset, Page: ev.Page, Destination: string(dest), Attempt: ev.Attempt}
	var rule *validate.RuleError
	if errors.As(cause, &rule) {
		h.Registry = rule.Registry
	}
	b, err := json.Marshal(h)
	if err != nil {
		return &RoutingError{Destination: dest, Err: err}
	}
	q := QueueQuarantine
	if dest == premis.AuditHold {
		q = QueueAuditHold
	}
	_, err = w.Broker.EnqueueContext(ctx, asynq.NewTask(TypeHeld, b), asynq.Queue(q), asynq.TaskID(HeldTaskID(ev.Key)), asynq.MaxRetry(0))
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return &RoutingError{Destination: dest, Err: err}
	}
	return nil
}

// HeldTaskID names the parked task of a failure event.
func HeldTaskID(eventKey string) string { return "held-" + eventKey[:32] }

// poison records an undecodable payload and dead-letters it.
func (w *Worker) poison(ctx context.Context, t *asynq.Task, taskID string, retried int, perr error) error {
	start := time.Now()
	sum := sha256.Sum256(t.Payload())
	sha := hex.EncodeToString(sum[:])
	id := taskID
	if id == "" {
		id = "task-" + sha[:16]
	}
	ev := &premis.Event{
		Key: premis.EventKey(id, sha, premis.Validation, retried+1), Type: premis.Validation, Outcome: premis.Failure,
		Class: Classify(perr), Code: Code(perr), Message: perr.Error(), Destination: premis.DeadLetter,
		ObjectID: id, CorrelationID: id, Kind: "task", SHA256: sha, Size: int64(len(t.Payload())), Attempt: retried + 1, Retries: retried,
		TaskID: taskID, Agent: w.Software.ID(), Detail: "task payload did not decode into a lazaret envelope",
		Envelope: capped(t.Payload()),
	}
	if _, err := w.Ledger.Append(ctx, ev); err != nil {
		return &RoutingError{Destination: premis.DeadLetter, Err: fmt.Errorf("ledger: %w", err)}
	}
	w.Logger.LogAttrs(ctx, slog.LevelError, "undecodable task dead-lettered", slog.String(AttrTaskID, taskID),
		slog.String(AttrClass, string(ev.Class)), slog.String(AttrDestination, string(premis.DeadLetter)),
		slog.String(AttrCode, ev.Code), slog.String("error", perr.Error()))
	w.observe("task", ev.Class, premis.DeadLetter, ev.Code, start, ev)
	return toBroker(premis.DeadLetter, 0, perr)
}

func (w *Worker) log(ctx context.Context, env *Envelope, ev *premis.Event, err error) {
	level := slog.LevelWarn
	switch ev.Destination {
	case premis.DeadLetter, premis.AuditHold:
		level = slog.LevelError
	case premis.Retry:
		level = slog.LevelInfo
	}
	attrs := []slog.Attr{
		slog.String(AttrCorrelationID, env.CorrelationID), slog.String(AttrObjectID, env.ObjectID),
		slog.String(AttrBatchID, env.BatchID), slog.String(AttrClass, string(ev.Class)),
		slog.String(AttrDestination, string(ev.Destination)), slog.String(AttrCode, ev.Code),
		slog.Int(AttrAttempt, ev.Attempt), slog.String("event_id", ev.ID), slog.String("error", err.Error()),
	}
	if ev.Offset != nil {
		attrs = append(attrs, slog.Int64(AttrOffset, *ev.Offset))
	} else {
		attrs = append(attrs, slog.Any(AttrOffset, nil))
	}
	if ev.Page != nil {
		attrs = append(attrs, slog.Int("page", *ev.Page))
	}
	w.Logger.LogAttrs(ctx, level, "item routed", attrs...)
}

func (w *Worker) observe(kind string, c premis.Class, d premis.Destination, code string, start time.Time, evs ...*premis.Event) {
	if w.Observe != nil {
		w.Observe(Decision{Kind: kind, Class: c, Destination: d, Code: code, Duration: time.Since(start), Events: evs})
	}
}

// RetryDelay is the asynq RetryDelayFunc: the delay the handler chose and
// recorded, or (for a lease that expired under a crashed worker, or a
// routing failure) a fresh full-jitter backoff.
func (p Policy) RetryDelay(n int, err error, _ *asynq.Task) time.Duration {
	var ra *retryAfter
	if errors.As(err, &ra) {
		return ra.delay
	}
	d, _ := p.Backoff(n)
	return d
}

// IsFailure is the asynq IsFailure func: a routing failure (Redis or the
// ledger unavailable) does not consume the item's retry budget.
func IsFailure(err error) bool {
	var re *RoutingError
	return !errors.As(err, &re)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

func capped(b []byte) []byte {
	if len(b) > MaxEnvelopeBytes {
		return b[:MaxEnvelopeBytes]
	}
	return b
}
