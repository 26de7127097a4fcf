package edifact

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// ErrUnencodable: a value holds a service character and the delimiters
// have no release character to escape it with.
var ErrUnencodable = errors.New("edifact: write: a value holds a service character and there is no release character")

// Writer writes segments with a set of delimiters, escaping service
// characters in values with the release character.
type Writer struct {
	w       *bufio.Writer
	d       Delimiters
	Newline bool // write "\n" after each terminator, for readability
	// Printable writes every control character of a value (C0, NUL
	// included, and DEL) as '%' and two upper-case hexadecimal digits
	// (ESC as %1B): no syntax level carries them, and a reply must not
	// pass on what a sender's file held to the partner's translator, a
	// terminal or a log. The replies (WriteCONTRL, WriteAPERAK) set it.
	Printable bool
	n         int   // segments written
	err       error // the first error of WriteSegment (Err)
}

// NewWriter writes to w with delimiters d (DefaultDelimiters when zero).
func NewWriter(w io.Writer, d Delimiters) *Writer {
	if d.Terminator == 0 {
		d = DefaultDelimiters
	}
	return &Writer{w: bufio.NewWriter(w), d: d}
}

// WriteUNA writes the service string advice for the writer's delimiters.
func (w *Writer) WriteUNA() error {
	rel, rep := w.d.Release, w.d.Repetition
	if rel == 0 {
		rel = ' '
	}
	if rep == 0 {
		rep = ' '
	}
	_, err := w.w.Write([]byte{'U', 'N', 'A', w.d.Component, w.d.Element, w.d.Decimal, rel, rep, w.d.Terminator})
	if err == nil && w.Newline {
		err = w.w.WriteByte('\n')
	}
	return err
}

// WriteSegment writes one segment: each element is a list of components.
// Values containing service characters are escaped; without a release
// character they are refused (ErrUnencodable) and the segment is not
// written. The first error is also kept for Err.
func (w *Writer) WriteSegment(tag string, elements ...[]string) error {
	err := w.writeSegment(tag, elements)
	if err != nil && w.err == nil {
		w.err = err
	}
	return err
}

// Err is the first error WriteSegment returned, nil if none.
func (w *Writer) Err() error { return w.err }

func (w *Writer) writeSegment(tag string, elements [][]string) error {
	if len(tag) != 3 || !isTagChar(tag[0]) || !isTagChar(tag[1]) || !isTagChar(tag[2]) {
		return fmt.Errorf("edifact: write: bad tag %q", tag)
	}
	if w.Printable {
		elements = printableElements(elements)
	}
	if w.d.Release == 0 {
		for _, el := range elements {
			for _, c := range el {
				if w.special(c) {
					return fmt.Errorf("%w: %q", ErrUnencodable, c)
				}
			}
		}
	}
	w.w.WriteString(tag)
	// Trailing empty elements and components are omitted.
	last := len(elements)
	for last > 0 && allEmpty(elements[last-1]) {
		last--
	}
	for _, el := range elements[:last] {
		w.w.WriteByte(w.d.Element)
		lc := len(el)
		for lc > 0 && el[lc-1] == "" {
			lc--
		}
		for j, c := range el[:lc] {
			if j > 0 {
				w.w.WriteByte(w.d.Component)
			}
			if err := w.value(c); err != nil {
				return err
			}
		}
	}
	w.w.WriteByte(w.d.Terminator)
	if w.Newline {
		w.w.WriteByte('\n')
	}
	w.n++
	return nil
}

func (w *Writer) value(v string) error {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if w.isService(c) {
			w.w.WriteByte(w.d.Release) // WriteSegment checked there is one
		}
		w.w.WriteByte(c)
	}
	return nil
}

// isService reports whether c must be released in a value.
func (w *Writer) isService(c byte) bool {
	return c == w.d.Component || c == w.d.Element || c == w.d.Terminator || (w.d.Release != 0 && c == w.d.Release) || (w.d.Repetition != 0 && c == w.d.Repetition)
}

// special reports whether v holds a character that must be released.
func (w *Writer) special(v string) bool {
	for i := 0; i < len(v); i++ {
		if w.isService(v[i]) {
			return true
		}
	}
	return false
}

func allEmpty(el []string) bool {
	for _, c := range el {
		if c != "" {
			return false
		}
	}
	return true
}

// Segments is the number of segments written.
func (w *Writer) Segments() int { return w.n }

// Flush writes buffered data.
func (w *Writer) Flush() error { return w.w.Flush() }

// E builds an element from components, for WriteSegment.
func E(components ...string) []string { return components }

// ReplyDelimiters are the service characters of a reply (CONTRL, APERAK)
// to the interchange env describes: the sender's own when its UNA declared
// them, so that the reply reads with the parser that wrote the
// interchange; otherwise DefaultDelimiters, written as UNA:+.? ' in every
// syntax version. A repetition separator is declared only when the
// sender's UNA declared one: syntax 4's default '*' in a UNA is what
// several widely used parsers cannot read, and no reply repeats an
// element.
//
// A sender's service character that is a control character other than
// the information separators of syntax level B (IS4..IS1, 0x1C to 0x1F)
// is not echoed (NUL, ESC, DEL...): the reply then has the default ones.
func ReplyDelimiters(env *Envelope) Delimiters {
	if env == nil || !env.HasUNA || env.Delimiters.Terminator == 0 {
		return DefaultDelimiters
	}
	d := env.Delimiters
	forbidden := func(c byte) bool { return isControl(c) && (c < 0x1c || c > 0x1f) }
	for _, c := range []byte{d.Component, d.Element, d.Decimal, d.Terminator} {
		if forbidden(c) { // NUL included: these are never "none"
			return DefaultDelimiters
		}
	}
	for _, c := range []byte{d.Release, d.Repetition} {
		if c != 0 && forbidden(c) {
			return DefaultDelimiters
		}
	}
	return d
}

// printableElements is elements with every control character of a value
// written as %HH (Writer.Printable); elements itself when none has one.
func printableElements(elements [][]string) [][]string {
	var out [][]string
	for i, el := range elements {
		for j, v := range el {
			if !hasControl(v) {
				continue
			}
			if out == nil {
				out = make([][]string, len(elements))
				copy(out, elements)
			}
			if &out[i][0] == &elements[i][0] {
				out[i] = append([]string(nil), el...)
			}
			out[i][j] = escapeControls(v)
		}
	}
	if out == nil {
		return elements
	}
	return out
}

func isControl(c byte) bool { return c < 0x20 || c == 0x7f }

func hasControl(v string) bool {
	for i := 0; i < len(v); i++ {
		if isControl(v[i]) {
			return true
		}
	}
	return false
}

func escapeControls(v string) string {
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len(v)+8)
	for i := 0; i < len(v); i++ {
		c := v[i]
		if isControl(c) {
			b = append(b, '%', hex[c>>4], hex[c&15])
			continue
		}
		b = append(b, c)
	}
	return string(b)
}
