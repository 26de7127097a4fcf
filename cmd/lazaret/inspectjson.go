package main

import (
	"encoding/json"
	"strconv"
	"unsafe"

	"github.com/lazaret/lazaret/tiff"
)

// appendJSON appends r as json.Encoder writes it (encoding/json's field
// order, omitempty and HTML escaping, and its newline), without reflection
// or an allocation for the common value: inspect writes one line per
// message of an interchange, hundreds of thousands of them.
// TestInspectJSONIsEncodingJSON holds it to encoding/json, field by field,
// and TestInspectJSONCoversEveryField fails when a field added to
// inspectResult (or tiff.Warning) is not written here too.
func (r *inspectResult) appendJSON(b []byte) []byte {
	var w jsonWriter
	return w.append(b, r)
}

// jsonWriter writes inspect's JSON lines (see appendJSON), remembering how
// the last few long strings it quoted came out: a file name, a SHA-256 and
// a warning's text repeat on every line of an interchange, and are copied
// rather than looked at again. It notes whether what it wrote since
// clean was last reset is all printable ASCII (see clean in termsafe.go).
type jsonWriter struct {
	recent [8]quoted
	next   int  // the entry of recent a new string replaces
	dirty  bool // a string came out with a byte clean refuses
	// The line's offset and its digits: a warning's offset is most often
	// the message's.
	offset       int64
	offsetDigits []byte
	// The fields before the offset and those after the message type, as
	// the last line wrote them: on the lines of one interchange they are
	// the same from message to message, and are copied as they came out.
	head, tail jsonRun
}

// same reports whether run was written from strs and nums.
func (run *jsonRun) same(strs *[7]string, nums [2]int64) bool {
	return run.ok && run.nums == nums && sameStrings(&run.strs, strs)
}

// sameStrings reports whether a and b hold the same strings, most often
// the very same (their bytes at the same address), told apart without a
// call.
func sameStrings(a, b *[7]string) bool {
	for i := range a {
		if len(a[i]) != len(b[i]) || (unsafe.StringData(a[i]) != unsafe.StringData(b[i]) && a[i] != b[i]) {
			return false
		}
	}
	return true
}

// jsonRun is a run of fields as a line wrote them: the strings and
// numbers written, and the bytes they came out as.
type jsonRun struct {
	strs  [7]string
	nums  [2]int64
	ok    bool // written once
	b     []byte
	dirty bool
}

// quoted is a string as appendJSONString wrote it. A string's bytes never
// change: one with the same data and length is the same string.
type quoted struct {
	p     *byte
	n     int
	q     []byte
	dirty bool
}

// minRecent is the shortest string jsonWriter looks for in recent: a
// shorter one is quicker to look at again.
const minRecent = 24

// str appends s quoted as appendJSONString does.
func (w *jsonWriter) str(b []byte, s string) []byte {
	if len(s) < minRecent {
		b, ok := appendJSONStringPlain(b, s)
		if !ok {
			at := len(b)
			b = appendJSONString(b, s)
			w.dirty = w.dirty || !clean(b[at:])
		}
		return b
	}
	p := unsafe.StringData(s)
	for i := range w.recent {
		if q := &w.recent[i]; q.p == p && q.n == len(s) {
			w.dirty = w.dirty || q.dirty
			return append(b, q.q...)
		}
	}
	at := len(b)
	b = appendJSONString(b, s)
	q := &w.recent[w.next]
	w.next = (w.next + 1) % len(w.recent)
	q.p, q.n, q.q, q.dirty = p, len(s), append(q.q[:0], b[at:]...), !clean(b[at:])
	w.dirty = w.dirty || q.dirty
	return b
}

// append appends r as appendJSON does.
func (w *jsonWriter) append(b []byte, r *inspectResult) []byte {
	// Each run is written by a direct call: r passed to a func value
	// would escape, and cost an allocation a line.
	head := [7]string{r.File, r.ObjectID, r.Kind, r.Verdict, r.Class, r.Code, r.Message}
	if run := &w.head; run.same(&head, [2]int64{}) {
		b = w.copyRun(b, run)
	} else {
		at, dirty := w.startRun(b)
		b = w.appendHead(b, r)
		w.keepRun(run, b[at:], &head, [2]int64{}, dirty)
	}
	b = w.appendMiddle(b, r)
	tail, nums := [7]string{r.PUID, r.SHA256}, [2]int64{r.Size, int64(r.Pages)}
	if run := &w.tail; run.same(&tail, nums) {
		b = w.copyRun(b, run)
	} else {
		at, dirty := w.startRun(b)
		b = w.appendTail(b, r)
		w.keepRun(run, b[at:], &tail, nums, dirty)
	}
	b = w.warnings(b, r.Warnings)
	return append(b, "}\n"...)
}

// copyRun appends run's bytes to b.
func (w *jsonWriter) copyRun(b []byte, run *jsonRun) []byte {
	w.dirty = w.dirty || run.dirty
	return append(b, run.b...)
}

// startRun starts a run written at the end of b: it returns where, and
// whether what came before it is dirty (its own dirt is noted apart).
func (w *jsonWriter) startRun(b []byte) (at int, dirty bool) {
	dirty, w.dirty = w.dirty, false
	return len(b), dirty
}

// keepRun keeps out, the bytes of a run written from strs and nums since
// startRun, in run; dirty is what startRun returned.
func (w *jsonWriter) keepRun(run *jsonRun, out []byte, strs *[7]string, nums [2]int64, dirty bool) {
	run.strs, run.nums, run.ok, run.b, run.dirty = *strs, nums, true, append(run.b[:0], out...), w.dirty
	w.dirty = w.dirty || dirty
}

// appendHead appends r's fields from the file to the message.
func (w *jsonWriter) appendHead(b []byte, r *inspectResult) []byte {
	b = append(b, `{"file":`...)
	b = w.str(b, r.File)
	if r.ObjectID != "" {
		b = append(b, `,"object_id":`...)
		b = w.str(b, r.ObjectID)
	}
	b = append(b, `,"kind":`...)
	b = w.str(b, r.Kind)
	b = append(b, `,"verdict":`...)
	b = w.str(b, r.Verdict)
	b = append(b, `,"class":`...)
	b = w.str(b, r.Class)
	b = append(b, `,"code":`...)
	b = w.str(b, r.Code)
	b = append(b, `,"message":`...)
	return w.str(b, r.Message)
}

// appendMiddle appends r's fields from the offset to the message type.
func (w *jsonWriter) appendMiddle(b []byte, r *inspectResult) []byte {
	b = append(b, `,"offset":`...)
	w.offsetDigits = w.offsetDigits[:0]
	if r.Offset != nil {
		at := len(b)
		b = strconv.AppendInt(b, *r.Offset, 10)
		w.offset, w.offsetDigits = *r.Offset, append(w.offsetDigits, b[at:]...)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"page":`...)
	if r.Page != nil {
		b = strconv.AppendInt(b, int64(*r.Page), 10)
	} else {
		b = append(b, "null"...)
	}
	if r.Tag != "" {
		b = append(b, `,"tag":`...)
		b = w.str(b, r.Tag)
	}
	b = append(b, `,"segment":`...)
	b = appendInt(b, r.Segment)
	b = append(b, `,"element":`...)
	b = appendInt(b, r.Element)
	b = append(b, `,"component":`...)
	b = appendInt(b, r.Component)
	if r.MessageRef != "" {
		b = append(b, `,"message_ref":`...)
		b = w.str(b, r.MessageRef)
	}
	if r.Interchange != 0 {
		b = append(b, `,"interchange":`...)
		b = appendInt(b, r.Interchange)
	}
	if r.MessageType != "" {
		b = append(b, `,"message_type":`...)
		b = w.str(b, r.MessageType)
	}
	return b
}

// appendTail appends r's fields from the PUID to the pages, and the
// name of the warnings.
func (w *jsonWriter) appendTail(b []byte, r *inspectResult) []byte {
	b = append(b, `,"puid":`...)
	b = w.str(b, r.PUID)
	b = append(b, `,"computed_sha256":`...)
	b = w.str(b, r.SHA256)
	b = append(b, `,"computed_size":`...)
	b = strconv.AppendInt(b, r.Size, 10)
	b = append(b, `,"pages":`...)
	b = strconv.AppendInt(b, int64(r.Pages), 10)
	return append(b, `,"warnings":`...)
}

// warnings appends ws as encoding/json writes a []tiff.Warning.
func (w *jsonWriter) warnings(b []byte, ws []tiff.Warning) []byte {
	if ws == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range ws {
		x := &ws[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"code":`...)
		b = w.str(b, x.Code)
		b = append(b, `,"message":`...)
		b = w.str(b, x.Message)
		if x.Page != nil {
			b = append(b, `,"page":`...)
			b = strconv.AppendInt(b, int64(*x.Page), 10)
		}
		if x.Path != "" {
			b = append(b, `,"path":`...)
			b = w.str(b, x.Path)
		}
		if x.Offset != nil {
			b = append(b, `,"offset":`...)
			if len(w.offsetDigits) > 0 && *x.Offset == w.offset {
				b = append(b, w.offsetDigits...)
			} else {
				b = strconv.AppendInt(b, *x.Offset, 10)
			}
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendInt appends n in decimal: a position, most often one digit.
func appendInt(b []byte, n int) []byte {
	if uint(n) < 10 {
		return append(b, byte('0'+n))
	}
	return strconv.AppendInt(b, int64(n), 10)
}

// appendJSONString appends s quoted as encoding/json quotes it. A string
// of printable ASCII that needs no escape (no quote, backslash or HTML
// character) is copied as it is; any other goes through encoding/json
// itself, so that escapes, invalid UTF-8 and U+2028 come out as it writes
// them.
func appendJSONString(b []byte, s string) []byte {
	if b, ok := appendJSONStringPlain(b, s); ok {
		return b
	}
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}

// appendJSONStringPlain appends s quoted when it needs no escape (see
// appendJSONString) and reports whether it did.
func appendJSONStringPlain(b []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if !jsonPlain[s[i]] {
			return b, false
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}

// jsonPlain holds the bytes encoding/json writes as they are: printable
// ASCII but the quote, the backslash and the HTML characters.
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = true
	}
	t['"'], t['\\'], t['<'], t['>'], t['&'] = false, false, false, false, false
	return t
}()
