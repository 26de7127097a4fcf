package main

import (
	"bytes"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/lazaret/lazaret/internal/testenv"
)

// tableFlusher is what both table writers are to the tests.
type tableFlusher interface {
	Write([]byte) (int, error)
	Flush() error
}

// tabwriterTable is what a tabwriter.Writer with the table's layout writes
// for blocks, each written row by row and flushed.
func tabwriterTable(t testing.TB, blocks [][]string) []byte {
	return writeTable(t, blocks, func(b *bytes.Buffer) tableFlusher {
		return tabwriter.NewWriter(b, tableMinWidth, tableTabWidth, tablePadding, tablePadChar, 0)
	})
}

// tableWriterTable is the same written by tableWriter.
func tableWriterTable(t testing.TB, blocks [][]string) []byte {
	return writeTable(t, blocks, func(b *bytes.Buffer) tableFlusher { return newTableWriter(b) })
}

// writeTable writes blocks row by row into the writer made over a buffer,
// flushing after each block, and returns what it wrote.
func writeTable(t testing.TB, blocks [][]string, newWriter func(*bytes.Buffer) tableFlusher) []byte {
	var b bytes.Buffer
	tw := newWriter(&b)
	for _, rows := range blocks {
		for _, r := range rows {
			if _, err := tw.Write([]byte(r)); err != nil {
				t.Fatal(err)
			}
		}
		if err := tw.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// TestTableWriterIsTabwriter: tableWriter writes inspect's table as
// tabwriter does, byte for byte: plain blocks, wide runes and invalid
// UTF-8, empty cells and blocks, and the blocks it leaves to tabwriter
// (a row of other cells, tabwriter's special bytes, rows not written
// whole).
func TestTableWriterIsTabwriter(t *testing.T) {
	t.Parallel()
	header := "FILE\tVERDICT\tCLASS\tCODE\tWHERE\tOFFSET\tPUID\tMESSAGE\n"
	row := func(cells ...string) string { return strings.Join(cells, "\t") + "\n" }
	long := "no message directory for VERMAS" // more than the eight bytes Write reads at once
	plain := []string{header,
		row("/tmp/a.edi#1", "accept", "-", "-", "seg 1", "64", "-", "1 warning(s): no message directory"),
		row("/tmp/a.edi#12", "quarantine", "semantic", "edifact.locode.unknown", "seg 5 el 2:1", "311", "-", "UN/LOCODE XXABC"),
		row("", "", "", "", "", "", "", ""),
		row("Zürich 北京 \xff\xfe", "a", "b", "c", "d", "e", "f", "\x1b[31m red \u202e"),
		row("x", "y\r", "z", "", "", "-", "fmt/353", ""),
	}
	for name, blocks := range map[string][][]string{
		"plain":            {plain},
		"two blocks":       {plain, plain[1:3]},
		"empty":            {{}},
		"empty then rows":  {{}, plain},
		"fewer cells":      {{header, "a\tb\n", row("1", "2", "3", "4", "5", "6", "7", "8")}},
		"more cells":       {{header, row("1", "2", "3", "4", "5", "6", "7", "8", "9")}, plain},
		"one cell":         {{header, "just text\n", row("1", "2", "3", "4", "5", "6", "7", "8")}},
		"vertical tab":     {{header, row("1\v2", "2", "3", "4", "5", "6", "7", "8")}},
		"form feed":        {{header, row("1", "2\f", "3", "4", "5", "6", "7", "8"), row("a", "b", "c", "d", "e", "f", "g", "h")}},
		"escape":           {{header, row("\xff1\t2\xff", "2", "3", "4", "5", "6", "7")}, plain},
		"split row":        {{header, "a\tb\tc\t", "d\te\tf\tg\th\n"}},
		"two rows at once": {{header, row("1", "2", "3", "4", "5", "6", "7", "8") + row("a", "b", "c", "d", "e", "f", "g", "h")}},
		"no newline":       {{header, "a\tb\tc\td\te\tf\tg\th"}},
		// Long cells, read eight bytes at a time: what is not text at
		// every place in a word, and the text just below and above it.
		"long cells": {{header, row(long+"é"+long, "accept", long+"\r\x00\x08"+long, "-", "seg 1", "64", long+"\x7f", long+" 北京 "+long)}},
		"late tab":   {{header, row(long+"\t"+long, "2", "3", "4", "5", "6", "7")}},
		"late vt":    {{header, row(long[:13]+"\v", "2", "3", "4", "5", "6", "7", "8")}, plain},
		"late ff":    {{header, row("1", long[:17]+"\f"+long, "3", "4", "5", "6", "7", "8")}, plain},
		"late esc":   {{header, row("1", "2", long[:22]+"\xff"+long+"\xff", "4", "5", "6", "7", "8")}, plain},
		"late break": {{header, row("1", "2", "3", long[:9]+"\n"+long, "5", "6", "7", "8")}, plain},
	} {
		if got, want := tableWriterTable(t, blocks), tabwriterTable(t, blocks); !bytes.Equal(got, want) {
			t.Errorf("%s: tableWriter:\n%q\ntabwriter:\n%q", name, got, want)
		}
	}
}

// FuzzTableWriter: any rows, in any blocks, come out of tableWriter as
// tabwriter writes them.
func FuzzTableWriter(f *testing.F) {
	seeds := testenv.NewSeeds(f)
	seeds.Add("a\tb\tc\td\te\tf\tg\th\n", "accept\tsemantic\t-\t-\tseg 1\t64\t-\tZürich\n", uint8(1))
	seeds.Add("\xff\t\v\t\f", "x\ty\n\n", uint8(3))
	f.Fuzz(func(t *testing.T, a, b string, cut uint8) {
		rows := []string{a, b, a, b + a, strings.ReplaceAll(a, "\n", ""), b}
		k := int(cut) % (len(rows) + 1)
		blocks := [][]string{rows[:k], rows[k:]}
		if got, want := tableWriterTable(t, blocks), tabwriterTable(t, blocks); !bytes.Equal(got, want) {
			t.Errorf("tableWriter:\n%q\ntabwriter:\n%q", got, want)
		}
	})
}
