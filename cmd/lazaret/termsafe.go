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
// common case, written as it is. Everything lazaret prints passes here
// (87 MB of JSON for a 50 MB interchange), so it looks at eight bytes at a
// time, and at each byte only of a word that holds a byte below 0x20 or
// from 0x7f up.
func clean[T string | []byte](s T) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		// A byte from 0x7f up has its high bit set, itself or once one is
		// added; one below 0x20 borrows when 0x20 is taken away.
		if ((x|(x+ones))|((x-0x20*ones)&^x))&highs == 0 {
			continue
		}
		for _, c := range []byte(s[i : i+8]) {
			if c >= 0x7f || (c < 0x20 && c != '\n' && c != '\t') {
				return false
			}
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c >= 0x7f || (c < 0x20 && c != '\n' && c != '\t') {
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
	var err error
	if clean(buf) {
		_, err = s.w.Write(buf) // as it is, not copied into a string first
	} else {
		_, err = io.WriteString(s.w, safeText(string(buf)))
	}
	if err != nil {
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
