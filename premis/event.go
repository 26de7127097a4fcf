// Package premis holds Lazaret's PREMIS 3.0 event model, the Ledger that
// stores events durably (the system of record, not Redis), and the XML export
// that preservation systems import.
package premis

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Event is one PREMIS event: what ran on which object, when, with what
// outcome, and — for failures — the class, code and exact position. It is
// the one failure record: the CLI, the API and the export all show it.
type Event struct {
	ID       string    `json:"id"`        // UUID, the eventIdentifierValue
	Key      string    `json:"key"`       // idempotency key; see EventKey
	Type     EventType `json:"type"`      // LoC eventType code
	DateTime time.Time `json:"date_time"` // UTC
	Detail   string    `json:"detail"`    // what ran, with rule or registry version
	Outcome  Outcome   `json:"outcome"`
	Note     string    `json:"note,omitempty"` // outcome detail note, human readable

	// Failure detail (empty on success).
	Class   Class  `json:"class,omitempty"`
	Code    string `json:"code,omitempty"` // stable machine code, e.g. "tiff.ifd-loop"
	Message string `json:"message,omitempty"`
	Position
	Destination Destination `json:"destination,omitempty"`

	// Links.
	ObjectID      string `json:"object_id"`
	BatchID       string `json:"batch_id,omitempty"`
	CorrelationID string `json:"correlation_id"`
	Kind          string `json:"kind"` // the item's kind ("tiff", "edifact"), or "task", "batch"
	// SHA256 and Size are the payload's digest and size as the event was
	// recorded under: the declared ones, or the ones read when the event
	// read the file. Only a fixity check that passed says which
	// (ReadFixity, Fixity); JSON names them so (MarshalJSON).
	SHA256   string `json:"sha256,omitempty"`
	Size     int64  `json:"size,omitempty"`
	PUID     string `json:"puid,omitempty"` // PRONOM id from format identification
	Path     string `json:"path,omitempty"` // where the payload was read from
	Attempt  int    `json:"attempt"`        // 1-based; replay hops plus retries Lazaret decided
	Retries  int    `json:"retries"`        // asynq retries consumed when the event was written
	TaskID   string `json:"task_id,omitempty"`
	ReplayOf string `json:"replay_of,omitempty"` // event id this attempt replays or acts on
	Agent    string `json:"agent"`               // "lazaret/<version>"
	Operator string `json:"operator,omitempty"`  // the person, for human actions
	Envelope []byte `json:"-"`                   // task envelope JSON, so the ledger can replay alone
	// Members are the objects an event records together, beside its own
	// object: the messages of an interchange accepted in one chunk (see
	// Member). Empty for every other event.
	Members []Member `json:"members,omitempty"`
	// Steps are the events this one records with it, as one row of the
	// ledger (see Step): set on what Append stores and Walk reads; Events
	// and Event hand each step over as an event of its own instead.
	Steps []Step `json:"steps,omitempty"`
	// Record, on an event that is a step of another, is that event's id:
	// the row the ledger stores it in, whose chain fields it carries.
	Record string `json:"record,omitempty"`

	// Chain: set by the ledger when the event is stored, and read back with
	// it. Seq is its place in append order (1-based, gaps possible);
	// PrevHash is the Hash of the event stored before it (ChainGenesis for
	// the first); Hash is ChainHash(PrevHash, event). What a caller puts
	// here before Append is ignored.
	Seq      int64  `json:"seq,omitempty"`
	PrevHash string `json:"prev_hash,omitempty"`
	Hash     string `json:"hash,omitempty"`
}

// ReadFixity is the SHA-256 and size of the bytes e read, when e is the
// event that computed them from those bytes: a fixity check that passed
// (Success or Warning). Its digest is the one the worker hashed (and, as it
// passed, the one the manifest declared); its size is the file's as opened.
// Every other event's SHA256 and Size are the item's as declared or as
// last read, which the ledger does not tell apart: they are never reported
// as read (a fixity check that failed may have read nothing at all).
func (e *Event) ReadFixity() (sha string, size int64, ok bool) {
	if e.Type != FixityCheck || (e.Outcome != Success && e.Outcome != Warning) || e.SHA256 == "" {
		return "", 0, false
	}
	return e.SHA256, max(e.Size, 0), true
}

// Fixity is what an item's events say of its bytes, each value named for
// what it is: what the manifest declared (read from the submission's
// envelope, which the submission and every failure carry), and what Lazaret
// computed from the bytes it read (the latest fixity check: see
// ReadFixity). Computed is empty when no fixity check of the bytes passed,
// or the latest one failed: an item never read has only declared values.
type Fixity struct {
	DeclaredSHA256 string `json:"declared_sha256,omitempty"`
	DeclaredSize   int64  `json:"declared_size,omitempty"` // 0: the manifest declared none
	ComputedSHA256 string `json:"computed_sha256,omitempty"`
	ComputedSize   int64  `json:"computed_size,omitempty"`
}

// Observe adds e, an event of the item later than those observed before.
func (f *Fixity) Observe(e Event) {
	if e.Type == FixityCheck {
		f.ComputedSHA256, f.ComputedSize, _ = e.ReadFixity()
	}
	if env := envelopeOf(e.Envelope); env.Manifest.SHA256 != "" {
		f.DeclaredSHA256, f.DeclaredSize = env.Manifest.SHA256, env.Manifest.Size
	}
}

// FixityOf is the Fixity of an item's events, oldest first.
func FixityOf(events []Event) Fixity {
	var f Fixity
	for _, e := range events {
		f.Observe(e)
	}
	return f
}

// MarshalJSON writes e as its field tags say, but for the item's digest
// and size: the event's SHA256 and Size hold the declared values or the
// ones read, which the ledger does not tell apart, so they are written as
// Fixity names them: computed_sha256 and computed_size on the fixity check
// that computed them (ReadFixity), declared_sha256 and declared_size as
// the envelope the event carries declares them, and otherwise not at all.
func (e Event) MarshalJSON() ([]byte, error) {
	type plain Event // Event without this method
	var out struct {
		plain
		// Shallower than plain's, so that plain's are not written.
		SHA256 string `json:"sha256,omitempty"`
		Size   int64  `json:"size,omitempty"`
		Fixity
	}
	out.plain = plain(e)
	out.Fixity.Observe(e)
	// Unescaped, so that the encoder writing e decides about "<", as it
	// does for the rest of the document.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Position is where in the payload a failure is. Offsets are 0-based
// bytes; pages, segments, elements and components are 1-based, 0 (or nil)
// meaning not applicable.
type Position struct {
	Offset    *int64 `json:"offset"`              // byte offset in the payload
	Page      *int   `json:"page,omitempty"`      // TIFF page (IFD index + 1)
	Segment   int    `json:"segment,omitempty"`   // EDIFACT segment in its message, UNH = 1
	Element   int    `json:"element,omitempty"`   // EDIFACT element position
	Component int    `json:"component,omitempty"` // EDIFACT component position (0 = whole element)
	Tag       string `json:"tag,omitempty"`       // TIFF tag name or EDIFACT segment tag
}

// Member is one of the objects an event records together: a message of an
// interchange, accepted with the others of its chunk by one validation and
// one ingestion event, whose ObjectID is the interchange's. Such an event
// says of each member what a message's own event would say of it (a
// validation without warnings, an ingestion into the repository), so that
// the ledger keeps some 40 bytes a message instead of two rows; it carries
// no destination, since the item the ledger's read model and a redelivery
// follow is the interchange, which is not decided until its own ingestion
// event. A message that fails, warns or is replayed has events of its own.
type Member struct {
	ObjectID string `json:"object_id"` // the message's object id ("inv#ref")
	Number   int    `json:"number"`    // its place in the interchange, 1-based
	Offset   int64  `json:"offset"`    // byte offset of its UNH segment
	Type     string `json:"type"`      // message type, e.g. "INVOIC"
}

// MaxMembers bounds the members of one event (one row of the ledger).
const MaxMembers = 4096

// EventKey is the content-addressed idempotency key of an event: the same
// item, payload, event type and attempt always give the same key, so a
// redelivered task collapses onto the row it already wrote.
func EventKey(correlationID, sha string, t EventType, attempt int) string {
	h := sha256.New()
	for _, part := range []string{correlationID, sha, string(t), strconv.Itoa(attempt)} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Validate reports what an event lacks before it may be stored.
func (e *Event) Validate() error {
	var errs []error
	if !e.Type.Valid() {
		errs = append(errs, fmt.Errorf("type %q is not a known event type", e.Type))
	}
	switch e.Outcome {
	case Success, Failure, Warning:
	default:
		errs = append(errs, fmt.Errorf("outcome %q is not suc, fai or war", e.Outcome))
	}
	if e.Class != "" && !e.Class.Valid() {
		errs = append(errs, fmt.Errorf("class %q is not a known class", e.Class))
	}
	if e.ObjectID == "" {
		errs = append(errs, errors.New("object id is empty"))
	}
	if e.Key == "" {
		errs = append(errs, errors.New("key is empty"))
	}
	errs = append(errs, e.validSteps()...)
	if e.Record != "" {
		errs = append(errs, errors.New("a step is stored with its record, not on its own"))
	}
	if len(e.Members) > MaxMembers {
		errs = append(errs, fmt.Errorf("%d members, more than %d", len(e.Members), MaxMembers))
	}
	for i := range e.Members {
		if e.Members[i].ObjectID == "" {
			errs = append(errs, fmt.Errorf("member %d has no object id", i+1))
			break
		}
	}
	return errors.Join(errs...)
}

// Prepare readies events for a ledger: a new UUID where the id is empty
// (version 7: time-ordered, so that a ledger's id index grows at its end
// rather than at a random page per event),
// now where the time is zero, times in UTC truncated to the microsecond
// (what every ledger stores), and Validate.
func Prepare(events ...*Event) error {
	for _, e := range events {
		if e.ID == "" {
			id := uuid.Must(uuid.NewV7())
			if len(e.Steps) > 0 {
				id[15] &^= 3 // room for the steps' ids (StepID)
			}
			e.ID = id.String()
		}
		if e.DateTime.IsZero() {
			e.DateTime = time.Now()
		}
		e.DateTime = e.DateTime.UTC().Truncate(time.Microsecond)
		for _, f := range []*string{&e.Detail, &e.Note, &e.Message, &e.Code, &e.Tag, &e.Path, &e.Operator, &e.PUID} {
			*f = Printable(*f)
		}
		for i := range e.Steps {
			st := &e.Steps[i]
			st.Detail, st.Note, st.PUID = Printable(st.Detail), Printable(st.Note), Printable(st.PUID)
		}
		for i := range e.Members {
			m := &e.Members[i]
			m.ObjectID, m.Type = Printable(m.ObjectID), Printable(m.Type)
		}
		if err := e.Validate(); err != nil {
			return fmt.Errorf("invalid %s event for %s: %w", e.Type, e.ObjectID, err)
		}
	}
	return nil
}

// Printable is s as the ledger stores free text that may hold bytes from a
// file or a file name: valid UTF-8 (invalid bytes become U+FFFD), and every
// control character but newline and tab written as \xNN, so that no NUL
// reaches PostgreSQL and no terminal escape reaches an operator's screen.
func Printable(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f || c >= 0x80 {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Filter selects events. Zero fields match everything. A record's steps
// (see Step) are events as any other: they match on their own type and
// outcome and on the record's other fields, never a filter on what a step
// has none of (Key, Code, Class, a destination, Latest, HasMembers).
type Filter struct {
	// ObjectID matches an event's object, or one of its Members: an
	// accepted message of an interchange ("inv#ref") is found in the
	// events of its chunk.
	ObjectID      string
	BatchID       string
	CorrelationID string
	// TaskID and Key are looked up by item: pass CorrelationID with them,
	// which the ledgers index (alone, they read the whole history).
	TaskID      string
	Key         string
	Kind        string
	Code        string
	Types       []EventType
	Outcome     Outcome
	Class       Class
	Destination Destination
	// Destinations, when set, matches any of them.
	Destinations []Destination
	// HasMembers keeps only events that hold members (Event.Members).
	HasMembers bool
	// Latest keeps only events that say where their item is now: an event
	// with a destination and no later event of the same item (correlation
	// id) with one. The ledger answers it in SQL, so a listing of open
	// failures reads the failures, not the history.
	Latest       bool
	Since, Until time.Time
	// AfterSeq keeps events stored after that one: with Limit, a page of a
	// listing (keyset pagination; pass the last Seq of the page before).
	// A record's steps carry its seq, and come whole in one page.
	AfterSeq int64
	// Limit bounds the ledger rows read (0: no limit), each handed over
	// with those of its steps that match.
	Limit int
}

// Latest is an item's latest event with a destination, as a ledger's read
// model holds it: enough to tell a first delivery from a redelivery
// without reading the item's history.
type Latest struct {
	Seq         int64
	Destination Destination
	TaskID      string
}

// FirstDelivery is what the first delivery of a submitted task takes for
// granted of its item: that the item's latest event with a destination
// (its Latest) is its submission by that task, so that nothing is recorded
// for the task yet. LatestOf tells it before the delivery; AppendFirst
// checks it in the delivery's append instead.
type FirstDelivery struct{ CorrelationID, TaskID string }

// Ledger stores PREMIS events durably and append-only. It is the one seam
// between Lazaret and a database, as River's driver executor is: every
// ledger (SQLite, PostgreSQL) and every wrapper (GroupCommit, the
// observers and fault injectors of the tests) implements all of it, and
// nothing outside this package asks a ledger what else it can do. A ledger
// that cannot do a thing returns an error wrapping ErrNotImplemented, and
// says so up front where a caller must choose a path (AppendsFirst).
// ledgertest.Conformance runs every implementation through the same tests.
type Ledger interface {
	// Append stores events in one transaction. An event whose Key is
	// already stored for its item (CorrelationID; EventKey hashes the
	// correlation in, so a key names one item) is not written again: it is
	// filled in from the stored row and reported as not inserted. ID and
	// DateTime are set when empty; Seq, PrevHash and Hash are set from the
	// ledger's hash chain.
	Append(ctx context.Context, events ...*Event) (inserted []bool, err error)
	// AppendsFirst says whether AppendFirst checks its conditions. A
	// ledger without a read model to check them against says false, and
	// its AppendFirst returns ErrNotImplemented.
	AppendsFirst() bool
	// AppendFirst is Append on the condition that each FirstDelivery given
	// holds, checked in the append's own transaction under its write lock,
	// so that nothing recorded meanwhile slips between the check and the
	// write: a first delivery learns that it was one from its append,
	// without a lookup beforehand. When one does not hold it writes nothing
	// and returns an error wrapping ErrNotFirst.
	AppendFirst(ctx context.Context, firsts []FirstDelivery, events ...*Event) (inserted []bool, err error)

	// Events returns the events matching f, oldest first.
	Events(ctx context.Context, f Filter) ([]Event, error)
	// Event returns one event by ID, or ErrNotFound.
	Event(ctx context.Context, id string) (Event, error)
	// CountEvents counts the events of a filter in the database (its Limit
	// and AfterSeq ignored) instead of reading them back.
	CountEvents(ctx context.Context, f Filter) (int64, error)
	// LatestOf finds an item's Latest by its correlation id in the read
	// model, one point lookup; false when the item has no event with a
	// destination, or the ledger keeps no read model to ask.
	LatestOf(ctx context.Context, correlationID string) (Latest, bool, error)
	// LatestOfEach is LatestOf for several items in one query (an item
	// with none is missing from the map). A GroupCommit sends the lookups
	// that waited while another was under way together, as it does
	// appends: for a ledger across a network, one round trip where there
	// were as many as callers.
	LatestOfEach(ctx context.Context, correlationIDs []string) (map[string]Latest, error)

	// The audit half (Guards, RecordedHead, Walk, WalkFrom,
	// CheckReadModel): see Auditor.
	Auditor

	// Ping reports whether the ledger is reachable.
	Ping(ctx context.Context) error
	Close() error
}

// The parts of a Ledger that code taking less than a whole ledger names.
// Every Ledger has them all: they are not capabilities to test for.
type (
	// Counter counts events in the database.
	Counter interface {
		CountEvents(ctx context.Context, f Filter) (int64, error)
	}
	// LatestLookup finds an item's Latest.
	LatestLookup interface {
		LatestOf(ctx context.Context, correlationID string) (Latest, bool, error)
	}
	// LatestEachLookup finds several items' Latest at once.
	LatestEachLookup interface {
		LatestLookup
		LatestOfEach(ctx context.Context, correlationIDs []string) (map[string]Latest, error)
	}
	// FirstAppender appends on a first delivery's conditions.
	FirstAppender interface {
		AppendsFirst() bool
		AppendFirst(ctx context.Context, firsts []FirstDelivery, events ...*Event) (inserted []bool, err error)
	}
)

// Ledger errors.
var (
	// ErrNotFound: no event with that id.
	ErrNotFound = errors.New("premis: event not found")
	// ErrBusy: the ledger is temporarily unable to write (locked, restarting).
	// A transient condition: retry.
	ErrBusy = errors.New("premis: ledger busy")
	// ErrTampered: the ledger fails a tamper check on open or append: an
	// append-only guard (trigger) is missing, disabled or altered, or the
	// recorded chain head is not the last stored event. Not transient: a
	// person must look (lazaret ledger verify) and restore a trusted copy.
	ErrTampered = errors.New("premis: ledger tampered")
	// ErrNotLedger: what a read was pointed at is not a ledger this program
	// can read (another program's database, a ledger too old to read
	// without upgrading it, which only Open does).
	ErrNotLedger = errors.New("cannot be read as a lazaret ledger")
	// ErrNotFirst: an append on a FirstDelivery found the item's latest
	// event to be another than its submission by that task (something was
	// recorded since, or it was submitted again, or never), and wrote
	// nothing. Not a failure of the ledger: the caller reads the item's
	// history and decides from it.
	ErrNotFirst = errors.New("premis: not the first delivery of the task")
	// ErrNotImplemented: the ledger cannot do what was asked (a test
	// double, or a ledger without a read model asked to check a first
	// delivery). The caller takes another path or reports it; it never
	// means the ledger is broken.
	ErrNotImplemented = errors.New("premis: not implemented by this ledger")
)

// recordID is the id of the ledger row e is stored in: its record's, for a
// step (see Step), else its own.
func (e *Event) recordID() string {
	if e.Record != "" {
		return e.Record
	}
	return e.ID
}

// pageSize is how many events EachEvent reads at a time.
const pageSize = 1000

// EachEvent calls fn with every event of l that f selects, in ledger (seq)
// order, reading them a page at a time by keyset pagination from
// f.AfterSeq, so that a listing of any length holds one page; f.Limit, when
// set, is how many in all. Each page is a read of its own, not one
// snapshot: events appended while it runs are handed over when they fall
// after the last page (and with f.Latest an item whose outcome moves on
// may be handed over twice). A page that does not continue the last (a seq
// not after it) is an error, not a loop. An error from fn stops it and is
// returned.
func EachEvent(ctx context.Context, l Ledger, f Filter, fn func(Event) error) error {
	total, n, last := f.Limit, 0, f.AfterSeq
	record := "" // the id of the record the last event was stored in
	for {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		f.AfterSeq, f.Limit = last, pageSize
		if total > 0 {
			f.Limit = min(pageSize, total-n)
		}
		evs, err := l.Events(ctx, f)
		if err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return err
		}
		if total > 0 {
			evs = evs[:min(len(evs), total-n)] // a ledger that overshot the page
		}
		for _, e := range evs {
			// The events of one record (its steps, then itself) share
			// its seq; any other seq must come after the last.
			if e.Seq < last || (e.Seq == last && e.recordID() != record) {
				return fmt.Errorf("premis: the ledger returned seq %d after %d: out of order", e.Seq, last)
			}
			if err := fn(e); err != nil {
				return err
			}
			last, record = e.Seq, e.recordID()
		}
		if n += len(evs); len(evs) < f.Limit || (total > 0 && n >= total) {
			return nil
		}
	}
}
