package edifact_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/internal/testenv"
)

// corpusVerdicts: which envelopes ../shared/corpus/README.md calls
// well-formed, and for the others the cause Lazaret must name.
var corpusVerdicts = map[string]error{
	"D95BBAPLIE.edi": nil, "D95BCOARRI.edi": nil, "baplie-test.edi": nil, "example_order_ok.edi": nil,
	"example_order_error.edi": nil, "example_utf8.edi": nil, "invoic_d97b.edi": nil, "invoic_d97b_bad.edi": nil,
	"invoic_d93a_una.edi": nil, "wrapped_invoic_d97b.edi": nil, "invoice1.edi": nil, "invoic01.edi": nil,
	"orders01.edi": nil, "wikipedia_en.edi": nil,
	"d00b_iftsta.edi":       edifact.ErrReference,
	"d95b_coprar.edi":       edifact.ErrMissingUNB,
	"example_multiline.edi": edifact.ErrCount,
	"orders-with-group.edi": edifact.ErrCount,
	"order.edi":             edifact.ErrMissingUNZ,
	"aperak.edi":            edifact.ErrCount,
	"VIFTSAI0000001.txt":    edifact.ErrMissingUNZ,
	"VIFTSAI0000002.txt":    edifact.ErrMissingUNZ,
	"VIFTSAI0000003.txt":    edifact.ErrMissingUNZ,
	"simple.edi":            edifact.ErrCount,
	"edifact-sample.edi":    edifact.ErrCount,
}

// corpusTags: the segment each faulty file's error must name.
var corpusTags = map[string]string{
	"d00b_iftsta.edi": "UNZ", "d95b_coprar.edi": "UNH", "example_multiline.edi": "UNT", "orders-with-group.edi": "UNT",
	"order.edi": "UNZ", "aperak.edi": "UNT", "VIFTSAI0000001.txt": "UNZ", "simple.edi": "UNT", "edifact-sample.edi": "UNT",
}

func TestCorpusEnvelopes(t *testing.T) {
	t.Parallel()
	dir := testenv.Corpus(t, "edifact")
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) != len(corpusVerdicts) {
		t.Errorf("%d corpus files, %d verdicts: keep the table in step", len(files), len(corpusVerdicts))
	}
	for _, f := range files {
		name := filepath.Base(f)
		want, ok := corpusVerdicts[name]
		if !ok {
			t.Errorf("%s: no verdict", name)
			continue
		}
		data, _ := os.ReadFile(f)
		msgs := 0
		_, err := edifact.Parse(bytes.NewReader(data), edifact.Limits{}, func(*edifact.Message) error { msgs++; return nil })
		var se *edifact.SyntaxError
		var ue *edifact.UnsupportedError
		switch {
		case want == nil && errors.As(err, &ue):
			// well-formed, but not a syntax Lazaret supports
		case want == nil && err != nil:
			t.Errorf("%s: well-formed per the corpus README, got %v", name, err)
		case want == nil && msgs == 0:
			t.Errorf("%s: no messages", name)
		case want != nil && !errors.As(err, &se):
			t.Errorf("%s: want a *SyntaxError (%v), got %v", name, want, err)
		case want != nil:
			if !errors.Is(err, want) {
				t.Errorf("%s: cause %v, want %v", name, err, want)
			}
			if tag := corpusTags[name]; tag != "" && se.Tag != tag {
				t.Errorf("%s: names segment %s, want %s (%v)", name, se.Tag, tag, err)
			}
			if se.Offset < 0 || se.Offset > int64(len(data)) {
				t.Errorf("%s: offset %d outside the %d-byte file", name, se.Offset, len(data))
			}
			if se.Tag != "UNZ" && se.Offset < int64(len(data)) && !strings.HasPrefix(string(data[se.Offset:]), se.Tag) && se.Element == 0 {
				t.Errorf("%s: offset %d does not point at %s: %q", name, se.Offset, se.Tag, data[se.Offset:min(len(data), int(se.Offset)+10)])
			}
		}
	}
}

const sample = "UNA:+.? '\r\n" +
	"UNB+UNOC:3+SENDER:ZZ+RECIPIENT:ZZ+261130:1200+REF42'\r\n" +
	"UNH+M1+IFTMIN:D:99B:UN'\r\n" +
	"BGM+610+BK1+9'\r\n" +
	"FTX+AAI+++FRAGILE?: HANDLE WITH CARE?'S'\r\n" +
	"UNT+3+M1'\r\n" +
	"UNZ+1+REF42'\r\n"

func TestPositionsAndRelease(t *testing.T) {
	t.Parallel()
	r := edifact.NewReader(strings.NewReader(sample), edifact.Limits{})
	var segs []edifact.Segment
	for {
		s, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		segs = append(segs, s.Clone())
	}
	if len(segs) != 6 || segs[0].Tag != "UNB" || segs[0].Index != 1 {
		t.Fatalf("segments: %d, first %s", len(segs), segs[0].Tag)
	}
	ftx := segs[3]
	if got := ftx.Value(4, 1); got != "FRAGILE: HANDLE WITH CARE'S" {
		t.Errorf("released value %q", got)
	}
	if off := strings.Index(sample, "FTX"); ftx.Offset != int64(off) {
		t.Errorf("FTX offset %d, want %d", ftx.Offset, off)
	}
	if off := strings.Index(sample, "BK1"); segs[2].ValueOffset(2, 1) != int64(off) {
		t.Errorf("BGM element 2 offset %d, want %d", segs[2].ValueOffset(2, 1), off)
	}
	if segs[0].Value(1, 2) != "3" || segs[0].Value(2, 2) != "ZZ" || segs[0].Value(9, 1) != "" {
		t.Errorf("UNB values %q %q", segs[0].Value(1, 2), segs[0].Value(2, 2))
	}
}

func TestCustomSeparatorsGroupsAndRepetition(t *testing.T) {
	t.Parallel()
	in := "UNA|*,# !" +
		"UNB*UNOC|4*S*R*261130|1200*X1!" +
		"UNG*IFTMIN*S*R*261130|1200*G1*UN*D|99B!" +
		"UNH*1*IFTMIN|D|99B|UN!" +
		"FTX*AAI***A #* B|C D!" +
		"UNT*3*1!" +
		"UNE*1*G1!" +
		"UNZ*1*X1!"
	var got []string
	ic, err := edifact.Parse(strings.NewReader(in), edifact.Limits{}, func(m *edifact.Message) error {
		got = append(got, m.Group+"/"+m.Ref+"/"+m.Segment(1).Value(4, 1)+"/"+m.Segment(1).Value(4, 2))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if ic.Groups != 1 || ic.SyntaxVersion != 4 || len(got) != 1 || got[0] != "G1/1/A * B/C D" {
		t.Fatalf("groups %d version %d messages %v", ic.Groups, ic.SyntaxVersion, got)
	}
}

func TestEnvelopeFaults(t *testing.T) {
	t.Parallel()
	good := "UNB+UNOA:2+S+R+261130:1200+X1'UNH+1+VERMAS:D:16A:UN'BGM+749'UNT+3+1'UNZ+1+X1'"
	cases := []struct {
		name, in string
		cause    error
		code     int
		tag      string
		segment  int
		element  int
	}{
		{"UNT count", strings.Replace(good, "UNT+3", "UNT+4", 1), edifact.ErrCount, 29, "UNT", 3, 1},
		{"UNT ref", strings.Replace(good, "UNT+3+1", "UNT+3+2", 1), edifact.ErrReference, 28, "UNT", 3, 2},
		{"UNZ ref", strings.Replace(good, "UNZ+1+X1", "UNZ+1+X2", 1), edifact.ErrReference, 28, "UNZ", 0, 2},
		{"UNZ count", strings.Replace(good, "UNZ+1", "UNZ+2", 1), edifact.ErrCount, 29, "UNZ", 0, 1},
		{"no UNZ", strings.TrimSuffix(good, "UNZ+1+X1'"), edifact.ErrMissingUNZ, 13, "UNZ", 0, 0},
		{"no UNT", strings.Replace(good, "UNT+3+1'", "", 1), edifact.ErrMissingUNT, 13, "UNZ", 3, 0},
		{"data after UNZ", good + "UNH+2'", edifact.ErrAfterUNZ, 33, "UNH", 0, 0},
		{"outside message", strings.Replace(good, "UNH", "BGM+1'UNH", 1), edifact.ErrOutsideMessage, 33, "BGM", 0, 0},
		{"unterminated", strings.TrimSuffix(good, "'"), edifact.ErrUnterminated, 13, "UNZ", 0, 0},
		{"bad tag", strings.Replace(good, "BGM", "bgm", 1), edifact.ErrBadTag, 12, "bgm", 0, 0},
		{"release escapes the terminator", strings.Replace(good, "BGM+749", "BGM+749?", 1), edifact.ErrMissingUNT, 13, "UNZ", 3, 0},
		{"release before a line break", strings.Replace(good, "BGM+749", "BGM+749?\n", 1), edifact.ErrDanglingRelease, 21, "BGM", 2, 1},
		{"empty", "", edifact.ErrMissingUNB, 13, "", 0, 0},
		{"bad UNA", "UNA::+.? '" + good, edifact.ErrBadUNA, 20, "UNA", 0, 0},
	}
	for _, tc := range cases {
		_, err := edifact.Parse(strings.NewReader(tc.in), edifact.Limits{}, nil)
		var se *edifact.SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%s: got %v", tc.name, err)
			continue
		}
		if !errors.Is(err, tc.cause) || se.Code != tc.code || se.Tag != tc.tag || se.Element != tc.element {
			t.Errorf("%s: %v (code %d tag %s element %d), want %v code %d tag %s element %d", tc.name, err, se.Code, se.Tag, se.Element, tc.cause, tc.code, tc.tag, tc.element)
		}
		if tc.segment > 0 && se.Segment != tc.segment {
			t.Errorf("%s: message segment %d, want %d", tc.name, se.Segment, tc.segment)
		}
		if se.Offset < 0 || se.Offset > int64(len(tc.in)) {
			t.Errorf("%s: offset %d outside input", tc.name, se.Offset)
		}
	}
}

func TestLimits(t *testing.T) {
	t.Parallel()
	long := "UNB+UNOA:2+S+R+261130:1200+X1'UNH+1+VERMAS:D:16A:UN'FTX+" + strings.Repeat("A", 200) + "'UNT+3+1'UNZ+1+X1'"
	_, err := edifact.Parse(strings.NewReader(long), edifact.Limits{MaxSegmentBytes: 100}, nil)
	if !errors.Is(err, edifact.ErrSegmentTooLong) {
		t.Errorf("long segment: %v", err)
	}
	many := "UNB+UNOA:2+S+R+261130:1200+X1'UNH+1+VERMAS:D:16A:UN'FTX" + strings.Repeat("+A:B", 50) + "'UNT+3+1'UNZ+1+X1'"
	if _, err := edifact.Parse(strings.NewReader(many), edifact.Limits{MaxComponents: 20}, nil); !errors.Is(err, edifact.ErrTooManyElements) {
		t.Errorf("many components: %v", err)
	}
}

func TestCharsetIsReportedNotFatal(t *testing.T) {
	t.Parallel()
	in := "UNB+UNOA:2+S+R+261130:1200+X1'UNH+1+INVOIC:D:97B:UN'NAD+SE+1++Büttner'UNT+3+1'UNZ+1+X1'"
	var issue *edifact.CharsetIssue
	_, err := edifact.Parse(strings.NewReader(in), edifact.Limits{}, func(m *edifact.Message) error { issue = m.Charset; return nil })
	if err != nil || issue == nil || issue.Offset != int64(strings.Index(in, "ü")) || issue.Segment != 2 {
		t.Fatalf("err %v issue %+v", err, issue)
	}
}

// IATA's syntax identifiers hold the bytes to level A (IATA) and B (IATB)
// as UNOA and UNOB do; UNOZ and UNOX are accepted with no repertoire
// checked; an identifier no one defines is still unsupported.
func TestSyntaxIdentifiers(t *testing.T) {
	t.Parallel()
	paxlst := func(id, name string) string {
		return "UNB+" + id + "+AIRLINE:ZZ+APIS:ZZ+261201:1000+PX1'UNH+1+PAXLST:D:05B:UN:IATA'BGM+745'" +
			"NAD+FL+++" + name + "'UNT+4+1'UNZ+1+PX1'"
	}
	for _, tc := range []struct {
		name, in  string
		bad       string // the first byte outside the repertoire, "" for none
		unchecked bool
	}{
		{"IATA: upper case passes", paxlst("IATA:1", "SMITH:JOHN"), "", false},
		{"IATA: lower case is outside level A", paxlst("IATA:1", "Smith:John"), "m", false},
		{"IATB: lower case passes", paxlst("IATB:3", "Smith:John"), "", false},
		{"IATB: 8-bit bytes are outside level B", paxlst("IATB:3", "Müller"), "ü", false},
		{"UNOA: lower case, the same issue as IATA", paxlst("UNOA:1", "Smith:John"), "m", false},
		{"UNOZ: bytes as agreed", paxlst("UNOZ:3", "Müller\x01"), "", true},
		{"UNOX: ISO 2022 escapes, not decoded", paxlst("UNOX:3", "\x1b$BFUEF\x1b(B"), "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			var issue *edifact.CharsetIssue
			ic, err := edifact.Parse(strings.NewReader(in), edifact.Limits{}, func(m *edifact.Message) error { issue = m.Charset; return nil })
			if err != nil {
				t.Fatalf("%v", err)
			}
			if ic.CharsetUnchecked() != tc.unchecked {
				t.Errorf("CharsetUnchecked %v, want %v", ic.CharsetUnchecked(), tc.unchecked)
			}
			switch {
			case tc.bad == "" && issue != nil:
				t.Errorf("charset issue %+v, want none", issue)
			case tc.bad != "" && (issue == nil || issue.Offset != int64(strings.Index(in, tc.bad)) || issue.Segment != 3):
				t.Errorf("charset issue %+v, want byte %d in segment 3", issue, strings.Index(in, tc.bad))
			}
		})
	}
	var ue *edifact.UnsupportedError
	if _, err := edifact.Parse(strings.NewReader(paxlst("IATC:1", "SMITH")), edifact.Limits{}, nil); !errors.As(err, &ue) {
		t.Errorf("IATC: %v, want an *UnsupportedError", err)
	}
}

func TestWriterRoundTrip(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	w := edifact.NewWriter(&b, edifact.DefaultDelimiters)
	vals := []string{"a:b", "c+d", "it's", "q?", "plain"}
	w.WriteSegment("FTX", edifact.E("AAI"), edifact.E(), edifact.E(), edifact.E(vals...))
	w.Flush()
	r := edifact.NewReader(&b, edifact.Limits{})
	s, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		if got := s.Value(4, i+1); got != v {
			t.Errorf("component %d: %q, want %q", i+1, got, v)
		}
	}
}

// Three messages sharing reference 1: the second is refused at its 0062
// (code 26, duplicate detected), with or without a callback, so that no
// message can stand for another in a reply or a record.
func TestDuplicateMessageReference(t *testing.T) {
	t.Parallel()
	msg := "UNH+1+VERMAS:D:16A:UN'BGM+749'UNT+3+1'"
	in := "UNB+UNOA:2+S+R+261130:1200+X1'" + msg + msg + msg + "UNZ+3+X1'"
	second := strings.Index(in[len("UNB+UNOA:2+S+R+261130:1200+X1'")+len(msg):], "UNH") + len("UNB+UNOA:2+S+R+261130:1200+X1'") + len(msg)
	for _, cb := range []bool{false, true} {
		var on func(*edifact.Message) error
		n := 0
		if cb {
			on = func(*edifact.Message) error { n++; return nil }
		}
		_, err := edifact.Parse(strings.NewReader(in), edifact.Limits{}, on)
		var se *edifact.SyntaxError
		if !errors.As(err, &se) || !errors.Is(err, edifact.ErrDuplicateMessage) {
			t.Fatalf("callback %v: %v", cb, err)
		}
		// byte second+4 is the 1 of the second UNH+1
		if se.Code != edifact.CodeDuplicate || se.Tag != "UNH" || se.Segment != 1 || se.Element != 1 || se.Component != 0 ||
			se.Offset != int64(second+4) || se.Index != 5 || se.Message != "1" || se.Name() != "edifact.duplicate-message" {
			t.Errorf("callback %v: %+v (%s)", cb, *se, se.Name())
		}
		if cb && n != 1 {
			t.Errorf("%d messages handed over before the duplicate, want 1", n)
		}
	}
	distinct := strings.Replace(strings.Replace(in, "UNH+1+", "UNH+2+", 2), "UNH+2+", "UNH+1+", 1)
	distinct = strings.Replace(strings.Replace(distinct, "UNT+3+1'", "UNT+3+2'", 2), "UNT+3+2'", "UNT+3+1'", 1)
	if _, err := edifact.Parse(strings.NewReader(distinct), edifact.Limits{}, nil); !errors.Is(err, edifact.ErrDuplicateMessage) {
		t.Errorf("references 1, 2, 2: %v", err)
	}
}

// The references out of sequence a parse holds to find a repeated one are
// bounded (1<<20, some 16 MiB): past them the interchange is refused with
// its own cause, at the UNH whose reference no longer fits, with or
// without a callback. References that count up cost nothing (see
// TestRefSet).
func TestMessageReferencesOutOfSequenceAreBounded(t *testing.T) {
	t.Parallel()
	const held = 1 << 20
	n := held + 2 // the first starts the run; then held one by one; the next does not fit
	input := func() io.Reader {
		pr, pw := io.Pipe()
		go func() {
			bw := bufio.NewWriterSize(pw, 64<<10)
			bw.WriteString("UNB+UNOA:2+S+R+261130:1200+X1'")
			for i := n; i >= 1; i-- { // counting down: never the next of a run
				fmt.Fprintf(bw, "UNH+%d+VERMAS:D:16A:UN'UNT+2+%d'", i, i)
			}
			fmt.Fprintf(bw, "UNZ+%d+X1'", n)
			bw.Flush()
			pw.Close()
		}()
		return pr
	}
	for _, cb := range []bool{false, true} {
		var on func(*edifact.Message) error
		if cb {
			on = func(*edifact.Message) error { return nil }
		}
		r := input()
		_, err := edifact.Parse(r, edifact.Limits{}, on)
		io.Copy(io.Discard, r)
		var se *edifact.SyntaxError
		if !errors.As(err, &se) || !errors.Is(err, edifact.ErrTooManyReferences) {
			t.Fatalf("callback %v: %v", cb, err)
		}
		// The offset of the last UNH's 0062: all before it, and "UNH+".
		want := int64(len("UNB+UNOA:2+S+R+261130:1200+X1'") + len("UNH+"))
		for i := n; i >= 2; i-- {
			want += int64(2*len(strconv.Itoa(i)) + len("UNH++VERMAS:D:16A:UN'UNT+2+'"))
		}
		if se.Offset != want || se.Tag != "UNH" || se.Element != 1 || se.Segment != 1 || se.Message != "1" || se.Index != 2*(n-1)+2 || se.Name() != "edifact.too-many-references" {
			t.Errorf("callback %v: %+v", cb, *se)
		}
	}
}
