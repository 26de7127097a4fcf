package edifact

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// Interchange is what the envelope of an interchange says. An input may
// hold several interchanges, one after the other (EDI translators take
// each on its own): Parse returns the first, and Next links each to the
// one that follows its UNZ. Offsets count from the start of the input.
type Interchange struct {
	// Number is the interchange's place in the input, 1-based.
	Number int
	// Next is the interchange after this one's UNZ, nil for the last.
	Next *Interchange
	// Start is the offset of the interchange's first byte: its UNA, or
	// its UNB (0 for the first interchange of an input).
	Start         int64
	SyntaxID      string // e.g. "UNOA"
	SyntaxVersion int
	Sender        string
	Recipient     string
	Reference     string // UNB 0020
	Date, Time    string
	Delimiters    Delimiters
	HasUNA        bool
	Offset        int64 // of UNB
	Groups        int
	Messages      int
	// Packages are the binary objects (ISO 9735-8, UNO .. UNP) between
	// the messages: each is skipped by its declared length, never read
	// as segments. UNZ and UNE count them with the messages.
	Packages int
	Segments int
	Bytes    int64
	// Open is the header (no segments) of the message being read when the
	// parse stopped inside one, for reports; nil otherwise.
	Open *Message
	// Unsupported is set when the syntax identifier or a message's agency is
	// not one Lazaret supports; the envelope may still be well-formed.
	Unsupported string
}

// Last is the last interchange of the input ic begins: the one the parse
// stopped in when it failed.
func (ic *Interchange) Last() *Interchange {
	for ic.Next != nil {
		ic = ic.Next
	}
	return ic
}

// All yields ic and every interchange after it, in order.
func (ic *Interchange) All() func(yield func(*Interchange) bool) {
	return func(yield func(*Interchange) bool) {
		for c := ic; c != nil; c = c.Next {
			if !yield(c) {
				return
			}
		}
	}
}

// CharsetUnchecked reports whether the syntax identifier names no
// repertoire Parse can hold the bytes to: UNOZ (as agreed between the
// partners) and UNOX (ISO 2022 escape sequences, not decoded). Such an
// interchange is accepted, and Message.Charset is never set.
func (ic *Interchange) CharsetUnchecked() bool {
	return ic.SyntaxID == "UNOX" || ic.SyntaxID == "UNOZ"
}

// Message is one message (UNH .. UNT) with its segments (see Len, All and
// Segment).
type Message struct {
	Ref     string // UNH 0062
	Type    string // S009 0065, e.g. "IFTMIN"
	Version string // 0052, e.g. "D"
	Release string // 0054, e.g. "95B"
	Agency  string // 0051, e.g. "UN"
	Assoc   string // 0057, e.g. "SMDG20"
	Offset  int64  // of UNH
	Index   int    // position of UNH in the interchange
	Number  int    // 1-based message number in the interchange
	// Interchange is the Number of the message's interchange in the
	// input (1 for the first): two interchanges of one input may reuse
	// message references, never this pair with Number.
	Interchange int
	// SyntaxID is its interchange's syntax identifier (UNB 0001): the
	// character set its values are in (see CharsetOf).
	SyntaxID string
	Group    string // UNG reference, "" outside groups
	// Charset is the first byte the declared syntax identifier does not
	// allow, or nil.
	Charset *CharsetIssue

	st   *store    // the segments Parse kept, or nil
	segs []Segment // the segments SetSegments gave, when st is nil
}

// Len is the number of segments, UNH and UNT included.
func (m *Message) Len() int {
	if m.st != nil {
		return m.st.n
	}
	return len(m.segs)
}

// All yields every segment with its 0-based position. Parse keeps a
// message's segments compactly and rebuilds each one as All reaches it:
// the *Segment yielded, its Raw and what ValueBytes returns are valid
// until the next segment or the end of the iteration (Clone keeps them).
// Most segments' bytes are the message's own, but one that ran from one
// read chunk into the next is copied into memory the next such segment
// overwrites. The segment is rebuilt into memory the message keeps for
// the purpose, so that going through a message allocates nothing.
func (m *Message) All() func(yield func(int, *Segment) bool) {
	return func(yield func(int, *Segment) bool) {
		if m.st == nil {
			for i := range m.segs {
				if !yield(i, &m.segs[i]) {
					return
				}
			}
			return
		}
		if m.st.counted {
			panic(errNotKept)
		}
		sc := m.st.iter
		if sc == nil || !sc.busy.CompareAndSwap(false, true) {
			sc = new(segScratch) // a nested iteration, or another goroutine's
		} else {
			defer sc.busy.Store(false)
		}
		for i := 0; i < m.st.n; i++ {
			m.st.load(i, &sc.seg, &sc.raw)
			if !yield(i, &sc.seg) {
				return
			}
		}
	}
}

// errNotKept is the panic of a look at the segments ParseSegments did not
// keep.
const errNotKept = "edifact: the segments of a message from ParseSegments are not kept"

// Segment is segment i (0-based; UNH is 0), rebuilt for the call: use All
// to go through them. Its bytes are valid as long as the message's.
func (m *Message) Segment(i int) *Segment {
	if m.st == nil {
		return &m.segs[i]
	}
	if i < 0 || i >= m.st.n {
		panic("edifact: Message.Segment index out of range")
	}
	if m.st.counted {
		panic(errNotKept)
	}
	s := new(Segment)
	var scratch []byte
	m.st.load(i, s, &scratch)
	return s
}

// SetSegments makes segs the message's segments, as they are (to build a
// message by hand).
func (m *Message) SetSegments(segs []Segment) {
	m.st, m.segs = nil, segs
}

// Header is m without its segments.
func (m *Message) Header() Message {
	c := *m
	c.st, c.segs = nil, nil
	return c
}

// Clone returns a deep copy of m that stays valid after the onMessage call
// that received m returns.
func (m *Message) Clone() *Message {
	c := *m
	if m.Charset != nil {
		cs := *m.Charset
		c.Charset = &cs
	}
	if m.st != nil && m.st.counted {
		c.st = &store{counted: true, n: m.st.n, index: m.st.index}
		return &c
	}
	if m.st != nil {
		c.st = m.st.clone()
		return &c
	}
	c.segs = make([]Segment, len(m.segs))
	for i := range m.segs {
		c.segs[i] = m.segs[i].Clone()
	}
	return &c
}

// CharsetIssue is a byte outside the declared character repertoire.
type CharsetIssue struct {
	Offset  int64
	Segment int // position in the message, UNH = 1
	Byte    byte
}

// Parse reads a whole interchange, checks its envelope and control counts,
// and calls onMessage for every complete message (UNH .. UNT) in order.
//
// The *Message passed, its segments and their bytes are valid only until
// onMessage returns: Parse reuses them for the next message. Strings taken
// from it (Ref, Type, a segment's Tag, Value) stay valid; to keep a
// segment use Segment.Clone, to keep the message Message.Clone.
//
// Pass onMessage nil for an envelope check in constant memory: then only
// the service segments are split into their components; every other
// segment is still read to its terminator with the release character, the
// limits and the declared repertoire checked, and every error carries the
// same positions as with a callback.
//
// An error from onMessage stops the parse and is returned unchanged;
// envelope faults are *SyntaxError; an unsupported syntax identifier with
// an otherwise sound envelope is an *UnsupportedError returned with the
// filled Interchange.
func Parse(r io.Reader, lim Limits, onMessage func(*Message) error) (*Interchange, error) {
	return ParseSegments(r, lim, nil, onMessage)
}

// ParseSegments is Parse for a caller that looks at every segment of a
// message as it is read: it calls onSegment with each, UNH (i = 0) to UNT,
// then onMessage with the message, whose segments it does not keep (Len
// counts them; All and Segment panic). m is the message being read, its
// header set; s is the segment Parse's message would yield at i, field for
// field, and is valid until onSegment returns. The limits on a message
// (Limits.MaxMessageSegments, MaxMessageBytes) apply as though its
// segments were kept, with the same errors. A message the parse stops
// inside is never handed to onMessage, though its segments were to
// onSegment. With onMessage nil, onSegment is not called.
func ParseSegments(r io.Reader, lim Limits, onSegment func(m *Message, i int, s *Segment), onMessage func(*Message) error) (*Interchange, error) {
	lim = lim.withDefaults()
	rd := NewReader(r, lim)
	rd.countOnly = onMessage == nil // no one reads a message's components
	if onMessage == nil {
		onSegment = nil
	}
	first := &Interchange{Number: 1}
	p := &parser{rd: rd, lim: lim, onMessage: onMessage, onSegment: onSegment, ic: first}
	p.st.tags, p.st.iter, p.msg.st = rd.tags, new(segScratch), &p.st
	p.st.counted = onSegment != nil
	err := p.run()
	if err != nil && p.inMsg {
		open := p.msg.Header()
		p.ic.Open = &open
	}
	p.ic.Bytes = rd.Offset()
	p.ic.Delimiters, p.ic.HasUNA = rd.Delimiters(), rd.HasUNA()
	if err == nil {
		for ic := range first.All() {
			if ic.Unsupported != "" {
				err = &UnsupportedError{Offset: ic.Offset, What: ic.Unsupported}
				break
			}
		}
	}
	return first, err
}

type parser struct {
	rd        *Reader
	lim       Limits
	onMessage func(*Message) error
	onSegment func(*Message, int, *Segment)
	ic        *Interchange

	msg       Message
	inMsg     bool
	msgSegs   int
	inGroup   bool
	groupRef  string
	groupMsgs int
	groupAt   *Segment
	outside   int // messages outside groups
	allowed   *[256]bool
	unicode   bool
	segments  int64
	segBase   int64 // segments before the interchange being read
	lastIndex int
	interned  map[string]string
	st        store        // the message's kept segments
	recent    [8][4]string // the last values interned per component
	ids       [4]s009Entry // the last distinct S009s
	refs      refSet       // the message references seen
	strs      []byte       // the chunk str carves strings from
}

func (p *parser) fail(s *Segment, code int, elem, comp int, err error, format string, args ...any) *SyntaxError {
	if format != "" {
		err = fmt.Errorf("%w: %s", err, fmt.Sprintf(format, args...))
	}
	se := &SyntaxError{Offset: s.Offset, Index: s.Index, Tag: s.Tag, Element: elem, Component: comp, Code: code, Err: err}
	if elem > 0 {
		se.Offset = s.ValueOffset(elem, max(comp, 1))
	}
	if p.inMsg {
		se.Segment, se.Message = p.msgSegs, p.msg.Ref
	}
	return se
}

func (p *parser) run() error {
	first := true
	rd := p.rd
	for {
		if rd.countOnly && !p.inMsg && !first && p.plainUNH() {
			continue
		}
		if rd.countOnly && p.inMsg && rd.started {
			// Without a callback nothing but the envelope, the counts
			// and the repertoire is checked inside a message: let the
			// reader run over the segments that cannot fail those.
			stopBad := p.msg.Charset == nil && (p.allowed != nil || p.unicode)
			n, ended := rd.skip(int(min(p.lim.MaxSegments-p.segments, 1<<30)), stopBad, p.msgSegs+1, p.msg.Ref)
			if n > 0 {
				p.segments += int64(n)
				p.msgSegs += n
				p.lastIndex = rd.index
			}
			if ended { // a UNT that unt would have accepted
				p.inMsg = false
				continue
			}
		}
		var s *Segment
		var err error
		if rd.started && rd.scan(&rd.seg) == scanDone {
			s = &rd.seg // the fast path of Next, without the call
		} else {
			s, err = rd.Next()
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			var se *SyntaxError
			if errors.As(err, &se) && p.inMsg {
				se.Segment, se.Message = p.msgSegs+1, p.msg.Ref
			}
			return err
		}
		p.segments++
		p.lastIndex = s.Index
		if p.segments > p.lim.MaxSegments {
			se := p.fail(s, CodeUnspecified, 0, 0, ErrTooManySegments, "%d", p.lim.MaxSegments)
			if p.inMsg {
				se.Segment = p.msgSegs + 1 // s is the message's next segment
			}
			return se
		}
		if first {
			first = false
			if s.Tag != "UNB" {
				return &SyntaxError{Offset: s.Offset, Index: s.Index, Tag: s.Tag, Code: CodeMissing, Err: fmt.Errorf("%w: first segment is %s", ErrMissingUNB, s.Tag)}
			}
			if err := p.unb(s); err != nil {
				return err
			}
			continue
		}
		if p.inMsg {
			p.msgSegs++
			if s.bad >= 0 && p.msg.Charset == nil && (p.allowed != nil || p.unicode) {
				p.checkCharset(s)
			}
		}
		if t := s.Tag; t[0] != 'U' || t[1] != 'N' {
			// Not a service segment: the common case.
			if !p.inMsg {
				return p.fail(s, CodeOutsideMessage, 0, 0, ErrOutsideMessage, "%s", s.Tag)
			}
			if p.onMessage != nil {
				if err := p.keep(s); err != nil {
					return err
				}
			}
			continue
		}
		switch s.Tag {
		case "UNB":
			return p.fail(s, CodeOutsideMessage, 0, 0, ErrAfterUNZ, "a second UNB before UNZ")
		case "UNG":
			if err := p.ung(s); err != nil {
				return err
			}
		case "UNE":
			if err := p.une(s); err != nil {
				return err
			}
		case "UNH":
			if err := p.unh(s); err != nil {
				return err
			}
		case "UNT":
			if err := p.unt(s); err != nil {
				return err
			}
		case "UNO":
			if err := p.uno(s); err != nil {
				return err
			}
		case "UNP":
			if !p.inMsg {
				return p.fail(s, CodeOutsideMessage, 0, 0, ErrOutsideMessage, "UNP without UNO")
			}
			if err := p.keep(s); err != nil {
				return err
			}
		case "UNZ":
			if err := p.unz(s); err != nil {
				return err
			}
			if !p.rd.NextInterchange() {
				return p.afterUNZ()
			}
			if err := p.nextInterchange(s); err != nil {
				return err
			}
			first = true // the next interchange begins with its UNB
		default:
			if !p.inMsg {
				return p.fail(s, CodeOutsideMessage, 0, 0, ErrOutsideMessage, "%s", s.Tag)
			}
			if err := p.keep(s); err != nil {
				return err
			}
		}
	}
	// End of input without UNZ.
	if first {
		return &SyntaxError{Offset: 0, Code: CodeMissing, Err: fmt.Errorf("%w: the input is empty", ErrMissingUNB)}
	}
	if p.inMsg {
		return &SyntaxError{Offset: p.msg.Offset, Index: p.msg.Index, Segment: 1, Message: p.msg.Ref, Tag: "UNH", Code: CodeMissing,
			Err: fmt.Errorf("%w: message %s", ErrMissingUNT, p.msg.Ref)}
	}
	if p.inGroup {
		return &SyntaxError{Offset: p.groupAt.Offset, Index: p.groupAt.Index, Tag: "UNG", Code: CodeMissing, Err: ErrMissingUNE}
	}
	return &SyntaxError{Offset: p.rd.Offset(), Index: p.lastIndex + 1, Tag: "UNZ", Code: CodeMissing, Err: ErrMissingUNZ}
}

// nextInterchange ends the interchange whose UNZ (s) was just read and
// begins the one that follows it: the envelope's state starts again, the
// offsets and the input's limits go on.
func (p *parser) nextInterchange(s *Segment) error {
	prev := p.ic
	if prev.Number >= p.lim.MaxInterchanges {
		return p.fail(s, CodeUnspecified, 0, 0, ErrTooManyInterchanges, "%d", p.lim.MaxInterchanges)
	}
	prev.Bytes = p.rd.Offset()
	p.ic = &Interchange{Number: prev.Number + 1, Start: p.rd.Offset()}
	prev.Next = p.ic
	p.inGroup, p.groupRef, p.groupMsgs, p.groupAt, p.outside = false, "", 0, nil, 0
	p.allowed, p.unicode = nil, false
	p.refs = refSet{max: p.refs.max} // references are unique within an interchange, not across a file
	p.segBase = p.segments
	return nil
}

// maxObjectSegments bounds the segments a UNO may say stand between it
// and its object (0814 is n..3).
const maxObjectSegments = 999

// uno reads a package (ISO 9735-8): its header s, the segments it says
// come before the object (0814), the object's octets, skipped by their
// declared length (0810) and never scanned for separators, and the UNP
// that must follow them, with the same length and package reference.
// The length is checked against the input as it is skipped.
func (p *parser) uno(s *Segment) error {
	if err := p.unit(s, "UNO inside message %s"); err != nil {
		return err
	}
	p.ic.Packages++
	ref, lenText, before := s.Value(1, 1), s.Value(4, 1), s.Value(4, 2)
	if ref == "" {
		return p.fail(s, CodeMissing, 1, 0, ErrMissingElement, "package reference number (0800)")
	}
	length, err := strconv.ParseInt(lenText, 10, 64)
	if err != nil || length < 0 || len(lenText) > 18 {
		return p.fail(s, CodeInvalidValue, 4, 1, ErrObjectLength, "length of object %q is not a count of octets (0810 n..18)", lenText)
	}
	lenAt := s.ValueOffset(4, 1)
	n := 0
	if before != "" {
		if n, err = strconv.Atoi(before); err != nil || n < 0 || n > maxObjectSegments {
			return p.fail(s, CodeInvalidValue, 4, 2, ErrObjectLength, "number of segments before the object %q (0814 n..3)", before)
		}
	}
	for k := 0; k < n; k++ {
		t, err := p.rd.Next()
		if errors.Is(err, io.EOF) {
			return &SyntaxError{Offset: p.rd.Offset(), Index: p.lastIndex + 1, Tag: "UNP", Code: CodeMissing,
				Err: fmt.Errorf("%w: package %s ends after %d of the %d segments before its object", ErrObjectLength, ref, k, n)}
		}
		if err != nil {
			return err
		}
		p.segments++
		p.lastIndex = t.Index
	}
	start := p.rd.Offset()
	got, err := p.rd.SkipBytes(length)
	if err != nil {
		return err // the storage's, not the data's
	}
	if got < length {
		return &SyntaxError{Offset: lenAt, Index: s.Index, Tag: "UNO", Element: 4, Component: 1, Code: CodeInvalidValue,
			Err: fmt.Errorf("%w: package %s declares %d octets at byte %d, the input holds %d", ErrObjectLength, ref, length, start, got)}
	}
	t, err := p.rd.Next()
	switch {
	case errors.Is(err, io.EOF):
		return &SyntaxError{Offset: p.rd.Offset(), Index: p.lastIndex + 1, Tag: "UNP", Code: CodeMissing,
			Err: fmt.Errorf("%w: package %s: no UNP after its %d octets", ErrObjectLength, ref, length)}
	case err != nil:
		var se *SyntaxError
		if errors.As(err, &se) {
			se.Err = fmt.Errorf("%w: package %s: what follows its %d octets (from byte %d) is not UNP: %w", ErrObjectLength, ref, length, start, se.Err)
		}
		return err
	}
	p.segments++
	p.lastIndex = t.Index
	if t.Tag != "UNP" {
		return p.fail(t, CodeMissing, 0, 0, ErrObjectLength, "package %s: %s follows its %d octets (from byte %d), not UNP", ref, t.Tag, length, start)
	}
	if v := t.Value(1, 1); v != lenText {
		if m, err := strconv.ParseInt(v, 10, 64); err != nil || m != length {
			return p.fail(t, CodeCountMismatch, 1, 0, ErrCount, "UNP counts %q octets, UNO %d", v, length)
		}
	}
	if v := t.Value(2, 1); v != ref {
		return p.fail(t, CodeReferenceMismatch, 2, 0, ErrReference, "UNP %q, UNO %q", v, ref)
	}
	return nil
}

func (p *parser) afterUNZ() error {
	s, err := p.rd.Next()
	if errors.Is(err, io.EOF) {
		return nil
	}
	if err != nil {
		var se *SyntaxError
		if errors.As(err, &se) {
			se.Err = fmt.Errorf("%w: %w", ErrAfterUNZ, se.Err)
			se.Code = CodeOutsideMessage
		}
		return err
	}
	return p.fail(s, CodeOutsideMessage, 0, 0, ErrAfterUNZ, "%s after UNZ", s.Tag)
}

// UN/EDIFACT character repertoires by syntax identifier (ISO 9735 level A, B,
// ISO 8859 parts, ISO 10646). IATA's syntax (IATA, IATB: PADIS traffic
// such as PAXLST, PNRGOV, PAORES) is ISO 9735 under IATA's identifier; its
// levels A and B are taken to be UNOA's and UNOB's repertoires, which IATA's
// own code list text could not be checked against here.
var (
	levelA = repertoire("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,-()/='+:?!\"%&*;<>")
	levelB = func() *[256]bool {
		var t [256]bool
		for c := 0x20; c < 0x7f; c++ {
			t[c] = true
		}
		return &t
	}()
	latin = func() *[256]bool {
		t := *levelB
		for c := 0xa0; c <= 0xff; c++ {
			t[c] = true
		}
		return &t
	}()
)

// unicodeFirstPass flags non-ASCII bytes so that only those segments are
// checked for valid UTF-8.
var unicodeFirstPass = func() *[256]bool {
	var t [256]bool
	for c := 0x20; c < 0x80; c++ {
		t[c] = true
	}
	return &t
}()

func repertoire(s string) *[256]bool {
	var t [256]bool
	for i := 0; i < len(s); i++ {
		t[s[i]] = true
	}
	return &t
}

func (p *parser) unb(s *Segment) error {
	id, ver := s.Value(1, 1), s.Value(1, 2)
	if id == "" {
		return p.fail(s, CodeMissing, 1, 1, ErrMissingElement, "syntax identifier (S001/0001)")
	}
	n, err := strconv.Atoi(ver)
	if err != nil || n < 1 || n > 4 {
		return p.fail(s, CodeSyntaxVersion, 1, 2, fmt.Errorf("syntax version %q", ver), "")
	}
	p.ic.SyntaxID, p.ic.SyntaxVersion = id, n
	p.ic.Sender, p.ic.Recipient = s.Value(2, 1), s.Value(3, 1)
	p.ic.Date, p.ic.Time = s.Value(4, 1), s.Value(4, 2)
	p.ic.Reference, p.ic.Offset = s.Value(5, 1), s.Offset
	if p.ic.Sender == "" {
		return p.fail(s, CodeMissing, 2, 1, ErrMissingElement, "interchange sender (S002)")
	}
	if p.ic.Recipient == "" {
		return p.fail(s, CodeMissing, 3, 1, ErrMissingElement, "interchange recipient (S003)")
	}
	if p.ic.Reference == "" {
		return p.fail(s, CodeMissing, 5, 0, ErrMissingElement, "interchange control reference (0020)")
	}
	switch {
	case id == "UNOA" || id == "IATA":
		p.allowed = levelA
	case id == "UNOB" || id == "IATB":
		p.allowed = levelB
	case len(id) == 4 && strings.HasPrefix(id, "UNO") && id[3] >= 'C' && id[3] <= 'K':
		p.allowed = latin
	case id == "UNOW" || id == "UNOY":
		p.unicode = true
		p.allowed = unicodeFirstPass
	case id == "UNOX" || id == "UNOZ":
		// No repertoire: see Interchange.CharsetUnchecked.
	default:
		p.ic.Unsupported = fmt.Sprintf("syntax identifier %q", id)
	}
	if n == 4 && !p.rd.HasUNA() {
		p.rd.SetRepetition('*')
	}
	p.rd.SetRepertoire(p.allowed)
	return nil
}

func (p *parser) checkCharset(s *Segment) {
	if p.msg.Charset != nil {
		return
	}
	off, c, bad := s.BadByte()
	if !bad {
		return
	}
	if !p.unicode {
		p.msg.Charset = &CharsetIssue{Offset: off, Segment: p.msgSegs, Byte: c}
		return
	}
	raw := s.Raw()
	if p.unicode {
		if !utf8.Valid(raw) {
			for i := 0; i < len(raw); {
				r, n := utf8.DecodeRune(raw[i:])
				if r == utf8.RuneError && n <= 1 {
					p.msg.Charset = &CharsetIssue{Offset: s.inputOffset(int32(i)), Segment: p.msgSegs, Byte: raw[i]}
					return
				}
				i += n
			}
		}
		return
	}
}

func (p *parser) ung(s *Segment) error {
	if p.inMsg {
		return p.fail(s, CodeMissing, 0, 0, ErrMissingUNT, "UNG inside message %s", p.msg.Ref)
	}
	if p.inGroup {
		return p.fail(s, CodeMissing, 0, 0, ErrMissingUNE, "UNG inside group %s", p.groupRef)
	}
	if p.outside > 0 {
		return p.fail(s, CodeGroupsMixed, 0, 0, ErrGroupsMixed, "")
	}
	p.inGroup, p.groupRef, p.groupMsgs = true, s.Value(5, 1), 0
	c := s.Clone()
	p.groupAt = &c
	if p.groupRef == "" {
		return p.fail(s, CodeMissing, 5, 0, ErrMissingElement, "group reference (0048)")
	}
	p.ic.Groups++
	return nil
}

func (p *parser) une(s *Segment) error {
	if p.inMsg {
		return p.fail(s, CodeMissing, 0, 0, ErrMissingUNT, "UNE inside message %s", p.msg.Ref)
	}
	if !p.inGroup {
		return p.fail(s, CodeOutsideMessage, 0, 0, ErrOutsideMessage, "UNE without UNG")
	}
	if ref := s.Value(2, 1); ref != p.groupRef {
		return p.fail(s, CodeReferenceMismatch, 2, 0, ErrReference, "UNE %q, UNG %q", ref, p.groupRef)
	}
	if n, err := strconv.Atoi(s.Value(1, 1)); err != nil || n != p.groupMsgs {
		return p.fail(s, CodeCountMismatch, 1, 0, ErrCount, "UNE counts %q messages, the group has %d", s.Value(1, 1), p.groupMsgs)
	}
	p.inGroup = false
	return nil
}

// unit counts a message or a package (UNH, UNO) where the UNZ or UNE
// that closes it counts them: outside any group, or in the open one. One
// may not open inside a message (open names the message in the fault), and
// lone units and groups never mix in an interchange.
func (p *parser) unit(s *Segment, open string) error {
	if p.inMsg {
		return p.fail(s, CodeMissing, 0, 0, ErrMissingUNT, open, p.msg.Ref)
	}
	if !p.inGroup {
		if p.ic.Groups > 0 {
			return p.fail(s, CodeGroupsMixed, 0, 0, ErrGroupsMixed, "")
		}
		p.outside++
	} else {
		p.groupMsgs++
	}
	return nil
}

func (p *parser) unh(s *Segment) error {
	if err := p.unit(s, "UNH of a new message before UNT of message %s"); err != nil {
		return err
	}
	// One pass over the spans finds 0062 and the bytes of S009.
	var ref span
	haveRef := false
	from, to := int32(-1), int32(-1)
	for _, sp := range s.spans {
		switch pos := sp.pos &^ escBit; {
		case pos == 1<<elemShift|1:
			ref, haveRef = sp, true
		case pos>>elemShift == 2:
			if from < 0 {
				from = sp.start
			}
			to = sp.end
		}
	}
	id := p.s009(s, from, to)
	p.begin(p.str(s, ref, haveRef, 1, 1), id, s.Offset, s.Index)
	m := &p.msg
	if m.Ref == "" {
		return p.fail(s, CodeMissing, 1, 0, ErrMissingElement, "message reference (0062)")
	}
	if m.Type == "" || m.Version == "" || m.Release == "" || m.Agency == "" {
		return p.fail(s, CodeMissing, 2, 0, ErrMissingElement, "message identifier (S009) needs type, version, release and agency")
	}
	switch dup, full := p.refs.add(unsafe.Slice(unsafe.StringData(m.Ref), len(m.Ref))); {
	case dup:
		return p.fail(s, CodeDuplicate, 1, 0, ErrDuplicateMessage, "message %d has reference %s", m.Number, m.Ref)
	case full:
		return p.fail(s, CodeUnspecified, 1, 0, ErrTooManyReferences, "more than %d message references out of sequence", maxScatteredRefs)
	}
	if p.allowed != nil || p.unicode {
		p.checkCharset(s)
	}
	return p.keep(s)
}

// begin starts message ref (its UNH at offset, index) after the checks
// before the UNH's elements.
func (p *parser) begin(ref string, id [5]string, offset int64, index int) {
	p.ic.Messages++
	p.inMsg, p.msgSegs = true, 1
	p.st.reset()
	p.st.rel = p.rd.d.Release
	m := &p.msg
	m.Ref, m.Type, m.Version, m.Release, m.Agency, m.Assoc = ref, id[0], id[1], id[2], id[3], id[4]
	m.Offset, m.Index, m.Number, m.Group, m.Charset = offset, index, p.ic.Messages, p.groupRef, nil
	m.Interchange, m.SyntaxID = p.ic.Number, p.ic.SyntaxID
	if !p.inGroup {
		m.Group = ""
	}
}

// plainUNH starts a message from a UNH that unh would accept and that
// reads the plain way (see Reader.plainUNH) with an S009 seen before,
// without splitting it; it reports whether it did. Parse without a
// callback only.
func (p *parser) plainUNH() bool {
	rd := p.rd
	if p.segments >= p.lim.MaxSegments || (!p.inGroup && p.ic.Groups > 0) {
		return false
	}
	ref, id, ok := rd.plainUNH()
	if !ok {
		return false
	}
	var vals *[5]string
	for i := range p.ids {
		if e := &p.ids[i]; e.ok && e.key == string(id) {
			vals = &e.vals
			break
		}
	}
	if vals == nil || vals[0] == "" || vals[1] == "" || vals[2] == "" || vals[3] == "" {
		return false
	}
	if dup, full := p.refs.add(ref); dup || full {
		return false // unh reports it
	}
	off, index := rd.consumePlain()
	p.segments++
	p.lastIndex = index
	if p.inGroup {
		p.groupMsgs++
	} else {
		p.outside++
	}
	p.begin(p.strBytes(ref), *vals, off, index)
	return true
}

// s009 returns the components of S009 (type, version, release, agency,
// association code), the bytes raw[from:to] of the element in segment s.
// The same bytes split the same way, so the last few distinct S009s are
// kept whole: most messages cost one comparison.
func (p *parser) s009(s *Segment, from, to int32) [5]string {
	var key []byte
	if from >= 0 {
		key = s.raw[from:to]
		for i := range p.ids {
			if e := &p.ids[i]; e.ok && e.key == string(key) {
				return e.vals
			}
		}
	}
	var vals [5]string
	for c := 1; c <= 5; c++ {
		sp, ok := s.find(2, c)
		vals[c-1] = p.intern(s, sp, ok, 2, c)
	}
	if from >= 0 && len(key) <= 64 {
		copy(p.ids[1:], p.ids[:])
		p.ids[0] = s009Entry{key: string(key), vals: vals, ok: true}
	}
	return vals
}

type s009Entry struct {
	key  string
	vals [5]string
	ok   bool
}

// intern returns a value that repeats from message to message (type,
// version, agency) without allocating it again each time: the last four
// values of each component of S009 first, then a small table.
func (p *parser) intern(s *Segment, sp span, ok bool, e, c int) string {
	if !ok || sp.escaped() {
		return s.Value(e, c)
	}
	b := s.raw[sp.start:sp.end]
	recent := &p.recent[c&7]
	for _, v := range recent {
		if v == string(b) {
			return v
		}
	}
	v, ok := p.interned[string(b)]
	if !ok {
		v = string(b)
		if len(p.interned) < 256 {
			if p.interned == nil {
				p.interned = map[string]string{}
			}
			p.interned[v] = v
		}
	}
	copy(recent[1:], recent[:])
	recent[0] = v
	return v
}

// str is component c of element e as a string carved out of a chunk
// shared with the strings before it: one allocation for many messages'
// references. A chunk is never written again where a string uses it, so
// the strings are as immutable as any other.
func (p *parser) str(s *Segment, sp span, ok bool, e, c int) string {
	if !ok || sp.escaped() || sp.end-sp.start > 64 {
		return s.Value(e, c)
	}
	return p.strBytes(s.raw[sp.start:sp.end])
}

// strBytes is str for bytes without release characters.
func (p *parser) strBytes(b []byte) string {
	if len(b) > 64 {
		return string(b)
	}
	if len(b) == 0 {
		return ""
	}
	if cap(p.strs)-len(p.strs) < len(b) {
		p.strs = make([]byte, 0, 4096)
	}
	p.strs = append(p.strs, b...)
	return unsafe.String(&p.strs[len(p.strs)-len(b)], len(b))
}

func (p *parser) keep(s *Segment) error {
	if p.onMessage == nil {
		return nil
	}
	if p.st.n >= p.lim.MaxMessageSegments {
		return p.fail(s, CodeUnspecified, 0, 0, ErrTooManySegments, "message %s has more than %d segments", p.msg.Ref, p.lim.MaxMessageSegments)
	}
	// The segment is kept before its cost is known; past the limit the
	// parse stops and the message is dropped.
	if !p.st.fits(s) {
		return p.fail(s, CodeUnspecified, 0, 0, ErrMessageTooLarge, "message %s would keep more than 4 GiB with this segment", p.msg.Ref)
	}
	p.st.add(s)
	if p.st.retained() > p.lim.MaxMessageBytes {
		return p.fail(s, CodeUnspecified, 0, 0, ErrMessageTooLarge, "message %s would keep more than %d bytes with this segment", p.msg.Ref, p.lim.MaxMessageBytes)
	}
	if p.onSegment != nil {
		p.onSegment(&p.msg, p.st.n-1, s)
	}
	return nil
}

// deliver hands the message to onMessage, then frees its store for the
// next one.
func (p *parser) deliver() error {
	err := p.onMessage(&p.msg)
	p.st.reset()
	return err
}

func (p *parser) unt(s *Segment) error {
	if !p.inMsg {
		return p.fail(s, CodeOutsideMessage, 0, 0, ErrOutsideMessage, "UNT without UNH")
	}
	if !s.ValueIs(2, 1, p.msg.Ref) {
		return p.fail(s, CodeReferenceMismatch, 2, 0, ErrReference, "UNT %q, UNH %q", s.Value(2, 1), p.msg.Ref)
	}
	if n, ok := s.Int(1, 1); !ok || n != p.msgSegs {
		return p.fail(s, CodeCountMismatch, 1, 0, ErrCount, "UNT counts %q segments, message %s has %d", s.Value(1, 1), p.msg.Ref, p.msgSegs)
	}
	if err := p.keep(s); err != nil {
		return err
	}
	p.inMsg = false
	if p.onMessage != nil {
		return p.deliver()
	}
	return nil
}

func (p *parser) unz(s *Segment) error {
	if p.inMsg {
		return p.fail(s, CodeMissing, 0, 0, ErrMissingUNT, "UNZ before UNT of message %s", p.msg.Ref)
	}
	if p.inGroup {
		return p.fail(s, CodeMissing, 0, 0, ErrMissingUNE, "UNZ before UNE of group %s", p.groupRef)
	}
	if ref := s.Value(2, 1); ref != p.ic.Reference {
		return p.fail(s, CodeReferenceMismatch, 2, 0, ErrReference, "UNZ %q, UNB %q", ref, p.ic.Reference)
	}
	want := p.ic.Messages + p.ic.Packages
	what := "messages"
	if p.ic.Packages > 0 {
		what = "messages and packages"
	}
	if p.ic.Groups > 0 {
		want, what = p.ic.Groups, "groups"
	}
	if n, err := strconv.Atoi(s.Value(1, 1)); err != nil || n != want {
		return p.fail(s, CodeCountMismatch, 1, 0, ErrCount, "UNZ counts %q, the interchange has %d %s", s.Value(1, 1), want, what)
	}
	if p.ic.Messages+p.ic.Packages == 0 {
		return p.fail(s, CodeLowerLevelEmpty, 0, 0, ErrEmpty, "")
	}
	p.ic.Segments = int(p.segments - p.segBase)
	p.ic.Delimiters, p.ic.HasUNA = p.rd.Delimiters(), p.rd.HasUNA()
	return nil
}
