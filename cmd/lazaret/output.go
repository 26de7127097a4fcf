package main

import (
	"fmt"
	"io"
	"math/bits"
	"strings"
	"time"

	"github.com/lazaret/lazaret/api"
	"github.com/lazaret/lazaret/premis"
)

// writeJSON prints v as --json does everywhere: the API's encoding.
func writeJSON(w io.Writer, v any) error { return api.EncodeJSON(w, v) }

// cell is s fit for one table cell: a line break or a tab in a message
// would start a new row or column, so each becomes a visible mark.
func cell(s string) string {
	if !breaksCell(s) {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.NewReplacer("\n", " ⏎ ", "\r", " ⏎ ", "\t", " ").Replace(s)
	return strings.TrimSpace(s)
}

// breaksCell reports whether s holds a line break or a tab, as
// strings.ContainsAny(s, "\r\n\t") does, eight bytes at a time: inspect
// asks it of a few cells of each of an interchange's rows.
func breaksCell(s string) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for i := 0; i < len(s); i++ {
		for i+8 <= len(s) {
			x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			// The high bit of the first byte below '\r'+1, if any: the
			// bytes after it may be marked wrongly, by a borrow.
			if m := (x - ('\r'+1)*ones) &^ x & highs; m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
		if i == len(s) {
			break
		}
		if c := s[i]; c <= '\r' && (c == '\r' || c == '\n' || c == '\t') {
			return true
		}
	}
	return false
}

// truncate shortens s to at most n runes, marking the cut.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// indent continues the lines of a multi-line value under its first.
func indent(s, prefix string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix)
}

// position is a short human position: "page 3", "seg 5 (DTM) el 2:1", "-".
func position(p premis.Position) string {
	switch {
	case p.Page != nil && p.Tag != "":
		return fmt.Sprintf("page %d tag %s", *p.Page, p.Tag)
	case p.Page != nil:
		return fmt.Sprintf("page %d", *p.Page)
	case p.Segment > 0 && p.Element > 0:
		return fmt.Sprintf("seg %d%s el %d:%d", p.Segment, tagSuffix(p.Tag), p.Element, p.Component)
	case p.Segment > 0:
		return fmt.Sprintf("seg %d%s", p.Segment, tagSuffix(p.Tag))
	}
	return "-"
}

func tagSuffix(tag string) string {
	if tag == "" {
		return ""
	}
	return " (" + tag + ")"
}

// timeFlag is a --since or --until: a time in any form api.ParseTime takes.
type timeFlag struct {
	t   time.Time
	raw string
}

func (f *timeFlag) String() string { return f.raw }
func (f *timeFlag) Type() string   { return "time" }
func (f *timeFlag) Set(v string) error {
	t, err := api.ParseTime(v, time.Now())
	if err != nil {
		return err
	}
	f.t, f.raw = t, v
	return nil
}
