package main

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"math/bits"
	"strings"
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
	buf   []byte      // the block
	cells []tableCell // the cells of the block's rows ended by a tab, row after row
	plain bool        // the block so far is rows of the kind aligned here
	out   []byte
	tw    *tabwriter.Writer // for a block that is not plain, made once
}

// tableCell is a cell of a row, but its last: its length in bytes and in
// runes as tabwriter counts them.
type tableCell struct{ bytes, runes int32 }

// Byte classes of a row, read in one pass (see Write).
const (
	rowText    = iota
	rowTab     // ends a cell
	rowNewline // ends the row
	rowNot     // makes tabwriter read the row as more than text: \v, \f, its escape byte
	rowWide    // the cell's runes are to be counted
)

var rowClass = func() (c [256]byte) {
	for b := utf8.RuneSelf; b < 256; b++ {
		c[b] = rowWide
	}
	c['\t'], c['\n'], c['\v'], c['\f'], c[tabwriter.Escape] = rowTab, rowNewline, rowNot, rowNot, rowNot
	return c
}()

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
	// (a row in two writes, two rows in one) is left to tabwriter. One
	// pass finds the cells and whether the row is plain.
	if len(p) == 0 || p[len(p)-1] != '\n' {
		t.plain = false
		return len(p), nil
	}
	cells, start, wide := t.cells, 0, false
	row := p[:len(p)-1]
	for i := 0; i < len(row); i++ {
		// Eight bytes at a time, to the next that is not printable
		// ASCII (see notText).
		for i+8 <= len(row) {
			m := notText(binary.LittleEndian.Uint64(row[i:]))
			if m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
		if i == len(row) {
			break
		}
		c := row[i]
		switch rowClass[c] {
		case rowText:
		case rowTab:
			if len(cells)-len(t.cells) == tableCells-1 {
				t.plain = false // a tab too many
				return len(p), nil
			}
			cell := p[start:i]
			n := len(cell)
			if wide {
				n = utf8.RuneCount(cell)
			}
			cells = append(cells, tableCell{int32(len(cell)), int32(n)})
			start, wide = i+1, false
		case rowWide:
			wide = true
		default: // rowNewline, rowNot
			t.plain = false
			return len(p), nil
		}
	}
	if len(cells)-len(t.cells) != tableCells-1 || len(t.buf) > math.MaxInt32 {
		t.plain = false
		return len(p), nil
	}
	t.cells = cells
	return len(p), nil
}

// notText marks, with its high bit, the first byte of x (the lowest)
// that is below 0x0d or from 0x80 up: every byte rowClass does not call
// text is one (and a few it does, which Write looks at and passes). A
// byte after the first may be marked wrongly: a borrow runs up from a
// byte below 0x0d, and only from one.
func notText(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	return ((x-0x0d*ones)&^x | x) & highs
}

// Flush writes the block out, aligned, and starts the next.
func (t *tableWriter) Flush() error {
	defer func() {
		t.buf, t.cells, t.plain = t.buf[:0], t.cells[:0], true
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
	var widths [tableCells - 1]int32
	for i := range widths {
		widths[i] = tableMinWidth
	}
	for i, c := range t.cells {
		j := i % len(widths)
		widths[j] = max(widths[j], c.runes+tablePadding)
	}
	out := t.out[:0]
	row := t.buf
	for i := 0; i < len(t.cells); i += len(widths) {
		for j, c := range t.cells[i : i+len(widths)] {
			out = append(out, row[:c.bytes]...)
			for n := widths[j] - c.runes; n > 0; n -= int32(len(tablePad)) {
				out = append(out, tablePad[:min(n, int32(len(tablePad)))]...)
			}
			row = row[c.bytes+1:] // and the tab
		}
		end := bytes.IndexByte(row, '\n') + 1 // the message, and the newline
		out = append(out, row[:end]...)
		row = row[end:]
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

// tablePad is the padding a cell is followed by, cut to length.
var tablePad = strings.Repeat(string(rune(tablePadChar)), 64)
