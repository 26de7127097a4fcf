package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// Everything lazaret prints for a person passes through safeText (or the
// safeWriter that applies it to a stream): ids, UNH references, file
// names, manifest values and error messages come from submitters, and a
// raw ESC, OSC or BEL in them would recolour the operator's terminal, set
// its title or hide text. Each control character becomes a visible escape:
// a C0 control (below 0x20, but newline and tab) as \x1b, DEL, the C1
// controls and the bidirectional overrides as \u007f, \u009b, \u202e. The
// \u forms are JSON's own escapes and JSON never carries a C0 control raw,
// so a JSON stream (--json, the logs) passes through unchanged in meaning.

// safeText is s with every control character shown as an escape.
func safeText(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		writeSafe(&b, s[i:i+n], r, n)
		i += n
	}
	return b.String()
}

// clean reports whether s is plain printable ASCII, newlines and tabs: the
// common case, written as it is.
func clean(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x7f || (c < 0x20 && c != '\n' && c != '\t') {
			return false
		}
	}
	return true
}

// writeSafe writes one decoded rune (raw is its bytes) or its escape.
func writeSafe(b *strings.Builder, raw string, r rune, n int) {
	switch {
	case r == utf8.RuneError && n == 1:
		// A byte that is not UTF-8: a lone 0x9b is CSI on an 8-bit
		// terminal.
		if c := raw[0]; c >= 0x80 && c < 0xa0 {
			fmt.Fprintf(b, `\x%02x`, c)
			return
		}
		b.WriteString(raw)
	case r < 0x20 && r != '\n' && r != '\t':
		fmt.Fprintf(b, `\x%02x`, r)
	case r == 0x7f, r >= 0x80 && r < 0xa0, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		fmt.Fprintf(b, `\u%04x`, r)
	default:
		b.WriteString(raw)
	}
}

// safeWriter applies safeText to a stream: the writer every command's
// human output and logs go through (see run). A UTF-8 sequence split
// across two writes is held until it is whole; Flush writes what is held.
// Safe for concurrent use: the worker's goroutines log through one.
type safeWriter struct {
	mu   sync.Mutex
	w    io.Writer
	held []byte
}

func newSafeWriter(w io.Writer) *safeWriter {
	if s, ok := w.(*safeWriter); ok {
		return s
	}
	return &safeWriter{w: w}
}

func (s *safeWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	buf := p
	if len(s.held) > 0 {
		buf = append(s.held, p...)
		s.held = nil
	}
	// Hold an incomplete UTF-8 sequence at the end for the next write.
	if cut := incompleteTail(buf); cut < len(buf) {
		s.held = append([]byte(nil), buf[cut:]...)
		buf = buf[:cut]
	}
	str := string(buf)
	if _, err := io.WriteString(s.w, safeText(str)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes a held partial sequence (escaped, as the bytes it is).
func (s *safeWriter) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.held) == 0 {
		return nil
	}
	held := s.held
	s.held = nil
	_, err := io.WriteString(s.w, safeText(string(held)))
	return err
}

// incompleteTail is where a UTF-8 sequence that the end of b cuts short
// begins, or len(b).
func incompleteTail(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-3; i-- {
		c := b[i]
		if c < 0x80 {
			return len(b) // ASCII: nothing pending
		}
		if c >= 0xc0 { // a lead byte
			if !utf8.FullRune(b[i:]) {
				return i
			}
			return len(b)
		}
	}
	return len(b)
}

// rawWriter is the writer beneath a safeWriter: for what draws on the
// terminal itself (the progress bar) and for documents whose bytes must
// stay as they are (see exact).
func rawWriter(w io.Writer) io.Writer {
	if s, ok := w.(*safeWriter); ok {
		s.Flush()
		return s.w
	}
	return w
}

// exact is where a document goes (a PREMIS export, a CONTRL interchange):
// byte for byte into a file or a pipe, escaped on a terminal, where a
// person reads it.
func exact(w io.Writer) io.Writer {
	if isTerminal(w) {
		return w
	}
	return rawWriter(w)
}
