package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"unicode/utf8"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/tiff"
	"github.com/lazaret/lazaret/validate"
)

// result is what one execution decided: the item's decision, or for a sound
// interchange one decision per message; the events and parked tasks follow
// from it (see plan). execute or deliver makes it and nothing changes it
// after: commit writes it and says what it did in a tally, report logs and
// observes both, broker says what asynq is told.
type result struct {
	d        *delivery
	rep      *validate.Report
	ires     *validate.InterchangeResult
	cause    error    // the validation error, nil on a pass
	decision Decision // the item's decision (Accepted for a routed interchange)
	// perMessage: a sound interchange whose messages are decided one by one.
	perMessage  bool
	replies     bool            // replies (CONTRL, APERAK) may go to the outbox
	interrupted bool            // shutdown or timeout: no verdict
	events      []*premis.Event // built already (a poisoned payload): plan yields them as they are
}

// tally is what a commit of a result did.
type tally struct {
	sent   replies         // the replies written, for the failure events to name
	logged []*premis.Event // the events worth a log line (failures, the item's outcome)
	// An interchange's messages: accepted, parked, and read in all.
	accepted, parked, messages int
	chunks                     int   // chunks of events recorded (or found recorded)
	reread                     error // the interchange's second read failed (see planMessages)
}

// rereadFirst reports whether the commit of r stopped because the second
// read of its interchange failed before anything could have been recorded:
// on a first delivery, no chunk written, not a shutdown.
func (t *tally) rereadFirst(ctx context.Context, r *result) bool {
	return r.perMessage && t.reread != nil && t.chunks == 0 && r.d.retried == 0 && ctx.Err() == nil
}

// broker is what asynq is told about the original task.
func (r *result) broker(t tally) error {
	if r.decision.Destination == premis.Accepted || len(t.logged) == 0 {
		return toBroker(r.decision.Destination, r.decision.Delay, r.cause)
	}
	return toBroker(r.decision.Destination, r.decision.Delay, &summarized{ev: t.logged[len(t.logged)-1], err: r.cause})
}

// Verdict is what a check of one item (or message) found and where a
// first attempt would route it: what inspect, redrive and reconcile see.
type Verdict struct {
	Decision
	Err      error
	Report   *validate.Report
	Messages []MessageVerdict // for one sound message of an interchange (Check with env.Message)

	w *Worker
	r *result // for EachMessage
}

// MessageVerdict is the verdict on one message of an interchange.
type MessageVerdict struct {
	Message validate.MessageResult
	Decision
}

// Check validates env as a worker would, without a queue or a ledger, and
// decides it at env's attempt: the same execute the worker runs. For one
// message of an interchange (env.Message, a replay) Messages holds its
// verdict; a whole interchange's messages are not collected (there may be
// millions): CheckStreaming hands them over one at a time.
func (w *Worker) Check(ctx context.Context, env *Envelope) Verdict {
	v := w.CheckStreaming(ctx, env)
	if env.Message == "" {
		return v
	}
	var ms []MessageVerdict
	_ = v.EachMessage(ctx, func(m MessageVerdict) error {
		ms = append(ms, m)
		return nil
	})
	if v.Err == nil {
		v.Messages = ms
	}
	return v
}

// CheckStreaming is Check without the messages: for a sound interchange,
// EachMessage hands their verdicts over.
func (w *Worker) CheckStreaming(ctx context.Context, env *Envelope) Verdict {
	d := &delivery{env: env, attempt: env.Attempt}
	r := w.execute(ctx, d)
	return Verdict{Decision: r.decision, Err: r.cause, Report: r.rep, w: w, r: r}
}

// PerMessage reports whether v is a sound interchange, whose messages are
// decided one by one.
func (v *Verdict) PerMessage() bool { return v.r != nil && v.r.perMessage }

// EachMessage calls each with the verdict on every message of a sound
// interchange, in order (of nothing else). A failure found on the way (the
// file changed since its envelope was checked) becomes v's Err and
// Decision, after the messages already handed over; an error from each
// stops it and is returned.
func (v *Verdict) EachMessage(ctx context.Context, each func(MessageVerdict) error) error {
	if !v.PerMessage() {
		return nil
	}
	d := v.r.d
	// A message that passed is decided as every other that passed: once.
	accepted := v.w.Policy.Decide(nil, d.attempt, d.retries)
	var eerr error
	err := v.r.ires.EachMessage(ctx, func(m validate.MessageResult) error {
		mv := MessageVerdict{Message: m, Decision: accepted}
		if m.Err != nil {
			mv.Decision = v.w.Policy.Decide(m.Err, d.attempt, d.retries)
		}
		eerr = each(mv)
		return eerr
	})
	if eerr != nil {
		return eerr
	}
	if err != nil {
		v.Err, v.Decision = err, v.w.Policy.Decide(err, d.attempt, d.retries)
	}
	return nil
}

// execute runs guarded validation and decides. It writes nothing.
func (w *Worker) execute(ctx context.Context, d *delivery) *result {
	rep, ires, err := w.check(ctx, d.env)
	r := &result{d: d, rep: rep, ires: ires, cause: err}
	if err != nil && ctx.Err() != nil {
		r.interrupted = true
		return r
	}
	if err == nil && ires != nil {
		r.perMessage = true
		r.decision = Decision{Destination: premis.Accepted}
		r.replies = w.repliesForAccepted(d.env, ires)
		return r
	}
	r.decision = w.Policy.Decide(err, d.attempt, d.retries)
	// A broken envelope, or one in a syntax Lazaret does not read (parked,
	// not dead-lettered, but refused all the same): the sender hears of it.
	var unsupported *edifact.UnsupportedError
	r.replies = ires != nil && w.Outbox != "" && (r.decision.Class == premis.Structural || errors.As(err, &unsupported))
	return r
}

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
	// An envelope without a manifest item (inspect of a bare file) gets
	// no fixity or manifest rules.
	var item *validate.Item
	if env.Item.ObjectID != "" {
		it := env.Item
		it.SHA256, it.Size = env.SHA256, env.Size
		item = &it
	}
	if k, ok := validate.KindNamed(env.Kind); ok {
		return k.Check(ctx, w.source(env), item, validate.CheckOptions{Master: w.Master, Registries: w.registries(), EDI: w.EDI, Message: env.Message, Interchange: env.Interchange})
	}
	return nil, nil, &validate.PolicyError{Page: 0, Code: "kind.unsupported", Reason: fmt.Sprintf("kind %q has no validator in this build", env.Kind)}
}

// source is where the worker reads env's item: the file submit recorded,
// hard links allowed only beneath the roots that allow them.
func (w *Worker) source(env *Envelope) validate.Source {
	src := env.Source()
	src.Hardlinks = w.Hardlinks.Allow(src.Root)
	return src
}

func (w *Worker) registries() *validate.Registries {
	if w.Registries == nil {
		return validate.Builtin()
	}
	return w.Registries.Current()
}

// commit makes the result durable in order: the replies (idempotent
// files, see writeReplies), then the ledger, then the broker's
// parked copies. Every event and parked task is keyed by item and attempt,
// so a commit repeated after a partial failure adds nothing twice.
func (w *Worker) commit(ctx context.Context, r *result) (tally, error) {
	var t tally
	if r.replies {
		sent, err := w.writeReplies(ctx, r.d.env, r.ires, r.cause, r.d.attempt)
		if err != nil {
			return t, fmt.Errorf("reply outbox: %w", err)
		}
		t.sent = sent
	}
	err := w.plan(ctx, r, &t, func(evs []*premis.Event, parcels []parcel) error {
		skip, parcels, err := w.chunkRecorded(ctx, r, evs, parcels)
		if err != nil {
			return fmt.Errorf("ledger: %w", err)
		}
		if !skip {
			if err := w.appendFor(ctx, r.d, evs); err != nil {
				return fmt.Errorf("ledger: %w", err)
			}
		}
		t.chunks++
		for _, p := range parcels {
			// After the append: the event has its id (its stored one, if an
			// earlier delivery wrote it).
			if err := park(ctx, w.Broker, heldOf(p.env, p.ev)); err != nil {
				return err
			}
		}
		if r.perMessage {
			// An interchange's messages are logged and observed a chunk at
			// a time, by the delivery that recorded them, so that none is
			// held until the interchange ends.
			if !skip {
				w.reportMessages(ctx, r, evs)
			}
			return nil
		}
		for _, ev := range evs {
			switch {
			case ev.Outcome == premis.Failure:
				t.logged = append(t.logged, ev)
			case ev.Type == premis.Ingestion:
				t.logged = append(t.logged, ev)
			}
		}
		return nil
	})
	return t, err
}

// reportMessages logs the failures among a recorded chunk of an
// interchange's events and tells Observe of every message's outcome.
func (w *Worker) reportMessages(ctx context.Context, r *result, evs []*premis.Event) {
	for _, ev := range evs {
		if ev.Outcome == premis.Failure {
			w.logEvent(ctx, ev)
		}
		if ev.Destination.Terminal() && ev.CorrelationID != r.d.env.CorrelationID {
			w.observe(r.d.env.Kind, ev.Class, ev.Destination, ev.Code, r.d.start, ev)
		}
		if ev.Type == premis.Ingestion && len(ev.Members) > 0 {
			// Each member is a message accepted; the event itself is
			// counted once, with the first.
			w.observe(r.d.env.Kind, "", premis.Accepted, "", r.d.start, ev)
			for range len(ev.Members) - 1 {
				w.observe(r.d.env.Kind, "", premis.Accepted, "", r.d.start)
			}
		}
	}
}

// chunkRecorded reports whether a redelivered interchange's chunk of
// events is already in the ledger (written by a delivery that stopped at a
// checkpoint or died), so that resuming costs a parse, not the writes. A
// chunk is appended in one transaction, so its last event stored means all
// of it is: what was decided then stands. It fills the parcels' events in
// from the ledger, and drops a parcel this delivery planned that the
// recorded chunk does not hold (a message whose verdict changed since,
// with a registry refreshed between the deliveries): that message was
// decided already, and is not parked now.
func (w *Worker) chunkRecorded(ctx context.Context, r *result, evs []*premis.Event, parcels []parcel) (bool, []parcel, error) {
	if !r.perMessage || r.d.retried == 0 || len(evs) == 0 {
		return false, parcels, nil
	}
	got, err := w.Ledger.Events(ctx, premis.Filter{CorrelationID: evs[len(evs)-1].CorrelationID, Key: evs[len(evs)-1].Key, Limit: 1})
	if err != nil || len(got) == 0 {
		return false, parcels, err
	}
	kept := make([]parcel, 0, len(parcels))
	for _, p := range parcels {
		stored, err := w.Ledger.Events(ctx, premis.Filter{CorrelationID: p.ev.CorrelationID, Key: p.ev.Key, Limit: 1})
		if err != nil {
			return false, parcels, err
		}
		if len(stored) == 0 {
			w.Logger.LogAttrs(ctx, slog.LevelWarn, "redelivery finds a message decided otherwise in its recorded chunk; the recorded decision stands",
				slog.String(AttrObjectID, p.ev.ObjectID), slog.String(AttrCode, p.ev.Code), slog.Int(AttrAttempt, p.ev.Attempt))
			continue
		}
		*p.ev = stored[0]
		kept = append(kept, p)
	}
	return true, kept, nil
}

// ErrDraining: the worker is shutting down and the task stopped at a
// checkpoint; what it recorded stays, the rest is done on redelivery.
var ErrDraining = errors.New("worker draining: stopped at a checkpoint")

// parcel is an item to park once its failure event is stored.
type parcel struct {
	env *Envelope
	ev  *premis.Event
}

// plan yields the result's events, with the parked tasks that follow them,
// a bounded chunk at a time (a large interchange is never held whole).
func (w *Worker) plan(ctx context.Context, r *result, t *tally, yield func([]*premis.Event, []parcel) error) error {
	if r.events != nil {
		return yield(r.events, nil)
	}
	if r.perMessage {
		return w.planMessages(ctx, r, t, yield)
	}
	if r.decision.Destination == premis.Accepted {
		return yield(w.acceptEvents(r), nil)
	}
	ev := w.failureEvent(r.d, r.d.env, r.rep, r.cause, r.decision)
	ev.Note = joinNote(ev.Note, t.sent.noteFor(0))
	var parcels []parcel
	if ev.Destination.Parked() {
		parcels = append(parcels, parcel{r.d.env, ev})
	}
	return yield([]*premis.Event{ev}, parcels)
}

// acceptEvents records an accepted master as one ledger row: the
// ingestion event, which decides, holding the fixity check, format
// identification and validation that led to it as its steps
// (premis.Step). Reads and exports give back the four PREMIS events.
func (w *Worker) acceptEvents(r *result) []*premis.Event {
	d, env, rep := r.d, r.d.env, r.rep
	val := premis.Step{Type: premis.Validation, Outcome: premis.Success, PUID: rep.PUID,
		Detail: fmt.Sprintf("TIFF structure of every IFD and pixel data of every page (%s)", w.Software.ID()),
		Note:   fmt.Sprintf("%d page(s), %d checked to the pixel data", rep.Pages, rep.Decoded)}
	if len(rep.Warnings) > 0 {
		val.Outcome = premis.Warning
		val.Note += "; warnings: " + warningText(rep.Warnings)
	}
	ing := w.deliveryEvent(d, env, premis.Ingestion)
	// The digest and size of the bytes read: what the fixity step states
	// as the file's fixity (premis.Event.ReadFixity), and the record's.
	ing.Outcome, ing.PUID, ing.SHA256, ing.Size, ing.Destination = premis.Success, rep.PUID, rep.SHA256, rep.Size, premis.Accepted
	ing.Detail = "accepted into the repository by lazaret"
	if env.ReplayOf != "" {
		ing.Note = "accepted on replay of event " + env.ReplayOf
	}
	ing.Steps = []premis.Step{
		{Type: premis.FixityCheck, Outcome: premis.Success, Detail: "SHA-256 of the file compared with the manifest", Note: "sha256 " + rep.SHA256},
		{Type: premis.FormatIdentification, Outcome: premis.Success, PUID: rep.PUID,
			Detail: "magic bytes, extension and declared format (PRONOM)", Note: fmt.Sprintf("%s (%s)", rep.Format, rep.PUID)},
		val,
	}
	return []*premis.Event{ing}
}

// warningText is how an event's note gives warnings: "code: message",
// joined by "; " ("" for none). It gives as many as fit in
// maxWarningText bytes, then how many more there were: a hostile master
// can raise thousands, and a record's steps must stay within what the
// ledger reads back (ledgersql.MaxStepsText, 64 KiB of JSON, which
// escaping can make six times the text).
func warningText(ws []tiff.Warning) string {
	var b strings.Builder
	for i, wr := range ws {
		sep := ""
		if i > 0 {
			sep = "; "
		}
		if n := len(sep) + len(wr.Code) + 2 + len(wr.Message); b.Len()+n > maxWarningText {
			shown := i
			if i == 0 { // one warning alone too long: its start
				b.WriteString(wr.Code + ": " + truncateUTF8(wr.Message, maxWarningText/2) + "…")
				shown = 1
			}
			if rest := len(ws) - shown; rest > 0 {
				fmt.Fprintf(&b, "; and %d more warnings", rest)
			}
			break
		}
		b.WriteString(sep + wr.Code + ": " + wr.Message)
	}
	return b.String()
}

// maxWarningText bounds the warnings warningText gives.
const maxWarningText = 4 << 10

// truncateUTF8 is s cut to at most n bytes, at a character's start.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// deliveryEvent is newEvent for this delivery's attempt and task.
func (w *Worker) deliveryEvent(d *delivery, env *Envelope, t premis.EventType) *premis.Event {
	ev := newEvent(env, t, d.attempt, d.taskID, w.Software)
	ev.Retries = d.retried
	return ev
}

// failureEvent records a failing decision for env (the item, or one of its
// messages).
func (w *Worker) failureEvent(d *delivery, env *Envelope, rep *validate.Report, err error, dec Decision) *premis.Event {
	t := premis.Validation
	var se *validate.StageError
	if errors.As(err, &se) {
		switch se.Stage {
		case validate.StageOpen:
			t = premis.Ingestion // nothing was read, so nothing was validated
		case validate.StageFixity:
			t = premis.FixityCheck
		case validate.StageFormat:
			t = premis.FormatIdentification
		}
	}
	if dec.Destination.Parked() {
		t = premis.Quarantine
	}
	ev := w.deliveryEvent(d, env, t)
	ev.Outcome = premis.Failure
	ev.Class, ev.Destination, ev.Code, ev.Note = dec.Class, dec.Destination, dec.Code, dec.Note
	if err != nil {
		ev.Message, ev.Position = err.Error(), positionOf(err)
	}
	ev.Envelope = envelopeJSON(env)
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
	ev.Detail = fmt.Sprintf("%s stage failed; class %s routed to %s (%s)", stage, dec.Class, dec.Destination, w.Software.ID())
	var rule *validate.RuleError
	if errors.As(err, &rule) && rule.Registry != "" {
		ev.Detail += "; registry " + rule.Registry
	}
	return ev
}

// report logs the result once and tells Observe.
func (w *Worker) report(ctx context.Context, r *result, t tally) {
	d := r.d
	for _, ev := range t.logged {
		w.logEvent(ctx, ev)
	}
	if r.perMessage {
		w.Logger.LogAttrs(ctx, slog.LevelInfo, "interchange routed", slog.String(AttrCorrelationID, d.env.CorrelationID),
			slog.String(AttrObjectID, d.env.ObjectID), slog.String(AttrBatchID, d.env.BatchID), slog.Int("messages", t.messages),
			slog.Int("accepted", t.accepted), slog.Int("parked", t.parked), slog.Int(AttrAttempt, d.attempt))
		return
	}
	var evs []*premis.Event
	if n := len(t.logged); n > 0 {
		evs = t.logged[n-1:]
	}
	w.observe(d.env.Kind, r.decision.Class, r.decision.Destination, r.decision.Code, d.start, evs...)
}

func (w *Worker) logEvent(ctx context.Context, ev *premis.Event) {
	level := slog.LevelWarn
	switch ev.Destination {
	case premis.Accepted:
		level = slog.LevelInfo
	case premis.DeadLetter, premis.AuditHold:
		level = slog.LevelError
	case premis.Retry:
		level = slog.LevelInfo
	}
	msg := "item routed"
	if ev.Destination == premis.Accepted {
		msg = "item accepted"
	}
	attrs := []slog.Attr{
		slog.String(AttrCorrelationID, ev.CorrelationID), slog.String(AttrObjectID, ev.ObjectID),
		slog.String(AttrBatchID, ev.BatchID), slog.String(AttrDestination, string(ev.Destination)),
		slog.Int(AttrAttempt, ev.Attempt), slog.String("event_id", ev.ID),
	}
	if ev.Outcome == premis.Failure {
		attrs = append(attrs, slog.String(AttrClass, string(ev.Class)), slog.String(AttrCode, ev.Code), slog.String("error", ev.Message))
		if ev.Offset != nil {
			attrs = append(attrs, slog.Int64(AttrOffset, *ev.Offset))
		} else {
			attrs = append(attrs, slog.Any(AttrOffset, nil))
		}
		if ev.Page != nil {
			attrs = append(attrs, slog.Int("page", *ev.Page))
		}
	}
	w.Logger.LogAttrs(ctx, level, msg, attrs...)
}

// joinNote joins the parts of an event's note that are not empty with "; ".
func joinNote(parts ...string) string {
	var kept []string
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, "; ")
}
