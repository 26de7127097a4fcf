package validate

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/lazaret/lazaret/edifact"
)

// MessageResult is the verdict on one message of an interchange.
type MessageResult struct {
	Ref, Type string
	Number    int   // 1-based in the interchange
	Offset    int64 // of UNH, from the start of the file
	// Interchange is the number of the message's interchange in its file
	// (1-based; a file may hold several, see edifact.Interchange.Next):
	// two interchanges may reuse a message reference and Number, never
	// both with this.
	Interchange int
	Warnings    []Warning
	Err         error // joined *RuleError, semantic or regulatory; nil when it passes
}

// InterchangeResult is what CheckInterchange found: the envelope, how many
// messages the rules checked and failed, and, for a sound interchange, what
// EachMessage needs to hand over every message's verdict. It keeps the
// verdicts themselves only while they fit EDIRules.MaxRetainedBytes;
// beyond that it keeps a digest per chunk of verdicts and EachMessage reads
// the file a second time, so that an interchange of any number of messages
// is checked in bounded memory.
type InterchangeResult struct {
	// Interchange is the file's first interchange; its Next the others
	// (each judged on its own: its counts, its messages, its replies).
	Interchange *edifact.Interchange
	// Checked is how many messages the rules checked (every one, or those
	// only names); Failed how many of those failed them.
	Checked, Failed int
	// Fault is the header (no segments) of the message whose structural
	// error rejected the interchange, for CONTRL; nil otherwise.
	Fault *edifact.Message

	sound  bool // CheckInterchange passed the envelope: EachMessage may run
	src    Source
	size   int64
	sha    string // of the first read
	regs   *Registries
	rules  EDIRules
	only   MessageKey
	kept   verdictLog // every verdict, while they fit the budget
	reread bool       // they did not: EachMessage reads the file again
	// chunks is the digest of every chunk of verdicts (see chunker): the
	// second read must find the same, or the file changed in between.
	// Taken only once the verdicts do not fit the budget.
	chunks [][sha256.Size]byte
	// plain holds the plainness of the i-th message checked in bits 2i
	// and 2i+1: the second read hands a plain verdict over without
	// checking its message again (two bits a message).
	plain []uint64
	// starts are the offsets at which the file's interchanges after the
	// first begin, in order (see interchangeAt).
	starts []int64
}

func (r *InterchangeResult) setPlain(i int, p plainness) {
	for len(r.plain) <= i/32 {
		r.plain = append(r.plain, 0)
	}
	r.plain[i/32] |= uint64(p) << (2 * (i % 32))
}

func (r *InterchangeResult) plainAt(i int) plainness {
	if i/32 >= len(r.plain) {
		return notPlain
	}
	return plainness(r.plain[i/32] >> (2 * (i % 32)) & 3)
}

// Contrl builds the CONTRL report for a rejected (or accepted) interchange
// from the error CheckInterchange returned. A rejection (UCI action 4)
// rejects every message with it, so the report names only the message at
// fault (UCM, with UCS and UCD for the position); an acknowledgement (UCI
// action 7) acknowledges every message that it does not name. Its size
// does not grow with the interchange.
//
// A rejection answers the interchange the error is in: of a file of
// several, the last one read for a syntax error (the parse stops at the
// first), the Fault's for a structural rule.
func (r *InterchangeResult) Contrl(err error) edifact.ContrlReport {
	ic := r.Answered(err)
	var se *edifact.SyntaxError
	rep := edifact.ContrlReport{Interchange: ic}
	switch {
	case ic != nil && ic.Open != nil:
		rep.Messages = []edifact.Message{*ic.Open} // the message the error stopped in
	case r.Fault != nil:
		rep.Messages = []edifact.Message{*r.Fault}
	}
	var re *RuleError
	switch {
	case errors.As(err, &se):
		rep.Err = se
	case errors.As(err, &re):
		code := re.Syntax
		if code == 0 {
			code = edifact.CodeUnspecified
		}
		rep.Err = &edifact.SyntaxError{Offset: re.Offset, Segment: re.Segment, Tag: re.Tag, Element: re.Element, Component: re.Component,
			Code: code, Message: re.Message, Err: errors.New(re.Reason)}
		if rep.Err.Segment == 0 {
			rep.Err.Segment = 1
		}
	}
	return rep
}

// Answered is the interchange of the file that Contrl(err) answers: the
// first of a file accepted; of one rejected, the last one read for a
// syntax error (the parse stops at the first), the Fault's for a
// structural rule. nil when no UNB could be read.
func (r *InterchangeResult) Answered(err error) *edifact.Interchange {
	ic := r.Interchange
	var se *edifact.SyntaxError
	switch {
	case ic == nil || r.sound:
	case r.Fault != nil && !errors.As(err, &se):
		for c := range ic.All() {
			if c.Number == r.Fault.Interchange {
				ic = c
			}
		}
	default:
		ic = ic.Last()
	}
	return ic
}

// CheckInterchange validates the UN/EDIFACT interchange at path: SHA-256
// while it parses (fixity against item when given), the envelope and its
// control counts, then every message through the structural, semantic and
// regulatory rules. An interchange-level failure (I/O, fixity, a syntax
// error, a structural rule such as a missing BGM, an unsupported syntax) is
// the returned error, wrapped in a *StageError; otherwise the result's
// EachMessage hands over the verdict on every message, in order. only,
// when not empty, restricts the message checks to the message with that
// reference (a replay).
func CheckInterchange(ctx context.Context, path string, item *Item, regs *Registries, rules EDIRules, only string) (*Report, *InterchangeResult, error) {
	return CheckInterchangeSource(ctx, Source{Path: path}, item, regs, rules, only)
}

// MessageKey names one message of a file of interchanges: its UNH
// reference (0062) in its interchange (1-based; 0 is the first). Two
// interchanges of one file may reuse a reference; a key names one of them.
type MessageKey struct {
	Interchange int
	Ref         string
}

// matches says whether m is the message k names; the zero key names none.
func (k MessageKey) matches(m *edifact.Message) bool {
	return k.Ref != "" && m.Ref == k.Ref && max(k.Interchange, 1) == m.Interchange
}

// String is the reference, after its interchange's number when that is
// not the first ("2#1").
func (k MessageKey) String() string {
	if k.Interchange <= 1 {
		return k.Ref
	}
	return fmt.Sprintf("%d#%s", k.Interchange, k.Ref)
}

// CheckInterchangeSource is CheckInterchange for a file opened through
// Open: beneath its root, no links, no FIFOs, never read past the size
// seen at open.
func CheckInterchangeSource(ctx context.Context, src Source, item *Item, regs *Registries, rules EDIRules, only string) (*Report, *InterchangeResult, error) {
	return CheckMessagesSource(ctx, src, item, regs, rules, MessageKey{Ref: only})
}

// CheckMessagesSource is CheckInterchangeSource with only a MessageKey:
// a replay of one message of a file of several interchanges names its
// interchange too. The zero key checks every message.
func CheckMessagesSource(ctx context.Context, src Source, item *Item, regs *Registries, rules EDIRules, only MessageKey) (*Report, *InterchangeResult, error) {
	path := src.String()
	rep := &Report{Path: path, Format: "UN/EDIFACT"}
	res := &InterchangeResult{src: src, regs: regs, rules: rules, only: only}
	if err := ctx.Err(); err != nil {
		return rep, res, context.Cause(ctx)
	}
	f, size, err := Open(src)
	if err != nil {
		return rep, res, &StageError{StageOpen, err}
	}
	defer f.Close()
	rep.Size, res.size = size, size
	budget := rules.MaxRetainedBytes
	if budget <= 0 {
		budget = DefaultMaxRetainedBytes
	}
	var structural error
	var retained int64
	var ch chunker
	// Each message is checked as it is read, a segment at a time (see
	// edifact.ParseSegments), and its verdict reached once it is whole.
	mc := messageChecks.Get().(*messageCheck)
	defer mc.release()
	mc.transient = true // a verdict is kept (kept.add) or digested (ch.add) before the next message begins
	checking := false   // the message being read is one to check
	onSegment := func(m *edifact.Message, i int, s *edifact.Segment) {
		if i == 0 {
			mc.reset() // of what the message before left, or one the parse stopped inside
			if checking = only.Ref == "" || only.matches(m); checking {
				mc.begin(m, regs, &rules)
			}
		}
		if checking {
			mc.segment(i, s)
		}
	}
	sha, ic, perr, err := readInterchange(ctx, f, size, path, onSegment, func(m *edifact.Message) error {
		if only.Ref != "" && !only.matches(m) {
			return nil
		}
		warns, cerr := mc.end()
		v, text := verdictOf(m, warns, cerr)
		res.setPlain(res.Checked, plainnessOf(&v))
		res.Checked++
		if v.Err != nil {
			res.Failed++
			var re *RuleError
			if structural == nil && errors.As(v.Err, &re) && re.Tier == TierStructural {
				structural = v.Err
				res.Fault = &edifact.Message{Ref: v.Ref, Type: v.Type, Version: strings.Clone(m.Version), Release: strings.Clone(m.Release),
					Agency: strings.Clone(m.Agency), Offset: m.Offset, Number: m.Number, Interchange: m.Interchange}
			}
		}
		if res.reread {
			if ch.add(&v, text) {
				res.chunks = append(res.chunks, ch.sum())
			}
			return nil
		}
		if retained += res.kept.add(&v, text); retained > budget {
			// Only a second read needs the digests: those of the verdicts
			// kept so far are taken now, from the log, as they would have
			// been from the verdicts themselves.
			res.kept.each(func(k MessageResult) error {
				var text string
				if k.Err != nil {
					text = k.Err.Error()
				}
				if ch.add(&k, text) {
					res.chunks = append(res.chunks, ch.sum())
				}
				return nil
			})
			res.kept, res.reread = verdictLog{}, true // from here on, only digests
		}
		return nil
	})
	res.Interchange = ic
	if err != nil {
		return rep, res, err // the context ended, the storage failed or the file changed: not a verdict on the data
	}
	if ch.n > 0 {
		res.chunks = append(res.chunks, ch.sum())
	}
	rep.SHA256, res.sha = sha, sha
	if item != nil {
		if item.SHA256 != "" && !strings.EqualFold(item.SHA256, rep.SHA256) {
			return rep, res, &StageError{StageFixity, &FixityError{Field: "sha256", Want: item.SHA256, Have: rep.SHA256}}
		}
		if item.Size > 0 && item.Size != rep.Size {
			return rep, res, &StageError{StageFixity, &FixityError{Field: "size", Want: fmt.Sprint(item.Size), Have: fmt.Sprint(rep.Size)}}
		}
	}
	var se *edifact.SyntaxError
	var ue *edifact.UnsupportedError
	switch {
	case errors.As(perr, &se):
		return rep, res, &StageError{StageStructure, perr}
	case errors.As(perr, &ue):
		return rep, res, &StageError{StageFormat, perr}
	case perr != nil:
		return rep, res, &StageError{StageOpen, perr}
	case structural != nil:
		return rep, res, &StageError{StageStructure, structural}
	}
	if only.Ref != "" && res.Checked == 0 {
		return rep, res, &StageError{StageRules, &RuleError{Tier: TierSemantic, Code: "edifact.message.gone", Message: only.String(),
			Reason: fmt.Sprintf("message %s is no longer in the interchange", only)}}
	}
	rep.Pages = res.Checked
	for ic := range ic.All() {
		if ic.CharsetUnchecked() {
			// UNOZ bytes are as the partners agreed, UNOX's ISO 2022 escapes are
			// not decoded: accepted, but say once that no repertoire was held.
			off := ic.Offset
			rep.Warnings = append(rep.Warnings, Warning{Code: "edifact.charset.unchecked", Offset: &off,
				Message: fmt.Sprintf("syntax identifier %s: the character repertoire was not checked", ic.SyntaxID)})
		}
		if ic.Number > 1 {
			res.starts = append(res.starts, ic.Start)
		}
	}
	res.sound = true
	return rep, res, nil
}

// EachMessage calls yield with the verdict on every message CheckInterchange
// checked, in order, and stops at the first error yield returns (which it
// returns unchanged). When the verdicts did not fit the budget it reads the
// file again, through Open, checking again every message that did not pass
// cleanly: each chunk of verdicts is compared with the first read's digest
// before any of it is handed over, and the last chunk only once the whole
// file hashes to the first read's SHA-256, so that what yield sees is what
// CheckInterchange decided. A file that changed in between is ErrFileChanged, wrapped in a
// *StageError (transient: the next attempt reads it again).
func (r *InterchangeResult) EachMessage(ctx context.Context, yield func(MessageResult) error) error {
	if !r.sound {
		return errors.New("validate: EachMessage on an interchange CheckInterchange did not pass")
	}
	if !r.reread {
		return r.kept.each(func(v MessageResult) error {
			v.Interchange = r.interchangeAt(v.Offset) // the log keeps the offset, which says it
			return yield(v)
		})
	}
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	f, size, err := Open(r.src)
	if err != nil {
		return &StageError{StageOpen, err}
	}
	defer f.Close()
	if size != r.size {
		return r.changed("%d bytes at the first read, %d at the second", r.size, size)
	}
	var (
		ch      chunker
		pending []MessageResult
		i       int // messages checked
		chunk   int
		yerr    error // from yield: returned unchanged
		changed error
	)
	hand := func() error {
		for _, v := range pending {
			if yerr = yield(v); yerr != nil {
				return yerr
			}
		}
		clear(pending)
		pending = pending[:0]
		return nil
	}
	// verify compares the chunk just closed with the first read's.
	verify := func(number int) error {
		if chunk >= len(r.chunks) || ch.sum() != r.chunks[chunk] {
			changed = r.changed("the verdicts on the messages up to number %d differ from the first read's", number)
			return changed
		}
		chunk++
		return nil
	}
	sha, _, perr, err := readInterchange(ctx, f, size, r.src.String(), nil, func(m *edifact.Message) error {
		if r.only.Ref != "" && !r.only.matches(m) {
			return nil
		}
		var v MessageResult
		var text string
		if p := r.plainAt(i); p != notPlain {
			// The first read's verdict; the chunk's digest still checks
			// that this is the message it was given for.
			v = again(m, p, agencySet(m, &r.rules) != nil)
		} else {
			v, text = checkOne(m, r.regs, r.rules)
		}
		i++
		pending = append(pending, v)
		if !ch.add(&v, text) {
			return nil
		}
		if err := verify(m.Number); err != nil {
			return err
		}
		return hand()
	})
	switch {
	case err != nil:
		return err
	case yerr != nil:
		return yerr
	case changed != nil:
		return changed
	case perr != nil:
		return r.changed("the second read stops: %v", perr)
	}
	if ch.n > 0 {
		if err := verify(r.Interchange.Last().Messages); err != nil {
			return err
		}
	}
	if chunk != len(r.chunks) {
		return r.changed("%d chunks of verdicts at the first read, %d at the second", len(r.chunks), chunk)
	}
	if sha != r.sha {
		return r.changed("SHA-256 %s at the first read, %s at the second", r.sha, sha)
	}
	return hand()
}

// interchangeAt is the number of the interchange of the file that holds
// byte off.
func (r *InterchangeResult) interchangeAt(off int64) int {
	n, _ := slices.BinarySearch(r.starts, off+1)
	return n + 1
}

// changed is the error of a file that changed between the two reads.
func (r *InterchangeResult) changed(format string, args ...any) error {
	return &StageError{StageOpen, fmt.Errorf("%s changed between the two reads: %s: %w", r.src.String(), fmt.Sprintf(format, args...), ErrFileChanged)}
}

// readInterchange parses the size bytes of f, calling onSegment (when not
// nil) for every segment of a message and each for every message (see
// edifact.ParseSegments), and hashes them all (past an early syntax error
// too). err is what is not a verdict on the data: the context ended, the
// storage failed, or the file grew or shrank while it was read; perr is
// the parse's verdict.
func readInterchange(ctx context.Context, f *os.File, size int64, path string, onSegment func(*edifact.Message, int, *edifact.Segment),
	each func(*edifact.Message) error) (sha string, ic *edifact.Interchange, perr, err error) {
	h := sha256.New()
	counted := &countingReader{r: io.LimitReader(f, size)}
	tee := &ctxReader{ctx: ctx, r: io.TeeReader(counted, h)}
	ic, perr = edifact.ParseSegments(tee, edifact.Limits{}, onSegment, each)
	if tee.err != nil {
		return "", ic, perr, tee.err
	}
	// Hash what is left after the parser stopped (an early syntax error).
	if _, err := io.Copy(h, counted); err != nil {
		return "", ic, perr, &StageError{StageFixity, err}
	}
	var one [1]byte
	if n, _ := f.ReadAt(one[:], size); counted.n != size || n > 0 {
		return "", ic, perr, &StageError{StageOpen, fmt.Errorf("%s changed while it was read: %d bytes at open, %d read, more after: %v: %w", path, size, counted.n, n > 0, ErrFileChanged)}
	}
	return hex.EncodeToString(h.Sum(nil)), ic, perr, nil
}

// checkOne applies the rules to m and returns its verdict, holding nothing
// of m's bytes (the reader reuses them; Parse's Ref and Type are strings
// of their own, shared with other messages'), and the error's text (""
// when it passes).
func checkOne(m *edifact.Message, regs *Registries, rules EDIRules) (MessageResult, string) {
	warns, err := CheckMessage(m, regs, rules)
	return verdictOf(m, warns, err)
}

// verdictOf is the verdict on m of the rules that returned warns and err
// (see checkOne).
func verdictOf(m *edifact.Message, warns []Warning, err error) (MessageResult, string) {
	v := MessageResult{Ref: m.Ref, Type: m.Type, Number: m.Number, Offset: m.Offset, Interchange: m.Interchange, Warnings: warns, Err: err}
	if err == nil {
		return v, ""
	}
	detach(err)
	return v, err.Error()
}

// detach copies the strings of every *RuleError in err, so that none
// points into a message's reused bytes.
func detach(err error) {
	switch e := err.(type) {
	case *RuleError:
		e.Code, e.Message, e.Tag, e.Registry, e.Reason = strings.Clone(e.Code), strings.Clone(e.Message), strings.Clone(e.Tag),
			strings.Clone(e.Registry), strings.Clone(e.Reason)
	case interface{ Unwrap() []error }:
		for _, c := range e.Unwrap() {
			detach(c)
		}
	case interface{ Unwrap() error }:
		detach(e.Unwrap())
	}
}

// DefaultMaxRetainedBytes is what CheckInterchange may keep of the verdicts
// on an interchange's messages when EDIRules.MaxRetainedBytes is 0: about
// 350,000 good messages (see verdictLog), 8,000 failed ones. An
// interchange whose verdicts do not fit is not refused: EachMessage reads
// it a second time.
const DefaultMaxRetainedBytes = 4 << 20

// What one verdict costs while it is kept: the struct twice (a growing
// slice holds up to twice what it uses), and an error's chain (its text
// about twice: the reasons it is built from, and the Error() string).
const (
	resultCost  = 2 * 88
	warningCost = 2 * 48
	errorCost   = 512
)

func verdictCost(v *MessageResult, text string) int64 {
	n := int64(resultCost + len(v.Ref) + len(v.Type))
	for _, w := range v.Warnings {
		n += int64(warningCost + len(w.Code) + len(w.Message))
	}
	if v.Err != nil {
		n += int64(errorCost + 2*len(text))
	}
	return n
}

// A chunk of verdicts closes after chunkMessages messages or once its
// verdicts cost chunkBytes: the second read holds one chunk at a time.
// Both reads cut the same chunks, as they reach the same verdicts.
const (
	chunkMessages = 256
	chunkBytes    = 1 << 20
)

// chunker digests the verdicts of one chunk of messages: number, offset,
// reference, type, the error's text and every warning.
type chunker struct {
	h    hash.Hash
	n    int
	cost int64
	buf  []byte
}

// add folds v (whose error reads text) into the open chunk and reports
// whether the chunk is now full.
func (c *chunker) add(v *MessageResult, text string) bool {
	if c.h == nil {
		c.h = sha256.New()
	}
	b := binary.AppendVarint(c.buf[:0], int64(v.Number))
	b = binary.AppendVarint(b, v.Offset)
	b = appendString(appendString(appendString(b, v.Ref), v.Type), text)
	b = binary.AppendUvarint(b, uint64(len(v.Warnings)))
	for _, w := range v.Warnings {
		b = appendString(appendString(b, w.Code), w.Message)
	}
	c.h.Write(b)
	c.buf = b[:0]
	c.n++
	c.cost += verdictCost(v, text)
	return c.n >= chunkMessages || c.cost >= chunkBytes
}

// sum closes the chunk and returns its digest.
func (c *chunker) sum() (d [sha256.Size]byte) {
	c.h.Sum(d[:0])
	c.h.Reset()
	c.n, c.cost = 0, 0
	return d
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// ctxReader stops reading when the context ends and keeps the first
// non-EOF read error, so a storage failure is never mistaken for a
// truncated interchange.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
	err error
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		c.err = context.Cause(c.ctx)
		return 0, c.err
	}
	n, err := c.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && c.err == nil {
		c.err = err
	}
	return n, err
}
