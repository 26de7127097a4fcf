package edifact

import (
	"sort"
	"sync/atomic"
	"unsafe"
)

// store holds the segments kept for one message compactly: their bytes
// end to end in chunks of raw bytes, their components as one 16-bit word
// each (the length, the class of the separator before it, whether a
// release character is inside) in chunks of words, and a 12-byte record
// per segment saying where its bytes and words end and where it is in the
// input. What few segments carry more (a byte outside the repertoire, CR
// or LF dropped, an offset too far from the last base) is noted on the
// side. A Segment is rebuilt from this on demand (see load): a kept
// segment costs its bytes, two bytes a component and twelve more, where a
// Segment struct with slices of its own costs some 300 for a short one.
//
// Chunks have fixed sizes and a segment may run from one into the next:
// nothing is copied as a message grows, nothing is left empty but the end
// of the last chunk, and the chunks are reused from message to message.
type store struct {
	raw   [][]byte   // rawChunk bytes each
	words [][]uint16 // wordChunk words each
	recs  [][]record // recChunk records each
	n     int        // segments kept
	nraw  uint32     // bytes kept
	nword uint32     // words kept
	index int        // Segment.Index of the first segment
	rel   byte
	tags  string // see allTags
	bases []base // offset bases, by the first segment each applies to
	bad   []mark // segments with a byte outside the repertoire
	holes []holeMark
	extra int64 // what bases, bad and holes hold
	iter  *segScratch
	// counted: the segments are counted, as what keeping them would
	// cost, and not kept (see ParseSegments).
	counted bool
}

// segScratch is what Message.All rebuilds segments into, kept with the
// store and reused from one iteration to the next (and, in Parse's store,
// from message to message). One iteration holds it at a time; one that
// finds it held (nested in another, or on another goroutine) makes its
// own.
type segScratch struct {
	busy atomic.Bool
	seg  Segment
	raw  []byte // the bytes of a segment that runs from one chunk into the next
}

const (
	rawChunk  = 64 << 10
	wordChunk = 32 << 10
	recChunk  = 4 << 10

	longWord = 0x1fff // a component of longWord or more bytes: two words of length follow
)

// record is where a segment's bytes and words end in the store and its
// offset from the base in force.
type record struct {
	raw, words, off uint32
}

type base struct {
	seg int
	at  int64
}

type mark struct {
	seg int
	at  int32
}

type holeMark struct {
	seg   int
	holes []int32
}

// Bytes a segment's record and its side notes take.
const (
	recordBytes = int64(unsafe.Sizeof(record{}))
	baseBytes   = int64(unsafe.Sizeof(base{}))
	markBytes   = int64(unsafe.Sizeof(mark{}))
	holeBytes   = int64(unsafe.Sizeof(holeMark{}))
)

// retained is what the kept segments take: their bytes, words, records
// and side notes. The parser's chunks add at most the unused end of one
// chunk of each kind (176 KiB), the same for every message.
func (st *store) retained() int64 {
	return int64(st.nraw) + 2*int64(st.nword) + recordBytes*int64(st.n) + st.extra
}

// reset empties the store for the next message, keeping two chunks of
// each kind.
func (st *store) reset() {
	st.raw, st.words, st.recs = trim(st.raw), trim(st.words), trim(st.recs)
	st.n, st.nraw, st.nword, st.extra = 0, 0, 0, 0
	st.bases, st.bad = st.bases[:0], st.bad[:0]
	clear(st.holes)
	st.holes = st.holes[:0]
}

func trim[T any](c [][]T) [][]T {
	if len(c) > 2 {
		clear(c[2:])
		c = c[:2]
	}
	return c
}

// fits reports whether s can be added without a position passing 32 bits.
func (st *store) fits(s *Segment) bool {
	return uint64(st.nraw)+uint64(len(s.raw)) < 1<<32 && uint64(st.nword)+3*uint64(len(s.spans)) < 1<<32
}

// add keeps s, the segment after the last one kept (its Index is one more).
func (st *store) add(s *Segment) {
	if st.n == 0 {
		st.index = s.Index
	}
	if len(st.bases) == 0 || s.Offset < st.bases[len(st.bases)-1].at || s.Offset-st.bases[len(st.bases)-1].at >= 1<<32 {
		st.bases = append(st.bases, base{seg: st.n, at: s.Offset})
		st.extra += baseBytes
	}
	if st.counted {
		st.count(s)
		return
	}
	if s.bad >= 0 {
		st.bad = append(st.bad, mark{seg: st.n, at: s.bad})
		st.extra += markBytes
	}
	if len(s.holes) > 0 {
		st.holes = append(st.holes, holeMark{seg: st.n, holes: append([]int32(nil), s.holes...)})
		st.extra += holeBytes + 4*int64(len(s.holes))
	}
	// The bytes.
	b := s.raw
	for len(b) > 0 {
		k, o := st.nraw/rawChunk, st.nraw%rawChunk
		if int(k) == len(st.raw) {
			st.raw = append(st.raw, make([]byte, rawChunk))
		}
		n := copy(st.raw[k][o:], b)
		b = b[n:]
		st.nraw += uint32(n)
	}
	// The words: a component's position follows from the separator
	// before it, and its start from the end of the one before.
	var prev uint64
	for i := range s.spans {
		sp := &s.spans[i]
		var w uint16
		if i > 0 {
			p, q := prev&^escBit, sp.pos&^escBit
			switch {
			case p>>elemShift != q>>elemShift:
				w = clElem
			case uint16(p>>repShift) != uint16(q>>repShift):
				w = clRep
			default:
				w = clComp
			}
		}
		if sp.escaped() {
			w |= 4
		}
		prev = sp.pos
		if l := uint32(sp.end - sp.start); l < longWord {
			st.word(w | uint16(l)<<3)
		} else {
			st.word(w | longWord<<3)
			st.word(uint16(l))
			st.word(uint16(l >> 16))
		}
	}
	// The record.
	k, o := st.n/recChunk, st.n%recChunk
	if k == len(st.recs) {
		st.recs = append(st.recs, make([]record, recChunk))
	}
	st.recs[k][o] = record{raw: st.nraw, words: st.nword, off: uint32(s.Offset - st.bases[len(st.bases)-1].at)}
	st.n++
}

// count is add for a store that keeps nothing: what keeping s would
// cost is counted all the same.
func (st *store) count(s *Segment) {
	if s.bad >= 0 {
		st.extra += markBytes
	}
	if len(s.holes) > 0 {
		st.extra += holeBytes + 4*int64(len(s.holes))
	}
	st.nraw += uint32(len(s.raw))
	if len(s.raw) < longWord {
		// No component is long: a word each, as add writes them.
		st.nword += uint32(len(s.spans))
		st.n++
		return
	}
	for i := range s.spans {
		if l := uint32(s.spans[i].end - s.spans[i].start); l < longWord {
			st.nword++
		} else {
			st.nword += 3
		}
	}
	st.n++
}

func (st *store) word(w uint16) {
	k, o := st.nword/wordChunk, st.nword%wordChunk
	if int(k) == len(st.words) {
		st.words = append(st.words, make([]uint16, wordChunk))
	}
	st.words[k][o] = w
	st.nword++
}

func (st *store) rec(i int) record {
	if i < 0 {
		return record{}
	}
	return st.recs[i/recChunk][i%recChunk]
}

// load rebuilds segment i (0-based) in s, reusing s's spans and, for
// bytes that run from one chunk into the next, *scratch. s.raw points
// into the store (or *scratch): it is valid until the store is reset.
func (st *store) load(i int, s *Segment, scratch *[]byte) {
	r, prev := st.rec(i), st.rec(i-1)
	// The bytes.
	from, to := prev.raw, r.raw
	if k := from / rawChunk; from == to || k == (to-1)/rawChunk {
		s.raw = st.raw[k][from%rawChunk : from%rawChunk+(to-from) : from%rawChunk+(to-from)]
	} else {
		b := (*scratch)[:0]
		for from < to {
			c := st.raw[from/rawChunk][from%rawChunk:]
			c = c[:min(uint32(len(c)), to-from)]
			b = append(b, c...)
			from += uint32(len(c))
		}
		*scratch = b
		s.raw = b[:len(b):len(b)]
	}
	t := tagIndex[s.raw[0]]*36*36 + tagIndex[s.raw[1]]*36 + tagIndex[s.raw[2]]
	s.Tag = st.tags[3*t : 3*t+3]
	// The position.
	b := sort.Search(len(st.bases), func(j int) bool { return st.bases[j].seg > i }) - 1
	s.Offset, s.Index, s.rel = st.bases[b].at+int64(r.off), st.index+i, st.rel
	s.bad = -1
	if j := sort.Search(len(st.bad), func(j int) bool { return st.bad[j].seg >= i }); j < len(st.bad) && st.bad[j].seg == i {
		s.bad = st.bad[j].at
	}
	s.holes = nil
	if j := sort.Search(len(st.holes), func(j int) bool { return st.holes[j].seg >= i }); j < len(st.holes) && st.holes[j].seg == i {
		s.holes = st.holes[j].holes
	}
	// The spans.
	spans := s.spans[:0]
	start, pos := int32(4), uint64(1)<<elemShift|1
	for w := prev.words; w < r.words; {
		v := st.words[w/wordChunk][w%wordChunk]
		w++
		l := int32(v >> 3)
		if l == longWord {
			lo, hi := st.words[w/wordChunk][w%wordChunk], st.words[(w+1)/wordChunk][(w+1)%wordChunk]
			l = int32(uint32(lo) | uint32(hi)<<16)
			w += 2
		}
		if cl := v & 3; cl != 0 {
			pos = pos&nextKeep[cl] + nextAdd[cl]
		}
		p := pos
		if v&4 != 0 {
			p |= escBit
		}
		spans = append(spans, span{start: start, end: start + l, pos: p})
		start += l + 1
	}
	s.spans = spans
}

// clone is a copy of st that stays valid: its chunks cut to what they hold.
func (st *store) clone() *store {
	c := *st
	c.raw, c.words, c.recs = cloneChunks(st.raw, int(st.nraw), rawChunk), cloneChunks(st.words, int(st.nword), wordChunk), cloneChunks(st.recs, st.n, recChunk)
	c.bases, c.bad, c.holes = append([]base(nil), st.bases...), append([]mark(nil), st.bad...), append([]holeMark(nil), st.holes...)
	c.iter = new(segScratch)
	return &c
}

func cloneChunks[T any](c [][]T, n, size int) [][]T {
	out := make([][]T, 0, (n+size-1)/size)
	for k := 0; k*size < n; k++ {
		out = append(out, append([]T(nil), c[k][:min(size, n-k*size)]...))
	}
	return out
}
