package edifact

import "hash/fnv"

// refSet is the message references (UNH 0062) of an interchange seen so
// far, so that a second message with one of them is refused
// (ErrDuplicateMessage): a message is named by its reference in every
// reply and every record, and two with one reference would be one.
//
// It holds the common case, references 1, 2, 3, ... (any run of canonical
// decimal numbers each one more than the one before), as an interval in
// constant memory; any other reference as a 64-bit FNV-1a hash, 8 bytes
// and a map slot each. A hash collision would refuse a sound interchange
// (about n²/2⁶⁵ for n other references, deterministic for the same bytes),
// never accept a duplicate.
type refSet struct {
	lo, hi uint64 // the interval [lo, hi] of numbers seen, when run
	run    bool
	other  map[uint64]struct{}
}

// add records ref and reports whether it was there already.
func (s *refSet) add(ref []byte) (dup bool) {
	if n, ok := canonicalNumber(ref); ok {
		switch {
		case s.run && n >= s.lo && n <= s.hi:
			return true
		case s.run && n == s.hi+1:
			if len(s.other) > 0 {
				if _, ok := s.other[refHash(ref)]; ok {
					return true // seen before the run reached it
				}
			}
			s.hi = n
			return false
		case !s.run && len(s.other) == 0:
			s.lo, s.hi, s.run = n, n, true
			return false
		}
	}
	h := refHash(ref)
	if _, ok := s.other[h]; ok {
		return true
	}
	if s.other == nil {
		s.other = map[uint64]struct{}{}
	}
	s.other[h] = struct{}{}
	return false
}

// has reports whether ref was added, without adding it.
func (s *refSet) has(ref []byte) bool {
	if n, ok := canonicalNumber(ref); ok && s.run && n >= s.lo && n <= s.hi {
		return true
	}
	if len(s.other) == 0 {
		return false
	}
	_, ok := s.other[refHash(ref)]
	return ok
}

func refHash(ref []byte) uint64 {
	h := fnv.New64a()
	h.Write(ref)
	return h.Sum64()
}

// canonicalNumber is ref as a decimal number when it is one written the
// one way (no sign, no leading zero, at most 18 digits): "01" and "1" are
// two references.
func canonicalNumber(ref []byte) (uint64, bool) {
	if len(ref) == 0 || len(ref) > 18 || ref[0] == '0' && len(ref) > 1 {
		return 0, false
	}
	var n uint64
	for _, c := range ref {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}
