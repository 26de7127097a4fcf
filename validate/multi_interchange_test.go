package validate_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/validate"
)

// twoInterchanges writes a file of two interchanges with the same control
// reference and message references "1" and "2" in each: in the first,
// message 2 names a port no registry knows; in the second (which
// declares its separators in a UNA), message 1 does. It returns the path,
// the text and the offsets of the four UNH segments.
func twoInterchanges(t *testing.T, sep string) (string, string, []int64) {
	t.Helper()
	good := func(ref string) fixtures.Msg {
		return fixtures.IFTMIN(ref, [2]string{"CZ", "CN"}, "NLRTM", "SGSIN", fixtures.ContainerOK2, "847130")
	}
	bad := func(ref string) fixtures.Msg {
		return fixtures.IFTMIN(ref, [2]string{"CZ", "CN"}, "NLRTM", "NLZZZ", fixtures.ContainerOK2, "847130")
	}
	var b bytes.Buffer
	for _, ic := range []fixtures.Interchange{
		{Sender: "S1", Recipient: "R", Ref: "A", Msgs: []fixtures.Msg{good("1"), bad("2")}},
		{Sender: "S2", Recipient: "R", Ref: "A", UNA: true, Msgs: []fixtures.Msg{bad("1"), good("2")}},
	} {
		if err := fixtures.WriteInterchange(&b, ic); err != nil {
			t.Fatal(err)
		}
		b.WriteString(sep)
	}
	text := b.String()
	var offs []int64
	for i := 0; ; {
		j := strings.Index(text[i:], "UNH+")
		if j < 0 {
			break
		}
		offs = append(offs, int64(i+j))
		i += j + 1
	}
	if len(offs) != 4 {
		t.Fatalf("%d UNH in\n%s", len(offs), text)
	}
	path := filepath.Join(t.TempDir(), "two.edi")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, text, offs
}

type icVerdict struct {
	Interchange, Number int
	Ref                 string
	Offset              int64
	Code                string
}

func icVerdicts(t *testing.T, res *validate.InterchangeResult) []icVerdict {
	t.Helper()
	var got []icVerdict
	if err := res.EachMessage(context.Background(), func(m validate.MessageResult) error {
		v := icVerdict{m.Interchange, m.Number, m.Ref, m.Offset, ""}
		var re *validate.RuleError
		if errors.As(m.Err, &re) {
			v.Code = re.Code
		}
		got = append(got, v)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestTwoInterchangesInOneFile: each interchange of a file is judged on
// its own: every message gets its verdict, with its interchange, its
// number in it and its offset in the file, whether the verdicts are kept
// or read again; neither is refused as data after UNZ. A replay of one
// message names its interchange; each interchange gets its own replies.
func TestTwoInterchangesInOneFile(t *testing.T) {
	t.Parallel()
	for _, sep := range []string{"", "\r\n\r\n"} {
		path, _, offs := twoInterchanges(t, sep)
		want := []icVerdict{{1, 1, "1", offs[0], ""}, {1, 2, "2", offs[1], "edifact.locode.unknown"},
			{2, 1, "1", offs[2], "edifact.locode.unknown"}, {2, 2, "2", offs[3], ""}}
		for _, budget := range []int64{0, 1} { // kept; read again
			rules := validate.DefaultEDIRules()
			rules.MaxRetainedBytes = budget
			_, res, err := validate.CheckInterchange(context.Background(), path, nil, validate.Builtin(), rules, "")
			if err != nil {
				t.Fatalf("separator %q budget %d: %v", sep, budget, err)
			}
			if res.Checked != 4 || res.Failed != 2 || res.Interchange.Next == nil || res.Interchange.Next.Number != 2 {
				t.Errorf("separator %q budget %d: checked %d failed %d", sep, budget, res.Checked, res.Failed)
			}
			if diff := cmp.Diff(want, icVerdicts(t, res)); diff != "" {
				t.Errorf("separator %q budget %d (-want +got):\n%s", sep, budget, diff)
			}

			// Each interchange's replies name its own message only.
			for ic := range res.Interchange.All() {
				env := validate.ReadEnvelopeOf(validate.SourceOf(path), ic)
				cr, ar := res.RepliesTo(ic, env, nil, validate.ReplyBoth)
				if cr.Interchange != ic || env.Sender[0] != map[int]string{1: "S1", 2: "S2"}[ic.Number] {
					t.Errorf("interchange %d: replies to %+v, envelope of %v", ic.Number, cr.Interchange, env.Sender)
				}
				wantAt := map[int]int64{1: offs[1], 2: offs[2]}[ic.Number]
				if len(ar.Messages) != 1 || ar.Messages[0].Offset != wantAt {
					t.Errorf("interchange %d: APERAK names %+v, want the message at byte %d", ic.Number, ar.Messages, wantAt)
				}
			}
		}

		// A replay of message 1 of the second interchange checks that one.
		_, res, err := validate.CheckMessagesSource(context.Background(), validate.SourceOf(path), nil, validate.Builtin(), validate.DefaultEDIRules(),
			validate.MessageKey{Interchange: 2, Ref: "1"})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want[2:3], icVerdicts(t, res)); diff != "" {
			t.Errorf("replay of 2#1 (-want +got):\n%s", diff)
		}
		_, _, err = validate.CheckMessagesSource(context.Background(), validate.SourceOf(path), nil, validate.Builtin(), validate.DefaultEDIRules(),
			validate.MessageKey{Interchange: 3, Ref: "1"})
		var re *validate.RuleError
		if !errors.As(err, &re) || re.Code != "edifact.message.gone" || re.Message != "3#1" {
			t.Errorf("replay of 3#1: %v", err)
		}
	}
}

// TestGarbageBetweenInterchanges: what is neither whitespace nor an
// interchange between two is still data after UNZ, at its offset, and the
// CONTRL answers the interchange it follows; a fault in the second
// interchange is answered by a CONTRL to the second.
func TestGarbageBetweenInterchanges(t *testing.T) {
	t.Parallel()
	_, text, offs := twoInterchanges(t, "")
	second := strings.LastIndex(text[:offs[2]], "UNA")
	for _, c := range []struct {
		name, in string
		at       int64
		code     string
		answers  string // UNB sender of the interchange the CONTRL answers
	}{
		{"garbage", text[:second] + "GAR+BAGE'" + text[second:], int64(second), "edifact.data-after-unz", "S1"},
		{"UNT count", text[:offs[3]] + strings.Replace(text[offs[3]:], "UNT+", "UNT+9", 1), int64(offs[3]) + int64(strings.Index(text[offs[3]:], "UNT+")) + 4,
			"edifact.count-mismatch", "S2"},
	} {
		path := filepath.Join(t.TempDir(), "bad.edi")
		os.WriteFile(path, []byte(c.in), 0o644)
		_, res, err := validate.CheckInterchange(context.Background(), path, nil, validate.Builtin(), validate.DefaultEDIRules(), "")
		var se *edifact.SyntaxError
		if !errors.As(err, &se) || se.Name() != c.code || se.Offset != c.at {
			t.Errorf("%s: %v, want %s at byte %d", c.name, err, c.code, c.at)
			continue
		}
		if ic := res.Answered(err); ic == nil || ic.Sender != c.answers {
			t.Errorf("%s: the CONTRL answers %+v, want the interchange of %s", c.name, ic, c.answers)
		}
	}
}

// TestPackageInterchangeIsJudged: an interchange with a binary object
// (ISO 9735-8: UNO, the object's octets, UNP) between its messages is
// parsed and every message judged, the one after the object at its exact
// offset; before, it was dead-lettered for a bad tag inside the object.
func TestPackageInterchangeIsJudged(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := fixtures.WriteInterchange(&b, fixtures.Interchange{Sender: "S", Recipient: "R", Ref: "P", Msgs: []fixtures.Msg{
		fixtures.IFTMIN("1", [2]string{"CZ", "CN"}, "NLRTM", "SGSIN", fixtures.ContainerOK2, "847130"),
		fixtures.IFTMIN("2", [2]string{"CZ", "CN"}, "NLRTM", "NLZZZ", fixtures.ContainerOK2, "847130"),
	}}); err != nil {
		t.Fatal(err)
	}
	object := "%PDF-1.4\n'+:?UNZ+1+P'\x00\xff"
	pkg := fmt.Sprintf("UNO+PKG1+1:P+PDF+%d'%sUNP+%d+PKG1'\n", len(object), object, len(object))
	text := b.String()
	second := strings.Index(text, "UNH+2+")
	text = text[:second] + pkg + text[second:]
	text = strings.Replace(text, "UNZ+2+P'", "UNZ+3+P'", 1)
	path := filepath.Join(t.TempDir(), "package.edi")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	_, res, err := validate.CheckInterchange(context.Background(), path, nil, validate.Builtin(), validate.DefaultEDIRules(), "")
	if err != nil {
		t.Fatalf("interchange with a package: %v", err)
	}
	want := []icVerdict{{1, 1, "1", int64(strings.Index(text, "UNH+1+")), ""}, {1, 2, "2", int64(second + len(pkg)), "edifact.locode.unknown"}}
	if diff := cmp.Diff(want, icVerdicts(t, res)); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
	if res.Interchange.Packages != 1 {
		t.Errorf("%d packages", res.Interchange.Packages)
	}
}
