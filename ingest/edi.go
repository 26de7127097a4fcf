package ingest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/validate"
)

// MessageObjectID names one message of an interchange as a PREMIS object.
func MessageObjectID(interchange, ref string) string { return interchange + "#" + ref }

// messageEnvelope is the envelope of one message of env's interchange: its
// own object id, correlation id and Message reference, so that it can be
// parked and replayed alone.
func messageEnvelope(env *Envelope, ref string) *Envelope {
	if env.Message != "" {
		return env // already a single-message task (a replay)
	}
	m := *env
	m.Message = ref
	m.ObjectID = MessageObjectID(env.ObjectID, ref)
	m.CorrelationID = CorrelationID(env.BatchID, m.ObjectID, env.SHA256)
	return &m
}

// messagesPerAppend bounds how many messages' events are held and written
// in one ledger transaction, so a huge interchange does not hold them all.
const messagesPerAppend = 256

// routeMessages routes every message of a sound interchange on its own:
// accepted messages get val and ing events, failing ones go to quarantine
// (or audit-hold at the poison cap) each with its own event and parked task.
// Events are written a chunk of messages at a time; every event and parked
// task is idempotent, so a retry after a partial failure repeats nothing.
func (w *Worker) routeMessages(ctx context.Context, env *Envelope, rep *validate.Report, res *validate.InterchangeResult, attempt, retried, maxRetry int, taskID string, start time.Time) error {
	regs := w.registries()
	detail := fmt.Sprintf("UN/EDIFACT envelope, structural, semantic and regulatory rules (%s; %s; %s)", w.Software.ID(), regs.LOCODE.Version(), regs.HS.Version())
	type parked struct {
		env *Envelope
		ev  *premis.Event
		err error
	}
	var events []*premis.Event
	var park []parked
	accepted, parkedN := 0, 0
	flush := func() error {
		if len(events) == 0 {
			return nil
		}
		if _, err := w.Ledger.Append(ctx, events...); err != nil {
			return &RoutingError{Destination: premis.Accepted, Err: fmt.Errorf("ledger: %w", err)}
		}
		for _, p := range park {
			if err := w.park(ctx, p.env, p.ev, p.ev.Destination, p.err); err != nil {
				return err
			}
			w.log(ctx, p.env, p.ev, p.err)
		}
		for _, ev := range events {
			if ev.Type == premis.Ingestion {
				accepted++
			}
			if ev.Destination.Terminal() {
				w.observe(env.Kind, ev.Class, ev.Destination, ev.Code, start, ev)
			}
		}
		parkedN += len(park)
		events, park = events[:0], park[:0]
		return nil
	}
	if env.Message == "" {
		fix := w.base(env, premis.FixityCheck, attempt, retried, taskID)
		fix.Outcome, fix.SHA256, fix.Size = premis.Success, rep.SHA256, rep.Size
		fix.Detail, fix.Note = "SHA-256 of the interchange compared with the manifest", "sha256 "+rep.SHA256
		events = append(events, fix)
	}
	for i, m := range res.Messages {
		if i > 0 && i%messagesPerAppend == 0 {
			if err := flush(); err != nil {
				return err
			}
		}
		menv := messageEnvelope(env, m.Ref)
		if m.Err == nil {
			val := w.base(menv, premis.Validation, attempt, retried, taskID)
			val.Outcome, val.SHA256, val.Detail = premis.Success, rep.SHA256, detail
			off := m.Offset
			val.Offset, val.Segment, val.Tag = &off, 1, "UNH"
			val.Note = fmt.Sprintf("message %s (%s), number %d in the interchange", m.Ref, m.Type, m.Number)
			if len(m.Warnings) > 0 {
				val.Outcome = premis.Warning
				for _, wr := range m.Warnings {
					val.Note += "; " + wr.Code + ": " + wr.Message
				}
			}
			ing := w.base(menv, premis.Ingestion, attempt, retried, taskID)
			ing.Outcome, ing.SHA256, ing.Destination, ing.Detail = premis.Success, rep.SHA256, premis.Accepted, "message accepted by lazaret"
			if menv.ReplayOf != "" {
				ing.Note = "accepted on replay of event " + menv.ReplayOf
			}
			events = append(events, val, ing)
			continue
		}
		class := Classify(m.Err)
		dest := w.Policy.Route(class, menv.Attempt+retried, retried, maxRetry)
		ev := w.failureEvent(menv, rep, m.Err, class, dest, attempt, retried, taskID)
		ev.Note = fmt.Sprintf("message %s (%s) at byte %d: %s", m.Ref, m.Type, m.Offset, m.Err)
		if dest == premis.AuditHold {
			ev.Note = fmt.Sprintf("poison cap reached at attempt %d (cap %d): %s", attempt, w.Policy.PoisonCap, ev.Note)
		}
		events = append(events, ev)
		if dest == premis.Quarantined || dest == premis.AuditHold {
			park = append(park, parked{menv, ev, m.Err})
		}
	}
	if err := flush(); err != nil {
		return err
	}
	w.Logger.LogAttrs(ctx, slog.LevelInfo, "interchange routed", slog.String(AttrCorrelationID, env.CorrelationID),
		slog.String(AttrObjectID, env.ObjectID), slog.String(AttrBatchID, env.BatchID), slog.Int("messages", len(res.Messages)),
		slog.Int("accepted", accepted), slog.Int("parked", parkedN), slog.Int(AttrAttempt, attempt))
	return nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// writeContrl writes the CONTRL report of a rejected interchange to the
// outbox, named after batch, object and attempt so a redelivery overwrites
// the same file.
func (w *Worker) writeContrl(env *Envelope, res *validate.InterchangeResult, err error, attempt int) error {
	if w.Outbox == "" {
		return nil
	}
	if err := os.MkdirAll(w.Outbox, 0o755); err != nil {
		return err
	}
	name := unsafeName.ReplaceAllString(fmt.Sprintf("%s_%s_%d", env.BatchID, env.ObjectID, attempt), "_") + ".contrl.edi"
	path := filepath.Join(w.Outbox, name)
	tmp := path + ".partial"
	f, ferr := os.Create(tmp)
	if ferr != nil {
		return ferr
	}
	rep := res.Contrl(err)
	rep.Reference = contrlRef(env, attempt)
	if werr := edifact.WriteCONTRL(f, rep); werr != nil {
		f.Close()
		return werr
	}
	if cerr := f.Close(); cerr != nil {
		return cerr
	}
	return os.Rename(tmp, path)
}

// contrlRef is a CONTRL control reference (max 14 characters), stable per
// item and attempt.
func contrlRef(env *Envelope, attempt int) string {
	id := strings.TrimPrefix(env.TaskID(), "ing-")
	return strings.ToUpper(id[:min(len(id), 12)]) + fmt.Sprintf("%02d", attempt%100)
}
