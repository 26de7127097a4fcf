package validate_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/edifact/directory"
	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/validate"
)

// replies checks the interchange at path and writes its CONTRL and APERAK
// as mode splits them.
func replies(t *testing.T, path string, mode validate.ReplyMode) (edifact.ContrlReport, edifact.AperakReport, string, string) {
	t.Helper()
	return repliesWith(t, path, mode, validate.DefaultEDIRules())
}

func repliesWith(t *testing.T, path string, mode validate.ReplyMode, rules validate.EDIRules) (edifact.ContrlReport, edifact.AperakReport, string, string) {
	t.Helper()
	rep, res, err := validate.CheckInterchange(context.Background(), path, nil, validate.Builtin(), rules, "")
	if err != nil && res == nil {
		t.Fatal(err)
	}
	cr, ar := res.Replies(validate.ReadEnvelope(validate.SourceOf(path), 0), err, mode)
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	cr.Reference, cr.Now = edifact.ControlReference(rep.SHA256, "contrl"), now
	ar.Reference, ar.Now = edifact.ControlReference(rep.SHA256, "aperak"), now
	var c, a bytes.Buffer
	if err := edifact.WriteCONTRL(&c, cr); err != nil {
		t.Fatal(err)
	}
	if len(ar.Messages) > 0 {
		if err := edifact.WriteAPERAK(&a, ar); err != nil {
			t.Fatal(err)
		}
	}
	return cr, ar, c.String(), a.String()
}

// checkReply parses a reply back and checks each of its messages against
// its directory table (APERAK D:01B, CONTRL D:3; CONTRL 4:1 is not in the
// directory and only parses).
func checkReply(t *testing.T, name, text string) []*edifact.Message {
	t.Helper()
	var msgs []*edifact.Message
	_, err := edifact.Parse(strings.NewReader(text), edifact.Limits{}, func(m *edifact.Message) error {
		msgs = append(msgs, m.Clone())
		if def := directory.Lookup(m.Version, m.Release, m.Type); def != nil {
			for _, f := range def.Check(m, directory.Options{}) {
				t.Errorf("%s: %s %s: %s", name, m.Type, m.Ref, f)
			}
		} else if m.Type != "CONTRL" || m.Version != "4" {
			t.Errorf("%s: no directory for %s %s:%s", name, m.Type, m.Version, m.Release)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s does not parse: %v\n%s", name, err, text)
	}
	return msgs
}

// segmentsOf is the segments of m as "TAG+e1:c2+e2" with the default
// delimiters, for comparison.
func segmentsOf(m *edifact.Message) []string {
	var out []string
	for _, s := range m.All() {
		var b strings.Builder
		b.WriteString(s.Tag)
		for e := 1; e <= s.Elements(); e++ {
			b.WriteByte('+')
			for c := 1; c <= s.Components(e); c++ {
				if c > 1 {
					b.WriteByte(':')
				}
				b.WriteString(s.Value(e, c))
			}
		}
		out = append(out, b.String())
	}
	return out
}

// One unknown UN/LOCODE and one wrong ISO 6346 check digit among good
// messages: an APERAK names both messages, their segments and elements;
// the CONTRL rejects neither (UCI action 7, no UCM for them).
func TestAperakNamesBusinessRuleRejections(t *testing.T) {
	t.Parallel()
	path := filepath.Join("testdata", "aperak", "input.edi")
	cr, ar, contrl, aperak := replies(t, path, validate.ReplyBoth)
	if len(cr.Faults) != 0 || strings.Contains(contrl, "UCM+") || !strings.Contains(contrl, "UCI+IC0020+CARRIER1:ZZ+LAZARET:ZZ+7'") {
		t.Errorf("the CONTRL rejects business rules:\n%s", contrl)
	}
	checkReply(t, "CONTRL", contrl)
	msgs := checkReply(t, "APERAK", aperak)
	if len(msgs) != 2 {
		t.Fatalf("%d APERAK messages, want 2:\n%s", len(msgs), aperak)
	}
	want := [][]string{
		{"RFF+ACW:2", "RFF+ZZZ:IC0020", "ERC+LOCUNK::ZZZ", "FTX+AAO+++segment 6 (LOC), element 2, component 1, byte ", "RFF+ACW:2:6"},
		{"RFF+ACW:3", "RFF+ZZZ:IC0020", "ERC+CNTRCHK::ZZZ", "FTX+AAO+++segment 12 (EQD), element 2, component 1, byte ", "RFF+ACW:3:12"},
	}
	for i, m := range msgs {
		got := segmentsOf(m)
		for _, w := range want[i] {
			if !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, w) }) {
				t.Errorf("APERAK %d: no %q in %q", i+1, w, got)
			}
		}
		if got[1] != "BGM+305+"+ar.Reference+"-"+m.Ref+"+27" {
			t.Errorf("APERAK %d: %s", i+1, got[1])
		}
	}
	// The byte offsets are those of the values at fault.
	data := readFile(t, path)
	for i, e := range []edifact.AperakError{ar.Messages[0].Errors[0], ar.Messages[1].Errors[0]} {
		if v := []string{"NLZZZ", "CSQU3054384"}[i]; !strings.HasPrefix(string(data[e.Offset:]), v) {
			t.Errorf("error %d at byte %d: %q, want %s", i+1, e.Offset, data[e.Offset:e.Offset+12], v)
		}
	}
}

// The modes: CONTRL only carries every rejection (as before APERAK), APERAK
// only carries every one with 0085 codes for the syntax faults; both keeps
// syntax in CONTRL and content in APERAK.
func TestReplyModes(t *testing.T) {
	t.Parallel()
	path := filepath.Join("testdata", "aperak", "syntax4.edi")
	rules := validate.DefaultEDIRules()
	rules.Directory.Codes = validate.ActionReject // BGM+6X0 parks message 2 for its syntax
	for _, tc := range []struct {
		mode          validate.ReplyMode
		contrl, apera []int // messages rejected in each
	}{
		{validate.ReplyBoth, []int{2}, []int{1}},
		{validate.ReplyContrl, []int{1, 2}, nil},
		{validate.ReplyAperak, nil, []int{1, 2}},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			cr, ar, contrl, aperak := repliesWith(t, path, tc.mode, rules)
			var got []int
			for n := range cr.Faults {
				got = append(got, n)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.contrl) {
				t.Errorf("CONTRL rejects %v, want %v", got, tc.contrl)
			}
			got = nil
			for _, m := range ar.Messages {
				got = append(got, m.Number)
			}
			if !slices.Equal(got, tc.apera) {
				t.Errorf("APERAK names %v, want %v", got, tc.apera)
			}
			// Syntax 4 with the sender's UNA: echoed, '*' included (the
			// sender declared it).
			for _, text := range []string{contrl, aperak} {
				if text == "" {
					continue
				}
				if !strings.HasPrefix(text, "UNA:+,?*'\nUNB+UNOC:4+LAZARET:ZZ+CARRIER1:ZZ+20261201:1000+") {
					t.Errorf("reply does not echo the sender's UNA and syntax:\n%s", text)
				}
			}
			checkReply(t, "CONTRL", contrl)
			if aperak != "" {
				checkReply(t, "APERAK", aperak)
			}
			if tc.mode == validate.ReplyAperak && !strings.Contains(aperak, "ERC+12::ZZZ'") {
				t.Errorf("APERAK only: the unknown code is not 0085 code 12:\n%s", aperak)
			}
		})
	}
}

// Every corpus and fixture interchange: its APERAK (in every mode that
// sends one) parses back and fits the APERAK D:01B table.
func TestAperakRoundTrip(t *testing.T) {
	t.Parallel()
	var files []string
	for _, glob := range []string{filepath.Join(testenv.Corpus(t, "edifact"), "*"), filepath.Join(testenv.RepoRoot(t), "fixtures", "logistics", "*.edi")} {
		m, _ := filepath.Glob(glob)
		files = append(files, m...)
	}
	answered := 0
	for _, path := range files {
		for _, mode := range []validate.ReplyMode{validate.ReplyBoth, validate.ReplyAperak} {
			_, ar, _, aperak := replies(t, path, mode)
			if len(ar.Messages) == 0 {
				continue
			}
			answered++
			msgs := checkReply(t, filepath.Base(path)+" APERAK", aperak)
			if len(msgs) != len(ar.Messages) {
				t.Errorf("%s: %d APERAK messages for %d answered", path, len(msgs), len(ar.Messages))
			}
		}
	}
	if answered < 5 {
		t.Errorf("%d APERAKs written; the fixtures park more", answered)
	}
	t.Logf("%d APERAKs read back", answered)
}

func TestAperakCodesAreContentRules(t *testing.T) {
	t.Parallel()
	for code, c := range validate.AperakCodes() {
		if !validate.ContentRule(code) || len(c) == 0 || len(c) > 8 {
			t.Errorf("%s -> %q: not a content rule or not an..8", code, c)
		}
	}
	for _, code := range []string{"edifact.directory.segment-unexpected", "edifact.bgm.missing", "edifact.charset"} {
		if validate.ContentRule(code) {
			t.Errorf("%s is a syntax fault, answered by CONTRL", code)
		}
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
