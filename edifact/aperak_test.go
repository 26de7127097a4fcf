package edifact_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/edifact/directory"
)

// aperakOf writes the APERAK answering in with msgs.
func aperakOf(t *testing.T, in string, msgs []edifact.AperakMessage) string {
	t.Helper()
	ic, _ := edifact.Parse(strings.NewReader(in), edifact.Limits{}, nil)
	rep := edifact.AperakReport{Interchange: ic, Envelope: edifact.ReadEnvelope(strings.NewReader(in), edifact.Limits{}),
		Messages: msgs, Now: time.Date(2026, 12, 1, 10, 30, 0, 0, time.UTC)}
	var out bytes.Buffer
	if err := edifact.WriteAPERAK(&out, rep); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// checkAperak parses an APERAK interchange back and checks every message
// against the APERAK D.01B segment table of the message directory.
func checkAperak(t *testing.T, text string) []*edifact.Message {
	t.Helper()
	def := directory.Lookup(edifact.AperakVersion, edifact.AperakRelease, "APERAK")
	if def == nil {
		t.Fatal("no APERAK D:01B in the directory")
	}
	var msgs []*edifact.Message
	ic, err := edifact.Parse(strings.NewReader(text), edifact.Limits{}, func(m *edifact.Message) error {
		for _, f := range def.Check(m, directory.Options{Decimal: ic0Decimal(text)}) {
			t.Errorf("message %s: %s", m.Ref, f)
		}
		c := *m
		msgs = append(msgs, &c)
		return nil
	})
	if err != nil {
		t.Fatalf("the APERAK does not parse: %v\n%s", err, text)
	}
	if ic.Reference == "" {
		t.Error("no UNB reference")
	}
	return msgs
}

// ic0Decimal is the decimal mark the UNA of text declares.
func ic0Decimal(text string) byte {
	if strings.HasPrefix(text, "UNA") && len(text) > 5 {
		return text[5]
	}
	return '.'
}

const aperakIn = "UNA:+.? '\nUNB+UNOC:3+CARRIER1:ZZ+LAZARET:ZZ+261130:1200+IC0013'\n" +
	"UNH+1+IFTMIN:D:99B:UN'BGM+610+BK1+9'UNT+2+1'" +
	"UNH+2+IFTMIN:D:99B:UN'BGM+610+BK2+9'LOC+11+NLZZZ:139:6'UNT+3+2'UNZ+2+IC0013'"

func TestAperakSegments(t *testing.T) {
	t.Parallel()
	got := aperakOf(t, aperakIn, []edifact.AperakMessage{{Ref: "2", Type: "IFTMIN", Number: 2, Offset: 100, Errors: []edifact.AperakError{
		{Code: "LOCUNK", Segment: 6, Tag: "LOC", Element: 2, Component: 1, Offset: 311, Text: "UN/LOCODE NLZZZ is not in the registry"},
		{Code: "CNTRCHK", Segment: 13, Tag: "EQD", Element: 2, Offset: 400, Text: "check digit 4, want 3"},
	}}})
	for _, want := range []string{
		"UNA:+.? '\n",
		"UNB+UNOC:3+LAZARET:ZZ+CARRIER1:ZZ+261201:1030+",
		"UNH+1+APERAK:D:01B:UN'",
		"BGM+305+",
		"+27'",
		"DTM+137:202612011030:203'",
		"RFF+ACW:2'",
		"RFF+ZZZ:IC0013'",
		"NAD+MS+LAZARET'",
		"NAD+MR+CARRIER1'",
		"ERC+LOCUNK::ZZZ'",
		"FTX+AAO+++segment 6 (LOC), element 2, component 1, byte 311:UN/LOCODE NLZZZ is not in the registry'",
		"RFF+ACW:2:6'",
		"ERC+CNTRCHK::ZZZ'",
		"FTX+AAO+++segment 13 (EQD), element 2, byte 400:check digit 4, want 3'",
		"RFF+ACW:2:13'",
		"UNT+14+1'",
		"UNZ+1+",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	checkAperak(t, got)
}

// The reply is written with the sender's separators, in its syntax
// version, and its text fits the repertoire (UNOA: upper case) and the
// separators (none can be released: they become spaces).
func TestAperakSeparatorsAndRepertoire(t *testing.T) {
	t.Parallel()
	errs := []edifact.AperakError{{Code: "DTMBAD", Segment: 3, Tag: "DTM", Element: 1, Component: 2, Text: "date \"2026-13\" is not 102: see ^|`~ \x1b[31m"}}
	for _, tc := range []struct {
		name, in string
		want     []string
		not      []string
	}{
		{"syntax 4 without UNA: no '*'",
			"UNB+UNOC:4+S+R+20261201:1000+REF4'UNH+1+IFTMIN:D:99B:UN'BGM+610'UNT+2+1'UNZ+1+REF4'",
			[]string{"UNA:+.? '\n", "UNB+UNOC:4+R+S+20261201:1030+"}, []string{"*"}},
		{"syntax 4 with '*' in the sender's UNA",
			"UNA:+.?*'UNB+UNOC:4+S+R+20261201:1000+REF4'UNH+1+IFTMIN:D:99B:UN'BGM+610'UNT+2+1'UNZ+1+REF4'",
			[]string{"UNA:+.?*'\n"}, nil},
		{"the sender's separators, no release character",
			"UNA|^. ~`UNB^UNOC|3^S^R^261201|1000^REF6`UNH^1^IFTMIN|D|99B|UN`BGM^610`UNT^2^1`UNZ^1^REF6`",
			[]string{"UNA|^. ~`\n", "ERC^DTMBAD||ZZZ`", "FTX^AAO^^^segment 3 (DTM), element 1, component 2, byte 0|date \"2026-13\" is not 102: see      .[31m`"}, nil},
		{"UNOA: upper case, no characters outside its repertoire",
			"UNB+UNOA:3+S+R+261201:1000+REF7'UNH+1+IFTMIN:D:99B:UN'BGM+610'UNT+2+1'UNZ+1+REF7'",
			[]string{"FTX+AAO+++SEGMENT 3 (DTM), ELEMENT 1, COMPONENT 2, BYTE 0:DATE \"2026-13\" IS NOT 102?: SEE .... ..31M'"}, nil},
		{"IATA: level A like UNOA, in IATA's syntax",
			"UNB+IATA:1+S+R+261201:1000+REF8'UNH+1+PAXLST:D:05B:UN:IATA'BGM+745'UNT+2+1'UNZ+1+REF8'",
			[]string{"UNB+IATA:1+R+S+261201:1030+", "FTX+AAO+++SEGMENT 3 (DTM), ELEMENT 1, COMPONENT 2, BYTE 0:DATE \"2026-13\" IS NOT 102?: SEE .... ..31M'"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := aperakOf(t, tc.in, []edifact.AperakMessage{{Ref: "1", Type: "IFTMIN", Number: 1, Errors: errs}})
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("no %q in\n%s", w, got)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("%q in\n%s", n, got)
				}
			}
			if strings.ContainsRune(got, 0x1b) {
				t.Errorf("an escape character reached the APERAK:\n%q", got)
			}
			checkAperak(t, got)
		})
	}
}

// The same report gives the same bytes (the reference is a hash of what
// it answers, the time is the caller's).
func TestAperakIsDeterministic(t *testing.T) {
	t.Parallel()
	msgs := []edifact.AperakMessage{{Ref: "2", Errors: []edifact.AperakError{{Code: "HSUNK", Segment: 10, Tag: "PIA", Element: 2, Component: 1}}}}
	if a, b := aperakOf(t, aperakIn, msgs), aperakOf(t, aperakIn, msgs); a != b {
		t.Errorf("two writes differ:\n%s\n%s", a, b)
	}
}

// An APERAK with no message would be an interchange without messages,
// which no partner reads: it is refused.
func TestAperakNeedsAMessage(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := edifact.WriteAPERAK(&out, edifact.AperakReport{}); err == nil || out.Len() > 0 {
		t.Errorf("err %v, wrote %q", err, out.String())
	}
}

// A sender whose separators leave no room: '-' as element separator and
// no release character. The document number does without '-', and a
// value that cannot be written with those separators is refused
// (ErrUnencodable) rather than written broken.
func TestAperakWithoutReleaseCharacter(t *testing.T) {
	t.Parallel()
	in := "UNA:-.  '\nUNB-UNOC:3-S-R-261201:1000-REF8'UNH-1-IFTMIN:D:99B:UN'BGM-610'UNT-2-1'UNZ-1-REF8'"
	got := aperakOf(t, in, []edifact.AperakMessage{{Ref: "1", Errors: []edifact.AperakError{{Code: "HSUNK", Segment: 2, Tag: "PIA", Text: "HS code 847130 - unknown"}}}})
	if !strings.Contains(got, "BGM-305-") || !strings.Contains(got, "N1-27'") || !strings.Contains(got, "HS code 847130   unknown") {
		t.Errorf("APERAK:\n%s", got)
	}
	checkAperak(t, got)
	ic, _ := edifact.Parse(strings.NewReader(in), edifact.Limits{}, nil)
	rep := edifact.AperakReport{Interchange: ic, Envelope: edifact.ReadEnvelope(strings.NewReader(in), edifact.Limits{}),
		Messages: []edifact.AperakMessage{{Ref: "A-B"}}}
	var out bytes.Buffer
	if err := edifact.WriteAPERAK(&out, rep); !errors.Is(err, edifact.ErrUnencodable) {
		t.Errorf("a reference holding the element separator: %v", err)
	}
}
