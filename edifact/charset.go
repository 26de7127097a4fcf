package edifact

import (
	"strconv"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
)

// Charset is the character set a syntax identifier (UNB S001 0001)
// declares, for showing an interchange's values as text: bytes of ISO
// 8859 parts decoded to UTF-8, syntax 4's ISO 10646 sets taken as UTF-8,
// anything else (UNOA and UNOB are ASCII; UNOX's ISO 2022 escapes and
// UNOZ's agreed set are not decoded) shown as ASCII. A byte the declared
// set does not define is shown as its escape, \xNN.
type Charset struct {
	id   string
	cm   *charmap.Charmap // an ISO 8859 part; nil otherwise
	utf8 bool             // ISO 10646, as UTF-8
}

// charsets are the sets of the syntax identifiers, by identifier.
var charsets = map[string]*Charset{
	"UNOC": {id: "UNOC", cm: charmap.ISO8859_1},
	"UNOD": {id: "UNOD", cm: charmap.ISO8859_2},
	"UNOE": {id: "UNOE", cm: charmap.ISO8859_5},
	"UNOF": {id: "UNOF", cm: charmap.ISO8859_7},
	"UNOG": {id: "UNOG", cm: charmap.ISO8859_3},
	"UNOH": {id: "UNOH", cm: charmap.ISO8859_4},
	"UNOI": {id: "UNOI", cm: charmap.ISO8859_6},
	"UNOJ": {id: "UNOJ", cm: charmap.ISO8859_8},
	"UNOK": {id: "UNOK", cm: charmap.ISO8859_9},
	"UNOL": {id: "UNOL", cm: charmap.ISO8859_15},
	"UNOW": {id: "UNOW", utf8: true},
	"UNOY": {id: "UNOY", utf8: true},
}

// ascii is the Charset of every other identifier.
var ascii = &Charset{}

// CharsetOf is the Charset syntax identifier id declares.
func CharsetOf(id string) *Charset {
	if c, ok := charsets[id]; ok {
		return c
	}
	return ascii
}

// Quote is b, a value in c, as a double-quoted Go string literal of its
// text: each character decoded to UTF-8 and written as it is when
// printable, quotes, backslashes and control characters escaped as
// strconv.Quote escapes them, and a byte c does not define as \xNN.
func (c *Charset) Quote(b []byte) string {
	out := make([]byte, 0, len(b)+2)
	out = append(out, '"')
	out = c.appendText(out, b)
	return string(append(out, '"'))
}

// Text is b, a value in c, as Quote writes it, without the quotes.
func (c *Charset) Text(b []byte) string {
	return string(c.appendText(make([]byte, 0, len(b)), b))
}

// appendText appends the inside of Quote(b) to out.
func (c *Charset) appendText(out, b []byte) []byte {
	for i := 0; i < len(b); {
		r, n := rune(b[i]), 1
		switch {
		case r < utf8.RuneSelf:
		case c.utf8:
			r, n = utf8.DecodeRune(b[i:])
		case c.cm != nil:
			r = c.cm.DecodeByte(b[i])
		default:
			r = utf8.RuneError
		}
		if r == utf8.RuneError {
			// Not defined in the set (or not UTF-8): the byte's escape.
			out = append(out, `\x`...)
			out = append(out, "0123456789abcdef"[b[i]>>4], "0123456789abcdef"[b[i]&15])
			i++
			continue
		}
		var tmp [16]byte
		q := strconv.AppendQuoteRune(tmp[:0], r) // 'x', with r escaped as Go escapes it
		q = q[1 : len(q)-1]
		switch {
		case r == '\'':
			out = append(out, '\'')
		case r == '"':
			out = append(out, `\"`...)
		default:
			out = append(out, q...)
		}
		i += n
	}
	return out
}

// encodeReply is s, UTF-8 text, in c for a reply: each character c holds
// (above 0x9f in an ISO 8859 part; printable in UNOW and UNOY) written as
// c writes it, every other byte that is not ASCII as '.'.
func (c *Charset) encodeReply(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r < utf8.RuneSelf:
			out = append(out, s[i])
		case r == utf8.RuneError && n == 1:
			out = append(out, '.')
		case c.cm != nil:
			if b, ok := c.cm.EncodeRune(r); ok && b >= 0xa0 {
				out = append(out, b)
			} else {
				out = append(out, '.')
			}
		case c.utf8 && unicode.IsPrint(r):
			out = append(out, s[i:i+n]...)
		default:
			out = append(out, '.')
		}
		i += n
	}
	return string(out)
}

// isASCII reports whether s is ASCII only.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
