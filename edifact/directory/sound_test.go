package directory_test

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/edifact/directory"
)

// checkWith checks every message of the interchange in text with c (a
// new Checker for each when c is nil) and returns the findings, message by
// message.
func checkWith(t *testing.T, c *directory.Checker, text string, opt directory.Options) [][]directory.Finding {
	t.Helper()
	var out [][]directory.Finding
	_, err := edifact.Parse(bytes.NewReader([]byte(text)), edifact.Limits{}, func(m *edifact.Message) error {
		def := directory.Lookup(m.Version, m.Release, m.Type)
		if def == nil {
			t.Fatalf("no directory for %s %s:%s", m.Type, m.Version, m.Release)
		}
		var fs []directory.Finding
		c := c
		if c == nil {
			c = new(directory.Checker)
		}
		c.Begin(def, opt, func(f directory.Finding) { fs = append(fs, f) })
		for i, s := range m.All() {
			c.Segment(i, s)
		}
		c.End()
		out = append(out, fs)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSoundSegmentsAreExact: a Checker that skips the segments it saw pass
// reports what a new Checker reports, when the same bytes come back under
// other separators, another decimal mark, or with a finding of their own.
func TestSoundSegmentsAreExact(t *testing.T) {
	t.Parallel()
	const body = "BGM+610+BK1+9'DTM+137:20261130:102'TDT+20+V1+1'LOC+9+NLRTM:139:6'" +
		"NAD+CZ+SHIPPER1::92'NAD+CN+RECEIVER1::92'GID+1+10:CT'MEA+AAE+G+KGM:12:1,5'MEA+AAE+G+KGM:12:1,5'MEA+AAE+G+KGMX:1'UNT+12+1'"
	const msg, msg4 = "UNH+1+IFTMIN:D:99B:UN'" + body, "UNH+1+IFTMIN*D*99B*UN'" + body
	const env = "UNB+UNOC:3+S+R+261130:1200+IC1'"
	const env4 = "UNB+UNOC*3+S+R+261130*1200+IC1'"
	cases := []struct {
		name string
		text string
		opt  directory.Options
	}{
		{"comma", env + msg + "UNZ+1+IC1'", directory.Options{}},
		// The same bytes, but a comma is no decimal mark now (6162 is n).
		{"full stop", "UNA:+.? '" + env + msg + "UNZ+1+IC1'", directory.Options{Decimal: '.'}},
		// The same bytes split otherwise: a colon is data, and KGM:12:1,5
		// too long for a unit (6411, an..3).
		{"other separators", "UNA*+.? '" + env4 + msg4 + "UNZ+1+IC1'", directory.Options{}},
		{"comma again", env + msg + "UNZ+1+IC1'", directory.Options{}},
	}
	var reused directory.Checker
	for _, c := range cases {
		var fresh directory.Checker
		want := checkWith(t, &fresh, c.text, c.opt)
		got := checkWith(t, &reused, c.text, c.opt)
		if !slices.EqualFunc(want, got, slices.Equal) {
			t.Errorf("%s: a reused Checker finds\n%v\na new one\n%v", c.name, got, want)
		}
		if c.name != "comma" && c.name != "comma again" && len(want[0]) <= len(checkWith(t, &fresh, cases[0].text, cases[0].opt)[0]) {
			t.Errorf("%s: the case finds nothing more than the first: %v", c.name, want)
		}
	}
}

// TestWalkMemoIsExact: a Checker that takes a message's walk through the
// segment table from the last one's, when their tags are the same,
// reports what a new Checker reports for messages that follow the memo,
// leave it early or late, stop short of it or run past it, find
// something in the walk or nothing, once or twice in a row.
func TestWalkMemoIsExact(t *testing.T) {
	t.Parallel()
	segs := []string{"BGM+610+BK1+9'", "DTM+137:20261130:102'", "TDT+20+V1+1'", "LOC+9+NLRTM:139:6'", "LOC+11+SGSIN:139:6'",
		"NAD+CZ+SHIPPER1::92'", "NAD+CN+RECEIVER1::92'", "GID+1+10:CT'", "PIA+5+847130:HS'", "MEA+AAE+G+KGM:12000'",
		"EQD+CN+MSKU9070323+22G1:6346:5'"}
	message := func(ref string, body ...string) string {
		return "UNH+" + ref + "+IFTMIN:D:99B:UN'" + strings.Join(body, "") + "UNT+" + strconv.Itoa(len(body)+2) + "+" + ref + "'"
	}
	drop := func(i int) []string { return append(append([]string(nil), segs[:i]...), segs[i+1:]...) }
	bodies := [][]string{
		segs, segs, // the memo, then followed to the end
		segs[:1],                       // stops short
		segs, append(segs, "CNT+7:1'"), // runs past, with a segment the table may not allow there
		segs, drop(0), drop(0), // leaves at the first segment (BGM missing), twice
		segs, drop(5), // leaves in the middle
		append(drop(10), "DTM+2:1:102'"),   // leaves late
		{"DTM+137:20261130:102'", segs[0]}, // out of order, twice
		{"DTM+137:20261130:102'", segs[0]},
		segs, append(segs[:3:3], segs[2:]...), // a segment repeated
		segs, segs,
	}
	var msgs []string
	for i, b := range bodies {
		msgs = append(msgs, message(strconv.Itoa(i+1), b...))
	}
	text := "UNB+UNOC:3+S+R+261130:1200+IC1'" + strings.Join(msgs, "") + "UNZ+" + strconv.Itoa(len(msgs)) + "+IC1'"
	want := checkWith(t, nil, text, directory.Options{})
	var reused directory.Checker
	for round := range 2 { // the second round starts from the memo the first left
		got := checkWith(t, &reused, text, directory.Options{})
		for i := range want {
			if !slices.Equal(want[i], got[i]) {
				t.Errorf("round %d, message %d: a reused Checker finds\n%v\na new one\n%v", round, i+1, got[i], want[i])
			}
		}
	}
	n := 0
	for _, fs := range want {
		n += len(fs)
	}
	if n == 0 {
		t.Error("the messages find nothing: the test tests nothing")
	}
}
