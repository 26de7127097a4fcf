package edifact

import (
	"bytes"
	"hash/fnv"
)

// maxScatteredRefs bounds the message references a refSet holds one by
// one (those outside its run): some 16 MiB at most, whatever the input.
const maxScatteredRefs = 1 << 20

// refSet is the message references (UNH 0062) of an interchange seen so
// far, so that a second message with one of them is refused
// (ErrDuplicateMessage): a message is named by its reference in every
// reply and every record, and two with one reference would be one.
//
// It holds the common case as an interval in constant memory: a run of
// references that count up by one from the first, each a fixed prefix
// (no digits at its end) and a number written the same way, either
// without leading zeros (1, 2, ... 10; MSG1, MSG2) or zero-padded to the
// first one's width (0001, 0002; M00001, M00002). Any other reference is
// held as a 64-bit FNV-1a hash (hashSet), at most max of them
// (maxScatteredRefs);
// past that add reports the set full. A hash collision would refuse a
// sound interchange (about n²/2⁶⁵ for n such references, the same for the
// same bytes), never accept a duplicate.
type refSet struct {
	prefix []byte // of the run
	padded bool   // the run's numbers are zero-padded to width
	width  int
	lo, hi uint64 // the interval [lo, hi] of numbers seen, when run
	run    bool
	other  hashSet
	max    int // 0: maxScatteredRefs
}

// family splits ref into the prefix and number of a run: the number is
// its trailing digits (at most 18), padded when they start with a zero
// and are more than one.
func family(ref []byte) (prefix []byte, n uint64, padded bool, width int, ok bool) {
	i := len(ref)
	for i > 0 && ref[i-1] >= '0' && ref[i-1] <= '9' {
		i--
	}
	digits := ref[i:]
	if len(digits) == 0 || len(digits) > 18 {
		return nil, 0, false, 0, false
	}
	for _, c := range digits {
		n = n*10 + uint64(c-'0')
	}
	return ref[:i], n, len(digits) > 1 && digits[0] == '0', len(digits), true
}

// inRun reports whether ref is written the way of the run's references,
// and its number.
func (s *refSet) inRun(ref []byte) (uint64, bool) {
	if !s.run {
		return 0, false
	}
	prefix, n, padded, width, ok := family(ref)
	if !ok || !bytes.Equal(prefix, s.prefix) {
		return 0, false
	}
	if s.padded {
		// A padded run holds every number written in width digits with
		// leading zeros: 0001 .. 9999 for width 4.
		return n, width == s.width
	}
	return n, !padded
}

// add records ref and reports whether it was there already, or that it
// could not be held (full: more than max references outside the run).
func (s *refSet) add(ref []byte) (dup, full bool) {
	if n, ok := s.inRun(ref); ok {
		switch {
		case n >= s.lo && n <= s.hi:
			return true, false
		case n == s.hi+1:
			if s.other.n > 0 && s.other.has(refHash(ref)) {
				return true, false // seen before the run reached it
			}
			s.hi = n
			return false, false
		}
	} else if !s.run && s.other.n == 0 {
		if prefix, n, padded, width, ok := family(ref); ok {
			s.prefix = append(s.prefix[:0], prefix...)
			s.padded, s.width, s.lo, s.hi, s.run = padded, width, n, n, true
			return false, false
		}
	}
	h := refHash(ref)
	if s.other.has(h) {
		return true, false
	}
	limit := s.max
	if limit <= 0 {
		limit = maxScatteredRefs
	}
	if s.other.n >= limit {
		return false, true
	}
	s.other.add(h)
	return false, false
}

// has reports whether ref was added, without adding it.
func (s *refSet) has(ref []byte) bool {
	if n, ok := s.inRun(ref); ok && n >= s.lo && n <= s.hi {
		return true
	}
	return s.other.n > 0 && s.other.has(refHash(ref))
}

// refHash is the FNV-1a hash of ref, never 0 (hashSet's empty slot).
func refHash(ref []byte) uint64 {
	h := fnv.New64a()
	h.Write(ref)
	if v := h.Sum64(); v != 0 {
		return v
	}
	return 1
}

// hashSet is a set of non-zero 64-bit hashes: open addressing with linear
// probing in a power-of-two table at most three quarters full, 8 bytes a
// slot (a Go map of them takes more than twice that).
type hashSet struct {
	slots []uint64
	n     int
}

func (h *hashSet) has(v uint64) bool {
	if len(h.slots) == 0 {
		return false
	}
	mask := uint64(len(h.slots) - 1)
	for i := v & mask; ; i = (i + 1) & mask {
		switch h.slots[i] {
		case v:
			return true
		case 0:
			return false
		}
	}
}

// add adds v, which is not in the set.
func (h *hashSet) add(v uint64) {
	if (h.n+1)*4 > len(h.slots)*3 {
		old := h.slots
		h.slots = make([]uint64, max(16, 2*len(old)))
		h.n = 0
		for _, o := range old {
			if o != 0 {
				h.add(o)
			}
		}
	}
	mask := uint64(len(h.slots) - 1)
	i := v & mask
	for h.slots[i] != 0 {
		i = (i + 1) & mask
	}
	h.slots[i] = v
	h.n++
}
