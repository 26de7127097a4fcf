package directory

import (
	"fmt"
	"hash/maphash"
	"math/bits"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/lazaret/lazaret/edifact"
)

// Kind is what a finding is about.
type Kind string

const (
	// SegmentUnexpected: the segment is not allowed where it stands (out of
	// order, or not in the message at all).
	SegmentUnexpected Kind = "segment-unexpected"
	// SegmentMissing: a mandatory segment is absent.
	SegmentMissing Kind = "segment-missing"
	// SegmentRepeated: a segment occurs more often than the table allows.
	SegmentRepeated Kind = "segment-repeated"
	// GroupMissing: a mandatory segment group is absent.
	GroupMissing Kind = "group-missing"
	// GroupRepeated: a segment group occurs more often than allowed.
	GroupRepeated Kind = "group-repeated"
	// ElementMissing: a mandatory data element is absent.
	ElementMissing Kind = "element-missing"
	// ComponentMissing: a mandatory component of a composite that is there
	// is absent.
	ComponentMissing Kind = "component-missing"
	// ElementExtra: more data elements than the segment defines.
	ElementExtra Kind = "element-extra"
	// ComponentExtra: more components than the element defines.
	ComponentExtra Kind = "component-extra"
	// RepetitionExtra: a data element repeated more often than allowed.
	RepetitionExtra Kind = "repetition-extra"
	// Representation: a character the representation does not allow (a
	// digit in an a element, a letter in an n element, a misplaced sign or
	// decimal mark).
	Representation Kind = "representation"
	// TooLong: longer than the element's maximum length.
	TooLong Kind = "too-long"
	// TooShort: shorter than the element's minimum length.
	TooShort Kind = "too-short"
	// CodeUnknown: a coded element's value is not in its code list.
	CodeUnknown Kind = "code-unknown"
)

// Kinds lists every kind of finding.
func Kinds() []Kind {
	return []Kind{SegmentUnexpected, SegmentMissing, SegmentRepeated, GroupMissing, GroupRepeated, ElementMissing, ComponentMissing,
		ElementExtra, ComponentExtra, RepetitionExtra, Representation, TooLong, TooShort, CodeUnknown}
}

// Check is the policy group a kind belongs to.
type Check string

const (
	// CheckSegments: order, groups, repetitions and mandatory segments.
	CheckSegments Check = "segments"
	// CheckElements: mandatory and surplus elements, components and
	// repetitions.
	CheckElements Check = "elements"
	// CheckRepresentation: the characters an a or n element may hold.
	CheckRepresentation Check = "representation"
	// CheckLength: minimum and maximum lengths.
	CheckLength Check = "length"
	// CheckCodes: code values of coded elements.
	CheckCodes Check = "codes"
)

// Checks lists the policy groups.
func Checks() []Check {
	return []Check{CheckSegments, CheckElements, CheckRepresentation, CheckLength, CheckCodes}
}

// Check is the policy group of k.
func (k Kind) Check() Check {
	switch k {
	case SegmentUnexpected, SegmentMissing, SegmentRepeated, GroupMissing, GroupRepeated:
		return CheckSegments
	case Representation:
		return CheckRepresentation
	case TooLong, TooShort:
		return CheckLength
	case CodeUnknown:
		return CheckCodes
	}
	return CheckElements
}

// Syntax is the UN/EDIFACT syntax error code (0085) CONTRL reports for k.
func (k Kind) Syntax() int {
	switch k {
	case SegmentUnexpected:
		return edifact.CodeNotSupportedHere // 15
	case SegmentMissing, GroupMissing, ElementMissing, ComponentMissing:
		return edifact.CodeMissing // 13
	case SegmentRepeated, RepetitionExtra:
		return 35 // too many repetitions
	case GroupRepeated:
		return 36 // too many segment group repetitions
	case ElementExtra, ComponentExtra:
		return edifact.CodeTooManyConstituent // 16
	case Representation:
		return 37 // invalid type of characters
	case TooLong:
		return edifact.CodeTooLong // 39
	case TooShort:
		return 40 // data element too short
	case CodeUnknown:
		return edifact.CodeInvalidValue // 12
	}
	return edifact.CodeUnspecified
}

// Finding is one way a message departs from its directory. Segment is the
// 1-based position of the segment in its message (UNH = 1), Element and
// Component are 1-based as CONTRL counts them (Component 0 for a simple
// element or the whole element, Element 0 for the whole segment), Offset
// the 0-based byte in the interchange: of the value when there is one, of
// the segment otherwise, and where the element would stand for one that
// is missing at the end of a segment.
type Finding struct {
	Kind      Kind
	Segment   int
	Tag       string
	Element   int
	Component int
	Offset    int64
	// Expected is the tag of the missing segment, or the trigger of the
	// missing group, for SegmentMissing and GroupMissing.
	Expected string
	Reason   string
}

func (f Finding) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "segment %d (%s)", f.Segment, f.Tag)
	if f.Element > 0 {
		fmt.Fprintf(&b, " element %d", f.Element)
		if f.Component > 0 {
			fmt.Fprintf(&b, ":%d", f.Component)
		}
	}
	fmt.Fprintf(&b, " at byte %d: %s: %s", f.Offset, f.Kind, f.Reason)
	return b.String()
}

// MaxCodeLength bounds a coded value. The schemas give coded elements a
// code list but no representation; their codes are at most 3 characters,
// and a coded element holding another list's code (qualified by 1131 and
// 3055) is at most an..35 in the directories, so a longer value is too
// long whatever its list.
const MaxCodeLength = 35

// Options are what a check needs to know of the interchange.
type Options struct {
	// Decimal is the decimal mark the interchange declares (UNA); 0 accepts
	// both full stop and comma, as ISO 9735 allows either.
	Decimal byte
	// Reason, when set, says whether a finding's Reason is wanted: one
	// that will only be counted need not be written out (a message of a
	// million repeated segments would otherwise format a million
	// sentences). nil: always.
	Reason func(Finding) bool
	// Charset is the character set the interchange's syntax identifier
	// declares (edifact.CharsetOf): a finding quotes a value as its text,
	// decoded to UTF-8. nil quotes the bytes as strconv.Quote does.
	Charset *edifact.Charset
}

type frame struct {
	nodes []Node
	keys  []uint32 // trigger keys of nodes
	pos   int      // current entry, -1 before the first
	count int      // occurrences of the current entry so far
}

// Checker checks one message against its directory a segment at a time,
// for a caller that goes through the message's segments for rules of its
// own: Begin, then Segment for every segment in message order, then End,
// in one pass where Validate would make a second. It reports what Validate
// reports, in the same order. A Checker may be reused for the next message
// after End; its zero value is ready to use.
type Checker struct {
	stack []frame
	opt   Options
	def   *Message
	emit  func(Finding)
	seg   int // position of the segment being checked
	s     *edifact.Segment
	// The tag and offset of the last segment checked, which End reports
	// what is missing at.
	tag string
	off int64
	// found counts the findings reported, so that a segment whose
	// elements raise none is known to be sound; walked those of the walk
	// through the segment table (match, commit, missing).
	found, walked int
	sound         soundSegments
	walk          walkMemo
}

// walkMemo is the last walk through a segment table that found nothing:
// the tags of the message's segments and the layout each matched. The
// walk follows from the table and the tags alone, so a message of the
// same type whose tags are the same (the common case: an interchange's
// messages are alike) is not walked again: each segment takes its layout
// from the memo. When a message leaves the memo's tags, the walk is
// replayed up to there (finding nothing, as it found nothing before) and
// goes on as usual.
type walkMemo struct {
	def  *Message
	tags []string
	sds  []*Segment
	// The message being checked: its first n segments are the memo's,
	// and the stack was not walked for them (following); its walk, as it
	// goes, when it is not the memo's (rec, recSD); the findings of the
	// walk before it.
	following bool
	n         int
	rec       []string
	recSD     []*Segment
	walked    int
}

// walkMax bounds the segments of a walk kept.
const walkMax = 256

// soundSegments remembers segments whose elements passed, with their
// layout and the decimal mark: the element checks of a segment follow
// from these and its values alone (edifact.Segment.SameValues), and an
// interchange repeats many segments byte for byte (a port, a date, a
// package type), which are then checked once. It is a small table of the
// last ones seen, one slot per hash of their bytes, each slot taken over
// by a segment that passes and hashes to it twice in a row (see
// soundSlot.seen).
type soundSegments struct {
	seed  maphash.Seed
	slots []soundSlot
	// The slot of the segment known was last asked about, and its hash.
	slot *soundSlot
	hash uint64
}

type soundSlot struct {
	sd      *Segment
	decimal byte
	seg     edifact.Segment
	// seen is the hash of the last segment that passed and hashed to the
	// slot: one is kept only when it comes a second time, so that a
	// segment met once (a reference, a name) costs no copy and evicts
	// none that comes back.
	seen uint64
}

// soundSlots is the size of the table; soundMax bounds the bytes of a
// segment kept, so that the table holds at most soundSlots*soundMax bytes
// and their spans.
const (
	soundSlots = 256
	soundMax   = 256
)

// known reports whether s, laid out as sd, passed before.
func (t *soundSegments) known(sd *Segment, decimal byte, s *edifact.Segment) bool {
	if t.slots == nil {
		t.seed, t.slots = maphash.MakeSeed(), make([]soundSlot, soundSlots)
	}
	t.hash = maphash.Bytes(t.seed, s.Raw())
	e := &t.slots[t.hash%soundSlots]
	t.slot = e
	return e.sd == sd && e.decimal == decimal && e.seg.SameValues(s)
}

// remember records that s, which known was last asked about and did not
// know, passed.
func (t *soundSegments) remember(sd *Segment, decimal byte, s *edifact.Segment) {
	e := t.slot
	if e.seen != t.hash {
		e.seen = t.hash
		return
	}
	if len(s.Raw()) > soundMax {
		return
	}
	e.sd, e.decimal = sd, decimal
	s.CloneInto(&e.seg)
}

var checkers = sync.Pool{New: func() any { return &Checker{stack: make([]frame, 0, 8)} }}

// Validate checks m against def and calls report for every finding, in
// message order. It keeps no reference to m or its segments.
func (def *Message) Validate(m *edifact.Message, opt Options, report func(Finding)) {
	c := checkers.Get().(*Checker)
	c.Begin(def, opt, report)
	for i, s := range m.All() {
		c.Segment(i, s)
	}
	c.End()
	checkers.Put(c)
}

// Begin starts the check of a message against def; report is called for
// every finding, in message order, from Segment and End.
func (c *Checker) Begin(def *Message, opt Options, report func(Finding)) {
	c.opt, c.def, c.emit = opt, def, report
	c.stack = append(c.stack[:0], frame{nodes: def.Table, keys: def.keys, pos: -1})
	c.seg, c.tag, c.off = 0, "", 0
	w := &c.walk
	w.following, w.n, w.rec, w.recSD, w.walked = w.def == def && len(w.tags) > 0, 0, w.rec[:0], w.recSD[:0], c.walked
}

// layout is the layout of s, segment i, as the walk through the segment
// table matches it (nil: not allowed here, reported), taken from the memo
// while the message follows it.
func (c *Checker) layout(i int, s *edifact.Segment) *Segment {
	w := &c.walk
	if w.following {
		if i == w.n && i < len(w.tags) && w.tags[i] == s.Tag {
			w.n++
			return w.sds[i]
		}
		c.leave()
	}
	sd := c.match(s.Tag)
	if len(w.rec) < walkMax {
		w.rec, w.recSD = append(w.rec, s.Tag), append(w.recSD, sd)
	}
	return sd
}

// leave stops following the memo: the stack is walked through the
// segments followed so far, which finds nothing, and they are recorded.
func (c *Checker) leave() {
	w := &c.walk
	w.following = false
	seg, tag, off := c.seg, c.tag, c.off
	for j, t := range w.tags[:w.n] {
		c.seg, c.tag = j+1, t
		c.match(t)
	}
	c.seg, c.tag, c.off = seg, tag, off
	w.rec, w.recSD = append(w.rec[:0], w.tags[:w.n]...), append(w.recSD[:0], w.sds[:w.n]...)
}

// Segment checks s, segment i (0-based; UNH is 0) of the message, the one
// after the segment checked before. It keeps no reference to s.
func (c *Checker) Segment(i int, s *edifact.Segment) {
	c.seg, c.s, c.tag, c.off = i+1, s, s.Tag, s.Offset
	if sd := c.layout(i, s); sd != nil && !sd.Any && !c.sound.known(sd, c.opt.Decimal, s) {
		found := c.found
		c.elements(sd)
		if c.found == found {
			c.sound.remember(sd, c.opt.Decimal, s)
		}
	}
	c.s = nil
}

// End ends the message: every group still open is closed and what it
// lacks reported.
func (c *Checker) End() {
	w := &c.walk
	if w.following && w.n == len(w.tags) {
		// The memo's walk to the end, which found nothing missing.
		c.stack = c.stack[:0]
	} else if w.following {
		c.leave()
	}
	for len(c.stack) > 0 {
		c.close(&c.stack[len(c.stack)-1])
		c.stack = c.stack[:len(c.stack)-1]
	}
	if !w.following && c.walked == w.walked && len(w.rec) < walkMax {
		w.def = c.def
		w.tags, w.rec = w.rec, w.tags
		w.sds, w.recSD = w.recSD, w.sds
	}
	c.def, c.emit = nil, nil
}

// Check is Validate collecting the findings.
func (def *Message) Check(m *edifact.Message, opt Options) []Finding {
	var out []Finding
	def.Validate(m, opt, func(f Finding) { out = append(out, f) })
	return out
}

func (c *Checker) add(k Kind, elem, comp int, off int64, format string, args ...any) {
	c.report(Finding{Kind: k, Segment: c.seg, Tag: c.s.Tag, Element: elem, Component: comp, Offset: off}, format, args)
}

func (c *Checker) addMissing(k Kind, want string, format string, args ...any) {
	c.walked++
	c.report(Finding{Kind: k, Segment: c.seg, Tag: c.tag, Offset: c.off, Expected: want}, format, args)
}

// report hands f to the caller, its Reason written out when wanted.
func (c *Checker) report(f Finding, format string, args []any) {
	if c.opt.Reason == nil || c.opt.Reason(f) {
		f.Reason = fmt.Sprintf(format, args...)
	}
	c.found++
	c.emit(f)
}

func describe(n *Node) string {
	if n.Segment != nil {
		return "segment " + n.Segment.Tag
	}
	return fmt.Sprintf("segment group %d (%s)", n.Number, n.trigger)
}

// missing reports the mandatory entries of f from index from on that did
// not occur (count is the occurrences of entry from).
func (c *Checker) missing(f *frame, from, to, count int) {
	if from >= len(f.nodes) {
		return
	}
	next := func(j int) int {
		if j+1 >= len(f.nodes) {
			return len(f.nodes)
		}
		return f.nodes[j+1].nextMandatory
	}
	for j := f.nodes[from].nextMandatory; j < to; j = next(j) {
		n := &f.nodes[j]
		got := 0
		if j == f.pos {
			got = count
		}
		if got >= n.Min {
			continue
		}
		where := "at the end of the message"
		if c.tag != "UNT" {
			where = "before " + c.tag
		}
		k := SegmentMissing
		if n.Segment == nil {
			k = GroupMissing
		}
		if got == 0 {
			c.addMissing(k, n.trigger, "mandatory %s missing %s", describe(n), where)
		} else {
			c.addMissing(k, n.trigger, "%s occurs %d times, at least %d required", describe(n), got, n.Min)
		}
	}
}

// close reports what is missing at the end of a frame.
func (c *Checker) close(f *frame) {
	start := f.pos
	if start < 0 {
		start = 0
	}
	c.missing(f, start, len(f.nodes), f.count)
}

// match advances the state machine over the segment table with tag and
// returns the layout of the matched segment, or nil when tag is not
// allowed here (reported).
func (c *Checker) match(tag string) *Segment {
	type hit struct{ level, idx int }
	over := hit{-1, -1} // the innermost entry tag would repeat past its maximum
	key := tagKey(tag)
	for level := len(c.stack) - 1; level >= 0; level-- {
		f := &c.stack[level]
		if f.pos >= 0 {
			n := &f.nodes[f.pos]
			if n.tkey == key {
				if n.Max == 0 || f.count < n.Max {
					return c.commit(level, f.pos, true)
				}
				if over.level < 0 {
					over = hit{level, f.pos}
				}
			}
		}
		for j := f.pos + 1; j < len(f.keys); j++ {
			if f.keys[j] == key {
				return c.commit(level, j, false)
			}
		}
	}
	if over.level >= 0 {
		return c.commit(over.level, over.idx, true)
	}
	c.walked++
	c.add(SegmentUnexpected, 0, 0, c.s.Offset, "segment %s is not allowed here in %s", tag, c.def.Name())
	return nil
}

func (c *Checker) commit(level, idx int, repeat bool) *Segment {
	for len(c.stack)-1 > level {
		c.close(&c.stack[len(c.stack)-1])
		c.stack = c.stack[:len(c.stack)-1]
	}
	f := &c.stack[level]
	n := &f.nodes[idx]
	if repeat {
		f.count++
		if n.Max > 0 && f.count > n.Max {
			// Built by hand, not through add: a run of a million repeats
			// is a million findings, and only those wanted are written out.
			fd := Finding{Kind: SegmentRepeated, Segment: c.seg, Tag: c.s.Tag, Offset: c.s.Offset}
			if n.Segment == nil {
				fd.Kind = GroupRepeated
			}
			if c.opt.Reason == nil || c.opt.Reason(fd) {
				fd.Reason = fmt.Sprintf("%s occurs more than %d times", describe(n), n.Max)
			}
			c.found++
			c.walked++
			c.emit(fd)
		}
	} else {
		if f.pos >= 0 {
			c.missing(f, f.pos, idx, f.count)
		} else {
			c.missing(f, 0, idx, 0)
		}
		f.pos, f.count = idx, 1
	}
	for n.Segment == nil {
		c.stack = append(c.stack, frame{nodes: n.Group, keys: n.keys, pos: 0, count: 1})
		n = &n.Group[0]
	}
	return n.Segment
}

// elem is the state of the element repetition being checked.
type elem struct {
	e, r     int
	ed       *Element // nil past the segment's elements
	start    int      // index of its first value
	off      int64    // offset of its first value
	end      int64    // offset just after its last value
	present  uint64   // components with a value
	surplus  bool     // an element or repetition the segment does not have
	reported bool     // surplus reported
	// other is whether a code of the repetition is qualified by another
	// list than UNCL: 0 not yet looked at, otherNo or otherYes (see
	// otherList).
	other uint8
}

const (
	otherNo = 1 + iota
	otherYes
)

// elements checks the data elements of the current segment against sd in
// one pass over its values, one element repetition at a time.
func (c *Checker) elements(sd *Segment) {
	s := c.s
	nv := s.ValueCount()
	var st elem
	for i := 0; i < nv; i++ {
		// A value holding release characters is unescaped into a new
		// slice (rare); the others alias the segment.
		e, comp, r, off, v := s.ValueAt(i, nil)
		if e != st.e || r != st.r {
			if st.e > 0 {
				c.finish(&st, i)
			}
			c.begin(sd, &st, e, r, i, off)
		}
		st.end = off + int64(len(v))
		if len(v) == 0 {
			continue
		}
		if st.surplus {
			if !st.reported {
				st.reported = true
				if st.ed == nil {
					c.add(ElementExtra, e, 0, st.off, "%s defines %d data elements", sd.Tag, len(sd.Elements))
				} else {
					c.add(RepetitionExtra, e, 0, st.off, "element %s repeated more than %d times", st.ed.Num, st.ed.Repeat)
				}
			}
			continue
		}
		ed := st.ed
		if comp > len(ed.Components) {
			what := "element " + ed.Num + " is simple"
			if ed.Composite {
				what = fmt.Sprintf("composite %s defines %d components", ed.Num, len(ed.Components))
			}
			c.add(ComponentExtra, e, comp, off, "%s", what)
			continue
		}
		if comp <= 64 {
			st.present |= 1 << (comp - 1)
		}
		cc := 0
		if ed.Composite {
			cc = comp
		}
		c.value(e, cc, &ed.Components[comp-1], v, off, &st)
	}
	if st.e > 0 {
		c.finish(&st, nv)
	}
	for k := st.e + 1; k <= sd.lastMandatory; k++ {
		if sd.Elements[k-1].Mandatory {
			c.add(ElementMissing, k, 0, s.Offset+int64(len(s.Raw())), "mandatory data element %s missing", sd.Elements[k-1].Num)
		}
	}
}

// begin starts repetition r of element e at value i.
func (c *Checker) begin(sd *Segment, st *elem, e, r, i int, off int64) {
	// Field by field: the composite literal was zeroed and copied, for
	// every element of every segment.
	st.e, st.r, st.ed, st.start, st.off, st.end, st.present = e, r, nil, i, off, off, 0
	st.surplus, st.reported, st.other = false, false, 0
	if e > len(sd.Elements) {
		st.surplus = true
		return
	}
	ed := &sd.Elements[e-1]
	st.ed = ed
	if r > 0 && ed.Repeat != 0 && r >= ed.Repeat {
		st.surplus = true
	}
}

// otherList reports whether a code of the element repetition st is
// qualified by a list other than UNCL (ISO 6346, EAN, a partner's) in its
// code list (1131) or agency (3055) component, and is then not checked
// against UNCL. It is looked for only when a code is not in its list:
// most are, and the values of the repetition are then gone through once.
func (c *Checker) otherList(st *elem) bool {
	if st.other != 0 {
		return st.other == otherYes
	}
	st.other = otherNo
	ed := st.ed
	if !ed.coded || (ed.listComp == 0 && ed.agencyComp == 0) {
		return false
	}
	s := c.s
	for j := st.start; j < s.ValueCount(); j++ {
		e2, comp, r2, _, v := s.ValueAt(j, nil)
		if e2 != st.e || r2 != st.r {
			break
		}
		if len(v) > 0 && (comp == ed.listComp || (comp == ed.agencyComp && string(v) != "6")) {
			st.other = otherYes
			return true
		}
	}
	return false
}

// finish reports what the element repetition that ends before value i
// lacks.
func (c *Checker) finish(st *elem, i int) {
	ed := st.ed
	if st.surplus || ed == nil {
		return
	}
	if st.present == 0 {
		if st.r == 0 && ed.Mandatory {
			c.add(ElementMissing, st.e, 0, st.off, "mandatory data element %s is empty", ed.Num)
		}
		return
	}
	if !ed.Composite {
		return
	}
	for lack := ed.mandatory &^ st.present; lack != 0; lack &= lack - 1 {
		k := bits.TrailingZeros64(lack)
		coff := st.end // where the component would stand
		if st.start+k < i {
			_, _, _, coff, _ = c.s.ValueAt(st.start+k, nil)
		}
		c.add(ComponentMissing, st.e, k+1, coff, "mandatory component %s of %s missing", ed.Components[k].Num, ed.Num)
	}
}

// value checks one non-empty value against its simple element.
// maxQuoted is the most bytes of a value a finding quotes: a value may be
// nearly a whole segment (64 KiB), quoted with up to four bytes a byte, and
// a message's findings are many.
const maxQuoted = 64

// quoted is a value as a finding quotes it (see String), in the
// character set cs (nil: as bytes). It is quoted only when the finding's
// Reason is written.
type quoted struct {
	v  []byte
	cs *edifact.Charset
}

// quoted is v as a finding of c quotes it.
func (c *Checker) quoted(v []byte) quoted { return quoted{v, c.opt.Charset} }

// String is v as %q writes it (its text, decoded from its character set,
// when that is known), its first maxQuoted bytes only, then "...".
func (q quoted) String() string {
	v, more := q.v, ""
	if len(v) > maxQuoted {
		v, more = v[:maxQuoted], "..."
	}
	if q.cs == nil {
		return strconv.Quote(string(v)) + more
	}
	return q.cs.Quote(v) + more
}

func (c *Checker) value(e, comp int, sd *Simple, v []byte, off int64, st *elem) {
	switch sd.Rep {
	case Code:
		// A value has no more runes than bytes: most need no count.
		if len(v) > MaxCodeLength {
			if n := utf8.RuneCount(v); n > MaxCodeLength {
				c.add(TooLong, e, comp, off, "%d characters, longer than any coded element (%s) may be (an..%d)", n, sd.name(), MaxCodeLength)
			}
		}
		if !sd.Codes.Has(v) && !c.otherList(st) {
			c.add(CodeUnknown, e, comp, off, "%s is not a code of %s", c.quoted(v), sd.name())
		}
		return
	case N:
		digits, bad, badAt := c.numeric(v)
		if bad {
			c.add(Representation, e, comp, off+int64(badAt), "%s is not numeric (%s n%s)", c.quoted(v), sd.name(), span(sd))
			return
		}
		c.length(e, comp, sd, digits, off)
		return
	case A:
		for k, b := range v {
			if b >= '0' && b <= '9' {
				c.add(Representation, e, comp, off+int64(k), "%s holds a digit; %s is alphabetic (a%s)", c.quoted(v), sd.name(), span(sd))
				return
			}
		}
	}
	n := len(v)
	if n <= sd.Max && sd.Min <= 1 {
		return // no more characters than bytes, and a value is never empty here
	}
	for _, b := range v {
		if b >= 0x80 {
			if utf8.Valid(v) {
				n = utf8.RuneCount(v)
			}
			break
		}
	}
	c.length(e, comp, sd, n, off)
}

func (c *Checker) length(e, comp int, sd *Simple, n int, off int64) {
	switch {
	case n > sd.Max:
		c.add(TooLong, e, comp, off, "%d characters, %s is %s%s", n, sd.name(), sd.Rep, span(sd))
	case n < sd.Min:
		c.add(TooShort, e, comp, off, "%d characters, %s is %s%s", n, sd.name(), sd.Rep, span(sd))
	}
}

// name is how a finding names the element: its number, or "the value"
// when the directory gives none. It is written out only for a finding.
func (sd *Simple) name() string {
	if sd.Num == "" {
		return "the value"
	}
	return sd.Num
}

func span(sd *Simple) string {
	if sd.Min == sd.Max {
		return fmt.Sprint(sd.Max)
	}
	return fmt.Sprintf("..%d", sd.Max)
}

// numeric counts the digits of v, an n value: digits, an optional leading
// minus sign and at most one decimal mark. bad is set, with the index of
// the first offending byte, when v is none.
func (c *Checker) numeric(v []byte) (digits int, bad bool, at int) {
	marks := 0
	for k, b := range v {
		switch {
		case b >= '0' && b <= '9':
			digits++
		case b == '-' && k == 0:
		case (c.opt.Decimal == 0 && (b == '.' || b == ',')) || (c.opt.Decimal != 0 && b == c.opt.Decimal):
			marks++
			if marks > 1 {
				return digits, true, k
			}
		default:
			return digits, true, k
		}
	}
	if digits == 0 {
		return 0, true, 0
	}
	return digits, false, 0
}
