package validate

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unsafe"

	"github.com/lazaret/lazaret/edifact"
)

// ruleCheck applies the logistics rules to one message a segment at a
// time, as the parser hands them over. Each value is looked at where it
// stands, in the segment's own bytes: a message that passes leaves behind
// a few counts and its party functions, nothing else. Only a failure
// copies a value and builds a RuleError.
//
// It finds what the rules would find on ViewOf's view of the message, in
// the same order (see end): TestRulesAsView and FuzzRules hold it to
// that. The view stays for callers that want the values; the check does
// not build it, because building it (a Field of six words for each value,
// copied into slices) cost more than the rules themselves.
type ruleCheck struct {
	m     *edifact.Message
	regs  *Registries
	rules *EDIRules
	cs    *edifact.Charset // of the message's syntax identifier: a finding shows a value as its text
	// Values with release characters are unescaped into these, one per
	// value in use at once; a longer one into an array of its own.
	esc [3][64]byte

	// un: the message is one of the UN directory (controlling agency
	// 0051 UN), so the rules that read its segments as the UN directory
	// defines them apply (see unRules).
	un     bool
	bgm    bool  // a BGM was read
	second int64 // the offset of the message's second segment

	// The party functions (NAD 3035): the first maxNamed+1 distinct ones
	// read, end to end (all that a missing party's finding names; a
	// message may hold a million NADs), whether each of the message
	// type's required ones was read, and where the last NAD stands.
	quals    []byte
	qualEnd  []int
	parties  []string // the message type's required party functions
	required []bool   // whether each of parties was read
	lastNAD  position

	// The container being read (EQD+CN): MEA segments that follow it are
	// its masses, until the next EQD.
	eq       bool
	eqAt     position
	eqNumber []byte
	eqSize   []byte
	eqVGM    int // its verified gross masses (MEA+AAE+VGM)
	eqs      int // containers read

	// The problems found, by rule, in the order end joins them; each rule
	// keeps at most limit of each tier (see ruleFindings).
	nad, loc, eqd, mea, pia, dtm ruleFindings
	limit                        int

	// passed holds the last few LOC, PIA and DTM segments in which the
	// rules found nothing, and EQD segments whose container number passed
	// its check digit: the same bytes again pass again, unread. An
	// interchange names the same ports, goods, dates and containers over
	// and over, often by turns (an IFTMIN's port of loading, then a
	// VERMAS's). The rules on the first three read nothing but the
	// segment (and the registries, which do not change during a check);
	// an EQD found there is still read for the container it opens (its
	// masses, its size, a VERMAS's missing mass), only its check digit is
	// not computed again. The bytes mean the same only under the same
	// separators, so passed is forgotten with the interchange (see
	// forget).
	passed [4]passedSet
}

// The segments whose passes ruleCheck remembers, as indexes of passed.
const (
	passedLOC = iota
	passedPIA
	passedDTM
	passedEQD
)

// ruleFindings are one rule's problems in a message. At most limit of
// each tier are kept, the first ones; past it they are counted, not built
// (a message of a million bad dates must not cost a million RuleErrors
// and their text), and the last one kept of the tier says how many more
// there were. A tier's first finding is always kept, so the verdict (the
// first finding of the highest tier) is the one the whole list gives.
type ruleFindings struct {
	errs []*RuleError
	n    [3]int // the findings of each tier (Tier.rank), kept or not
}

// count is the findings of l, kept or not.
func (l *ruleFindings) count() int { return l.n[0] + l.n[1] + l.n[2] }

// kept is l's kept findings, the last of each tier past limit saying how
// many more there were.
func (l *ruleFindings) kept(limit int) []*RuleError {
	for r, n := range l.n {
		if n <= limit {
			continue
		}
		for i := len(l.errs) - 1; i >= 0; i-- {
			if e := l.errs[i]; e.Tier.rank() == r {
				e.Reason = fmt.Sprintf("%s; and %d more past the limit of %d (edi directory max_findings)", e.Reason, n-limit, limit)
				break
			}
		}
	}
	return l.errs
}

// passedSet is the last few segments of one kind that passed, each up to
// maxPassed bytes (longer ones are rare and are read each time).
type passedSet struct {
	raw  [4][]byte
	next int // the entry the next segment that passes replaces
}

const maxPassed = 128

// has says whether raw is one of the set's.
func (p *passedSet) has(raw []byte) bool {
	for k := range p.raw {
		if len(p.raw[k]) > 0 && string(p.raw[k]) == string(raw) {
			return true
		}
	}
	return false
}

// add keeps raw, in place of the oldest entry.
func (p *passedSet) add(raw []byte) {
	if len(raw) > maxPassed {
		return
	}
	p.raw[p.next] = append(p.raw[p.next][:0], raw...)
	p.next = (p.next + 1) % len(p.raw)
}

// position is where a value stands, as a RuleError gives it: segment
// 1-based in the message (UNH = 1), element and component as CONTRL
// counts them (1-based; 0 for the segment as a whole), offset the byte
// in the interchange.
type position struct {
	segment            int
	tag                string
	element, component int
	offset             int64
}

// positionOf is the position of value e:c of s, segment i (0-based) of
// the message; off is its offset (the segment's when it is absent).
func positionOf(i int, s *edifact.Segment, e, c int, off int64) position {
	return position{segment: i + 1, tag: s.Tag, element: e, component: c, offset: off}
}

// begin starts the check of m.
func (rc *ruleCheck) begin(m *edifact.Message, regs *Registries, rules *EDIRules) {
	rc.m, rc.regs, rc.rules = m, regs, rules
	rc.un, rc.cs = unRules(m), edifact.CharsetOf(m.SyntaxID)
	if rc.limit = rules.Directory.MaxFindings; rc.limit <= 0 {
		rc.limit = 1000
	}
	if rc.un {
		rc.parties = rules.RequiredParties[m.Type]
	}
	for range rc.parties {
		rc.required = append(rc.required, false)
	}
}

// reset drops what the last message left, keeping the buffers.
func (rc *ruleCheck) reset() {
	for _, l := range [...]*ruleFindings{&rc.nad, &rc.loc, &rc.eqd, &rc.mea, &rc.pia, &rc.dtm} {
		if len(l.errs) > 0 {
			clear(l.errs)
			l.errs = l.errs[:0]
		}
		l.n = [3]int{}
	}
	rc.m, rc.regs, rc.rules, rc.cs = nil, nil, nil, nil
	rc.un, rc.bgm, rc.second = false, false, 0
	rc.quals, rc.qualEnd, rc.parties, rc.required, rc.lastNAD = rc.quals[:0], rc.qualEnd[:0], nil, rc.required[:0], position{}
	rc.eq, rc.eqAt, rc.eqNumber, rc.eqSize, rc.eqVGM, rc.eqs = false, position{}, rc.eqNumber[:0], rc.eqSize[:0], 0, 0
}

// fail is a RuleError of the message at p.
func (rc *ruleCheck) fail(p position, tier Tier, code string, syntax int, registry string, format string, args ...any) *RuleError {
	return &RuleError{Tier: tier, Code: code, Syntax: syntax, Message: rc.m.Ref, Segment: p.segment, Tag: p.tag,
		Element: p.element, Component: p.component, Offset: p.offset, Registry: registry, Reason: fmt.Sprintf(format, args...)}
}

// add adds the RuleError of the message at p to l, unless l holds limit
// of its tier already: then it is only counted.
func (rc *ruleCheck) add(l *ruleFindings, p position, tier Tier, code string, syntax int, registry string, format string, args ...any) {
	r := tier.rank()
	if l.n[r]++; l.n[r] > rc.limit {
		return
	}
	l.errs = append(l.errs, rc.fail(p, tier, code, syntax, registry, format, args...))
}

// value is s's value e:c, unescaped into buffer k if it must be: valid
// until the segment is let go or buffer k is used again. Each method
// below gives the values it holds at once buffers of their own (0, 1, 2
// in the order it reads them).
func (rc *ruleCheck) value(k int, s *edifact.Segment, e, c int) []byte {
	return s.ValueBytes(e, c, rc.esc[k][:0])
}

// valueOffset is value with its offset.
func (rc *ruleCheck) valueOffset(k int, s *edifact.Segment, e, c int) ([]byte, int64) {
	return s.ValueBytesOffset(e, c, rc.esc[k][:0])
}

// transient is b as a string that shares its bytes, for a use that ends
// before they change: before the segment is let go or, for a value
// unescaped into a buffer, before that buffer is used again. A
// comparison, a lookup, a parse, or an error formatted at once
// (CheckContainer's holds the number).
func transient(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// segment takes s, segment i (0-based) of the message begun.
func (rc *ruleCheck) segment(i int, s *edifact.Segment) {
	if i == 1 {
		rc.second = s.Offset
	}
	if !rc.un {
		return
	}
	switch s.Tag {
	case "BGM":
		rc.bgm = true
	case "NAD":
		rc.party(i, s)
	case "LOC":
		rc.unlessPassed(passedLOC, &rc.loc, (*ruleCheck).location, i, s)
	case "EQD":
		rc.equipment(i, s)
	case "MEA":
		rc.measure(i, s)
	case "PIA":
		rc.unlessPassed(passedPIA, &rc.pia, (*ruleCheck).product, i, s)
	case "DTM":
		rc.unlessPassed(passedDTM, &rc.dtm, (*ruleCheck).date, i, s)
	}
}

// unlessPassed applies check, which adds what it finds to found, to s,
// segment i of the message, unless s is byte for byte one of the last of
// its kind (k) that passed; one that passes now is remembered.
func (rc *ruleCheck) unlessPassed(k int, found *ruleFindings, check func(*ruleCheck, int, *edifact.Segment), i int, s *edifact.Segment) {
	p := &rc.passed[k]
	if p.has(s.Raw()) {
		return
	}
	n := found.count()
	check(rc, i, s)
	if found.count() == n {
		p.add(s.Raw())
	}
}

// forget drops the segments remembered as passed, for a check under
// other separators, and keeps their buffers.
func (rc *ruleCheck) forget() {
	for k := range rc.passed {
		p := &rc.passed[k]
		for j := range p.raw {
			p.raw[j] = p.raw[j][:0]
		}
		p.next = 0
	}
}

// party reads a NAD: it must name its function (3035); the functions
// named are kept for the message type's required parties (see end).
func (rc *ruleCheck) party(i int, s *edifact.Segment) {
	q, off := rc.valueOffset(0, s, 1, 1)
	rc.lastNAD = positionOf(i, s, 1, 1, off)
	if len(q) == 0 {
		rc.add(&rc.nad, rc.lastNAD, TierSemantic, "edifact.nad.qualifier-missing", edifact.CodeMissing, "", "NAD without a party function qualifier (3035)")
	}
	for k, r := range rc.parties {
		if transient(q) == r {
			rc.required[k] = true
		}
	}
	if len(q) > 0 && len(rc.qualEnd) <= maxNamed && !rc.holds(q) {
		rc.quals = append(rc.quals, q...)
		rc.qualEnd = append(rc.qualEnd, len(rc.quals))
	}
}

// location reads a LOC: a place declared a UN/LOCODE (code list 139 or
// agency 6), or shaped like one and not declared anything else, must be
// one the registry holds.
func (rc *ruleCheck) location(i int, s *edifact.Segment) {
	code, off := rc.valueOffset(0, s, 2, 1)
	list, agency := transient(rc.value(1, s, 2, 2)), transient(rc.value(2, s, 2, 3))
	c := transient(code)
	if declared := list == "139" || agency == "6"; !declared && (list != "" || agency != "" || !IsLOCODE(c)) {
		return // a terminal, berth or national code: not a UN/LOCODE
	}
	p := positionOf(i, s, 2, 1, off)
	switch {
	case c == "":
		rc.add(&rc.loc, p, TierSemantic, "edifact.locode.missing", edifact.CodeMissing, "", "LOC declares a UN/LOCODE but carries none")
	case !IsLOCODE(c):
		rc.add(&rc.loc, p, TierSemantic, "edifact.locode.malformed", edifact.CodeInvalidValue, "", "%s is not a UN/LOCODE (country + 3 of A-Z, 2-9)", rc.cs.Quote(code))
	case !rc.regs.LOCODE.Has(c):
		rc.add(&rc.loc, p, TierSemantic, "edifact.locode.unknown", edifact.CodeInvalidValue, rc.regs.LOCODE.Version(), "UN/LOCODE %s is not in the registry", c)
	}
}

// equipment reads an EQD: it ends the container before it (a VERMAS
// container must have had a verified gross mass), and a container's
// (8053 = CN) number, when it has one, must be ISO 6346 in full (owner
// code, category, serial, check digit: CheckContainer).
func (rc *ruleCheck) equipment(i int, s *edifact.Segment) {
	rc.endEquipment()
	if !s.ValueIs(1, 1, "CN") {
		return
	}
	number, off := rc.valueOffset(0, s, 2, 1)
	rc.eq, rc.eqVGM, rc.eqAt = true, 0, positionOf(i, s, 2, 1, off)
	rc.eqs++
	rc.eqNumber = append(rc.eqNumber[:0], number...)
	rc.eqSize = append(rc.eqSize[:0], rc.value(1, s, 3, 1)...)
	if p := &rc.passed[passedEQD]; !p.has(s.Raw()) {
		if n := transient(number); n != "" {
			if err := CheckContainer(n); err != nil {
				rc.add(&rc.eqd, rc.eqAt, TierSemantic, "edifact.container.check-digit", edifact.CodeInvalidValue, "", "%v", err)
				return
			}
		}
		p.add(s.Raw())
	}
}

// endEquipment ends the container being read, if one is.
func (rc *ruleCheck) endEquipment() {
	if rc.eq && rc.m.Type == "VERMAS" && rc.eqVGM == 0 {
		rc.add(&rc.eqd, rc.eqAt, TierRegulatory, "edifact.vgm.missing", edifact.CodeMissing, "",
			"container %s has no verified gross mass (MEA+AAE+VGM)", rc.eqNumber)
	}
	rc.eq = false
}

// measure reads a MEA: a verified gross mass (6313 = VGM) must be a
// number in a unit of mass, and plausible for the container it follows
// (SOLAS VI/2).
func (rc *ruleCheck) measure(i int, s *edifact.Segment) {
	dim := transient(rc.value(1, s, 2, 1))
	if rc.eq && dim == "VGM" && transient(rc.value(0, s, 1, 1)) == "AAE" {
		rc.eqVGM++
	}
	if dim != "VGM" {
		return
	}
	unit := transient(rc.value(0, s, 3, 1))
	value, off := rc.valueOffset(2, s, 3, 2)
	p := positionOf(i, s, 3, 2, off)
	kg, err := massKg(unit, transient(value))
	if err != nil {
		rc.add(&rc.mea, p, TierRegulatory, "edifact.vgm.invalid", edifact.CodeInvalidValue, "", "VGM %v", err)
		return
	}
	floor, ceil, size := rc.rules.VGMFloorKg, rc.rules.VGMMaxKg, "unknown size"
	if rc.eq {
		if f, c, ok := sizeLimits(transient(rc.eqSize)); ok {
			floor, ceil, size = f, c, transient(rc.eqSize)
		}
	}
	if kg < floor || kg > ceil {
		rc.add(&rc.mea, p, TierRegulatory, "edifact.vgm.implausible", edifact.CodeInvalidValue, "",
			"VGM %.0f kg is outside %.0f..%.0f kg for %s (SOLAS VI/2)", kg, floor, ceil, size)
	}
}

// product reads a PIA: each of its HS codes (component 1 of an element
// from the second on, whose component 2 is HS; first repetitions only)
// must be 2 to 10 digits whose subheading the tariff registry holds. The
// values are read once, in order: a segment of thousands of elements
// costs as many steps, not their square.
func (rc *ruleCheck) product(i int, s *edifact.Segment) {
	n := s.ValueCount()
	e, code, hs := 0, -1, false // the element being read, the index of its non-empty component 1, whether its component 2 is HS
	for j := 0; j <= n; j++ {
		el, comp, rep := -1, 0, 0 // past the last value: an element that ends the one being read
		var v []byte
		if j < n {
			el, comp, rep, _, v = s.ValueAt(j, rc.esc[1][:0])
		}
		if el != e {
			if e >= 2 && hs && code >= 0 {
				rc.tariff(i, s, e, code)
			}
			e, code, hs = el, -1, false
		}
		if rep != 0 {
			continue
		}
		switch comp {
		case 1:
			if len(v) > 0 {
				code = j
			}
		case 2:
			hs = string(v) == "HS"
		}
	}
}

// tariff checks the HS code that is value j (component 1 of element e)
// of s, segment i of the message.
func (rc *ruleCheck) tariff(i int, s *edifact.Segment, e, j int) {
	_, _, _, off, b := s.ValueAt(j, rc.esc[0][:0])
	code := transient(b)
	switch {
	case !isDigits(code) || len(code) < 2 || len(code) > 10:
		rc.add(&rc.pia, positionOf(i, s, e, 1, off), TierRegulatory, "edifact.hs.malformed", edifact.CodeInvalidValue, "", "HS code %s is not 2-10 digits", rc.cs.Quote(b))
	case !rc.regs.HS.Has(code[:min(len(code), 6)]):
		rc.add(&rc.pia, positionOf(i, s, e, 1, off), TierRegulatory, "edifact.hs.unknown", edifact.CodeInvalidValue, rc.regs.HS.Version(),
			"HS code %s (subheading %s) is not in the active tariff registry", code, code[:min(len(code), 6)])
	}
}

// date reads a DTM: its value must be a date of its format (2379).
func (rc *ruleCheck) date(i int, s *edifact.Segment) {
	b, off := rc.valueOffset(0, s, 1, 2)
	v, format := transient(b), transient(rc.value(1, s, 1, 3))
	if v != "" && !validDate(v, format) {
		rc.add(&rc.dtm, positionOf(i, s, 1, 2, off), TierSemantic, "edifact.dtm.invalid", edifact.CodeInvalidValue, "", "date %s does not match format %s", rc.cs.Quote(b), rc.cs.Text([]byte(format)))
	}
}

// holds says whether q is one of the party functions kept.
func (rc *ruleCheck) holds(q []byte) bool {
	start := 0
	for _, end := range rc.qualEnd {
		if string(rc.quals[start:end]) == string(q) {
			return true
		}
		start = end
	}
	return false
}

// named names the party functions read (see shownParty), each once, in
// the order they first occur: the first maxNamed, then "and others" if
// there are more.
func (rc *ruleCheck) named() []string {
	var out []string
	start := 0
	for _, end := range rc.qualEnd {
		if len(out) == maxNamed {
			return append(out, "and others")
		}
		out = append(out, shownParty(rc.cs, string(rc.quals[start:end])))
		start = end
	}
	return out
}

// end applies the rules that need the whole message and returns every
// problem found, structural first, then regulatory, then semantic; within
// a tier, in the order the rules are listed here, each rule's in the
// order of the message. rejects (the directory's) come last in each tier.
func (rc *ruleCheck) end(rejects []*RuleError) (warnings []Warning, err error) {
	rc.endEquipment()
	m, rules := rc.m, rc.rules
	var errs []*RuleError
	if m.Charset != nil {
		msg := fmt.Sprintf("byte 0x%02x at %d is outside the declared character repertoire", m.Charset.Byte, m.Charset.Offset)
		if rules.StrictCharset {
			errs = append(errs, rc.fail(position{segment: m.Charset.Segment, offset: m.Charset.Offset}, TierSemantic, "edifact.charset", edifact.CodeInvalidCharacter, "", "%s", msg))
		} else {
			off := m.Charset.Offset
			warnings = append(warnings, Warning{Code: "edifact.charset", Message: fmt.Sprintf("message %s: %s", m.Ref, msg), Offset: &off})
		}
	}
	if rc.un && !rc.bgm && !messagesWithoutBGM[m.Type] {
		p := position{segment: 2, tag: "BGM", offset: m.Offset}
		if m.Len() > 1 {
			p.offset = rc.second
		}
		errs = append(errs, rc.fail(p, TierStructural, "edifact.bgm.missing", edifact.CodeMissing, "", "mandatory BGM (beginning of message) missing"))
	}
	errs = append(errs, rc.nad.kept(rc.limit)...)
	for k, q := range rc.parties {
		if rc.required[k] {
			continue
		}
		p := position{segment: 1, tag: "NAD", offset: m.Offset}
		if rc.lastNAD.segment > 0 {
			p = rc.lastNAD
		}
		errs = append(errs, rc.fail(p, TierSemantic, "edifact.party.missing", edifact.CodeMissing, "", "%s requires a %s; the message names %s",
			m.Type, partyName(q), strings.Join(orNone(rc.named()), ", ")))
	}
	errs = append(errs, rc.loc.kept(rc.limit)...)
	errs = append(errs, rc.eqd.kept(rc.limit)...)
	if rc.un && m.Type == "VERMAS" && rc.eqs == 0 {
		errs = append(errs, rc.fail(position{segment: 1, tag: "EQD", offset: m.Offset}, TierRegulatory, "edifact.vgm.missing", edifact.CodeMissing, "", "VERMAS declares no container"))
	}
	errs = append(errs, rc.mea.kept(rc.limit)...)
	errs = append(errs, rc.pia.kept(rc.limit)...)
	errs = append(errs, rc.dtm.kept(rc.limit)...)
	errs = append(errs, rejects...)
	if len(errs) == 0 {
		return warnings, nil
	}
	slices.SortStableFunc(errs, func(a, b *RuleError) int { return a.Tier.rank() - b.Tier.rank() })
	joined := make([]error, len(errs))
	for i, e := range errs {
		joined[i] = e
	}
	return warnings, errors.Join(joined...)
}
