// Package directory holds the UN/EDIFACT message directories Lazaret knows
// (segment tables with groups and repetitions, segment and composite
// layouts, representations, code lists) and checks a parsed message
// against its release's table, as an EDI translator does: segment order and
// groups, repetitions, mandatory segments, elements and components,
// representation and length, and code values. Every finding of a message
// is reported, each with its position.
//
// The tables are generated (go generate) from the machine-readable
// directories published as BizTalk XML Schemas in microsoft/Integration
// (MIT licence; see NOTICE and tables.txt's header): 13 messages
// (APERAK, BAPLIE, COARRI, CODECO, COPRAR, CUSCAR, DESADV, IFCSUM, IFTMIN,
// IFTSAI, IFTSTA, INVOIC, ORDERS) in releases D95B, D96A, D97A, D97B, D99B,
// D00B, D01B, D04B and D10B, and the service message CONTRL D:3.
package directory

import (
	_ "embed"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
)

//go:generate go run ./gen -src ../../../shared/corpus/edifact-directory -out tables.txt

// tablesText is the tables, as text: embedded as they are, not
// compressed, so that the first Lookup indexes them where they lie
// instead of inflating 380 KB first (some milliseconds, more than the
// rest of a one-message inspect's directory work).
//
//go:embed tables.txt
var tablesText string

// Rep is the representation of a simple data element.
type Rep uint8

const (
	// AN is alphanumeric (an): any character of the repertoire.
	AN Rep = iota
	// A is alphabetic (a): no digits.
	A
	// N is numeric (n): digits, a leading minus sign and one decimal mark;
	// its length counts the digits only.
	N
	// Code is a coded element: its value must be in the code list.
	Code
)

func (r Rep) String() string {
	switch r {
	case A:
		return "a"
	case N:
		return "n"
	case Code:
		return "code"
	}
	return "an"
}

// CodeList is the set of values of a coded data element.
type CodeList struct {
	// table is an open-addressing hash set of the codes of up to 3 bytes
	// (packCode keys, 0 = empty slot), mask its size - 1; set holds longer
	// codes (none in the tables shipped).
	table []uint32
	mask  uint32
	set   map[string]struct{}
	Len   int
}

// packCode packs a value of 1 to 3 bytes, with its length, into a non-zero
// key; ok is false for other lengths.
func packCode(v []byte) (k uint32, ok bool) {
	switch len(v) {
	case 1:
		return 1<<24 | uint32(v[0]), true
	case 2:
		return 2<<24 | uint32(v[0])<<8 | uint32(v[1]), true
	case 3:
		return 3<<24 | uint32(v[0])<<16 | uint32(v[1])<<8 | uint32(v[2]), true
	}
	return 0, false
}

func hashCode(k uint32) uint32 { return (k * 0x9E3779B1) >> 7 }

func newCodeList(codes []string) *CodeList {
	c := &CodeList{Len: len(codes)}
	size := 8
	for size < 2*len(codes) {
		size *= 2
	}
	c.table, c.mask = make([]uint32, size), uint32(size-1)
	for _, v := range codes {
		k, ok := packCode([]byte(v))
		if !ok {
			if c.set == nil {
				c.set = map[string]struct{}{}
			}
			c.set[v] = struct{}{}
			continue
		}
		for i := hashCode(k) & c.mask; ; i = (i + 1) & c.mask {
			if c.table[i] == 0 || c.table[i] == k {
				c.table[i] = k
				break
			}
		}
	}
	return c
}

// Has reports whether v is in the list.
func (c *CodeList) Has(v []byte) bool {
	k, ok := packCode(v)
	if !ok {
		_, ok := c.set[string(v)]
		return ok
	}
	for i := hashCode(k) & c.mask; ; i = (i + 1) & c.mask {
		switch c.table[i] {
		case k:
			return true
		case 0:
			return false
		}
	}
}

// Simple is a simple data element, on its own or as a component.
type Simple struct {
	Num       string // data element number, e.g. "1004"; "" when the directory names none
	Mandatory bool
	Rep       Rep
	Min, Max  int // length in characters (digits for N); 0 for codes
	Codes     *CodeList
}

// Element is a data element position in a segment: a simple element (one
// component, Composite false) or a composite.
type Element struct {
	Num        string // "C507", "1225"; "" for an unnamed service composite
	Mandatory  bool
	Composite  bool
	Repeat     int // repetitions allowed (syntax 4): 1 = none, 0 = unbounded
	Components []Simple
	// listComp and agencyComp are the 1-based positions of the code list
	// (1131) and agency (3055) components of a composite, 0 when absent:
	// a code qualified by another list is not checked against UNCL.
	listComp, agencyComp int
	coded                bool // a component is coded
	// mandatory has bit k set when component k+1 is mandatory (of the
	// first 64), for a check that finds those missing in one test.
	mandatory uint64
}

// Segment is a segment layout.
type Segment struct {
	Tag      string
	Elements []Element
	// Any is set when the directory gives no layout (CONTRL's UNH and UNT
	// come from a schema not shipped): the elements are not checked.
	Any bool
	// lastMandatory is the 1-based position of the last mandatory element,
	// 0 when none is: a segment that ends past it lacks none.
	lastMandatory int
}

// lastMandatory is the 1-based position of the last mandatory element of
// es, 0 when none is.
func lastMandatory(es []Element) int {
	for k := len(es); k > 0; k-- {
		if es[k-1].Mandatory {
			return k
		}
	}
	return 0
}

// Node is one entry of a segment table: a segment or a segment group.
type Node struct {
	Segment  *Segment // nil for a group
	Group    []Node   // the group's entries; the first is its trigger segment
	Number   int      // segment group number (1-based, as the directory counts them); 0 for a segment
	Min, Max int      // occurrences; Max 0 = unbounded
	trigger  string
	tkey     uint32   // tagKey(trigger)
	keys     []uint32 // tkey of each entry of Group, for a quick scan
	// nextMandatory is the index, in the slice holding this node, of the
	// first mandatory entry from this one on (len of the slice if none).
	nextMandatory int
}

// tagKey packs a 3-byte tag into an integer, for quick comparisons.
func tagKey(tag string) uint32 {
	if len(tag) != 3 {
		return 0
	}
	return uint32(tag[0])<<16 | uint32(tag[1])<<8 | uint32(tag[2])
}

// Message is a message type's segment table in one release.
type Message struct {
	Version, Release, Type string // "D", "95B", "BAPLIE"
	Table                  []Node
	keys                   []uint32 // tkey of each entry of Table
	depth                  int
}

// Name is e.g. "BAPLIE D:95B".
func (m *Message) Name() string { return m.Type + " " + m.Version + ":" + m.Release }

type key struct{ version, release, typ string }

var (
	loadOnce sync.Once
	loaded   *tables
	loadErr  error // of reading the tables' index
)

// tables are the embedded tables, indexed by line and parsed lazily: a
// message's table, and the segments and code lists it uses, on its first
// Lookup. Most runs check a few message types of one or two releases;
// parsing all 118 tables cost a one-message inspect more than the rest
// of its work.
type tables struct {
	mu        sync.Mutex // held while a table is parsed
	codeLines []line     // by id
	segLines  []line
	codes     []*CodeList // parsed, by id; nil until used
	segs      []*Segment
	msgs      map[key]*lazyMessage
}

// line is one record of the tables: its text after the id (or key) and
// its line number, for errors.
type line struct {
	text string
	n    int
}

type lazyMessage struct {
	line
	key  key
	once sync.Once
	m    *Message // nil when its line is bad (a generator bug)
	err  error
}

// Lookup returns the segment table of message type typ in directory
// version and release (UNH S009 0052 and 0054, e.g. "D", "95B"), or nil when
// the directory does not hold it.
func Lookup(version, release, typ string) *Message {
	loadOnce.Do(load)
	lm := loaded.msgs[key{version, release, typ}]
	if lm == nil {
		return nil
	}
	return loaded.message(lm)
}

// Set is a message directory read from text in the format of the
// embedded tables (see tables.txt): another controlling agency's, which
// Lookup (the UN's) does not hold.
type Set struct{ t *tables }

// MaxSetBytes bounds the text ParseSet reads.
const MaxSetBytes = 16 << 20

// ParseSet reads a directory from text in the tables' format, every
// message table parsed at once, so that a bad line is an error here,
// naming it, not a table missing later.
func ParseSet(text string) (*Set, error) {
	if len(text) > MaxSetBytes {
		return nil, fmt.Errorf("directory: %d bytes of tables, more than %d", len(text), MaxSetBytes)
	}
	t, err := indexTables(text)
	if err != nil {
		return nil, err
	}
	lms := make([]*lazyMessage, 0, len(t.msgs))
	for _, lm := range t.msgs {
		lms = append(lms, lm)
	}
	sort.Slice(lms, func(i, j int) bool { return lms[i].n < lms[j].n })
	for _, lm := range lms {
		if t.message(lm); lm.err != nil {
			return nil, lm.err
		}
	}
	return &Set{t: t}, nil
}

// Lookup is the segment table of message type typ in version and release
// of the set, or nil when it holds none.
func (s *Set) Lookup(version, release, typ string) *Message {
	lm := s.t.msgs[key{version, release, typ}]
	if lm == nil {
		return nil
	}
	return s.t.message(lm)
}

// Messages lists every table held, sorted by release and type.
func Messages() []*Message {
	loadOnce.Do(load)
	out := make([]*Message, 0, len(loaded.msgs))
	for _, lm := range loaded.msgs {
		if m := loaded.message(lm); m != nil {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Release != out[j].Release {
			return out[i].Version+out[i].Release < out[j].Version+out[j].Release
		}
		return out[i].Type < out[j].Type
	})
	return out
}

// loadError is the first error, if any, of reading the embedded tables,
// every one of them parsed (a bug in the generator; Lookup then finds
// nothing for the tables it touches).
func loadError() error {
	loadOnce.Do(load)
	if loadErr != nil {
		return loadErr
	}
	lms := make([]*lazyMessage, 0, len(loaded.msgs))
	for _, lm := range loaded.msgs {
		lms = append(lms, lm)
	}
	sort.Slice(lms, func(i, j int) bool { return lms[i].n < lms[j].n })
	for _, lm := range lms {
		if loaded.message(lm); lm.err != nil {
			return lm.err
		}
	}
	return nil
}

func load() {
	var err error
	if loaded, err = indexTables(tablesText); err != nil {
		loadErr, loaded = err, &tables{}
	}
}

func badLine(n int, format string, args ...any) error {
	return fmt.Errorf("directory: tables line %d: %s", n, fmt.Sprintf(format, args...))
}

// indexTables indexes the lines of the tables, parsing none; the index
// holds strings of text.
func indexTables(text string) (*tables, error) {
	t := &tables{msgs: map[key]*lazyMessage{}}
	rest := text
	for n := 1; rest != ""; n++ {
		text, after, _ := strings.Cut(rest, "\n")
		rest = after
		if text == "" || text[0] == '#' {
			continue
		}
		kind, body, _ := strings.Cut(strings.TrimLeft(text, " \t"), " ")
		switch kind {
		case "L", "S":
			id, body, _ := strings.Cut(strings.TrimLeft(body, " \t"), " ")
			lines := &t.codeLines
			if kind == "S" {
				lines = &t.segLines
			}
			if id != strconv.Itoa(len(*lines)) {
				if kind == "L" {
					return nil, badLine(n, "code list out of order")
				}
				return nil, badLine(n, "segment out of order")
			}
			*lines = append(*lines, line{body, n})
		case "M":
			f := strings.SplitN(strings.TrimLeft(body, " \t"), " ", 4)
			if len(f) < 4 {
				return nil, badLine(n, "short message line")
			}
			k := key{f[0], f[1], f[2]}
			t.msgs[k] = &lazyMessage{line: line{f[3], n}, key: k}
		default:
			return nil, badLine(n, "unknown record %q", kind)
		}
	}
	t.codes, t.segs = make([]*CodeList, len(t.codeLines)), make([]*Segment, len(t.segLines))
	return t, nil
}

// message is lm's table, parsed on its first call.
func (t *tables) message(lm *lazyMessage) *Message {
	lm.once.Do(func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		lm.m, lm.err = t.parseMessage(lm)
	})
	return lm.m
}

func (t *tables) parseMessage(lm *lazyMessage) (*Message, error) {
	m := &Message{Version: lm.key.version, Release: lm.key.release, Type: lm.key.typ}
	p := &treeParser{toks: strings.Fields(lm.text), segs: t.segment}
	table, err := p.nodes(0)
	if err != nil {
		return nil, badLine(lm.n, "%s: %v", m.Type, err)
	}
	if p.i != len(p.toks) {
		return nil, badLine(lm.n, "%s: unbalanced groups", m.Type)
	}
	m.Table, m.keys = table, link(table)
	m.depth = p.maxDepth + 1
	return m, nil
}

// segment is segment id, parsed on first use; t.mu is held.
func (t *tables) segment(id int) (*Segment, error) {
	if id < 0 || id >= len(t.segs) {
		return nil, fmt.Errorf("segment %d", id)
	}
	if s := t.segs[id]; s != nil {
		return s, nil
	}
	l := t.segLines[id]
	f := strings.Fields(l.text)
	if len(f) < 1 {
		return nil, badLine(l.n, "segment out of order")
	}
	s := &Segment{Tag: f[0], Any: len(f) == 1 && (f[0] == "UNH" || f[0] == "UNT")}
	for _, tok := range f[1:] {
		e, err := parseElement(tok, t.code)
		if err != nil {
			return nil, badLine(l.n, "%s: %v", f[0], err)
		}
		s.Elements = append(s.Elements, e)
	}
	s.lastMandatory = lastMandatory(s.Elements)
	t.segs[id] = s
	return s, nil
}

// code is code list id, parsed on first use (nil when there is none);
// t.mu is held.
func (t *tables) code(id int) *CodeList {
	if id < 0 || id >= len(t.codes) {
		return nil
	}
	if c := t.codes[id]; c != nil {
		return c
	}
	c := newCodeList(strings.Fields(t.codeLines[id].text))
	t.codes[id] = c
	return c
}

func parseElement(tok string, codes func(id int) *CodeList) (Element, error) {
	var e Element
	if len(tok) < 2 || (tok[0] != 'M' && tok[0] != 'C') {
		return e, fmt.Errorf("element %q", tok)
	}
	e.Mandatory, e.Repeat = tok[0] == 'M', 1
	if i := strings.LastIndexByte(tok, '*'); i > 0 && !strings.ContainsAny(tok[i:], ")") {
		n, err := strconv.Atoi(tok[i+1:])
		if err != nil {
			return e, fmt.Errorf("repeat %q", tok)
		}
		e.Repeat, tok = n, tok[:i]
	}
	if i := strings.IndexByte(tok, '('); i > 0 {
		if !strings.HasSuffix(tok, ")") {
			return e, fmt.Errorf("composite %q", tok)
		}
		e.Num, e.Composite = tok[1:i], true
		for _, c := range strings.Split(tok[i+1:len(tok)-1], ",") {
			s, err := parseSimple(c, codes)
			if err != nil {
				return e, err
			}
			e.Components = append(e.Components, s)
		}
	} else {
		s, err := parseSimple(tok, codes)
		if err != nil {
			return e, err
		}
		e.Num, e.Components = s.Num, []Simple{s}
	}
	if e.Num == "-" {
		e.Num = ""
	}
	for i, c := range e.Components {
		if c.Mandatory && i < 64 {
			e.mandatory |= 1 << i
		}
		switch {
		case c.Rep == Code && c.Num != "1131" && c.Num != "3055":
			e.coded = true
		case c.Num == "1131" && e.Composite:
			e.listComp = i + 1
		case c.Num == "3055" && e.Composite:
			e.agencyComp = i + 1
		}
	}
	return e, nil
}

func parseSimple(tok string, codes func(id int) *CodeList) (Simple, error) {
	var s Simple
	colon := strings.IndexByte(tok, ':')
	if len(tok) < 4 || colon < 2 || (tok[0] != 'M' && tok[0] != 'C') {
		return s, fmt.Errorf("simple element %q", tok)
	}
	s.Mandatory, s.Num = tok[0] == 'M', tok[1:colon]
	if s.Num == "-" {
		s.Num = ""
	}
	rep := tok[colon+1:]
	if strings.HasPrefix(rep, "L") {
		id, err := strconv.Atoi(rep[1:])
		var c *CodeList
		if err == nil {
			c = codes(id)
		}
		if c == nil {
			return s, fmt.Errorf("code list %q", tok)
		}
		s.Rep, s.Codes = Code, c
		return s, nil
	}
	switch {
	case strings.HasPrefix(rep, "an"):
		s.Rep, rep = AN, rep[2:]
	case strings.HasPrefix(rep, "a"):
		s.Rep, rep = A, rep[1:]
	case strings.HasPrefix(rep, "n"):
		s.Rep, rep = N, rep[1:]
	default:
		return s, fmt.Errorf("representation %q", tok)
	}
	lo, hi, ok := strings.Cut(rep, "-")
	var err1, err2 error
	s.Min, err1 = strconv.Atoi(lo)
	s.Max, err2 = strconv.Atoi(hi)
	if !ok || err1 != nil || err2 != nil || s.Max < 1 || s.Min > s.Max {
		return s, fmt.Errorf("length %q", tok)
	}
	return s, nil
}

type treeParser struct {
	toks     []string
	i        int
	segs     func(id int) (*Segment, error)
	groups   int
	maxDepth int
}

func (p *treeParser) nodes(depth int) ([]Node, error) {
	var out []Node
	p.maxDepth = max(p.maxDepth, depth)
	for p.i < len(p.toks) {
		t := p.toks[p.i]
		switch {
		case t == "[":
			p.i++
			p.groups++
			n := Node{Number: p.groups}
			inner, err := p.nodes(depth + 1)
			if err != nil {
				return nil, err
			}
			if p.i >= len(p.toks) || !strings.HasPrefix(p.toks[p.i], "]/") {
				return nil, fmt.Errorf("group %d not closed", n.Number)
			}
			if len(inner) == 0 || inner[0].Segment == nil {
				return nil, fmt.Errorf("group %d does not start with a segment", n.Number)
			}
			if n.Min, n.Max, err = occ(p.toks[p.i][2:]); err != nil {
				return nil, err
			}
			p.i++
			n.Group, n.trigger, n.tkey, n.keys = inner, inner[0].trigger, inner[0].tkey, link(inner)
			out = append(out, n)
		case strings.HasPrefix(t, "]"):
			return out, nil
		default:
			id, rest, ok := strings.Cut(t, "/")
			n, err := strconv.Atoi(id)
			if !ok || err != nil {
				return nil, fmt.Errorf("segment %q", t)
			}
			seg, err := p.segs(n)
			if err != nil {
				return nil, fmt.Errorf("segment %q: %w", t, err)
			}
			node := Node{Segment: seg, trigger: seg.Tag, tkey: tagKey(seg.Tag)}
			if node.Min, node.Max, err = occ(rest); err != nil {
				return nil, err
			}
			p.i++
			out = append(out, node)
		}
	}
	return out, nil
}

// link fills the nextMandatory of the entries of ns and returns their
// trigger keys.
func link(ns []Node) []uint32 {
	keys := make([]uint32, len(ns))
	next := len(ns)
	for i := len(ns) - 1; i >= 0; i-- {
		if ns[i].Min > 0 {
			next = i
		}
		ns[i].nextMandatory = next
		keys[i] = ns[i].tkey
	}
	return keys
}

func occ(s string) (lo, hi int, err error) {
	a, b, ok := strings.Cut(s, "/")
	lo, err1 := strconv.Atoi(a)
	hi, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || lo < 0 || hi < 0 {
		return 0, 0, fmt.Errorf("occurrences %q", s)
	}
	return lo, hi, nil
}
