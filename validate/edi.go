package validate

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/edifact/directory"
)

// Tier is the validation tier a logistics rule belongs to; it decides the
// route (structural: dead-letter the interchange; semantic and regulatory:
// quarantine the message).
type Tier string

const (
	TierStructural Tier = "structural"
	TierSemantic   Tier = "semantic"
	TierRegulatory Tier = "regulatory"
)

// RuleError is one logistics rule a message breaks, with its position:
// Segment is 1-based in the message (UNH = 1), Element and Component as
// CONTRL counts them, Offset the byte in the interchange.
type RuleError struct {
	Tier      Tier
	Code      string // e.g. "edifact.locode.unknown"
	Syntax    int    // 0085 code when there is one (13 missing, 12 invalid value)
	Message   string // the message reference (UNH 0062)
	Segment   int
	Tag       string
	Element   int
	Component int
	Offset    int64
	Registry  string // registry version the rule checked against
	Reason    string
}

func (e *RuleError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: message %s segment %d (%s)", e.Tier, e.Message, e.Segment, e.Tag)
	if e.Element > 0 {
		fmt.Fprintf(&b, " element %d", e.Element)
		if e.Component > 0 {
			fmt.Fprintf(&b, ":%d", e.Component)
		}
	}
	fmt.Fprintf(&b, " at byte %d: %s", e.Offset, e.Reason)
	if e.Registry != "" {
		fmt.Fprintf(&b, " (checked against %s)", e.Registry)
	}
	return b.String()
}

// EDIRules are the logistics policy.
type EDIRules struct {
	// VGMFloorKg and VGMMaxKg bound a plausible verified gross mass when the
	// container's size is unknown; by size: 20 ft 1800..30480 kg, 40 ft
	// 3500..32500 kg, 45 ft 3800..34000 kg (tare floor, maximum gross).
	VGMFloorKg, VGMMaxKg float64
	// StrictCharset quarantines messages with characters outside the
	// declared syntax identifier's repertoire instead of warning.
	StrictCharset bool
	// RequiredParties lists the NAD party qualifiers (code list 3035) a
	// message type must carry.
	RequiredParties map[string][]string
	// MaxRetainedBytes bounds what is kept of an interchange's messages
	// until its envelope's verdict is known; 0 means
	// DefaultMaxRetainedBytes.
	MaxRetainedBytes int64
	// Directory is what the message-directory checks (segment table,
	// elements, representation, length, code values) do with what they
	// find; see DirectoryPolicy.
	Directory DirectoryPolicy
	// Directories are other controlling agencies' message directories, by
	// agency (UNH 0051, e.g. "KV"): a message of such an agency is checked
	// against its own (directory.ParseSet), never the UN's.
	Directories map[string]*directory.Set `json:"-"`
}

// Action is what a message-directory check does with a finding.
type Action string

const (
	// ActionReject fails the message: a structural finding (segment table,
	// elements, representation, length) dead-letters the interchange, a
	// code value quarantines the message (semantic).
	ActionReject Action = "reject"
	// ActionWarn records the finding as a warning; the message passes.
	ActionWarn Action = "warn"
	// ActionIgnore drops the finding.
	ActionIgnore Action = "ignore"
)

// Actions lists the actions.
func Actions() []Action { return []Action{ActionReject, ActionWarn, ActionIgnore} }

// DirectoryPolicy is the strictness of each message-directory check, in
// one place. An empty field takes its default (DefaultDirectoryPolicy).
type DirectoryPolicy struct {
	// Segments: segment order and groups, repetitions, mandatory segments.
	Segments Action `json:"segments"`
	// Elements: mandatory and surplus data elements, components and
	// repetitions.
	Elements Action `json:"elements"`
	// Representation: a digit in an a element, a non-number in an n one.
	Representation Action `json:"representation"`
	// Length: values longer or shorter than the directory allows.
	Length Action `json:"length"`
	// Codes: a coded value not in its UN/EDIFACT code list (UNCL). Values
	// qualified by another list (1131/3055) are not checked.
	Codes Action `json:"codes"`
	// Unknown: a message whose release or type the directory does not hold
	// gets envelope checks only; warn or ignore (reject fails it as
	// semantic).
	Unknown Action `json:"unknown"`
	// MaxFindings bounds the findings kept per message (0 = 1000); the
	// rest are counted in one last finding. It bounds each logistics
	// rule's findings of each tier too (see ruleFindings).
	MaxFindings int `json:"max_findings"`
}

// DefaultDirectoryPolicy rejects what breaks the syntax of a message
// (segment table, elements, representation) and warns about lengths, code
// values and messages without a directory: the good interchanges of the
// shared corpus carry partner and SMDG codes outside UNCL (BAPLIE, COARRI,
// IFTSAI, ORDERS) and one EANCOM order 4-character units in an an..3
// element (6411); they must pass.
func DefaultDirectoryPolicy() DirectoryPolicy {
	return DirectoryPolicy{Segments: ActionReject, Elements: ActionReject, Representation: ActionReject,
		Length: ActionWarn, Codes: ActionWarn, Unknown: ActionWarn, MaxFindings: 1000}
}

func (p DirectoryPolicy) action(c directory.Check) Action {
	d := DefaultDirectoryPolicy()
	pick := func(a, def Action) Action {
		if a == "" {
			return def
		}
		return a
	}
	switch c {
	case directory.CheckSegments:
		return pick(p.Segments, d.Segments)
	case directory.CheckElements:
		return pick(p.Elements, d.Elements)
	case directory.CheckRepresentation:
		return pick(p.Representation, d.Representation)
	case directory.CheckLength:
		return pick(p.Length, d.Length)
	case directory.CheckCodes:
		return pick(p.Codes, d.Codes)
	}
	return ActionReject
}

// Validate reports the fields that hold no known action.
func (p DirectoryPolicy) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		a    Action
	}{{"segments", p.Segments}, {"elements", p.Elements}, {"representation", p.Representation}, {"length", p.Length}, {"codes", p.Codes}, {"unknown", p.Unknown}} {
		switch f.a {
		case "", ActionReject, ActionWarn, ActionIgnore:
		default:
			errs = append(errs, &FieldError{Field: "edi.directory." + f.name, Rule: "oneof", Param: "reject warn ignore", Value: string(f.a),
				Message: "want reject, warn or ignore"})
		}
	}
	if p.MaxFindings < 0 {
		errs = append(errs, &FieldError{Field: "edi.directory.max_findings", Rule: "min", Param: "0", Value: fmt.Sprint(p.MaxFindings), Message: "must not be negative"})
	}
	return errors.Join(errs...)
}

// DefaultEDIRules: VGM 1500..40000 kg for unknown sizes, charset warnings,
// IFTMIN and IFCSUM need a consignor (CZ) and a consignee (CN), and the
// message-directory policy of DefaultDirectoryPolicy.
func DefaultEDIRules() EDIRules {
	return EDIRules{VGMFloorKg: 1500, VGMMaxKg: 40000,
		RequiredParties: map[string][]string{"IFTMIN": {"CZ", "CN"}, "IFCSUM": {"CZ", "CN"}},
		Directory:       DefaultDirectoryPolicy()}
}

// partyNames are the code list 3035 qualifiers the rules talk about.
var partyNames = map[string]string{
	"CZ": "consignor", "CN": "consignee", "CX": "consignee's agent", "FW": "freight forwarder",
	"CA": "carrier", "CG": "carrier's agent", "MS": "message sender", "MR": "message recipient",
}

func partyName(q string) string {
	if n, ok := partyNames[q]; ok {
		return fmt.Sprintf("%s (%s)", n, q)
	}
	return q
}

// A missing party's finding names at most maxNamed of the functions the
// message names, each cut to maxNameLen bytes (3035 is an..3): a message
// of thousands of NADs of long functions would otherwise make each such
// finding as long as itself.
const (
	maxNamed   = 8
	maxNameLen = 35
)

// shownParty is partyName(q), or q cut to maxNameLen bytes when longer,
// as text of the character set cs (see edifact.Charset.Text).
func shownParty(cs *edifact.Charset, q string) string {
	if len(q) > maxNameLen {
		return cs.Text([]byte(q[:maxNameLen])) + "..."
	}
	return partyName(cs.Text([]byte(q)))
}

// messagesWithoutBGM are message types that have no BGM segment: the
// UN/EDIFACT service messages (ISO 9735: CONTRL, AUTACK part 6, KEYMAN
// part 9) and IATA's PAORES (when it is sent under agency UN).
var messagesWithoutBGM = map[string]bool{"CONTRL": true, "AUTACK": true, "KEYMAN": true, "PAORES": true}

// unRules says whether the rules of the UN directory apply to m: the
// mandatory BGM, the segment tables and code lists of UNTDID, and the
// logistics rules that read segments (NAD, LOC, EQD, MEA, PIA, DTM) as
// the UN directory defines them. They do when m's controlling agency
// (UNH 0051) is UN. ISO 9735 itself requires no BGM: another agency's
// message (the German health insurers' KOTR:02:001:KV begins with IDK)
// is judged by the envelope and syntax rules, and by its agency's own
// directory where one is held; the directory lookup (recentDirs.lookup)
// holds only the UN's, so such a message gets the warning that no
// directory was applied (see unknownWarning).
func unRules(m *edifact.Message) bool { return m.Agency == "UN" }

// agencySet is the directory rules configures for m's agency, nil for
// the UN's own (the embedded directory) and for an agency with none.
func agencySet(m *edifact.Message, rules *EDIRules) *directory.Set {
	if unRules(m) {
		return nil
	}
	return rules.Directories[m.Agency]
}

// CheckMessage applies the structural, semantic and regulatory rules to one
// message (what they read is what ViewOf's view holds) and checks it
// against its release's message directory (package edifact/directory:
// segment table, elements, representation, length, code values) as
// rules.Directory says. All problems come back joined, structural first,
// then regulatory, then semantic; warnings are things worth a look that do
// not fail the message. Numeric values may use either decimal mark (the
// message does not carry its interchange's UNA).
func CheckMessage(m *edifact.Message, regs *Registries, rules EDIRules) (warnings []Warning, err error) {
	mc := messageChecks.Get().(*messageCheck)
	defer mc.release()
	// One pass over the segments: the rules read each as it goes by, and
	// so does the directory's check.
	mc.begin(m, regs, &rules)
	for i, s := range m.All() {
		mc.segment(i, s)
	}
	return mc.end()
}

// begin starts the check of m (its header: its segments follow). regs
// and rules are used until end returns.
func (mc *messageCheck) begin(m *edifact.Message, regs *Registries, rules *EDIRules) {
	mc.dirWarnings, mc.checkDir = mc.beginDirectory(m, rules)
	mc.rules.begin(m, regs, rules)
}

// segment takes s, segment i (0-based) of the message begun, through the
// rules and the directory's check.
func (mc *messageCheck) segment(i int, s *edifact.Segment) {
	mc.rules.segment(i, s)
	if mc.checkDir {
		mc.checker.Segment(i, s)
	}
}

// end applies the rules that need the whole message begun, its segments
// all taken, and returns what CheckMessage returns.
func (mc *messageCheck) end() (warnings []Warning, err error) {
	dirWarnings := mc.dirWarnings
	if mc.checkDir {
		mc.checker.End()
		dirWarnings = mc.dir.end()
	}
	warnings, err = mc.rules.end(mc.rejects)
	if warnings == nil {
		return dirWarnings, err
	}
	return append(warnings, dirWarnings...), err
}

// rank is the order in which CheckMessage joins a message's problems:
// structural, regulatory, semantic.
func (t Tier) rank() int {
	switch t {
	case TierStructural:
		return 0
	case TierRegulatory:
		return 1
	case TierSemantic:
		return 2
	}
	return 0 // as a map's zero value ranked it
}

// unknownWarnings holds one warning text per message type and release
// without a directory, so that a large interchange of them shares it.
var unknownWarnings struct {
	sync.RWMutex
	m map[unknownKey]string
}

type unknownKey struct {
	typ, version, release, agency string
	configured                    bool // the agency, not UN, has a directory of its own
}

// unknownWarning is the text of the warning on a message of m's type and
// release, which the directory does not hold.
func unknownWarning(m *edifact.Message, configured bool) string {
	k := unknownKey{m.Type, m.Version, m.Release, m.Agency, configured}
	unknownWarnings.RLock()
	text, ok := unknownWarnings.m[k]
	unknownWarnings.RUnlock()
	if ok {
		return text
	}
	unknownWarnings.Lock()
	defer unknownWarnings.Unlock()
	if text, ok := unknownWarnings.m[k]; ok {
		return text
	}
	if unknownWarnings.m == nil {
		unknownWarnings.m = map[unknownKey]string{}
	}
	switch {
	case unRules(m):
		text = fmt.Sprintf("no message directory for %s:%s:%s:%s; only the envelope was checked", m.Type, m.Version, m.Release, m.Agency)
	case configured:
		text = fmt.Sprintf("no message directory for %s:%s:%s:%s in the directory configured for agency %q; only the envelope and syntax were checked",
			m.Type, m.Version, m.Release, m.Agency, m.Agency)
	default:
		text = fmt.Sprintf("no directory applied to %s:%s:%s:%s: controlling agency %q has no directory configured and the UN directory's rules (BGM, segment tables, code lists) apply to agency UN only; only the envelope and syntax were checked",
			m.Type, m.Version, m.Release, m.Agency, m.Agency)
	}
	if len(unknownWarnings.m) < 1024 { // the releases of one interchange are few; a hostile one's are not kept
		unknownWarnings.m[k] = text
	}
	return text
}

// messageCheck is what CheckMessage reuses from message to message (see
// messageChecks): the rules' check, the directory's and the tables it
// looked up last, and the warnings of messages the directory does not
// hold.
type messageCheck struct {
	rules   ruleCheck
	dir     dirCheck
	checker directory.Checker
	recent  recentDirs
	unknown unknownEntries // the warnings of messages the directory does not hold
	// transient: the caller is done with a message's warnings when the
	// next message begins, or copies them (a verdictLog keeps a plain
	// verdict as its text's index, and copies one it keeps whole). The
	// warning of a message the directory does not hold is then scratch,
	// the same for every message.
	transient bool
	scratch   unknownEntry
	rejects   []*RuleError // the message's rejected directory findings
	// What beginDirectory said of the message being checked.
	dirWarnings []Warning
	checkDir    bool
}

var messageChecks = sync.Pool{New: func() any {
	mc := new(messageCheck)
	mc.dir.wantedFunc, mc.dir.reportFunc = mc.dir.wanted, mc.dir.report
	return mc
}}

func (mc *messageCheck) release() {
	mc.reset()
	mc.transient = false
	mc.rules.forget() // the next check may be of another interchange, under other separators
	messageChecks.Put(mc)
}

// reset readies mc for the next message.
func (mc *messageCheck) reset() {
	mc.rules.reset()
	mc.dir.reset()
	clear(mc.rejects)
	mc.rejects = mc.rejects[:0]
	mc.dirWarnings, mc.checkDir = nil, false
}

// beginDirectory starts the check of m against its release's message
// directory (see package directory), policy applied: rejected findings go
// to mc.rejects as *RuleError (code values semantic, the rest
// structural), warned ones come back from mc.dir.end. check says whether
// the directory holds m, and mc.checker is to be given its segments; a
// message it does not hold gets a warning (policy.Unknown), returned
// here. A missing BGM is left to the BGM rule.
func (mc *messageCheck) beginDirectory(m *edifact.Message, rules *EDIRules) (warnings []Warning, check bool) {
	policy := rules.Directory
	set := agencySet(m, rules)
	r := mc.recent.lookup(m, set)
	if r.def == nil {
		switch policy.Unknown {
		case ActionIgnore:
			return nil, false
		case ActionReject:
			mc.rejects = append(mc.rejects, &RuleError{Tier: TierSemantic, Code: unknownDirectoryCode, Message: m.Ref, Segment: 1, Tag: "UNH", Offset: m.Offset,
				Reason: fmt.Sprintf("no message directory for %s %s:%s:%s; only the envelope was checked", m.Type, m.Version, m.Release, m.Agency)})
			return nil, false
		}
		if r.unknown == "" {
			r.unknown = unknownWarning(m, set != nil)
		}
		if mc.transient {
			mc.scratch.off = m.Offset
			return mc.scratch.set(r.unknown), false
		}
		return mc.unknown.warnings(r.unknown, m.Offset), false
	}
	d := &mc.dir
	d.m, d.def, d.policy, d.rejects = m, r.def, policy, &mc.rejects
	d.limit = policy.MaxFindings
	if d.limit <= 0 {
		d.limit = 1000
	}
	mc.checker.Begin(r.def, directory.Options{Reason: d.wantedFunc, Charset: edifact.CharsetOf(m.SyntaxID)}, d.reportFunc)
	return nil, true
}

// recentDirs are the last four message types and releases a message
// check looked up in the directory, and what it found: an interchange
// holds few, one after the other, and a lookup hashes four strings.
type recentDirs struct {
	e    [4]recentDir
	next int // the entry a new lookup replaces
}

type recentDir struct {
	ok                            bool
	typ, version, release, agency string
	set                           *directory.Set     // the agency's directory looked in (nil: the UN's, or none)
	def                           *directory.Message // nil: the directory does not hold it
	unknown                       string             // the warning on a message def is nil for, once made
}

// lookup is the entry of m's type and release, in set for another
// agency's message (see agencySet), looked up if it is not among the last
// four.
func (r *recentDirs) lookup(m *edifact.Message, set *directory.Set) *recentDir {
	for i := range r.e {
		if e := &r.e[i]; e.ok && e.typ == m.Type && e.version == m.Version && e.release == m.Release && e.agency == m.Agency && e.set == set {
			return e
		}
	}
	e := &r.e[r.next]
	r.next = (r.next + 1) % len(r.e)
	*e = recentDir{ok: true, typ: strings.Clone(m.Type), version: strings.Clone(m.Version), release: strings.Clone(m.Release), agency: strings.Clone(m.Agency), set: set}
	switch {
	case unRules(m):
		e.def = directory.Lookup(m.Version, m.Release, m.Type)
	case set != nil:
		e.def = set.Lookup(m.Version, m.Release, m.Type)
	}
	return e
}

// end finishes the directory's check of the message: the rejected
// finding that stands for those past the limit is added, and the warnings
// come back.
func (d *dirCheck) end() []Warning {
	if d.over != nil {
		d.over.Reason = fmt.Sprintf("%s; and %d more rejected findings past the limit of %d (edi directory max_findings)", d.over.Reason, d.droppedReject-1, d.limit)
		*d.rejects = append(*d.rejects, d.over)
	}
	if d.droppedWarn > 0 {
		off := d.m.Offset
		d.warnings = append(d.warnings, Warning{Code: "edifact.directory.more", Offset: &off,
			Message: fmt.Sprintf("message %s: %d more directory warnings not listed (edi directory max_findings %d)", d.m.Ref, d.droppedWarn, d.limit)})
	}
	return d.warnings
}

// dirCheck is what a messageCheck keeps while the directory reports a
// message's findings.
type dirCheck struct {
	m       *edifact.Message
	def     *directory.Message
	policy  DirectoryPolicy
	limit   int
	rejects *[]*RuleError
	// kept counts the findings kept; past the limit, warnings are only
	// counted and rejected findings too, but for one that stands for all.
	kept, droppedWarn, droppedReject int
	over                             *RuleError // the rejected finding past the limit standing for the others
	warnings                         []Warning
	registry                         string // what a rejected finding was checked against, once one is

	// d.wanted and d.report as func values, made once.
	wantedFunc func(directory.Finding) bool
	reportFunc func(directory.Finding)
}

// reset readies d for the next message.
func (d *dirCheck) reset() {
	d.m, d.def, d.rejects, d.over, d.warnings, d.registry = nil, nil, nil, nil, nil, ""
	d.kept, d.droppedWarn, d.droppedReject = 0, 0, 0
}

// standsIn says whether a rejected finding past the limit replaces the one
// that stands for all of them: the first, or the first structural one
// after a semantic.
func (d *dirCheck) standsIn(f directory.Finding) bool {
	return d.over == nil || (f.Kind != directory.CodeUnknown && d.over.Tier != TierStructural)
}

// wanted says whether f's Reason is wanted: a finding past the limit is
// only counted, but for the one rejected finding that stands for all of
// them.
func (d *dirCheck) wanted(f directory.Finding) bool {
	action := d.policy.action(f.Kind.Check())
	switch {
	case action == ActionIgnore:
		return false
	case d.kept < d.limit:
		return true
	case action == ActionWarn:
		return false
	}
	return d.standsIn(f)
}

// report applies the policy to finding f.
func (d *dirCheck) report(f directory.Finding) {
	if f.Kind == directory.SegmentMissing && f.Expected == "BGM" && unRules(d.m) {
		return // the BGM rule reports it, with its established code
	}
	action := d.policy.action(f.Kind.Check())
	if action == ActionIgnore {
		return
	}
	full := d.kept >= d.limit
	if !full {
		d.kept++
	}
	if action == ActionWarn {
		if full {
			d.droppedWarn++
			return
		}
		off := f.Offset
		d.warnings = append(d.warnings, Warning{Code: "edifact.directory." + string(f.Kind), Offset: &off, Message: fmt.Sprintf("message %s %s", d.m.Ref, f.String())})
		return
	}
	tier := TierStructural
	if f.Kind == directory.CodeUnknown {
		tier = TierSemantic
	}
	if d.registry == "" {
		d.registry = d.def.Name() + " directory"
	}
	if !full {
		*d.rejects = append(*d.rejects, directoryError(d.m, f, tier, d.registry))
		return
	}
	d.droppedReject++ // counted, not built: a million of them must cost nothing
	if d.standsIn(f) {
		d.over = directoryError(d.m, f, tier, d.registry)
	}
}

// directoryError is finding f of message m's directory check as a
// RuleError.
func directoryError(m *edifact.Message, f directory.Finding, tier Tier, registry string) *RuleError {
	return &RuleError{Tier: tier, Code: "edifact.directory." + string(f.Kind), Syntax: f.Kind.Syntax(), Message: m.Ref, Segment: f.Segment, Tag: f.Tag,
		Element: f.Element, Component: f.Component, Offset: f.Offset, Registry: registry, Reason: f.Reason}
}

func orNone(s []string) []string {
	if len(s) == 0 {
		return []string{"no parties"}
	}
	return s
}

// sizeLimits maps an ISO 6346 size-type code's length character to the
// tare floor and maximum gross mass.
func sizeLimits(code string) (floor, ceil float64, ok bool) {
	if code == "" {
		return 0, 0, false
	}
	switch code[0] {
	case '2':
		return 1800, 30480, true
	case '4':
		return 3500, 32500, true
	case 'L':
		return 3800, 34000, true
	}
	return 0, 0, false
}

func massKg(unit, value string) (float64, error) {
	v, ok := wholeNumber(value)
	if !ok {
		var err error
		if v, err = strconv.ParseFloat(strings.Replace(value, ",", ".", 1), 64); err != nil {
			return 0, fmt.Errorf("value %q is not a number", value)
		}
	}
	switch unit {
	case "KGM":
		return v, nil
	case "LBR":
		return v * 0.45359237, nil
	case "TNE":
		return v * 1000, nil
	}
	return 0, fmt.Errorf("unit %q is not KGM, LBR or TNE", unit)
}

// wholeNumber is the value of s when it is 1 to 15 digits, as
// strconv.ParseFloat reads it (exactly: below 2^53), without its cost;
// ok is false for any other s.
func wholeNumber(s string) (v float64, ok bool) {
	if len(s) == 0 || len(s) > 15 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, false
		}
		n = n*10 + int64(s[i]-'0')
	}
	return float64(n), true
}

// validDate reports whether v is a date of format (code list 2379) as
// time.Parse with the format's layout reads it (TestValidDateIsTimeParse
// holds it to that), without time.Parse's cost: CCYY is four digits, YY two
// or a sign and one digit (time.Parse reads it with atoi; 69..99 are 19YY,
// the rest 20YY), then two digits each for the month (1..12), the day (of
// that month, in that year), the hour (0..23), the minute and the second
// (0..59).
func validDate(v, format string) bool {
	var n, yearLen int
	switch format {
	case "102": // CCYYMMDD
		n, yearLen = 8, 4
	case "203": // CCYYMMDDHHMM
		n, yearLen = 12, 4
	case "201": // YYMMDDHHMM
		n, yearLen = 10, 2
	case "101": // YYMMDD
		n, yearLen = 6, 2
	case "204": // CCYYMMDDHHMMSS
		n, yearLen = 14, 4
	default:
		return true // a format the rules do not check
	}
	if len(v) != n {
		return false
	}
	var year int
	switch {
	case yearLen == 4:
		if !isDigits(v[:4]) {
			return false
		}
		year = twoDigits(v[0:2])*100 + twoDigits(v[2:4])
	case isDigit(v[1]) && isDigit(v[0]):
		year = twoDigits(v[:2]) + 2000
		if year >= 2069 {
			year -= 100
		}
	case isDigit(v[1]) && v[0] == '+':
		year = 2000 + int(v[1]-'0')
	case isDigit(v[1]) && v[0] == '-':
		year = 2000 - int(v[1]-'0')
	default:
		return false
	}
	rest := v[yearLen:]
	if !isDigits(rest) {
		return false
	}
	month, day := twoDigits(rest[0:2]), twoDigits(rest[2:4])
	if month < 1 || month > 12 || day < 1 || day > daysIn(month, year) {
		return false
	}
	for i, limit := range [...]int{24, 60, 60} { // hour, minute, second, as far as v goes
		if k := 4 + 2*i; k < len(rest) && twoDigits(rest[k:k+2]) >= limit {
			return false
		}
	}
	return true
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

// twoDigits is the number two digits make.
func twoDigits(s string) int { return int(s[0]-'0')*10 + int(s[1]-'0') }

// daysIn is the number of days of month (1..12) in year, proleptic
// Gregorian as package time counts them.
func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
