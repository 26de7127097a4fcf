package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/tiff"
)

// fmtRow is how inspect wrote a table row before appendRow.
func fmtRow(r inspectResult) string {
	msg := r.Message
	if msg == "" && len(r.Warnings) > 0 {
		msg = fmt.Sprintf("%d warning(s): %s", len(r.Warnings), r.Warnings[0].Message)
	}
	file := r.File
	if r.MessageRef != "" && r.Interchange > 1 {
		file += fmt.Sprintf("#%d#%s", r.Interchange, r.MessageRef)
	} else if r.MessageRef != "" {
		file += "#" + r.MessageRef
	}
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cell(file), r.Verdict, dash(r.Class), dash(r.Code), where(r), int64OrDash(r.Offset), dash(r.PUID), cell(msg))
}

// where is a short human position: "page 3" or "seg 5 el 2:1".
func where(r inspectResult) string {
	switch {
	case r.Page != nil:
		return fmt.Sprintf("page %d", *r.Page)
	case r.Segment > 0 && r.Element > 0:
		return fmt.Sprintf("seg %d el %d:%d", r.Segment, r.Element, r.Component)
	case r.Segment > 0:
		return fmt.Sprintf("seg %d", r.Segment)
	}
	return "-"
}

// TestInspectRowIsFmt: appendRow writes each row as the fmt.Fprintf it
// replaced did, positions, dashes and the cells' marks for line breaks
// and tabs included.
func TestInspectRowIsFmt(t *testing.T) {
	t.Parallel()
	off, page := int64(311), 3
	ws := func(msgs ...string) []tiff.Warning {
		var out []tiff.Warning
		for _, m := range msgs {
			out = append(out, tiff.Warning{Code: "w", Message: m})
		}
		return out
	}
	rows := []inspectResult{
		{File: "a.edi", Verdict: "accept", MessageRef: "17", Offset: &off, Segment: 1, Tag: "UNH", Warnings: []tiff.Warning{}},
		{File: "a.edi", Verdict: "accept", MessageRef: "18", Offset: &off, Segment: 1, Warnings: ws("message 18 no message directory for VERMAS:D:16A:UN")},
		{File: "a.edi", Verdict: "quarantine", Class: "semantic", Code: "edifact.dtm.invalid", Message: "date \"x\" does not match", Offset: &off, Segment: 5, Element: 1, Component: 2},
		{File: "m.tif", Verdict: "dead-letter", Class: "structural", Code: "tiff.strip", Message: "strip 2 short", Page: &page, PUID: "fmt/353"},
		{File: "m.tif", Verdict: "accept", PUID: "fmt/353", Warnings: ws("first", "second"), Pages: 2},
		{File: "tab\tfile.edi", Verdict: "accept", MessageRef: "r\n1", Warnings: ws("\tleading tab", "x")},
		{File: " sp\r\nace ", Verdict: "dead-letter", Message: "line one\nline two\r\n\tthree\t", Segment: 12},
		{File: "x", Verdict: "accept", Warnings: ws(" padded\n "), MessageRef: " r "},
		{File: "", Verdict: "", Warnings: ws("ünïcode ⏎"), Segment: 2, Element: 3},
		{File: "two.edi", Verdict: "accept", MessageRef: "1", Interchange: 2, Offset: &off, Segment: 1, Tag: "UNH"},
	}
	for i := range rows {
		r := rows[i]
		if got, want := string(r.appendRow(nil)), fmtRow(r); got != want {
			t.Errorf("row %d:\ngot  %q\nwant %q", i, got, want)
		}
	}
}

// TestBreaksCellIsContainsAny: breaksCell, which reads eight bytes at a
// time, finds a line break or a tab wherever it is, after any other byte
// below it (a borrow across the word) or none.
func TestBreaksCellIsContainsAny(t *testing.T) {
	t.Parallel()
	const text = "no message directory for VERMAS"
	for first := 0; first <= 0xff; first++ {
		for i := range 20 {
			for j := i; j < 20; j++ {
				b := []byte(text)
				b[i] = byte(first)
				for _, second := range []byte{'\t', '\n', '\r', 'x'} {
					b[j] = second
					s := string(b[:i+1+(j-i)+3])
					if got, want := breaksCell(s), strings.ContainsAny(s, "\r\n\t"); got != want {
						t.Fatalf("breaksCell(%q) = %v, want %v", s, got, want)
					}
				}
			}
		}
	}
}
