package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/validate"
)

// MessageObjectID names one message of an interchange as a PREMIS object:
// the interchange's object id (which cannot contain '#', see
// validate.Item), '#', and the UNH reference with every byte outside
// printable ASCII, and '%' and '#', percent-encoded: a reference read from
// an attacker's file reaches the ledger and a terminal as plain text.
func MessageObjectID(interchange, ref string) string {
	var b strings.Builder
	b.Grow(len(interchange) + 1 + len(ref))
	b.WriteString(interchange)
	b.WriteByte('#')
	for i := 0; i < len(ref); i++ {
		c := ref[i]
		if c <= ' ' || c >= 0x7f || c == '%' || c == '#' {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// messageObjectID is the object id of message m of the file of
// interchanges whose object id is file: MessageObjectID in the file's
// first interchange; in a later one, the interchange's number between
// two '#' ("batch-7.edi#2#1"), so that two interchanges of one file that
// reuse a reference never share an id (neither part can hold '#').
func messageObjectID(file string, m validate.MessageResult) string {
	if m.Interchange <= 1 {
		return MessageObjectID(file, m.Ref)
	}
	return MessageObjectID(file+"#"+strconv.Itoa(m.Interchange), m.Ref)
}

// messageEnvelope is the envelope of message m of env's interchange: its
// own object id, correlation id, Message reference and interchange, so
// that it can be parked and replayed alone.
func messageEnvelope(env *Envelope, msg validate.MessageResult) *Envelope {
	if env.Message != "" {
		return env // already a single-message task (a replay)
	}
	m := *env
	m.Message = msg.Ref
	if msg.Interchange > 1 {
		m.Interchange = msg.Interchange
	}
	m.ObjectID = messageObjectID(env.ObjectID, msg)
	m.CorrelationID = CorrelationID(env.BatchID, m.ObjectID, env.SHA256)
	return &m
}

// messagesPerAppend bounds how many messages' events are held and written
// in one ledger transaction, so a huge interchange does not hold them all.
const messagesPerAppend = 256

// planMessages yields the events of a sound interchange: a fixity event for
// the interchange; for the messages of a chunk that are accepted, val
// events (one for those without warnings, one for each set of warnings)
// and one ing event, which hold them as members (premis.Member: some 40
// bytes a message, where two events of its own took 2 KB); a failure event
// (and a parked task) for every failing one, each message decided on its
// own by Decide; and last, the interchange's own ing event, which tells a
// later delivery that everything before it is recorded. The verdicts come
// one at a time from the interchange result (a second read of a large
// interchange, see validate.InterchangeResult.EachMessage): no more than a
// chunk is held.
func (w *Worker) planMessages(ctx context.Context, r *result, t *tally, yield func([]*premis.Event, []parcel) error) error {
	d, env, rep, res := r.d, r.d.env, r.rep, r.ires
	regs := w.registries()
	detail := fmt.Sprintf("UN/EDIFACT envelope, structural, semantic and regulatory rules (%s; %s; %s)", w.Software.ID(), regs.LOCODE.Version(), regs.HS.Version())
	var events []*premis.Event
	var parcels []parcel
	var accepted []acceptedMessage
	n := 0 // messages read
	closeChunk := func() {
		if len(accepted) > 0 {
			// The chunk's messages are those after the last multiple of
			// messagesPerAppend before n.
			from := (n-1)/messagesPerAppend*messagesPerAppend + 1
			events = append(events, w.memberEvents(d, env, rep.SHA256, detail, from, accepted)...)
			accepted = accepted[:0]
		}
	}
	flush := func() error {
		closeChunk()
		if len(events) == 0 {
			return nil
		}
		if err := yield(events, parcels); err != nil {
			return err
		}
		clear(events)
		clear(parcels)
		events, parcels = events[:0], parcels[:0]
		return nil
	}
	if env.Message == "" {
		fix := w.deliveryEvent(d, env, premis.FixityCheck)
		fix.Outcome, fix.SHA256, fix.Size = premis.Success, rep.SHA256, rep.Size
		fix.Detail, fix.Note = "SHA-256 of the interchange compared with the manifest", "sha256 "+rep.SHA256
		events = append(events, fix)
	}
	var stopped error // from flush or the drain: not the read's
	err := res.EachMessage(ctx, func(m validate.MessageResult) error {
		if n > 0 && n%messagesPerAppend == 0 {
			if stopped = flush(); stopped != nil {
				return stopped
			}
			if w.draining.Load() {
				stopped = fmt.Errorf("%w after %d of %d messages", ErrDraining, n, res.Checked)
				return stopped
			}
		}
		n++
		if m.Err == nil && env.Message == "" {
			accepted = append(accepted, acceptedMessage{
				premis.Member{ObjectID: messageObjectID(env.ObjectID, m), Number: m.Number, Offset: m.Offset, Type: m.Type},
				warningText(m.Warnings)})
			t.accepted++
			return nil
		}
		menv := messageEnvelope(env, m)
		if m.Err == nil {
			val := w.deliveryEvent(d, menv, premis.Validation)
			val.Outcome, val.SHA256, val.Detail = premis.Success, rep.SHA256, detail
			off := m.Offset
			val.Offset, val.Segment, val.Tag = &off, 1, "UNH"
			val.Note = fmt.Sprintf("message %s (%s), number %d in the interchange", m.Ref, m.Type, m.Number)
			if len(m.Warnings) > 0 {
				val.Outcome = premis.Warning
				val.Note += "; " + warningText(m.Warnings)
			}
			ing := w.deliveryEvent(d, menv, premis.Ingestion)
			ing.Outcome, ing.SHA256, ing.Destination, ing.Detail = premis.Success, rep.SHA256, premis.Accepted, "message accepted by lazaret"
			if menv.ReplayOf != "" {
				ing.Note = "accepted on replay of event " + menv.ReplayOf
			}
			events = append(events, val, ing)
			t.accepted++
			return nil
		}
		dec := w.Policy.Decide(m.Err, d.attempt, d.retries)
		ev := w.failureEvent(d, menv, rep, m.Err, dec)
		ev.Note = fmt.Sprintf("message %s (%s) at byte %d: %s", m.Ref, m.Type, m.Offset, m.Err)
		ev.Note = joinNote(dec.Note, ev.Note, t.sent.noteIn(m.Interchange, m.Number))
		events = append(events, ev)
		if dec.Destination.Parked() {
			parcels = append(parcels, parcel{menv, ev})
			t.parked++
		}
		return nil
	})
	if err != nil {
		if stopped == nil {
			t.reread = err
		}
		return err
	}
	t.messages = n
	closeChunk() // before the interchange's ing, which must come last
	if env.Message == "" {
		ing := w.deliveryEvent(d, env, premis.Ingestion)
		ing.Outcome, ing.SHA256, ing.Size, ing.Destination = premis.Success, rep.SHA256, rep.Size, premis.Accepted
		ing.Detail = "interchange envelope accepted; its messages are routed one by one (" + w.Software.ID() + ")"
		ing.Note = fmt.Sprintf("%d message(s): %d accepted, %d parked, %d other", n, t.accepted, t.parked, n-t.accepted-t.parked)
		if len(rep.Warnings) > 0 {
			// The interchange's own warnings (a repertoire not checked,
			// UNOZ): its messages' are on their events.
			ing.Note += "; warnings: " + warningText(rep.Warnings)
		}
		events = append(events, ing)
	}
	return flush()
}

// acceptedMessage is a message of the chunk being read that passed, with
// the warnings its validation gave ("code: message; ...", "" for none).
type acceptedMessage struct {
	premis.Member
	warnings string
}

// memberEvents are the events of the messages of one chunk that were
// accepted (in order): a val event for each set of warnings, in the order
// they first appear (those without any first, when there are), holding
// the messages that gave it, and one ing event holding them all. Their
// keys name the chunk by the place of its first message read (from), and
// a val event by its warnings, so a redelivery that reads the same
// interchange finds them.
func (w *Worker) memberEvents(d *delivery, env *Envelope, sha, detail string, from int, accepted []acceptedMessage) []*premis.Event {
	chunk := fmt.Sprintf("%s/messages/%d", env.CorrelationID, from)
	all := make([]premis.Member, len(accepted))
	var sets []string // distinct warnings, in order of appearance
	bySet := map[string][]premis.Member{}
	for i, a := range accepted {
		all[i] = a.Member
		if _, ok := bySet[a.warnings]; !ok {
			sets = append(sets, a.warnings)
		}
		bySet[a.warnings] = append(bySet[a.warnings], a.Member)
	}
	if i := slices.Index(sets, ""); i > 0 {
		sets = slices.Insert(slices.Delete(sets, i, i+1), 0, "")
	}
	var evs []*premis.Event
	for _, set := range sets {
		ms := bySet[set]
		val := w.deliveryEvent(d, env, premis.Validation)
		val.Key = premis.EventKey(chunk+"/"+set, env.SHA256, premis.Validation, d.attempt)
		val.Outcome, val.SHA256, val.Detail, val.Members = premis.Success, sha, detail, ms
		val.Note = fmt.Sprintf("%d message(s) of numbers %d to %d in the interchange: valid", len(ms), ms[0].Number, ms[len(ms)-1].Number)
		if set != "" {
			val.Outcome = premis.Warning
			val.Note += ", with the warning(s) " + set
		}
		evs = append(evs, val)
	}
	ing := w.deliveryEvent(d, env, premis.Ingestion)
	ing.Key = premis.EventKey(chunk, env.SHA256, premis.Ingestion, d.attempt)
	ing.Outcome, ing.SHA256, ing.Members = premis.Success, sha, all
	ing.Detail = "messages accepted by lazaret"
	ing.Note = fmt.Sprintf("%d message(s) of numbers %d to %d in the interchange: accepted", len(all), all[0].Number, all[len(all)-1].Number)
	if env.ReplayOf != "" {
		ing.Note += " on replay of event " + env.ReplayOf
	}
	return append(evs, ing)
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// ReplyPolicy says which replies go to the outbox for an interchange,
// by its sender: CONTRL for syntax and envelope faults, APERAK for
// business-rule and registry rejections of its messages, or one of them
// only (validate.ReplyMode).
type ReplyPolicy struct {
	// Mode is the replies of a sender Partners does not list ("" is
	// validate.ReplyBoth).
	Mode validate.ReplyMode
	// Partners are the modes of senders by their UNB sender
	// identification (S002 0004), as sent.
	Partners map[string]validate.ReplyMode
	// QuietParked sends no reply for the parked messages of an accepted
	// interchange, only the CONTRL its UNB asks for (0031 = 1), which then
	// still rejects a message parked for its syntax. By default the
	// sender hears of every parked message.
	QuietParked bool
	// StandardSeparators writes replies with UNA:+.? ' instead of the
	// separators of the interchange answered.
	StandardSeparators bool
	// Syntax4Repetition writes a reply to a syntax-4 interchange with
	// UNA:+.?*' (ISO 9735-4's repetition separator declared), else as
	// StandardSeparators does. Not the default: the npm parsers the tests
	// read every reply with (edifact, ts-edifact) refuse a UNA that
	// declares one (TestNPMParsersRefuseARepetitionSeparatorInUNA).
	Syntax4Repetition bool
	// Installation names this installation in the control references of
	// its replies (UNB 0020 of a CONTRL or APERAK), so that two
	// installations answering the same interchange never pick the same
	// reference. Empty: the ledger's own (Worker.installationID).
	Installation string
}

// Separators are the service characters of a reply to the interchange
// env (its envelope, nil when unread): ok is false when the reply takes
// the interchange's own (edifact.ReplyDelimiters).
func (p ReplyPolicy) Separators(env *edifact.Envelope) (edifact.Delimiters, bool) {
	d := edifact.DefaultDelimiters
	switch {
	case p.Syntax4Repetition && env != nil && env.SyntaxVersion == "4":
		d.Repetition = '*'
		return d, true
	case p.StandardSeparators || p.Syntax4Repetition:
		return d, true
	}
	return d, false
}

// ModeFor is the reply mode of the sender with that UNB identification.
func (p ReplyPolicy) ModeFor(sender string) validate.ReplyMode {
	if m, ok := p.Partners[sender]; ok && m != "" {
		return m
	}
	if p.Mode == "" {
		return validate.ReplyBoth
	}
	return p.Mode
}

// replies are the files writeReplies wrote to the outbox (base names, ""
// for none) and the messages (by number) each of them rejects, for the
// events that record those messages' failures to name them. Of a file of
// several interchanges, they are those of the first (or of the one
// rejected); later holds those of the others, by interchange number.
type replies struct {
	contrl, aperak         string
	contrlMsgs, aperakMsgs map[int]bool
	contrlAll              bool // the CONTRL rejects the interchange, every message with it
	later                  map[int]*replies
}

// noteFor is what the failure event of message n (0: the interchange)
// says of the replies that reject it: "CONTRL <file>", "APERAK <file>".
func (rs *replies) noteFor(n int) string {
	var parts []string
	if rs.contrl != "" && (n == 0 || rs.contrlAll || rs.contrlMsgs[n]) {
		parts = append(parts, "CONTRL "+rs.contrl)
	}
	if rs.aperak != "" && n > 0 && rs.aperakMsgs[n] {
		parts = append(parts, "APERAK "+rs.aperak)
	}
	if len(parts) == 0 {
		return ""
	}
	return "reply in the outbox: " + strings.Join(parts, ", ")
}

// noteIn is noteFor for message n of the file's interchange number ic.
func (rs *replies) noteIn(ic, n int) string {
	if ic <= 1 {
		return rs.noteFor(n)
	}
	if l := rs.later[ic]; l != nil {
		return l.noteFor(n)
	}
	return ""
}

// writeReplies writes the replies to an interchange to the outbox, as
// the sender's reply mode (Worker.Replies) splits its faults: the CONTRL
// of an interchange rejected for its envelope; for an accepted one the
// CONTRL its UNB asks for (0031 = 1) or that rejects a message parked for
// its syntax, and the APERAK that rejects the messages parked by business
// rules and registries (unless QuietParked). Each is named after batch,
// object and attempt so a redelivery overwrites the same file, and is
// written before the ledger event: the report exists only while this
// delivery holds the validation result, and a redelivery that finds the
// decision recorded must not have to validate again to send it. Writing
// it twice writes the same bytes: the control references are hashes of
// the delivery (contrlRef, aperakRef) and the preparation time in UNB is
// the delivery's submission time, not the clock. The replies echo the
// envelope as the sender wrote it, read again from the file
// (validate.ReadEnvelope), and never acknowledge a parked message. A reply
// the sender's separators cannot carry (a service character in a value,
// no release character) is written with UNA:+.? ' instead, never broken.
//
// A file of several interchanges, all accepted, gets the replies of each,
// on its own (its sender's mode, its UNB, its messages); one rejected
// gets the CONTRL of the interchange at fault.
func (w *Worker) writeReplies(ctx context.Context, env *Envelope, res *validate.InterchangeResult, err error, attempt int) (replies, error) {
	var out replies
	if w.Outbox == "" || res == nil {
		return out, nil
	}
	inst, ierr := w.installationID(ctx)
	if ierr != nil {
		return out, fmt.Errorf("installation id: %w", ierr)
	}
	targets := []*edifact.Interchange{res.Answered(err)}
	if err == nil && res.Interchange != nil && res.Interchange.Next != nil && env.Message == "" {
		targets = slices.Collect(res.Interchange.All())
	}
	for _, ic := range targets {
		rs := &out
		if ic != nil && ic.Number > 1 && err == nil {
			if out.later == nil {
				out.later = map[int]*replies{}
			}
			rs = &replies{}
			out.later[ic.Number] = rs
		}
		if err := w.writeRepliesTo(rs, inst, env, res, ic, err, attempt); err != nil {
			return out, err
		}
	}
	return out, nil
}

// writeRepliesTo writes the replies to interchange ic of the file (see
// writeReplies) and adds them to out; inst names the installation.
func (w *Worker) writeRepliesTo(out *replies, inst string, env *Envelope, res *validate.InterchangeResult, ic *edifact.Interchange, err error, attempt int) error {
	number := 1
	if ic != nil {
		number = ic.Number
	}
	full := validate.ReadEnvelopeOf(w.source(env), ic)
	sender := ""
	if full != nil && len(full.Sender) > 0 {
		sender = full.Sender[0]
	}
	mode := w.Replies.ModeFor(sender)
	cr, ar := res.RepliesTo(ic, full, err, mode)
	cr.Reference, ar.Reference = contrlRef(inst, env, attempt), aperakRef(inst, env, attempt)
	if number > 1 {
		cr.Reference, ar.Reference = contrlRefIn(inst, env, attempt, number), aperakRefIn(inst, env, attempt, number)
	}
	cr.Now = env.SubmittedAt.UTC()
	ar.Now = cr.Now
	standard := edifact.DefaultDelimiters
	if d, ok := w.Replies.Separators(full); ok {
		cr.Delimiters, ar.Delimiters = &d, &d
	}
	accepted := err == nil
	asked := full != nil && full.AckRequest == "1"
	parked := accepted && env.Message == "" && !w.Replies.QuietParked
	kind := func(k string) string {
		if number > 1 {
			return fmt.Sprintf("i%d.%s", number, k) // the file's interchange number
		}
		return k
	}
	if mode.Contrl() && (!accepted || asked || parked && len(cr.Faults) > 0) {
		name := replyName(env, attempt, kind("contrl"))
		err := w.writeOutbox(name, func(f *os.File) error { return edifact.WriteCONTRL(f, cr) })
		if errors.Is(err, edifact.ErrUnencodable) {
			cr.Delimiters = &standard // the sender's separators cannot carry it
			err = w.writeOutbox(name, func(f *os.File) error { return edifact.WriteCONTRL(f, cr) })
		}
		if err != nil {
			return err
		}
		out.contrl, out.contrlAll, out.contrlMsgs = name, cr.Unlisted, map[int]bool{}
		for n := range cr.Faults {
			out.contrlMsgs[n] = true
		}
	}
	if mode.Aperak() && parked && len(ar.Messages) > 0 {
		name := replyName(env, attempt, kind("aperak"))
		err := w.writeOutbox(name, func(f *os.File) error { return edifact.WriteAPERAK(f, ar) })
		if errors.Is(err, edifact.ErrUnencodable) {
			ar.Delimiters = &standard
			err = w.writeOutbox(name, func(f *os.File) error { return edifact.WriteAPERAK(f, ar) })
		}
		if err != nil {
			return err
		}
		out.aperak, out.aperakMsgs = name, make(map[int]bool, len(ar.Messages))
		for _, m := range ar.Messages {
			out.aperakMsgs[m.Number] = true
		}
	}
	return nil
}

// writeOutbox writes a file of the outbox whole or not at all (a
// temporary file renamed into place).
func (w *Worker) writeOutbox(name string, write func(*os.File) error) error {
	if err := os.MkdirAll(w.Outbox, 0o755); err != nil {
		return err
	}
	path := filepath.Join(w.Outbox, name)
	tmp := path + ".partial"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// repliesForAccepted says whether an interchange whose envelope was
// accepted may get a reply: when its UNB asks for one (0031 = 1), and,
// unless Replies.QuietParked, when one of its messages failed a rule.
// Only UNB's first bytes are read to know. A replay of one parked message
// gets none: the sender was answered for the interchange.
func (w *Worker) repliesForAccepted(env *Envelope, res *validate.InterchangeResult) bool {
	if w.Outbox == "" || res == nil || env.Message != "" {
		return false
	}
	if !w.Replies.QuietParked && res.Failed > 0 {
		return true
	}
	if res.Interchange != nil && res.Interchange.Next != nil {
		return true // each interchange's UNB says whether it asks (see writeReplies)
	}
	head := validate.ReadEnvelope(w.source(env), contrlHeadBytes)
	return head != nil && head.AckRequest == "1"
}

// contrlHeadBytes is what is read of an interchange to find its UNB.
const contrlHeadBytes = 64 << 10

// contrlName is the outbox file name of an item's CONTRL at attempt.
func contrlName(env *Envelope, attempt int) string { return replyName(env, attempt, "contrl") }

// replyName is the outbox file name of an item's reply (kind "contrl" or
// "aperak") at attempt: a readable prefix cut to fit any file system's
// NAME_MAX, and a digest of the exact batch and object ids, so that ids
// differing only in characters a file name cannot hold ("a/b", "a#b",
// "a b") never share a file.
func replyName(env *Envelope, attempt int, kind string) string {
	readable := unsafeName.ReplaceAllString(env.BatchID+"_"+env.ObjectID, "_")
	if len(readable) > 120 {
		readable = readable[:120]
	}
	sum := sha256.Sum256([]byte(env.BatchID + "\x00" + env.ObjectID))
	return fmt.Sprintf("%s_%s_%d.%s.edi", readable, hex.EncodeToString(sum[:6]), attempt, kind)
}

// contrlRef is a CONTRL control reference (0020, an..14): a hash of the
// installation (installationID), the interchange's digest, the attempt,
// the batch, the object and the message of a replay. Stable per
// installation, item and attempt (a redelivery writes the same bytes);
// different for any two installations, interchanges or attempts, whenever
// they are written.
func contrlRef(inst string, env *Envelope, attempt int) string {
	return edifact.ControlReference(refParts(inst, env.SHA256, strconv.Itoa(attempt), env.BatchID, env.ObjectID, env.Message)...)
}

// contrlRefIn is contrlRef for the CONTRL to the file's interchange
// number (after the first): its number added, so that two replies to one
// file never share a reference.
func contrlRefIn(inst string, env *Envelope, attempt, number int) string {
	return edifact.ControlReference(refParts(inst, env.SHA256, strconv.Itoa(attempt), env.BatchID, env.ObjectID, env.Message, strconv.Itoa(number))...)
}

// aperakRef is an APERAK's control reference: contrlRef's parts, marked
// as an APERAK's, so that the two replies to one attempt never share one.
func aperakRef(inst string, env *Envelope, attempt int) string {
	return edifact.ControlReference(refParts(inst, "APERAK", env.SHA256, strconv.Itoa(attempt), env.BatchID, env.ObjectID, env.Message)...)
}

// refParts are the parts of a reply's reference: the installation first
// when there is one (without one, the references of before it existed).
func refParts(inst string, parts ...string) []string {
	if inst == "" {
		return parts
	}
	return append([]string{"installation", inst}, parts...)
}

// installationID names this installation in its replies' references:
// Replies.Installation when configured, otherwise the id of the ledger's
// first event. That id is random (a UUIDv7 drawn when the ledger took
// its first record), kept by the ledger itself (append-only,
// hash-chained, in a backup and its restore) and the same for every
// worker on one ledger, so that SQLite and PostgreSQL keep it alike with
// no table of their own. A ledger with no event yet (a task enqueued
// without its submission recorded) gives "": references are then derived
// from the input alone, as before installations were named. Read once per
// worker; a failed read is an error (the commit is retried).
func (w *Worker) installationID(ctx context.Context) (string, error) {
	if w.Replies.Installation != "" {
		return w.Replies.Installation, nil
	}
	if w.Ledger == nil {
		return "", nil
	}
	w.installation.Lock()
	defer w.installation.Unlock()
	if w.installation.id != "" {
		return w.installation.id, nil
	}
	evs, err := w.Ledger.Events(ctx, premis.Filter{Limit: 1})
	if err != nil {
		return "", err
	}
	if len(evs) > 0 {
		w.installation.id = "ledger:" + evs[0].ID
	}
	return w.installation.id, nil
}

// aperakRefIn is aperakRef for the file's interchange number (see
// contrlRefIn).
func aperakRefIn(inst string, env *Envelope, attempt, number int) string {
	return edifact.ControlReference(refParts(inst, "APERAK", env.SHA256, strconv.Itoa(attempt), env.BatchID, env.ObjectID, env.Message, strconv.Itoa(number))...)
}
