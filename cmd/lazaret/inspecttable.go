package main

import (
	"bytes"
	"io"
	"text/tabwriter"
	"unicode/utf8"
)

// The layout of inspect's table: text/tabwriter's minimal cell width, tab
// width, padding and padding character, no flags.
const (
	tableMinWidth = 2
	tableTabWidth = 4
	tablePadding  = 2
	tablePadChar  = ' '
)

// tableCells is how many cells a row of inspect's table has: seven ended
// by a tab, and the message.
const tableCells = 8

// tableWriter writes inspect's table as a text/tabwriter.Writer with the
// table's layout writes it, block by block (a block is what is written
// between two calls of Flush). A block of whole rows of tableCells cells
// whose text holds nothing tabwriter reads as more than text (a vertical
// tab, a form feed, its escape byte) is aligned here: each column as wide
// as its widest cell in runes, plus the padding. tabwriter does the same
// for such a block, every column of it one column block, but it looks at
// every byte twice and keeps a record per cell. Any other block is handed
// to a tabwriter.Writer as it was written. TestTableWriterIsTabwriter and
// FuzzTableWriter hold it to tabwriter.
type tableWriter struct {
	w     io.Writer
	buf   []byte // the block
	rows  []int  // where each row of the block ends in buf
	plain bool   // the block so far is rows of the kind aligned here
	out   []byte
	tw    *tabwriter.Writer // for a block that is not plain, made once
}

func newTableWriter(w io.Writer) *tableWriter {
	return &tableWriter{w: w, plain: true}
}

// Write adds p to the block.
func (t *tableWriter) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if !t.plain {
		return len(p), nil
	}
	// Rows are written whole, one at a time, by inspect: anything else
	// (a row in two writes, two rows in one) is left to tabwriter.
	if len(p) == 0 || p[len(p)-1] != '\n' || bytes.Count(p, []byte{'\t'}) != tableCells-1 ||
		bytes.IndexByte(p[:len(p)-1], '\n') >= 0 || bytes.ContainsAny(p, "\v\f") || bytes.IndexByte(p, tabwriter.Escape) >= 0 {
		t.plain = false
		return len(p), nil
	}
	t.rows = append(t.rows, len(t.buf))
	return len(p), nil
}

// Flush writes the block out, aligned, and starts the next.
func (t *tableWriter) Flush() error {
	defer func() {
		t.buf, t.rows, t.plain = t.buf[:0], t.rows[:0], true
	}()
	if !t.plain {
		if t.tw == nil {
			t.tw = tabwriter.NewWriter(t.w, tableMinWidth, tableTabWidth, tablePadding, tablePadChar, 0)
		}
		if _, err := t.tw.Write(t.buf); err != nil {
			return err
		}
		return t.tw.Flush()
	}
	var widths [tableCells - 1]int
	for i := range widths {
		widths[i] = tableMinWidth
	}
	from := 0
	for _, end := range t.rows {
		row := t.buf[from : end-1]
		from = end
		for j := range widths {
			k := bytes.IndexByte(row, '\t')
			widths[j] = max(widths[j], runes(row[:k])+tablePadding)
			row = row[k+1:]
		}
	}
	out := t.out[:0]
	from = 0
	for _, end := range t.rows {
		row := t.buf[from : end-1]
		from = end
		for j := range widths {
			k := bytes.IndexByte(row, '\t')
			out = append(out, row[:k]...)
			for n := widths[j] - runes(row[:k]); n > 0; n-- {
				out = append(out, tablePadChar)
			}
			row = row[k+1:]
		}
		out = append(out, row...)
		out = append(out, '\n')
		if len(out) >= 64<<10 {
			if _, err := t.w.Write(out); err != nil {
				return err
			}
			out = out[:0]
		}
	}
	t.out = out[:0]
	_, err := t.w.Write(out)
	return err
}

// runes is how many runes tabwriter counts in b.
func runes(b []byte) int {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return utf8.RuneCount(b)
		}
	}
	return len(b)
}
