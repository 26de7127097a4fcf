package validate

import (
	"encoding/binary"
	"slices"
	"unsafe"

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
	w := &unknownEntry{off: offset}
	return w.set(text)
}

// unknownEntry is the warnings of a message whose type and release the
// directory does not hold, and the offset its warning points to.
type unknownEntry struct {
	w   [1]Warning
	off int64
}

// set makes text (and e.off) e's warning and returns e's warnings.
func (e *unknownEntry) set(text string) []Warning {
	e.w[0] = Warning{Code: unknownDirectoryCode, Message: text, Offset: &e.off}
	return e.w[:]
}

// unknownEntries hands out the warnings of messages the directory does
// not hold, their entries allocated unknownBatch at a time: one
// allocation for many messages, where one a message cost as much as the
// rest of checking it or handing its verdict over. Each message's
// warnings are still its own (an entry is never handed out twice); a
// verdict kept after its yield keeps its batch too, some 9 KiB.
type unknownEntries []unknownEntry

const unknownBatch = 128

// warnings is unknownDirectory(text, offset), from the next entry.
func (u *unknownEntries) warnings(text string, offset int64) []Warning {
	if len(*u) == 0 {
		*u = make([]unknownEntry, unknownBatch)
	}
	e := &(*u)[0]
	*u = (*u)[1:]
	e.off = offset
	return e.set(text)
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
	// chunks hold the entries, end to end, in chunks of logChunk bytes
	// (one that is longer gets a chunk of its own): an entry never runs
	// from one into the next and a written byte is never rewritten or
	// moved, so the references are cut from them, and a growing log copies
	// nothing.
	chunks [][]byte
	entry  []byte // the entry being written, reused
	whole  []MessageResult
	types  []string // message types, by index
	texts  []string // unknown-directory texts, by index
	n      int      // entries
	// number and offset of the last plain entry, which the next one is
	// written against.
	number int
	offset int64
}

// logChunk is the size of a chunk of a verdictLog's entries.
const logChunk = 64 << 10

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
	e := l.entry[:0]
	if p == notPlain || !tok || !xok {
		e = append(e, logWhole)
		e = binary.AppendUvarint(e, uint64(len(l.whole)))
		l.write(e)
		w := *v
		w.Warnings = ownWarnings(v.Warnings) // a message check may reuse them (messageCheck.transient)
		l.whole = append(l.whole, w)
		return verdictCost(v, text)
	}
	e = append(e, byte(p))
	e = binary.AppendVarint(e, int64(v.Number-l.number))
	e = binary.AppendVarint(e, v.Offset-l.offset)
	e = binary.AppendUvarint(e, uint64(len(v.Ref)))
	e = append(e, v.Ref...)
	e = binary.AppendUvarint(e, uint64(t))
	if p == unknownOnly {
		e = binary.AppendUvarint(e, uint64(x))
	}
	l.write(e)
	l.number, l.offset = v.Number, v.Offset
	return int64(len(e))
}

// write appends entry e to the last chunk, or to a new one when it does
// not fit, and keeps e's array for the next entry.
func (l *verdictLog) write(e []byte) {
	l.entry = e
	k := len(l.chunks) - 1
	if k < 0 || cap(l.chunks[k])-len(l.chunks[k]) < len(e) {
		l.chunks = append(l.chunks, make([]byte, 0, max(logChunk, len(e))))
		k++
	}
	l.chunks[k] = append(l.chunks[k], e...)
}

// ownWarnings is a copy of ws that shares nothing with it: its offsets
// and pages are copied too.
func ownWarnings(ws []Warning) []Warning {
	if len(ws) == 0 {
		return ws
	}
	ws = slices.Clone(ws)
	for k := range ws {
		if o := ws[k].Offset; o != nil {
			off := *o
			ws[k].Offset = &off
		}
		if p := ws[k].Page; p != nil {
			page := *p
			ws[k].Page = &page
		}
	}
	return ws
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

// each calls yield with every verdict in order, stopping at the first
// error, which it returns.
func (l *verdictLog) each(yield func(MessageResult) error) error {
	r := logReader{chunks: l.chunks, k: -1}
	number, offset := 0, int64(0)
	var unknown unknownEntries
	for range l.n {
		if r.i == len(r.s) { // the next entry is in the next chunk
			r.k++
			c := r.chunks[r.k]
			r.s, r.i = unsafe.String(unsafe.SliceData(c), len(c)), 0
		}
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
			v.Warnings = unknown.warnings(l.texts[r.uvarint()], offset)
		}
		if err := yield(v); err != nil {
			return err
		}
	}
	return nil
}

// logReader reads a verdictLog's entries: s is chunk k as a string (its
// bytes are never rewritten), i the next byte of it.
type logReader struct {
	chunks [][]byte
	k      int
	s      string
	i      int
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
// configured: m's agency has a directory of its own (see agencySet).
func again(m *edifact.Message, p plainness, configured bool) MessageResult {
	v := MessageResult{Ref: m.Ref, Type: m.Type, Number: m.Number, Offset: m.Offset, Interchange: m.Interchange}
	if p == unknownOnly {
		v.Warnings = unknownDirectory(unknownWarning(m, configured), m.Offset)
	}
	return v
}
