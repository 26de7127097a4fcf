package edifact

import "bytes"

// Values are read one after the other, without allocating, for checks
// that look at every component of a segment (message directories).

// ValueCount is the number of values in the segment: one per component of
// every repetition of every data element, in input order, the tag not
// counted. An empty component between separators counts.
func (s *Segment) ValueCount() int { return len(s.spans) }

// ValueAt is the i-th value (0 <= i < ValueCount) of the segment: its data
// element (1-based, as Value counts), component (1-based), repetition
// (0-based), the byte offset of its first byte in the input, and its
// bytes with release characters removed. v aliases the segment's bytes
// when the value holds no release character and is appended to buf[:0]
// otherwise; it is valid as long as the segment and buf are.
func (s *Segment) ValueAt(i int, buf []byte) (elem, comp, rep int, offset int64, v []byte) {
	sp := s.spans[i]
	raw := s.raw[sp.start:sp.end]
	elem, comp, rep, offset = int(sp.elem()), int(sp.comp()), int(sp.rep()), s.Offset+int64(sp.start)
	if len(s.holes) > 0 {
		offset = s.inputOffset(sp.start)
	}
	if !sp.escaped() {
		return elem, comp, rep, offset, raw
	}
	out := buf[:0]
	for j := 0; j < len(raw); j++ {
		if raw[j] == s.rel && j+1 < len(raw) {
			j++
		}
		out = append(out, raw[j])
	}
	return elem, comp, rep, offset, out
}

// ValueBytes is Value without allocating: component c of data element e
// in its first repetition, release characters removed, nil if absent. It
// aliases the segment's bytes when the value holds no release character
// and is appended to buf[:0] otherwise, as ValueAt's is.
func (s *Segment) ValueBytes(e, c int, buf []byte) []byte {
	sp, ok := s.find(e, c)
	if !ok {
		return nil
	}
	return s.unescaped(sp, buf)
}

// ValueBytesOffset is ValueBytes and ValueOffset of one value, found once.
func (s *Segment) ValueBytesOffset(e, c int, buf []byte) ([]byte, int64) {
	sp, ok := s.find(e, c)
	if !ok {
		return nil, s.Offset
	}
	return s.unescaped(sp, buf), s.inputOffset(sp.start)
}

// unescaped is the bytes of sp, as ValueBytes returns them.
func (s *Segment) unescaped(sp span, buf []byte) []byte {
	raw := s.raw[sp.start:sp.end:sp.end]
	if !sp.escaped() {
		return raw
	}
	out := buf[:0]
	for i := 0; i < len(raw); i++ {
		if raw[i] == s.rel && i+1 < len(raw) {
			i++
		}
		out = append(out, raw[i])
	}
	return out
}

// SameValues reports whether s and t are the same but for where they
// stand in the input: the same bytes, split the same way, with the same
// release character where one is used. Their values (ValueAt, Value) are
// then the same, at the same data elements, components and repetitions.
// A check whose verdict on a segment follows from its values alone may
// keep a segment that passed (CloneInto) and skip one that is the same.
func (s *Segment) SameValues(t *Segment) bool {
	if len(s.spans) != len(t.spans) || !bytes.Equal(s.raw, t.raw) || (s.rel != t.rel && s.escaped()) {
		return false
	}
	for i := range s.spans {
		if s.spans[i] != t.spans[i] {
			return false
		}
	}
	return true
}

// escaped reports whether a value of s holds a release character.
func (s *Segment) escaped() bool {
	for _, sp := range s.spans {
		if sp.escaped() {
			return true
		}
	}
	return false
}

// CloneInto makes dst a copy of s that stays valid, as Clone does, in
// dst's arrays when they are large enough.
func (s *Segment) CloneInto(dst *Segment) {
	raw, holes, spans := dst.raw, dst.holes, dst.spans
	*dst = *s
	dst.raw = append(raw[:0], s.raw...)
	dst.holes = append(holes[:0], s.holes...)
	dst.spans = append(spans[:0], s.spans...)
}
