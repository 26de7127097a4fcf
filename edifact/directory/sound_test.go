package directory_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/edifact/directory"
)

// checkWith checks every message of the interchange in text with c and
// returns the findings, message by message.
func checkWith(t *testing.T, c *directory.Checker, text string, opt directory.Options) [][]directory.Finding {
	t.Helper()
	var out [][]directory.Finding
	_, err := edifact.Parse(bytes.NewReader([]byte(text)), edifact.Limits{}, func(m *edifact.Message) error {
		def := directory.Lookup(m.Version, m.Release, m.Type)
		if def == nil {
			t.Fatalf("no directory for %s %s:%s", m.Type, m.Version, m.Release)
		}
		var fs []directory.Finding
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
