package validate

import (
	"strings"

	"github.com/lazaret/lazaret/edifact"
)

// plainness is how much of a verdict follows from its message alone.
type plainness uint8

const (
	// notPlain: the verdict carries an error or warnings of its own.
	notPlain plainness = iota
	// clean: the message passed with no warning.
	clean
	// unknownOnly: the message passed, its one warning that the directory
	// does not hold its type and release (see unknownDirectory).
	unknownOnly
)

// plainnessOf says how plain v is.
func plainnessOf(v *MessageResult) plainness {
	switch {
	case v.Err != nil:
		return notPlain
	case len(v.Warnings) == 0:
		return clean
	case len(v.Warnings) == 1:
		if w := &v.Warnings[0]; w.Code == unknownDirectoryCode && w.Page == nil && w.Path == "" && w.Offset != nil && *w.Offset == v.Offset {
			return unknownOnly
		}
	}
	return notPlain
}

// unknownDirectoryCode is the code of the warning on a message the
// directory does not hold.
const unknownDirectoryCode = "edifact.directory.unknown"

// unknownDirectory is the warnings of a message at offset whose type and
// release the directory does not hold, text its warning's message (see
// unknownWarning): the warning and its offset in one allocation.
func unknownDirectory(text string, offset int64) []Warning {
	w := &struct {
		w   [1]Warning
		off int64
	}{off: offset}
	w.w[0] = Warning{Code: unknownDirectoryCode, Message: text, Offset: &w.off}
	return w.w[:]
}

// verdictLog is the verdicts CheckInterchange keeps while they fit the
// budget, in the order they were reached. A plain verdict (see plainness)
// is a few bytes of a log: its kind, its number and offset as the
// difference from the one before, its reference, and an index into the
// small tables of message types and unknown-directory texts; any other
// verdict is kept whole beside the log. A good message so costs some 12
// bytes where a MessageResult costs 200, and the 4 MiB of the default
// budget hold some 350,000 of them instead of 20,000.
type verdictLog struct {
	b     strings.Builder // the entries, end to end: never rewritten, so the references are cut from it
	whole []MessageResult
	types []string // message types, by index
	texts []string // unknown-directory texts, by index
	n     int      // entries
	// number and offset of the last plain entry, which the next one is
	// written against.
	number int
	offset int64
}

// Entry kinds: a plain verdict's plainness, or whole.
const logWhole = 0xff

// tableMax bounds the tables of types and texts: an interchange of more
// distinct ones keeps the verdicts past them whole.
const tableMax = 64

// add appends v and returns what it costs.
func (l *verdictLog) add(v *MessageResult, text string) int64 {
	l.n++
	p := plainnessOf(v)
	t, tok := index(&l.types, v.Type)
	var x int
	xok := true
	if p == unknownOnly {
		x, xok = index(&l.texts, v.Warnings[0].Message)
	}
	if p == notPlain || !tok || !xok {
		l.b.WriteByte(logWhole)
		l.putUvarint(uint64(len(l.whole)))
		l.whole = append(l.whole, *v)
		return verdictCost(v, text)
	}
	before := l.b.Len()
	l.b.WriteByte(byte(p))
	l.putVarint(int64(v.Number - l.number))
	l.putVarint(v.Offset - l.offset)
	l.putUvarint(uint64(len(v.Ref)))
	l.b.WriteString(v.Ref)
	l.putUvarint(uint64(t))
	if p == unknownOnly {
		l.putUvarint(uint64(x))
	}
	l.number, l.offset = v.Number, v.Offset
	return int64(l.b.Len() - before)
}

// index is the position of s in *table, added when it is not there and
// the table has room; ok is false when it has none.
func index(table *[]string, s string) (int, bool) {
	for i, t := range *table {
		if t == s {
			return i, true
		}
	}
	if len(*table) >= tableMax {
		return 0, false
	}
	*table = append(*table, s)
	return len(*table) - 1, true
}

func (l *verdictLog) putUvarint(x uint64) {
	for x >= 0x80 {
		l.b.WriteByte(byte(x) | 0x80)
		x >>= 7
	}
	l.b.WriteByte(byte(x))
}

func (l *verdictLog) putVarint(x int64) {
	u := uint64(x) << 1
	if x < 0 {
		u = ^u
	}
	l.putUvarint(u)
}

// each calls yield with every verdict in order, stopping at the first
// error, which it returns.
func (l *verdictLog) each(yield func(MessageResult) error) error {
	r := logReader{s: l.b.String()}
	number, offset := 0, int64(0)
	for range l.n {
		kind := r.s[r.i]
		r.i++
		if kind == logWhole {
			if err := yield(l.whole[r.uvarint()]); err != nil {
				return err
			}
			continue
		}
		number += int(r.varint())
		offset += r.varint()
		ref := r.next(int(r.uvarint()))
		v := MessageResult{Ref: ref, Type: l.types[r.uvarint()], Number: number, Offset: offset}
		if plainness(kind) == unknownOnly {
			v.Warnings = unknownDirectory(l.texts[r.uvarint()], offset)
		}
		if err := yield(v); err != nil {
			return err
		}
	}
	return nil
}

// logReader reads a verdictLog's entries.
type logReader struct {
	s string
	i int
}

func (r *logReader) uvarint() uint64 {
	var x uint64
	for shift := 0; ; shift += 7 {
		c := r.s[r.i]
		r.i++
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return x
		}
	}
}

func (r *logReader) varint() int64 {
	u := r.uvarint()
	x := int64(u >> 1)
	if u&1 != 0 {
		x = ^x
	}
	return x
}

func (r *logReader) next(n int) string {
	s := r.s[r.i : r.i+n]
	r.i += n
	return s
}

// again is the verdict on m that the first read reached with plainness p
// (clean or unknownOnly), made again without checking m: the second read's
// chunk digests still check that it is the same.
func again(m *edifact.Message, p plainness) MessageResult {
	v := MessageResult{Ref: m.Ref, Type: m.Type, Number: m.Number, Offset: m.Offset}
	if p == unknownOnly {
		v.Warnings = unknownDirectory(unknownWarning(m), m.Offset)
	}
	return v
}
