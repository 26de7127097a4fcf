package edifact_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lazaret/lazaret/edifact"
)

// contrlOf parses in as Lazaret would for a CONTRL (Parse, then
// ReadEnvelope) and writes the report.
func contrlOf(t *testing.T, in string) string {
	t.Helper()
	var seen []edifact.Message
	ic, err := edifact.Parse(strings.NewReader(in), edifact.Limits{}, func(m *edifact.Message) error {
		c := m.Header()
		seen = append(seen, c)
		return nil
	})
	rep := edifact.ContrlReport{Interchange: ic, Messages: seen, Envelope: edifact.ReadEnvelope(strings.NewReader(in), edifact.Limits{}),
		Now: time.Date(2026, 12, 1, 10, 30, 0, 0, time.UTC)}
	if ic.Open != nil {
		rep.Messages = append(rep.Messages, *ic.Open)
	}
	var se *edifact.SyntaxError
	if errors.As(err, &se) {
		rep.Err = se
	}
	var out bytes.Buffer
	if err := edifact.WriteCONTRL(&out, rep); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestContrlSegments(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		want     []string // segments the CONTRL must hold
	}{
		{"count not a number is 37, not 29",
			"UNB+UNOA:3+SENDER:ZZZ+RECIPIENT:ZZZ+261201:1000+REF1'UNH+M1+IFTMIN:D:99B:UN:SMDG20'BGM+610'UNT+X2+M1'UNZ+1+REF1'",
			[]string{"UNB+UNOA:3+RECIPIENT:ZZZ+SENDER:ZZZ+261201:1030+", "UNH+1+CONTRL:D:3:UN'", "UCI+REF1+SENDER:ZZZ+RECIPIENT:ZZZ+4'",
				"UCM+M1+IFTMIN:D:99B:UN:SMDG20+4+37+UNT+1'"}},
		{"count missing is 13",
			"UNB+UNOA:3+S+R+261201:1000+REF1'UNH+M1+IFTMIN:D:99B:UN'BGM+610'UNT++M1'UNZ+1+REF1'",
			[]string{"UCM+M1+IFTMIN:D:99B:UN+4+13+UNT+1'"}},
		{"count wrong stays 29",
			"UNB+UNOA:3+S+R+261201:1000+REF1'UNH+M1+IFTMIN:D:99B:UN'BGM+610'UNT+7+M1'UNZ+1+REF1'",
			[]string{"UCM+M1+IFTMIN:D:99B:UN+4+29+UNT+1'"}},
		{"UNZ count not a number",
			"UNB+UNOA:3+S+R+261201:1000+REF1'UNH+M1+IFTMIN:D:99B:UN'BGM+610'UNT+3+M1'UNZ+A+REF1'",
			[]string{"UCI+REF1+S+R+4+37+UNZ+1'", "UCM+M1+IFTMIN:D:99B:UN+4'"}},
		{"no UNB: UNZ reference and group parties",
			"UNG+ORDERS+APPS:14+APPR:14+261201:1000+G1+UN+D:96A'UNH+M1+ORDERS:D:96A:UN'BGM+220'UNT+3+M1'UNE+1+G1'UNZ+1+REF9'",
			[]string{"UNB+UNOC:3+APPR:14+APPS:14+", "UCI+REF9+APPS:14+APPR:14+4+13+UNB'"}},
		{"nothing readable: documented fallback",
			"UNH+M1+ORDERS:D:96A:UN'BGM+220'UNT+3+M1'",
			[]string{"UNB+UNOC:3+UNKNOWN+UNKNOWN+", "UCI+UNKNOWN+UNKNOWN+UNKNOWN+4+13+UNB'"}},
		{"group fault goes to UCF",
			"UNB+UNOA:3+S:14+R:14+261201:1000+REF1'UNG+ORDERS+APPS:14+APPR:14+261201:1000+G1+UN+D:96A'UNH+M1+ORDERS:D:96A:UN'BGM+220'UNT+3+M1'UNE+2+G1'UNZ+1+REF1'",
			[]string{"UCI+REF1+S:14+R:14+4'", "UCF+G1+APPS:14+APPR:14+4+29+UNE+1'", "UCM+M1+ORDERS:D:96A:UN+4'"}},
		{"accepted with groups: UCF then UCM",
			"UNB+UNOA:3+S:14+R:14+261201:1000+REF1++++1'UNG+ORDERS+APPS:14+APPR:14+261201:1000+G1+UN+D:96A'UNH+M1+ORDERS:D:96A:UN:EAN008'BGM+220'UNT+3+M1'UNE+1+G1'UNZ+1+REF1'",
			[]string{"UCI+REF1+S:14+R:14+7'", "UCF+G1+APPS:14+APPR:14+7'", "UCM+M1+ORDERS:D:96A:UN:EAN008+7'", "UNT+5+1'"}},
		{"syntax 4 answers in syntax 4, without '*' the sender never declared",
			"UNB+UNOA:4+S:ZZZ:ROUTE+R:ZZZ+20261201:1000+REF4+++++++1'UNH+M1+ORDERS:D:96A:UN:EAN008:CL1:SUB'BGM+220'UNT+3+M1'UNZ+1+REF4'",
			[]string{"UNA:+.? '", "UNB+UNOA:4+R:ZZZ+S:ZZZ:ROUTE+20261201:1030+", "UNH+1+CONTRL:4:1:UN'", "UCI+REF4+S:ZZZ:ROUTE+R:ZZZ+7'",
				"UCM+M1+ORDERS:D:96A:UN:EAN008:CL1:SUB+7'"}},
		{"syntax 4 with the sender's UNA: its separators, '*' included",
			"UNA:+,?*'UNB+UNOC:4+S+R+20261201:1000+REF5+++++++1'UNH+M1+ORDERS:D:96A:UN'BGM+220'UNT+3+M1'UNZ+1+REF5'",
			[]string{"UNA:+,?*'", "UNB+UNOC:4+R+S+20261201:1030+", "UCI+REF5+S+R+7'"}},
		{"the sender's own separators, release character included",
			"UNA|^.!~`UNB^UNOC|3^S^R^261201|1000^REF6^^^^1`UNH^M1^ORDERS|D|96A|UN`BGM^220`UNT^3^M1`UNZ^1^REF6`",
			[]string{"UNA|^.!~`", "UNB^UNOC|3^R^S^261201|1030^", "UCI^REF6^S^R^7`", "UCM^M1^ORDERS|D|96A|UN^7`"}},
		{"UNT missing: UNT, not UNH, is missing",
			"UNB+UNOA:3+S+R+261201:1000+REF1'UNH+M1+IFTMIN:D:99B:UN'BGM+610'UNH+M2+IFTMIN:D:99B:UN'BGM+610'UNT+3+M2'UNZ+2+REF1'",
			[]string{"UCM+M1+IFTMIN:D:99B:UN+4+13+UNT'"}},
		{"UNE missing before UNZ: the open group's UCF",
			"UNB+UNOA:3+S+R+261201:1000+REF1'UNG+ORDERS+A+B+261201:1000+G1+UN+D:96A'UNH+M1+ORDERS:D:96A:UN'BGM+220'UNT+3+M1'UNE+1+G1'" +
				"UNG+ORDERS+A+B+261201:1000+G2+UN+D:96A'UNH+M2+ORDERS:D:96A:UN'BGM+220'UNT+3+M2'UNZ+2+REF1'",
			[]string{"UCI+REF1+S+R+4'", "UCF+G1+A+B+4'", "UCF+G2+A+B+4+13+UNE'"}},
		{"UNE missing at the end of input",
			"UNB+UNOA:3+S+R+261201:1000+REF1'UNG+ORDERS+A+B+261201:1000+G1+UN+D:96A'UNH+M1+ORDERS:D:96A:UN'BGM+220'UNT+3+M1'",
			[]string{"UCF+G1+A+B+4+13+UNE'"}},
		{"test interchange answered as test",
			"UNB+UNOA:3+S+R+261201:1000+REF1++++++1'UNH+M1+IFTMIN:D:99B:UN'BGM+610'UNT+3+M1'UNZ+1+REF1'",
			[]string{"++++++1'\n"}},
		{"IATA's syntax is answered in IATA's syntax, not UNOC:3",
			"UNB+IATB:1+AIRLINE:ZZ+APIS:ZZ+261201:1000+PX1'UNH+1+PAXLST:D:05B:UN:IATA'BGM+745'UNT+X+1'UNZ+1+PX1'",
			[]string{"UNB+IATB:1+APIS:ZZ+AIRLINE:ZZ+261201:1030+", "UNH+1+CONTRL:D:3:UN'", "UCM+1+PAXLST:D:05B:UN:IATA+4+37+UNT+1'"}},
		{"UNOZ is answered in UNOZ",
			"UNB+UNOZ:3+S+R+261201:1000+REF1'UNH+M1+IFTMIN:D:99B:UN'BGM+610'UNT+X+M1'UNZ+1+REF1'",
			[]string{"UNB+UNOZ:3+R+S+261201:1030+"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := contrlOf(t, tc.in)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("no %q in\n%s", w, got)
				}
			}
		})
	}
}

// Control references are never the clock's: two interchanges answered in
// the same second get two references, one interchange answered twice the
// same one (the same bytes).
func TestContrlReferenceIsNotTheClock(t *testing.T) {
	t.Parallel()
	a := "UNB+UNOA:3+S+R+261201:1000+REFA'UNH+M1+IFTMIN:D:99B:UN'BGM+610'UNT+9+M1'UNZ+1+REFA'"
	b := strings.ReplaceAll(a, "REFA", "REFB")
	ca, cb := contrlOf(t, a), contrlOf(t, b)
	ref := func(s string) string { return strings.Split(strings.Split(s, "\n")[1], "+")[5] }
	if ref(ca) == ref(cb) {
		t.Errorf("two interchanges, one reference %s", ref(ca))
	}
	if again := contrlOf(t, a); again != ca {
		t.Errorf("same interchange, other bytes:\n%s\n%s", ca, again)
	}
	if r := edifact.ControlReference("x"); len(r) != 14 || strings.Trim(r, "0123456789ABCDEF") != "" {
		t.Errorf("reference %q is not an..14 in UNOA", r)
	}
	if edifact.ControlReference("a", "1") == edifact.ControlReference("a", "2") {
		t.Error("attempts share a reference")
	}
}

// Every fault of a parked message is reported: one UCS per segment, one UCD
// per element, the interchange acknowledged.
func TestContrlEveryFaultOfAParkedMessage(t *testing.T) {
	t.Parallel()
	in := "UNB+UNOA:3+S+R+261201:1000+REF1'UNH+M1+IFTMIN:D:99B:UN'BGM+610'LOC+9+XXXXX'LOC+11+YYYYY'UNT+5+M1'UNH+M2+IFTMIN:D:99B:UN'BGM+610'UNT+3+M2'UNZ+2+REF1'"
	ic, err := edifact.Parse(strings.NewReader(in), edifact.Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep := edifact.ContrlReport{Interchange: ic, Envelope: edifact.ReadEnvelope(strings.NewReader(in), edifact.Limits{}),
		Messages: []edifact.Message{{Ref: "M1", Number: 1}, {Ref: "M2", Number: 2}},
		Faults: map[int][]*edifact.SyntaxError{1: {
			{Segment: 3, Tag: "LOC", Element: 2, Component: 1, Code: edifact.CodeInvalidValue},
			{Segment: 4, Tag: "LOC", Element: 2, Component: 1, Code: edifact.CodeInvalidValue},
			{Segment: 3, Tag: "LOC", Element: 1, Code: edifact.CodeMissing},
			{Segment: 2, Tag: "NAD", Code: edifact.CodeMissing},
		}}, Reference: "R1"}
	var out bytes.Buffer
	if err := edifact.WriteCONTRL(&out, rep); err != nil {
		t.Fatal(err)
	}
	want := "UCI+REF1+S+R+7'\nUCM+M1+IFTMIN:D:99B:UN+4'\nUCS+3'\nUCD+12+2:1'\nUCD+13+1'\nUCS+4'\nUCD+12+2:1'\nUCS+2+13'\nUCM+M2+IFTMIN:D:99B:UN+7'\nUNT+11+1'"
	if !strings.Contains(out.String(), want) {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}
