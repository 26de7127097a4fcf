package edifact_test

import (
	"strings"
	"testing"

	"github.com/lazaret/lazaret/edifact"
)

// TestCharsetQuote: a value is shown as the text of the set its syntax
// identifier declares, decoded to UTF-8; a byte the set does not define
// (or that is not UTF-8 in a UTF-8 set) stays an escape, as do quotes,
// backslashes and control characters.
func TestCharsetQuote(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		id   string
		in   string
		want string
	}{
		{"UNOE", "\xbc\xde\xe1\xda\xd2\xd0", `"Москва"`},                // ISO 8859-5
		{"UNOF", "\xc1\xe8\xde\xed\xe1", `"Αθήνα"`},                     // ISO 8859-7
		{"UNOC", "Z\xfcrich \"x\" \\ \x85", `"Zürich \"x\" \\ \u0085"`}, // ISO 8859-1, a C1 control
		{"UNOD", "\xa3\xf3d\xbc", `"Łódź"`},                             // ISO 8859-2
		{"UNOG", "\xa5 \xa6", `"\xa5 Ĥ"`},                               // ISO 8859-3: 0xa5 is not defined
		{"UNOJ", "\xf9\xec\xe5\xed", `"שלום"`},                          // ISO 8859-8
		{"UNOW", "北京 \xff", `"北京 \xff"`},                                // UTF-8, one byte that is not
		{"UNOY", "Zürich", `"Zürich"`},                                  // ISO 10646 as UTF-8
		{"UNOA", "\xbc\x01", `"\xbc\x01"`},                              // ASCII only
		{"UNOX", "\x1b$B", `"\x1b$B"`},                                  // ISO 2022: not decoded
		{"UNOZ", "\xe9", `"\xe9"`},                                      // agreed between partners: not decoded
		{"UNOE", "", `""`},
	} {
		cs := edifact.CharsetOf(c.id)
		if got := cs.Quote([]byte(c.in)); got != c.want {
			t.Errorf("%s %q: %s, want %s", c.id, c.in, got, c.want)
		}
		if got, want := cs.Text([]byte(c.in)), c.want[1:len(c.want)-1]; got != want {
			t.Errorf("%s %q: text %s, want %s", c.id, c.in, got, want)
		}
	}
}

// TestAperakTextInTheSendersSet: a finding's text, UTF-8 since values
// are shown as their text, is written into an APERAK in the sender's set:
// Cyrillic back into ISO 8859-5 for a UNOE sender, kept in UNOW, a '.'
// where the set lacks a character (UNOC has no Cyrillic; UNOA no byte
// above 0x7f).
func TestAperakTextInTheSendersSet(t *testing.T) {
	t.Parallel()
	errs := []edifact.AperakError{{Code: "LOCBAD", Segment: 4, Tag: "LOC", Element: 2, Component: 1, Text: `"Москва" is not a UN/LOCODE`}}
	for _, c := range []struct{ syntax, want string }{
		{"UNOE", "\"\xbc\xde\xe1\xda\xd2\xd0\" is not a UN/LOCODE"},
		{"UNOW", `"Москва" is not a UN/LOCODE`},
		{"UNOC", `"......" is not a UN/LOCODE`},
		{"UNOB", `"............" is not a UN/LOCODE`},
	} {
		in := "UNB+" + c.syntax + ":4+S+R+20261201:1000+R1'UNH+1+IFTMIN:D:99B:UN'BGM+610'UNT+2+1'UNZ+1+R1'"
		got := aperakOf(t, in, []edifact.AperakMessage{{Ref: "1", Type: "IFTMIN", Number: 1, Errors: errs}})
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: no %q in\n%s", c.syntax, c.want, got)
		}
	}
}
