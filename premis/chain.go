package premis

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The hash chain. Every ledger chains its events in append order: each
// stored row holds prev_hash, the hash of the row stored before it
// (ChainGenesis for the first), and hash = ChainHash(prev_hash, event).
// Changing, removing, reordering or replacing a row breaks the chain at that
// row or the one after it. A one-row head record (event count and last hash),
// written in the same transaction as every append, catches a chain cut short
// at its end (DELETE of the newest rows, TRUNCATE).
//
// The chain is unkeyed: someone who can write the database, knows this
// encoding and rewrites every later row and the head as well leaves a
// consistent chain. Record the head elsewhere (lazaret ledger verify prints
// it, an export with ExportOptions.Head records it, and every exported event carries its own
// hash) and pass it back to Verify as an anchor to catch that too.

// ChainGenesis is the prev_hash of the first event of every ledger: 64 zeros.
const ChainGenesis = "0000000000000000000000000000000000000000000000000000000000000000"

// chainDomain opens every hashed message, so the encoding can change
// without ever producing the hash of an earlier version.
const chainDomain = "lazaret/premis-chain/1"

// chainTime is how the datetime column is hashed: UTC, nine fraction digits.
const chainTime = "2006-01-02T15:04:05.000000000Z"

// ChainHash is the hash of e stored after an event whose hash is prev: the
// lowercase hex SHA-256 of
//
//	"lazaret/premis-chain/1" 0x00
//	field(prev)
//	field(c) for every column c of ledgersql.Columns, in that order:
//	  id key type datetime detail outcome note class code message
//	  byte_offset page segment element component tag destination
//	  object_id batch_id correlation_id kind sha256 size puid path
//	  attempt retries task_id replay_of agent operator envelope
//	and, only for an event with members (Event.Members), which the
//	members column stores,
//	  int(number of members), then for each: text(object_id) int(number)
//	  int(offset) text(type)
//	and, only for a record with steps (Event.Steps), which the steps
//	column stores,
//	  text("steps") int(number of steps), then for each: text(type)
//	  text(outcome) text(detail) text(note) text(puid)
//
// where field is one of
//
//	0x00                                       NULL (byte_offset, page when absent)
//	0x01 <uint64 big-endian length> <bytes>    text, as stored (UTF-8), and the envelope
//	                                           (as Event.Envelope holds it: a ledger may
//	                                           store it compressed, and reads it back so)
//	0x02 <int64 big-endian, two's complement>  integer
//
// The datetime is text: UTC with nine fraction digits
// ("2006-01-02T15:04:05.000000000Z"), whatever the database's own
// representation. A NULL and an empty envelope hash alike (both length 0).
// Seq, prev_hash and hash are not columns of the message: order is bound by
// the prev links, and PostgreSQL sequences leave gaps.
func ChainHash(prev string, e *Event) string {
	c := chainWriters.Get().(*chainWriter)
	defer c.release()
	c.b = append(c.b[:0], chainDomain...)
	c.b = append(c.b, 0)
	c.text(prev)
	c.text(e.ID)
	c.text(e.Key)
	c.text(string(e.Type))
	var at [40]byte
	c.bytes(e.DateTime.UTC().AppendFormat(at[:0], chainTime))
	c.text(e.Detail)
	c.text(string(e.Outcome))
	c.text(e.Note)
	c.text(string(e.Class))
	c.text(e.Code)
	c.text(e.Message)
	if e.Offset != nil {
		c.int(*e.Offset)
	} else {
		c.null()
	}
	if e.Page != nil {
		c.int(int64(*e.Page))
	} else {
		c.null()
	}
	c.int(int64(e.Segment))
	c.int(int64(e.Element))
	c.int(int64(e.Component))
	c.text(e.Tag)
	c.text(string(e.Destination))
	c.text(e.ObjectID)
	c.text(e.BatchID)
	c.text(e.CorrelationID)
	c.text(e.Kind)
	c.text(e.SHA256)
	c.int(e.Size)
	c.text(e.PUID)
	c.text(e.Path)
	c.int(int64(e.Attempt))
	c.int(int64(e.Retries))
	c.text(e.TaskID)
	c.text(e.ReplayOf)
	c.text(e.Agent)
	c.text(e.Operator)
	c.bytes(e.Envelope)
	if len(e.Members) > 0 {
		// Hashed only when present: every event stored before members
		// existed keeps its hash.
		c.int(int64(len(e.Members)))
		for _, m := range e.Members {
			c.text(m.ObjectID)
			c.int(int64(m.Number))
			c.int(m.Offset)
			c.text(m.Type)
		}
	}
	if len(e.Steps) > 0 {
		// Likewise only when present. The marker keeps a record's steps
		// from ever hashing as members would.
		c.text("steps")
		c.int(int64(len(e.Steps)))
		for _, s := range e.Steps {
			c.text(string(s.Type))
			c.text(string(s.Outcome))
			c.text(s.Detail)
			c.text(s.Note)
			c.text(s.PUID)
		}
	}
	sum := sha256.Sum256(c.b)
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], sum[:])
	return string(out[:])
}

// chainWriter gathers the message ChainHash hashes, in one buffer hashed
// at once: written field by field into a hash.Hash, each string was copied
// to the heap on its way (some 40 allocations an event).
type chainWriter struct{ b []byte }

// chainWriters keeps the buffers between appends.
var chainWriters = sync.Pool{New: func() any { return &chainWriter{b: make([]byte, 0, 1024)} }}

// release returns c to chainWriters, unless an event with many members
// grew its buffer past what is worth keeping.
func (c *chainWriter) release() {
	if cap(c.b) <= 64<<10 {
		chainWriters.Put(c)
	}
}

func (c *chainWriter) null() { c.b = append(c.b, 0) }

func (c *chainWriter) int(v int64) {
	c.b = append(c.b, 2)
	c.b = binary.BigEndian.AppendUint64(c.b, uint64(v))
}

func (c *chainWriter) text(s string) {
	c.b = append(c.b, 1)
	c.b = binary.BigEndian.AppendUint64(c.b, uint64(len(s)))
	c.b = append(c.b, s...)
}

func (c *chainWriter) bytes(b []byte) {
	c.b = append(c.b, 1)
	c.b = binary.BigEndian.AppendUint64(c.b, uint64(len(b)))
	c.b = append(c.b, b...)
}

// Head is a point of a ledger's chain: Count events stored, the last with
// hash Hash. The ledger keeps its current head in a one-row record; an
// exported or printed head can be passed back to Verify as an anchor.
type Head struct {
	Count int64  `json:"count"`
	Hash  string `json:"hash"`
}

// String is "COUNT:HASH", the form ParseHead reads.
func (h Head) String() string { return fmt.Sprintf("%d:%s", h.Count, h.Hash) }

// ParseHead reads a head written as "COUNT:HASH".
func ParseHead(s string) (Head, error) {
	n, hs, ok := strings.Cut(s, ":")
	var h Head
	if !ok {
		return h, fmt.Errorf("head %q: want COUNT:HASH", s)
	}
	c, err := strconv.ParseInt(n, 10, 64)
	if err != nil || c < 0 {
		return h, fmt.Errorf("head %q: count %q is not a number of events", s, n)
	}
	h.Count = c
	if b, err := hex.DecodeString(hs); err != nil || len(b) != sha256.Size {
		return h, fmt.Errorf("head %q: hash is not 64 hex digits", s)
	}
	h.Hash = strings.ToLower(hs)
	return h, nil
}

// GuardError names the append-only guards (triggers) of a ledger that are
// missing, disabled or altered. It wraps ErrTampered.
type GuardError struct {
	Ledger string   // what was opened, for the message: "sqlite ledger PATH"
	Guards []string // "events_no_update: missing", one per guard
}

func (e *GuardError) Error() string {
	return fmt.Sprintf("%s: %v: append-only guards not in place: %s (they are never re-created on open: run lazaret ledger verify, then restore a trusted copy)",
		e.Ledger, ErrTampered, strings.Join(e.Guards, "; "))
}

func (e *GuardError) Unwrap() error { return ErrTampered }

// Auditor is what Verify reads from a ledger: the audit half of Ledger,
// and all a ledger opened for audit only (Backend.OpenAudit) has.
type Auditor interface {
	// Guards returns nil when every append-only guard is in place, a
	// *GuardError naming those that are not, or another error when they
	// cannot be read.
	Guards(ctx context.Context) error
	// RecordedHead returns the head record; ok is false when it is gone.
	RecordedHead(ctx context.Context) (h Head, ok bool, err error)
	// Walk calls fn for every stored row in append (seq) order, read in one
	// snapshot, with the chain fields filled in. A row that does not decode
	// comes with its decoding error, Seq, PrevHash, Hash and as much of the
	// rest as could be read. An error from fn stops the walk and is returned.
	Walk(ctx context.Context, fn func(e Event, err error) error) error
	// WalkFrom is Walk over the rows stored at seq or after.
	WalkFrom(ctx context.Context, seq int64, fn func(e Event, err error) error) error
	// CheckReadModel says how the read model (each item's latest outcome,
	// derived from the events) disagrees with the events, or "" when it
	// agrees; a ledger that keeps none says "".
	CheckReadModel(ctx context.Context) (string, error)
}

// ReadModelAuditor is the read model's check alone (every Auditor has it).
type ReadModelAuditor interface {
	CheckReadModel(ctx context.Context) (string, error)
}

// ProblemKind is what Verify found wrong with a ledger.
type ProblemKind string

const (
	// ProblemGuard: an append-only guard (trigger) is missing, disabled or
	// altered.
	ProblemGuard ProblemKind = "guard"
	// ProblemLink: a row's stored hash is not the hash of its columns, or
	// its prev_hash is not its predecessor's hash: the row was changed,
	// replaced or written past Append, or rows before it were removed.
	ProblemLink ProblemKind = "link"
	// ProblemTruncated: fewer events are stored than the head (or an
	// anchor) records: the newest were removed.
	ProblemTruncated ProblemKind = "truncated"
	// ProblemHead: the head record is gone, or disagrees with the chain
	// (the event at its count has another hash, or events follow it that
	// no append recorded).
	ProblemHead ProblemKind = "head"
	// ProblemAnchor: an anchor passed to Verify is not on the chain.
	ProblemAnchor ProblemKind = "anchor"
	// ProblemCheckpoint: a signed checkpoint (kept outside the database,
	// see CheckpointLog) is not on the chain: the event at its count has
	// another hash (the chain was rewritten and recomputed), the ledger's
	// first event is not the one the checkpoints name, or a line of the
	// checkpoint log does not read or its signature does not verify.
	ProblemCheckpoint ProblemKind = "checkpoint"
	// ProblemWitness: a checkpoint published to a witness (a place the
	// ledger's host cannot rewrite, see Witness) is not on the chain: the
	// ledger counts fewer events than it (restored from a backup, a promoted
	// replica that lagged, its newest events removed, even with the
	// checkpoint log rolled back with it), or has another event at its count.
	ProblemWitness ProblemKind = "witness"
	// ProblemReadModel: the read model (each item's latest outcome, which
	// the listings answer from) disagrees with the events.
	ProblemReadModel ProblemKind = "read-model"
)

// ProblemKinds lists every problem kind, in the order Verify reports them.
func ProblemKinds() []ProblemKind {
	return []ProblemKind{ProblemLink, ProblemTruncated, ProblemHead, ProblemAnchor, ProblemCheckpoint, ProblemWitness, ProblemGuard, ProblemReadModel}
}

// Problem is one thing Verify found wrong. Seq and EventID name the row,
// when there is one.
type Problem struct {
	Kind    ProblemKind `json:"kind"`
	Seq     int64       `json:"seq,omitempty"`
	EventID string      `json:"event_id,omitempty"`
	Detail  string      `json:"detail"`
}

func (p Problem) String() string {
	switch {
	case p.EventID != "":
		return fmt.Sprintf("%s: seq %d (event %s): %s", p.Kind, p.Seq, p.EventID, p.Detail)
	case p.Seq != 0:
		return fmt.Sprintf("%s: seq %d: %s", p.Kind, p.Seq, p.Detail)
	}
	return fmt.Sprintf("%s: %s", p.Kind, p.Detail)
}

// Verification is the result of Verify.
type Verification struct {
	Events      int64       `json:"events"`                  // events on the chain, to the last row walked
	From        int64       `json:"from,omitempty"`          // events before the walk began: 0 for a full walk, else the point an incremental check (Verifier) started after
	Seq         int64       `json:"seq,omitempty"`           // seq of the last row walked
	Head        string      `json:"head"`                    // stored hash of the last row walked (ChainGenesis when none)
	First       string      `json:"first,omitempty"`         // stored hash of the first event, when the walk read it: the ledger's identity in checkpoints
	Checkpoint  *Checkpoint `json:"checkpoint,omitempty"`    // the newest signed checkpoint checked against, if any
	Recorded    *Head       `json:"recorded_head,omitempty"` // the head record, as read after the walk
	BrokenLinks int         `json:"broken_links,omitempty"`  // rows with a ProblemLink; only the first is in Problems
	Problems    []Problem   `json:"problems,omitempty"`      // what was forged first (links, truncation, head, anchors), then the guards
	// Unanchored: the ledger holds events and the checkpoint log holds no
	// checkpoint of it (one of Problems; see VerifyCheckpointed).
	Unanchored bool `json:"unanchored,omitempty"`
	// Witness is the witness's checkpoint the chain was held to, if any;
	// Reanchored the witness's latest re-anchoring, if any.
	Witness    *Checkpoint `json:"witness,omitempty"`
	Reanchored *Checkpoint `json:"reanchored,omitempty"`
	// Recovered counts the events lazaret ledger recover recorded
	// (RecoveryDetail), RecoveredFirst the first of them, by the walk.
	Recovered      int64  `json:"recovered,omitempty"`
	RecoveredFirst string `json:"recovered_first,omitempty"` // its event id
	RecoveredSeq   int64  `json:"recovered_seq,omitempty"`
}

// Intact reports whether Verify found nothing wrong.
func (v *Verification) Intact() bool { return len(v.Problems) == 0 }

// String is the one-line summary: "N events, chain intact, head H", or the
// count of problems and the first of them.
func (v *Verification) String() string {
	if v.Intact() {
		cp := ""
		if c := v.Checkpoint; c != nil {
			cp = fmt.Sprintf(", on the signed checkpoint of %s (%d events)", c.Time.UTC().Format(time.RFC3339), c.Count)
		}
		if c := v.Witness; c != nil {
			cp += fmt.Sprintf(", and on the witness's of %s (%d events)", c.Time.UTC().Format(time.RFC3339), c.Count)
		}
		if c := v.Reanchored; c != nil {
			cp += fmt.Sprintf("; the witness was re-anchored at %s (%d events)", c.Time.UTC().Format(time.RFC3339), c.Count)
		}
		return fmt.Sprintf("%d events, chain intact, head %s%s", v.Events, v.Head, cp)
	}
	return fmt.Sprintf("%d events, %d problem(s), first: %s", v.Events, len(v.Problems), v.Problems[0])
}

// Point is a place on a ledger's chain: its Count-th event, stored at Seq
// with hash Hash. The zero Point is the genesis, before the first event.
type Point struct {
	Seq   int64  `json:"seq"`
	Count int64  `json:"count"`
	Hash  string `json:"hash"`
}

// Head is the point's head (count and hash).
func (p Point) Head() Head { return Head{Count: p.Count, Hash: p.Hash} }

// SeqWalker is an Auditor that can walk from a seq on: what an incremental
// check (Verifier) reads. The SQLite and PostgreSQL ledgers implement it.
type SeqWalker interface {
	WalkFrom(ctx context.Context, seq int64, fn func(e Event, err error) error) error
}

// Verify checks a ledger: its append-only guards; every row's hash and link,
// in append order; and the chain against the head record and any anchors
// (heads recorded earlier, elsewhere). It reads the head before and after
// the walk, so events appended meanwhile are not mistaken for tampering. It
// returns an error only when the ledger cannot be read; what is wrong with it
// is in the Verification's Problems, the first broken link (by seq) first
// among the links.
func Verify(ctx context.Context, a Auditor, anchors ...Head) (*Verification, error) {
	return verify(ctx, a, verifyRun{anchors: anchors, readModel: true})
}

// VerifyCheckpointed is Verify, and checks the chain against the newest
// signed checkpoint of cps as well (CheckpointLog.Read): the chain must
// hold as many events as it counts, have its hash at its count, and start
// with the first event it names; a log line that does not read or verify
// is a problem too. A ledger wiped, cut short (head moved back) or
// rewritten and recomputed after the checkpoint was taken fails.
//
// A ledger that holds events while the log holds no checkpoint of it (the
// log is missing, empty, or holds only failed entries) is not intact
// either: a log removed with the ledger rewritten meanwhile would otherwise
// verify. The first checkpoint of a ledger that has events is an explicit
// act (lazaret ledger checkpoint --init); workers that sign checkpoints
// start a log on their own as the ledger's first events are appended.
func VerifyCheckpointed(ctx context.Context, a Auditor, cps *Checkpoints, anchors ...Head) (*Verification, error) {
	return verify(ctx, a, verifyRun{anchors: anchors, checkpoints: cps, readModel: true, requireCheckpoint: cps != nil})
}

// VerifyWitnessed is VerifyCheckpointed (cps may be nil) that also holds
// the chain to the newest checkpoint a witness holds (w, nil when it holds
// none, and its problems): the ledger must count at least its events and
// have its hash at its count. A ledger and its checkpoint log rolled back
// together pass VerifyCheckpointed, and fail here.
func VerifyWitnessed(ctx context.Context, a Auditor, cps *Checkpoints, w *Witnessed, anchors ...Head) (*Verification, error) {
	return verify(ctx, a, verifyRun{anchors: anchors, checkpoints: cps, readModel: true, requireCheckpoint: cps != nil, witness: w})
}

// verifyRun is what one verification checks.
type verifyRun struct {
	// from is where the walk starts: its row is read again and must still
	// have its hash, and the rows after it are checked. Zero: a full walk.
	from     Point
	fromWhat string
	anchors  []Head
	// checkpoints, when set: its newest is checked as an anchor is, and
	// its problems (unreadable or forged lines) are reported.
	checkpoints *Checkpoints
	readModel   bool
	// requireCheckpoint: a ledger with events and no checkpoint in
	// checkpoints is a problem (see VerifyCheckpointed).
	requireCheckpoint bool
	// witness, when set, is what a witness holds (see VerifyWitnessed).
	witness *Witnessed
}

// RecoveryDetail opens the detail of every event lazaret ledger recover
// records (an item re-derived from the broker after the ledger went back
// in time): a verification names the first and counts them
// (Verification.Recovered), so that a ledger behind its witness says
// whether it was recovered since.
const RecoveryDetail = "re-derived by lazaret ledger recover"

// LedgerID is the identity of a's ledger in checkpoints and witnesses: the
// stored hash of its first event ("" when it has none).
func LedgerID(ctx context.Context, a Auditor) (string, error) { return firstHash(ctx, a) }

// errFirstRow stops the one-row walk of firstHash.
var errFirstRow = errors.New("premis: first row read")

// firstHash is the stored hash of a's first event ("" when it has none).
func firstHash(ctx context.Context, a Auditor) (string, error) {
	var h string
	fn := func(e Event, _ error) error {
		h = e.Hash
		return errFirstRow
	}
	if err := a.WalkFrom(ctx, 0, fn); err != nil && !errors.Is(err, errFirstRow) {
		return "", err
	}
	return h, nil
}

func verify(ctx context.Context, a Auditor, run verifyRun) (*Verification, error) {
	from := run.from
	v := &Verification{Head: ChainGenesis, From: from.Count, Events: from.Count, Seq: from.Seq}
	if from.Count > 0 {
		v.Head = from.Hash
	}
	add := func(p Problem) { v.Problems = append(v.Problems, p) }
	if err := a.Guards(ctx); err != nil {
		var ge *GuardError
		if !errors.As(err, &ge) {
			return nil, err
		}
		for _, g := range ge.Guards {
			add(Problem{Kind: ProblemGuard, Detail: g})
		}
	}
	before, hadHead, err := a.RecordedHead(ctx)
	if err != nil {
		return nil, err
	}
	type check struct {
		Head
		kind ProblemKind
		what string
	}
	var checks []check
	if hadHead {
		checks = append(checks, check{before, ProblemHead, "the head record"})
	}
	for _, h := range run.anchors {
		checks = append(checks, check{h, ProblemAnchor, "anchor " + h.String()})
	}
	identity := ""
	if cps := run.checkpoints; cps != nil {
		for _, p := range cps.Problems {
			add(Problem{Kind: ProblemCheckpoint, Detail: p.Error()})
		}
		if c := cps.Newest(); c != nil {
			v.Checkpoint = &c.Checkpoint
			checks = append(checks, check{Head{Count: c.Count, Hash: c.Hash}, ProblemCheckpoint, c.what()})
			identity = c.Ledger
			if from.Count > 0 && identity != "" {
				// An incremental walk does not read the first event.
				first, err := firstHash(ctx, a)
				if err != nil {
					return nil, err
				}
				if first != "" && first != identity {
					add(identityProblem(c, first))
				}
				identity = ""
			}
		}
	}
	if w := run.witness; w != nil {
		for _, p := range w.Problems {
			add(Problem{Kind: ProblemWitness, Detail: p.Error()})
		}
		if w.Reanchored != nil {
			v.Reanchored = &w.Reanchored.Checkpoint
		}
		if w.Newest != nil {
			v.Witness = &w.Newest.Checkpoint
			checks = append(checks, check{Head{Count: w.Newest.Count, Hash: w.Newest.Hash}, ProblemWitness, w.Newest.what()})
		} else {
			add(Problem{Kind: ProblemWitness, Detail: fmt.Sprintf("the witness %s holds no checkpoint signed with this key: publish one (lazaret ledger checkpoint --publish %s)", w.Dir, w.Dir)})
		}
	}
	sort.SliceStable(checks, func(i, j int) bool { return checks[i].Count < checks[j].Count })
	at := func(n int64, hash string, e *Event) {
		for len(checks) > 0 && checks[0].Count <= n {
			c := checks[0]
			checks = checks[1:]
			if c.Count == n && c.Hash != hash {
				detail := fmt.Sprintf("%s says event %d has hash %s; it has %s", c.what, c.Count, c.Hash, hash)
				switch c.kind {
				case ProblemCheckpoint:
					detail += ": the chain was rewritten and its hashes recomputed since"
				case ProblemWitness:
					detail += ": the ledger went back in time and was written on since (restored from a backup, or a replica that lagged was promoted), or the chain was rewritten and recomputed"
				}
				p := Problem{Kind: c.kind, Detail: detail}
				if e != nil {
					p.Seq, p.EventID = e.Seq, e.ID
				}
				add(p)
			}
		}
	}
	// Checks at or before the point a walk starts from are not checkable
	// here: at drops them (a full walk starts from the genesis).
	at(from.Count, v.Head, nil)
	prev, prevSeq := v.Head, from.Seq
	expectFrom, lost := from.Count > 0, false
	gone := func() {
		lost = true
		add(Problem{Kind: ProblemCheckpoint, Seq: from.Seq, Detail: fmt.Sprintf("%s (seq %d, hash %s) is gone: events were removed", run.fromWhat, from.Seq, from.Hash)})
	}
	fn := func(e Event, derr error) error {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		if expectFrom {
			expectFrom = false
			switch {
			case e.Seq != from.Seq:
				gone()
			case derr != nil || e.Hash != from.Hash || ChainHash(e.PrevHash, &e) != e.Hash:
				add(Problem{Kind: ProblemCheckpoint, Seq: e.Seq, EventID: e.ID, Detail: fmt.Sprintf("%s (seq %d) had hash %s; it now has %s: it was rewritten since", run.fromWhat, from.Seq, from.Hash, e.Hash)})
				prev, v.Head = e.Hash, e.Hash
				return nil
			default:
				return nil // the point itself, as verified
			}
		}
		v.Events++
		var what string
		switch {
		case derr != nil:
			what = fmt.Sprintf("the row does not decode (%v): a column holds a value the ledger never writes", derr)
		case e.Hash == "" || e.PrevHash == "":
			what = fmt.Sprintf("no chain fields (prev_hash %q, hash %q): the row was written past the ledger (INSERT OR REPLACE, or an INSERT outside Append)", e.PrevHash, e.Hash)
		case e.PrevHash != prev && prevSeq == 0:
			what = fmt.Sprintf("prev_hash is %s, want the genesis hash for the first event: events before it were removed", e.PrevHash)
		case e.PrevHash != prev:
			what = fmt.Sprintf("prev_hash is %s, but the event before it (seq %d) has hash %s: events between were removed, or one was replaced",
				e.PrevHash, prevSeq, prev)
		default:
			if h := ChainHash(e.PrevHash, &e); h != e.Hash {
				what = fmt.Sprintf("its columns hash to %s, but the stored hash is %s: the row was changed after it was written", h, e.Hash)
			}
		}
		if what != "" {
			if v.BrokenLinks == 0 {
				add(Problem{Kind: ProblemLink, Seq: e.Seq, EventID: e.ID, Detail: what})
			}
			v.BrokenLinks++
		}
		if v.Events == 1 {
			v.First = e.Hash
			if identity != "" && e.Hash != identity {
				add(identityProblem(run.checkpoints.Newest(), e.Hash))
			}
		}
		prev, prevSeq = e.Hash, e.Seq
		v.Head, v.Seq = e.Hash, e.Seq
		if derr == nil && strings.HasPrefix(e.Detail, RecoveryDetail) {
			if v.Recovered++; v.Recovered == 1 {
				v.RecoveredFirst, v.RecoveredSeq = e.ID, e.Seq
			}
		}
		at(v.Events, e.Hash, &e)
		return nil
	}
	if from.Count > 0 {
		err = a.WalkFrom(ctx, from.Seq, fn)
		if err == nil && expectFrom {
			gone()
		}
	} else {
		err = a.Walk(ctx, fn)
	}
	if err != nil {
		return nil, err
	}
	for _, c := range checks {
		switch c.kind {
		case ProblemWitness:
			// Said plainly: a ledger behind its witness most often went
			// back in time, whole, rather than being cut by a hand.
			add(Problem{Kind: ProblemWitness, Detail: fmt.Sprintf("%d events stored, but %s counts %d: the ledger went back in time (restored from a backup, or a replica that lagged was promoted), or its newest events were removed; the checkpoint log cannot show this when it went back with it. Re-run what was lost (lazaret reconcile-broker, lazaret ledger recover), then re-anchor the witness explicitly (lazaret ledger checkpoint --publish DIR --reanchor)",
				v.Events, c.what, c.Count)})
		case ProblemAnchor:
			add(Problem{Kind: ProblemAnchor, Detail: fmt.Sprintf("%d events stored, but %s counts %d: the newest were removed", v.Events, c.what, c.Count)})
		default:
			add(Problem{Kind: ProblemTruncated, Detail: fmt.Sprintf("%d events stored, but %s counts %d: the newest were removed, "+
				"or the ledger went back in time (restored from a backup, a replica promoted before it received them: see lazaret ledger recover)",
				v.Events, c.what, c.Count)})
		}
	}
	if v.Recovered > 0 {
		// Said with every problem the witness found: the ledger went back,
		// and what was lost was re-derived since; what is left to do is
		// the explicit re-anchoring.
		for i := range v.Problems {
			if v.Problems[i].Kind == ProblemWitness {
				v.Problems[i].Detail += fmt.Sprintf(". The ledger records a recovery since: %d items re-derived by lazaret ledger recover, the first event %s (seq %d)",
					v.Recovered, v.RecoveredFirst, v.RecoveredSeq)
			}
		}
	}
	if cps := run.checkpoints; run.requireCheckpoint && cps != nil && cps.Newest() == nil && v.Events > 0 {
		v.Unanchored = true
		add(Problem{Kind: ProblemCheckpoint, Detail: fmt.Sprintf("the checkpoint log %s holds no checkpoint, but the ledger holds %d events: a log removed, emptied or never written, so nothing outside the database vouches for the chain (a ledger rewritten meanwhile would verify). If checkpoints were never kept for this ledger, anchor it: lazaret ledger checkpoint --init", cps.Path, v.Events)})
	}
	after, hasHead, err := a.RecordedHead(ctx)
	if err != nil {
		return nil, err
	}
	switch {
	case !hasHead:
		add(Problem{Kind: ProblemHead, Detail: "the head record is gone"})
	case lost:
		// Where the chain stands is not known: the point is gone.
	case after.Count < v.Events:
		add(Problem{Kind: ProblemHead, Detail: fmt.Sprintf("%d events stored, but the head record counts %d: the last %d were written past Append",
			v.Events, after.Count, v.Events-after.Count)})
	case after.Count == v.Events && after.Hash != v.Head && !(hadHead && after == before): // else reported already
		add(Problem{Kind: ProblemHead, Detail: fmt.Sprintf("the head record says the last event has hash %s; it has %s", after.Hash, v.Head)})
	}
	if hasHead {
		v.Recorded = &after
	}
	if run.readModel {
		detail, err := a.CheckReadModel(ctx)
		if err != nil {
			return nil, err
		}
		if detail != "" {
			add(Problem{Kind: ProblemReadModel, Detail: detail})
		}
	}
	rank := func(k ProblemKind) int { return slices.Index(ProblemKinds(), k) }
	sort.SliceStable(v.Problems, func(i, j int) bool { return rank(v.Problems[i].Kind) < rank(v.Problems[j].Kind) })
	return v, nil
}

func identityProblem(c *CheckpointEntry, first string) Problem {
	return Problem{Kind: ProblemCheckpoint, Detail: fmt.Sprintf("%s is of the ledger whose first event has hash %s; this ledger's first event has hash %s: the first event was rewritten, or the checkpoint log is another ledger's",
		c.what(), c.Ledger, first)}
}
