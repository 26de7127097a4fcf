package edifact

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Delimiters are an interchange's service characters.
type Delimiters struct {
	Component  byte // default ':'
	Element    byte // default '+'
	Decimal    byte // default '.'
	Release    byte // default '?'; 0 when UNA declares none
	Repetition byte // default ' ' (none) before syntax 4, '*' in syntax 4; 0 = none
	Terminator byte // default '\''
}

// DefaultDelimiters are the separators of an interchange without UNA.
var DefaultDelimiters = Delimiters{Component: ':', Element: '+', Decimal: '.', Release: '?', Repetition: 0, Terminator: '\''}

// Limits bound what a reader accepts. Zero fields take the defaults.
type Limits struct {
	MaxSegmentBytes    int   // default 64 KiB
	MaxComponents      int   // components in one segment, default 4096
	MaxSegments        int64 // segments in one interchange, default 50 million
	MaxMessageSegments int   // segments kept for one message, default 1 million
	// MaxMessageBytes is the memory the segments kept for one message may
	// take (their bytes, two bytes a component and twelve a segment: see
	// store), default 128 MiB, and at most 4 GiB whatever it says. It is
	// checked as each segment is kept.
	MaxMessageBytes int64
	// MaxInterchanges bounds the interchanges one input may hold, one
	// after the other (each UNB .. UNZ is judged on its own), default
	// 16384: each costs an Interchange kept until the parse ends.
	MaxInterchanges int
}

func (l Limits) withDefaults() Limits {
	if l.MaxSegmentBytes <= 0 {
		l.MaxSegmentBytes = 64 << 10
	}
	if l.MaxComponents <= 0 {
		l.MaxComponents = 4096
	}
	if l.MaxSegments <= 0 {
		l.MaxSegments = 50_000_000
	}
	if l.MaxMessageSegments <= 0 {
		l.MaxMessageSegments = 1_000_000
	}
	if l.MaxMessageBytes <= 0 {
		l.MaxMessageBytes = 128 << 20
	}
	if l.MaxInterchanges <= 0 {
		l.MaxInterchanges = 1 << 14
	}
	return l
}

// span is one component: its bytes raw[start:end] and its position,
// packed in pos as escaped<<63 | elem<<32 | rep<<16 | comp so that the
// next position is computed without a branch (see nextPos).
type span struct {
	start, end int32 // in raw
	pos        uint64
}

const (
	escBit    = 1 << 63
	compMask  = 0xffff
	repShift  = 16
	elemShift = 32
)

func mkSpan(start, end int32, elem, comp, rep uint16, escaped bool) span {
	pos := uint64(elem)<<elemShift | uint64(rep)<<repShift | uint64(comp)
	if escaped {
		pos |= escBit
	}
	return span{start: start, end: end, pos: pos}
}

func (sp span) elem() uint16  { return uint16(sp.pos >> elemShift) }
func (sp span) comp() uint16  { return uint16(sp.pos) }
func (sp span) rep() uint16   { return uint16(sp.pos >> repShift) }
func (sp span) escaped() bool { return sp.pos&escBit != 0 }

// nextKeep and nextAdd give the position after a separator of each class:
// next = cur&nextKeep[cl] + nextAdd[cl] (element: elem+1, comp 1, rep 0;
// component: comp+1; repetition: rep+1, comp 1), the escape bit cleared.
var nextKeep, nextAdd = func() (k, a [8]uint64) {
	k[clElem], a[clElem] = 0xffff<<elemShift, 1<<elemShift|1
	k[clComp], a[clComp] = 0xffff<<elemShift|0xffff<<repShift|compMask, 1
	k[clRep], a[clRep] = 0xffff<<elemShift|0xffff<<repShift, 1<<repShift|1
	return
}()

// Segment is one segment. A Segment returned by Reader.Next is valid until
// the next call; Clone keeps it.
type Segment struct {
	Tag    string
	Offset int64 // byte offset of the tag's first byte
	Index  int   // 1-based position in the interchange (UNB = 1)
	raw    []byte
	holes  []int32 // positions in raw where CR/LF bytes were dropped
	spans  []span
	rel    byte
	bad    int32 // first byte outside the repertoire set with SetRepertoire, or -1
}

// BadByte is the input offset and value of the segment's first byte outside
// the repertoire (see Reader.SetRepertoire); ok is false when there is none.
func (s *Segment) BadByte() (offset int64, b byte, ok bool) {
	if s.bad < 0 {
		return 0, 0, false
	}
	return s.inputOffset(s.bad), s.raw[s.bad], true
}

// Raw is the segment's bytes without terminator (and without CR/LF).
func (s *Segment) Raw() []byte { return s.raw }

// Elements is the number of data elements (the tag not counted).
func (s *Segment) Elements() int {
	if len(s.spans) == 0 {
		return 0
	}
	return int(s.spans[len(s.spans)-1].elem())
}

// Components is the number of components of data element e (first repetition).
func (s *Segment) Components(e int) int {
	n := 0
	for _, sp := range s.spans {
		if int(sp.elem()) == e && sp.rep() == 0 {
			n = int(sp.comp())
		}
	}
	return n
}

func (s *Segment) find(e, c int) (span, bool) {
	if e < 0 || c < 0 || e > 0xffff || c > 0xffff {
		return span{}, false
	}
	// Positions (escape bit aside) increase from span to span.
	target := uint64(e)<<elemShift | uint64(c)
	for _, sp := range s.spans {
		if p := sp.pos &^ escBit; p >= target {
			return sp, p == target
		}
	}
	return span{}, false
}

// Value is component c (1-based) of data element e (1-based; 0 is the tag)
// in its first repetition, with release characters removed; "" if absent.
func (s *Segment) Value(e, c int) string { return string(s.ValueBytes(e, c, nil)) }

// Offset of component c of element e in the input (the segment's offset
// when it is absent).
func (s *Segment) ValueOffset(e, c int) int64 {
	sp, ok := s.find(e, c)
	if !ok {
		return s.Offset
	}
	return s.inputOffset(sp.start)
}

func (s *Segment) inputOffset(i int32) int64 {
	n := int64(i)
	for _, h := range s.holes {
		if h <= i {
			n++
		}
	}
	return s.Offset + n
}

// Clone returns a copy that stays valid.
func (s *Segment) Clone() Segment {
	c := *s
	c.raw = bytes.Clone(s.raw)
	c.holes = append([]int32(nil), s.holes...)
	c.spans = append([]span(nil), s.spans...)
	return c
}

// Reader reads segments from an interchange.
//
// It reads through its own buffer (64 KiB, grown to hold the longest
// segment allowed) and finds each segment's terminator, data elements and
// components in one pass over its bytes; a segment with CR or LF inside
// it, or one at a limit, takes a slower path that handles every case.
type Reader struct {
	src        io.Reader
	buf        []byte // buf[r:w] is read and not yet consumed
	r, w       int
	base       int64 // input offset of buf[0]
	eof        bool  // src has returned io.EOF
	err        error // a read error other than io.EOF, returned when more input is needed
	lim        Limits
	d          Delimiters
	class      [256]byte // byte classes inside a segment (the terminator is data)
	fast       [256]byte // class, with the terminator as clTerm
	termOther  bool      // the terminator is outside the repertoire
	index      int
	seg        Segment
	started    bool
	hasUNA     bool
	countOnly  bool   // Parse without a callback: spans only for service segments
	plainEnd   int    // the length of the segment plainUNH matched
	tags       string // every possible tag, 3 bytes each (see allTags)
	repertoire *[256]bool
}

// SetRepertoire marks the bytes data may hold; Segment.BadByte reports the
// first other byte. nil turns the check off.
func (r *Reader) SetRepertoire(allowed *[256]bool) {
	r.repertoire = allowed
	r.setClasses()
}

// Byte classes. The separators and the terminator come first, so that
// one comparison (cl <= clTerm) finds a component's end.
const (
	clData = iota
	clElem
	clComp
	clRep
	clTerm // the segment terminator (the fast table only)
	clRel
	clCRLF
	clOther // outside the declared repertoire: noted, not an error here
)

// readBufSize is the Reader's initial buffer.
const readBufSize = 64 << 10

// NewReader reads an interchange from r.
func NewReader(r io.Reader, lim Limits) *Reader {
	lim = lim.withDefaults()
	rd := &Reader{src: r, buf: make([]byte, readBufSize), lim: lim, d: DefaultDelimiters, tags: allTags()}
	rd.setClasses()
	return rd
}

func (r *Reader) setClasses() {
	r.class = [256]byte{}
	if r.repertoire != nil {
		for c := range r.class {
			if !r.repertoire[c] {
				r.class[c] = clOther
			}
		}
	}
	r.class['\r'], r.class['\n'] = clCRLF, clCRLF
	r.class[r.d.Element] = clElem
	r.class[r.d.Component] = clComp
	if r.d.Release != 0 {
		r.class[r.d.Release] = clRel
	}
	if r.d.Repetition != 0 {
		r.class[r.d.Repetition] = clRep
	}
	r.termOther = r.class[r.d.Terminator] == clOther
	r.seg.rel = r.d.Release
	r.fast = r.class
	r.fast[r.d.Terminator] = clTerm
}

// Delimiters are the service characters in force.
func (r *Reader) Delimiters() Delimiters { return r.d }

// HasUNA reports whether the interchange declared its separators.
func (r *Reader) HasUNA() bool { return r.hasUNA }

// SetRepetition sets the repetition separator (syntax 4 without UNA uses '*').
func (r *Reader) SetRepetition(c byte) {
	r.d.Repetition = c
	r.setClasses()
}

// Offset is the number of bytes consumed so far.
func (r *Reader) Offset() int64 { return r.base + int64(r.r) }

// fill reads more input after buf[w], first dropping the consumed bytes
// before buf[r] when the buffer is full or mostly consumed, and doubling
// the buffer when the unread bytes fill it. It reports false, with nothing
// read, at the end of the input or after a read error (kept in r.err).
func (r *Reader) fill() bool {
	if r.eof || r.err != nil {
		return false
	}
	if r.r > 0 && (r.w == len(r.buf) || r.r >= len(r.buf)/2) {
		n := copy(r.buf, r.buf[r.r:r.w])
		r.base += int64(r.r)
		r.r, r.w = 0, n
	}
	if r.w == len(r.buf) {
		nb := make([]byte, 2*len(r.buf))
		copy(nb, r.buf[:r.w])
		r.buf = nb
	}
	for tries := 0; tries < 100; tries++ {
		n, err := r.src.Read(r.buf[r.w:])
		if n < 0 || n > len(r.buf)-r.w {
			r.err = errors.New("edifact: the reader returned an invalid count")
			return false
		}
		r.w += n
		switch {
		case err == io.EOF:
			r.eof = true
		case err != nil:
			r.err = err
		}
		if n > 0 {
			return true
		}
		if err != nil {
			return false
		}
	}
	r.err = io.ErrNoProgress
	return false
}

// fillMore reads until the unread bytes have at least doubled (and grown
// by 512), the buffer is full, or the input ends; it reports whether it
// read anything. scan starts a segment over after each read, so this
// keeps the work linear when the input comes in small pieces.
func (r *Reader) fillMore() bool {
	want := 2*(r.w-r.r) + 512
	read := false
	for r.w-r.r < want && (!read || r.w < len(r.buf)) {
		if !r.fill() {
			break
		}
		read = true
	}
	return read
}

// peek returns at least n unread bytes, or fewer at the end of the input.
func (r *Reader) peek(n int) []byte {
	for r.w-r.r < n && r.fill() {
	}
	return r.buf[r.r:min(r.w, r.r+n)]
}

func (r *Reader) start() error {
	r.started = true
	head := r.peek(3)
	if bytes.Equal(head, []byte("\xef\xbb\xbf")) {
		r.r += 3
	}
	head = r.peek(9)
	if len(head) < 3 || string(head[:3]) != "UNA" {
		return nil
	}
	if len(head) < 9 {
		return &SyntaxError{Offset: r.Offset(), Tag: "UNA", Code: CodeInvalidServiceChar, Err: fmt.Errorf("%w: %d bytes, want 9", ErrBadUNA, len(head))}
	}
	d := Delimiters{Component: head[3], Element: head[4], Decimal: head[5], Release: head[6], Repetition: head[7], Terminator: head[8]}
	if d.Release == ' ' {
		d.Release = 0
	}
	if d.Repetition == ' ' {
		d.Repetition = 0
	}
	bad := func(c byte) bool {
		return c == ' ' || c == '\r' || c == '\n' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
	}
	seen := map[byte]bool{}
	for i, c := range []byte{d.Component, d.Element, d.Release, d.Repetition, d.Terminator} {
		if c == 0 && (i == 2 || i == 3) {
			continue
		}
		if bad(c) || seen[c] {
			return &SyntaxError{Offset: r.Offset() + 3 + int64(i), Tag: "UNA", Code: CodeInvalidServiceChar, Err: fmt.Errorf("%w: service character %q", ErrBadUNA, c)}
		}
		seen[c] = true
	}
	r.d, r.hasUNA = d, true
	r.setClasses()
	r.r += 9
	return nil
}

// NextInterchange readies the reader for an interchange that follows the
// one whose UNZ it just read: it skips the whitespace after that UNZ and,
// when UNA or UNB follows, forgets the service characters, repertoire and
// segment count of the interchange before, so that the next one's UNA (or
// the defaults) set them. It reports whether an interchange follows; when
// none does, the reader stays where it is and Next returns what follows
// (io.EOF, or the data after UNZ). Offsets still count from the start of
// the input.
func (r *Reader) NextInterchange() bool {
	for {
		if _, b := r.skipSpace(); len(b) >= 3 || !r.fill() {
			break
		}
	}
	b := r.buf[r.r:r.w]
	if len(b) < 3 || (string(b[:3]) != "UNA" && string(b[:3]) != "UNB") {
		return false
	}
	r.d, r.hasUNA, r.repertoire, r.index, r.started = DefaultDelimiters, false, nil, 0, false
	r.setClasses()
	return true
}

// SkipBytes consumes the next n bytes of the input as they are, without
// looking for separators in them (the octets of a binary object, ISO
// 9735-8), and returns how many it consumed: fewer than n at the end of
// the input, with the read error when one stopped it. It holds no more of
// them than its buffer.
func (r *Reader) SkipBytes(n int64) (int64, error) {
	var done int64
	for done < n {
		if r.r == r.w && !r.fill() {
			break
		}
		k := min(int64(r.w-r.r), n-done)
		r.r += int(k)
		done += k
	}
	if done < n && r.err != nil {
		return done, r.err
	}
	return done, nil
}

// Next returns the next segment, or io.EOF after the last one. Errors are
// *SyntaxError, or an I/O error from the underlying reader unchanged. The
// segment and its bytes are valid until the next call; Clone keeps one.
func (r *Reader) Next() (*Segment, error) {
	if !r.started {
		if err := r.start(); err != nil {
			return nil, err
		}
	}
	s := &r.seg
	for {
		switch r.scan(s) {
		case scanDone:
			return s, nil
		case scanMore:
			if r.w-r.r <= r.lim.MaxSegmentBytes && r.fillMore() {
				continue
			}
			if r.r == r.w { // only whitespace was left
				if r.err != nil {
					return nil, r.err
				}
				return nil, io.EOF
			}
		}
		return r.slowNext(s)
	}
}

const (
	scanDone = iota // a whole segment, without CR/LF, inside the limits
	scanMore        // no terminator in the bytes read so far
	scanSlow        // anything else: let slowNext decide
)

// skipSpace consumes the whitespace before the next segment and returns
// where that segment starts in the buffer and the buffered bytes from
// there.
func (r *Reader) skipSpace() (p int, b []byte) {
	buf := r.buf[:r.w]
	q := uint(r.r)
	for q < uint(len(buf)) && spaceByte[buf[q]] {
		q++
	}
	r.r = int(q)
	return int(q), buf[q:]
}

// scan is the fast path: it skips the whitespace before a segment and, when
// a whole well-formed segment follows in the buffer, splits it into
// s.spans in one pass, notes its first byte outside the repertoire, fills
// s and consumes it. Anything unusual (CR or LF inside, a bad tag, a limit
// reached) returns scanSlow and leaves the decision, and the error, to
// slowNext; scanMore asks for more input.
func (r *Reader) scan(s *Segment) int {
	p, b := r.skipSpace()
	if len(b) < 4 {
		return scanMore
	}
	t0, t1, t2 := tagIndex[b[0]], tagIndex[b[1]], tagIndex[b[2]]
	if t0|t1|t2 < 0 {
		return scanSlow
	}
	t := (t0*36+t1)*36 + t2
	class := &r.fast
	n := 0
	sp := s.spans[:cap(s.spans)]
	s.bad = -1
	end := 3
	switch class[b[3]] {
	case clTerm:
	case clElem:
		if len(b) > r.lim.MaxSegmentBytes+1 {
			b = b[:r.lim.MaxSegmentBytes+1] // a terminator past this is too far
		}
		if r.countOnly && (b[0] != 'U' || b[1] != 'N') {
			var st int
			if end, s.bad, st = r.count(b); st != scanDone {
				return st
			}
			break
		}
		// Spans are written in place (a span built on the stack and
		// copied stalls on store forwarding): sp[n] is the component
		// being read, and the loop keeps few variables live so that
		// they stay in registers.
		if len(sp) < 256 {
			sp = make([]span, 256)
			s.spans = sp[:0]
		}
		// A segment with more components than sp holds, or more than the
		// limit, takes the slow path (which grows sp for the next ones):
		// no growth code here, so nothing is spilled around it.
		room := min(r.lim.MaxComponents, 65535, len(sp))
		sp[0] = span{start: 4, pos: 1<<elemShift | 1}
		j := uint(4) // unsigned: the bounds checks below are proved away
		for {
			// Data bytes: the tight loop that takes most of the time.
			for j < uint(len(b)) && class[b[j]] == clData {
				j++
			}
			if j >= uint(len(b)) {
				return scanMore
			}
			cl := class[b[j]]
			if cl <= clTerm { // a separator or the terminator
				cur := &sp[n]
				cur.end = int32(j)
				n++
				if cl == clTerm {
					break
				}
				if n >= room {
					s.spans = sp[:0]
					return scanSlow
				}
				next := &sp[n]
				next.start, next.pos = int32(j+1), cur.pos&nextKeep[cl]+nextAdd[cl]
				j++
				continue
			}
			switch cl {
			case clOther:
				if s.bad < 0 {
					s.bad = int32(j)
				}
			case clRel:
				j++
				if j >= uint(len(b)) {
					return scanMore
				}
				switch class[b[j]] {
				case clCRLF:
					return scanSlow
				case clOther:
					if s.bad < 0 {
						s.bad = int32(j)
					}
				case clTerm:
					if r.termOther && s.bad < 0 {
						s.bad = int32(j)
					}
				}
				sp[n].pos |= escBit
			default: // clCRLF
				return scanSlow
			}
			j++
		}
		end = int(j)
	default:
		return scanSlow
	}
	r.index++
	s.spans = sp[:n]
	s.Offset, s.Index = r.base+int64(p), r.index
	if len(s.holes) > 0 {
		s.holes = s.holes[:0]
	}
	s.raw = b[:end:end]
	s.Tag = r.tags[3*t : 3*t+3]
	r.r = p + end + 1
	return scanDone
}

// count is scan for a segment whose components nobody will read (Parse
// without a callback, a segment other than a service segment): it finds
// the same boundaries, release characters, repertoire faults and limits,
// and returns the segment's length and its first byte outside the
// repertoire (or -1). Where scan would take the slow path, so does count,
// and the slow path splits the segment in full.
func (r *Reader) count(b []byte) (end int, bad int32, st int) {
	class := &r.fast
	room := min(r.lim.MaxComponents, 65535)
	n := 0
	j := uint(4)
	bad = -1
	for {
		for j < uint(len(b)) && class[b[j]] == clData {
			j++
		}
		if j >= uint(len(b)) {
			return 0, bad, scanMore
		}
		cl := class[b[j]]
		if cl <= clTerm {
			n++
			if cl == clTerm {
				return int(j), bad, scanDone
			}
			if n >= room {
				return 0, bad, scanSlow
			}
			j++
			continue
		}
		switch cl {
		case clOther:
			if bad < 0 {
				bad = int32(j)
			}
		case clRel:
			j++
			if j >= uint(len(b)) {
				return 0, bad, scanMore
			}
			switch class[b[j]] {
			case clCRLF:
				return 0, bad, scanSlow
			case clOther:
				if bad < 0 {
					bad = int32(j)
				}
			case clTerm:
				if r.termOther && bad < 0 {
					bad = int32(j)
				}
			}
		default: // clCRLF
			return 0, bad, scanSlow
		}
		j++
	}
}

// skip consumes up to max consecutive segments that are not service
// segments (tag UN?) and that count reads without incident, and returns
// how many: Parse without a callback, inside a message, checks nothing
// else in them. With stopBad, a segment holding a byte outside the
// repertoire stops it too. It stops before any segment it does not
// consume, leaving it to Next; it fills no Segment.
//
// With ref set, skip also consumes the message's UNT when it is exactly
// UNT+count+ref' with the count it must have (the segments so far, this
// one included, counting from unt), nothing else in it and no byte
// outside the repertoire, and reports that the message ended there.
func (r *Reader) skip(max int, stopBad bool, unt int, ref string) (int, bool) {
	n := 0
	for n < max {
		p, b := r.skipSpace()
		if len(b) < 4 || tagIndex[b[0]]|tagIndex[b[1]]|tagIndex[b[2]] < 0 {
			break
		}
		if b[0] == 'U' && b[1] == 'N' {
			if b[2] == 'T' && ref != "" {
				if end := r.plainUNT(b, unt+n, ref); end > 0 {
					r.r = p + end + 1
					r.index++
					return n + 1, true
				}
			}
			break
		}
		end := 3
		switch r.fast[b[3]] {
		case clTerm:
		case clElem:
			if len(b) > r.lim.MaxSegmentBytes+1 {
				b = b[:r.lim.MaxSegmentBytes+1]
			}
			e, bad, st := r.count(b)
			if st != scanDone || (bad >= 0 && stopBad) {
				return n, false
			}
			end = e
		default:
			return n, false
		}
		r.r = p + end + 1
		r.index++
		n++
	}
	return n, false
}

// plainUNH reports whether the next segment is UNH+ref+S009' with the
// reference plain data and S009 plain data and component separators, and
// returns the bytes of both, without consuming it (consumePlain does).
func (r *Reader) plainUNH() (ref, id []byte, ok bool) {
	_, b := r.skipSpace()
	if len(b) < 4 || b[0] != 'U' || b[1] != 'N' || b[2] != 'H' {
		return nil, nil, false
	}
	class := &r.fast
	if class[b[3]] != clElem {
		return nil, nil, false
	}
	j := 4
	for j < len(b) && class[b[j]] == clData {
		j++
	}
	if j == 4 || j >= len(b) || class[b[j]] != clElem {
		return nil, nil, false
	}
	ref = b[4:j]
	j++
	k, seps := j, 1
	for ; j < len(b); j++ {
		switch class[b[j]] {
		case clData:
			continue
		case clComp:
			seps++
			continue
		}
		break
	}
	if j >= len(b) || class[b[j]] != clTerm || j > r.lim.MaxSegmentBytes || seps >= min(r.lim.MaxComponents, 65535) {
		return nil, nil, false
	}
	r.plainEnd = j
	return ref, b[k:j], true
}

// consumePlain consumes the segment plainUNH matched and returns its offset
// and index.
func (r *Reader) consumePlain() (int64, int) {
	off := r.base + int64(r.r)
	r.r += r.plainEnd + 1
	r.index++
	return off, r.index
}

// plainUNT returns the length of b's first segment when it is exactly
// UNT+count+ref' (the count in decimal digits, ref the bytes of the
// message reference, all plain data), or 0.
func (r *Reader) plainUNT(b []byte, count int, ref string) int {
	class := &r.fast
	if class[b[3]] != clElem || min(r.lim.MaxComponents, 65535) < 2 {
		return 0
	}
	j, v := 4, 0
	for ; j < len(b) && j < 4+18 && b[j] >= '0' && b[j] <= '9'; j++ {
		v = v*10 + int(b[j]-'0')
	}
	if j == 4 || v != count || j >= len(b) || class[b[j]] != clElem {
		return 0
	}
	j++
	if len(b)-j <= len(ref) || string(b[j:j+len(ref)]) != ref || class[b[j+len(ref)]] != clTerm {
		return 0
	}
	for _, c := range b[j : j+len(ref)] {
		if class[c] != clData {
			return 0
		}
	}
	if end := j + len(ref); end <= r.lim.MaxSegmentBytes {
		return end
	}
	return 0
}

// spaceByte marks the whitespace skipped between segments.
var spaceByte = [256]bool{'\r': true, '\n': true, '\t': true, ' ': true}

// tagIndex maps the bytes a tag may hold to 0..35, others to -1.
var tagIndex = func() (t [256]int) {
	for c := range t {
		t[c] = -1
	}
	for i, c := range "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789" {
		t[c] = i
	}
	return t
}()

// allTags is every possible segment tag, 36*36*36 of them, 3 bytes each:
// a tag is a substring of it, so reading one allocates nothing.
var allTags = sync.OnceValue(func() string {
	const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, 0, 3*36*36*36)
	for _, x := range []byte(chars) {
		for _, y := range []byte(chars) {
			for _, z := range []byte(chars) {
				b = append(b, x, y, z)
			}
		}
	}
	return string(b)
})

// slowNext reads the segment at buf[r] whatever it holds: CR/LF inside it
// (hard-wrapped files), a bad tag, a limit reached, the end of the input.
func (r *Reader) slowNext(s *Segment) (*Segment, error) {
	raw, start, err := r.readRaw()
	if err != nil {
		return nil, err
	}
	r.index++
	s.Offset, s.Index, s.rel, s.bad = start, r.index, r.d.Release, -1
	s.holes = s.holes[:0]
	s.spans = s.spans[:0]
	s.raw = raw
	if len(raw) < 3 || !isTagChar(raw[0]) || !isTagChar(raw[1]) || !isTagChar(raw[2]) || (len(raw) > 3 && r.class[raw[3]] != clElem) {
		if r.stripCRLF(s) {
			raw = s.raw
		}
		if len(raw) < 3 || !isTagChar(raw[0]) || !isTagChar(raw[1]) || !isTagChar(raw[2]) || (len(raw) > 3 && r.class[raw[3]] != clElem) {
			n := min(len(raw), 3)
			return nil, &SyntaxError{Offset: start, Index: r.index, Tag: string(raw[:n]), Code: CodeInvalidValue, Err: fmt.Errorf("%w: %q", ErrBadTag, truncate(raw, 12))}
		}
	}
	t := tagIndex[raw[0]]*36*36 + tagIndex[raw[1]]*36 + tagIndex[raw[2]]
	s.Tag = r.tags[3*t : 3*t+3]
	if err := r.split(s); err != nil {
		return nil, err
	}
	return s, nil
}

// stripCRLF drops CR and LF bytes inside the segment (hard-wrapped files),
// remembering where, so offsets still point into the input. It reports
// whether it found any.
func (r *Reader) stripCRLF(s *Segment) bool {
	raw := s.raw
	if bytes.IndexByte(raw, '\n') < 0 && bytes.IndexByte(raw, '\r') < 0 {
		return false
	}
	out := raw[:0]
	for _, c := range raw {
		if c == '\n' || c == '\r' {
			s.holes = append(s.holes, int32(len(out)))
			continue
		}
		out = append(out, c)
	}
	s.raw = out
	return true
}

func (r *Reader) split(s *Segment) error {
	if len(s.raw) == 3 {
		return nil
	}
	for {
		retry, err := r.splitOnce(s)
		if !retry {
			return err
		}
		// A CR or LF inside the segment: drop them and split again.
		s.spans = s.spans[:0]
		r.stripCRLF(s)
	}
}

func (r *Reader) splitOnce(s *Segment) (retry bool, err error) {
	raw := s.raw
	elem, comp, rep := uint16(1), uint16(1), uint16(0)
	start := int32(4)
	escaped := false
	limit := min(r.lim.MaxComponents, 65535)
	spans := s.spans
	class := &r.class
	skipAt := -1 // the byte after a release character is data
	for j, c := range raw[4:] {
		cl := class[c]
		if cl == clData || j == skipAt {
			continue
		}
		i := int32(j + 4)
		switch cl {
		case clOther:
			if s.bad < 0 {
				s.bad = i
			}
			continue
		case clCRLF:
			return true, nil
		case clRel:
			if int(i)+1 >= len(raw) {
				s.spans = spans
				return false, &SyntaxError{Offset: s.inputOffset(i), Index: s.Index, Tag: s.Tag, Element: int(elem), Component: int(comp), Code: CodeInvalidCharacter, Err: ErrDanglingRelease}
			}
			if class[raw[i+1]] == clCRLF {
				return true, nil
			}
			if class[raw[i+1]] == clOther && s.bad < 0 {
				s.bad = i + 1
			}
			escaped, skipAt = true, j+1
			continue
		}
		if len(spans) >= limit {
			s.spans = spans
			return false, &SyntaxError{Offset: s.Offset, Index: s.Index, Tag: s.Tag, Element: int(elem), Code: CodeTooManyConstituent,
				Err: fmt.Errorf("%w: more than %d", ErrTooManyElements, limit)}
		}
		spans = append(spans, mkSpan(start, i, elem, comp, rep, escaped))
		start, escaped = i+1, false
		switch cl {
		case clElem:
			elem, comp, rep = elem+1, 1, 0
		case clComp:
			comp++
		case clRep:
			comp, rep = 1, rep+1
		}
	}
	if len(spans) >= limit {
		s.spans = spans
		return false, &SyntaxError{Offset: s.Offset, Index: s.Index, Tag: s.Tag, Element: int(elem), Code: CodeTooManyConstituent,
			Err: fmt.Errorf("%w: more than %d", ErrTooManyElements, limit)}
	}
	s.spans = append(spans, mkSpan(start, int32(len(raw)), elem, comp, rep, escaped))
	return false, nil
}

func isTagChar(c byte) bool { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') }

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// readRaw returns the next segment's bytes at buf[r] (without
// terminator; the whitespace before it is skipped already) and the offset
// of its first byte. A terminator preceded by an odd run of release
// characters is escaped.
func (r *Reader) readRaw() ([]byte, int64, error) {
	term, rel, lim := r.d.Terminator, r.d.Release, r.lim.MaxSegmentBytes
	start := r.Offset()
	from := 0
	for {
		b := r.buf[r.r:r.w]
		for {
			k := bytes.IndexByte(b[from:], term)
			if k < 0 {
				from = len(b)
				break
			}
			e := from + k
			if rel != 0 {
				n := 0
				for i := e - 1; i >= 0 && b[i] == rel; i-- {
					n++
				}
				if n%2 == 1 {
					from = e + 1
					continue
				}
			}
			if e > lim {
				r.r += e + 1
				return nil, start, &SyntaxError{Offset: start, Index: r.index + 1, Tag: string(truncate(b, 3)), Code: CodeTooLong,
					Err: fmt.Errorf("%w of %d bytes", ErrSegmentTooLong, lim)}
			}
			r.r += e + 1
			return b[:e:e], start, nil
		}
		// Without a terminator in sight, read on to the end of the input
		// (an unterminated segment) while the segment holds no more than
		// max(limit, 64 KiB) bytes.
		if len(b) > max(lim, readBufSize) {
			r.r = r.w
			return nil, start, &SyntaxError{Offset: start, Index: r.index + 1, Tag: string(truncate(b, 3)), Code: CodeTooLong,
				Err: fmt.Errorf("%w of %d bytes", ErrSegmentTooLong, lim)}
		}
		if !r.fill() {
			r.r = r.w
			if r.err != nil {
				return nil, start, r.err
			}
			if len(bytes.TrimSpace(b)) == 0 {
				return nil, start, io.EOF
			}
			return nil, start, &SyntaxError{Offset: start, Index: r.index + 1, Tag: string(truncate(b, 3)), Code: CodeMissing, Err: ErrUnterminated}
		}
	}
}

// SetDelimiters sets the service characters for an input without UNA, such
// as a single segment taken out of an interchange.
func (r *Reader) SetDelimiters(d Delimiters) {
	r.d = d
	r.started = true
	r.setClasses()
}

// ValueIs reports whether component c of element e equals v, without
// allocating.
func (s *Segment) ValueIs(e, c int, v string) bool {
	sp, ok := s.find(e, c)
	if !ok {
		return v == ""
	}
	if sp.escaped() {
		return s.Value(e, c) == v
	}
	return string(s.raw[sp.start:sp.end]) == v
}

// Int parses component c of element e as a non-negative decimal integer.
func (s *Segment) Int(e, c int) (int, bool) {
	sp, ok := s.find(e, c)
	if !ok || sp.end == sp.start || sp.end-sp.start > 18 {
		return 0, false
	}
	n := 0
	for _, d := range s.raw[sp.start:sp.end] {
		if d < '0' || d > '9' {
			return 0, false
		}
		n = n*10 + int(d-'0')
	}
	return n, true
}
