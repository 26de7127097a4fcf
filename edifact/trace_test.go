package edifact_test

// What the parser makes of an input, written out in full: every segment's
// tag, offset, index, bytes and first byte outside the repertoire, every
// component's value and offset (and Int, ValueIs), every message header,
// the interchange and the error with all its positions, under several
// limits, through Parse with and without a callback and through Reader.
// TestTracesUnchanged compares digests of it with those the reader made
// before it was rewritten for speed (issue 10).

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/internal/testenv"
)

func segTrace(b *strings.Builder, s *edifact.Segment) {
	fmt.Fprintf(b, "S %q %d %d raw=%q", s.Tag, s.Offset, s.Index, s.Raw())
	if o, c, ok := s.BadByte(); ok {
		fmt.Fprintf(b, " bad=%d:%d", o, c)
	}
	n := s.Elements()
	fmt.Fprintf(b, " n=%d", n)
	for e := 0; e <= n+1; e++ {
		nc := s.Components(e)
		fmt.Fprintf(b, " [%d:%d", e, nc)
		for c := 1; c <= nc+1; c++ {
			v := s.Value(e, c)
			iv, ok := s.Int(e, c)
			fmt.Fprintf(b, " %q@%d/%v/%d/%v", v, s.ValueOffset(e, c), s.ValueIs(e, c, v), iv, ok)
		}
		b.WriteString("]")
	}
	b.WriteString("\n")
}

func errTrace(b *strings.Builder, err error) {
	var se *edifact.SyntaxError
	var ue *edifact.UnsupportedError
	switch {
	case err == nil:
		b.WriteString("E nil\n")
	case errors.As(err, &se):
		fmt.Fprintf(b, "E syntax %+v name=%s msg=%s\n", *se, se.Name(), err.Error())
	case errors.As(err, &ue):
		fmt.Fprintf(b, "E unsupported %+v\n", *ue)
	default:
		fmt.Fprintf(b, "E other %T %v\n", err, err)
	}
}

func traceCase(data []byte, wrap func([]byte) io.Reader, lim edifact.Limits, cb bool) string {
	var b strings.Builder
	var fn func(*edifact.Message) error
	if cb {
		fn = func(m *edifact.Message) error {
			fmt.Fprintf(&b, "M %q %q %q %q %q %q %d %d %d %q segs=%d", m.Ref, m.Type, m.Version, m.Release, m.Agency, m.Assoc, m.Offset, m.Index, m.Number, m.Group, m.Len())
			if m.Charset != nil {
				fmt.Fprintf(&b, " cs=%+v", *m.Charset)
			}
			b.WriteString("\n")
			for _, s := range m.All() {
				segTrace(&b, s)
			}
			return nil
		}
	}
	ic, err := edifact.Parse(wrap(data), lim, fn)
	if ic != nil {
		c := *ic
		c.Open = nil
		if errors.Is(err, edifact.ErrSegmentTooLong) {
			c.Bytes = -1
		}
		// Written as before an input could hold several interchanges:
		// one alone is the first, with no other after it.
		fmt.Fprintf(&b, "I %s\n", strings.Replace(strings.Replace(fmt.Sprintf("%+v", c), "{Number:1 Next:<nil> Start:0 ", "{", 1), " Packages:0 ", " ", 1))
		if ic.Open != nil {
			o := *ic.Open
			cs := o.Charset
			o.Charset = nil
			// As the Message of before its segments were kept apart, whose
			// Segments field an open message left empty.
			text := syntaxIDField.ReplaceAllString(fmt.Sprintf("%+v", o), " Group:")
			text = strings.Replace(text, " Charset:<nil> st:<nil> segs:[]}", " Segments:[] Charset:<nil>}", 1)
			text = strings.Replace(text, " Interchange:1 ", " ", 1)
			fmt.Fprintf(&b, "O %s %v\n", text, cs != nil)
		}
	}
	errTrace(&b, err)
	return b.String()
}

// syntaxIDField is the Message field the traces were made without.
var syntaxIDField = regexp.MustCompile(`(?s) SyntaxID:.*? Group:`)

func traceAll(data []byte, wrap func([]byte) io.Reader) string {
	var b strings.Builder
	for _, lim := range []edifact.Limits{{}, {MaxSegmentBytes: 4096}, {MaxComponents: 7, MaxMessageSegments: 6, MaxMessageBytes: 1500, MaxSegmentBytes: 40}, {MaxSegments: 20}} {
		b.WriteString(traceCase(data, wrap, lim, true))
		b.WriteString(traceCase(data, wrap, lim, false))
	}
	for _, lim := range []edifact.Limits{{MaxSegmentBytes: 4096}, {MaxSegmentBytes: 40, MaxComponents: 7}} {
		r := edifact.NewReader(wrap(data), lim)
		tooLong := false
		for n := 0; n < 300; n++ {
			s, err := r.Next()
			if err != nil {
				tooLong = errors.Is(err, edifact.ErrSegmentTooLong)
				if err == io.EOF {
					b.WriteString("EOF\n")
				} else {
					errTrace(&b, err)
				}
				break
			}
			segTrace(&b, s)
		}
		off := r.Offset()
		if tooLong {
			off = -1
		}
		fmt.Fprintf(&b, "R %+v %v %d\n", r.Delimiters(), r.HasUNA(), off)
	}
	return b.String()
}

// tracedDigests are sha256 digests of traceAll for the corpus files and for
// every one-byte change and deletion of simple.edi, made by the reader of
// commit 6406f6f (before the rewrite for speed), which held the bytes of
// every segment it kept in its own copy and split each segment twice.
var tracedDigests = map[string]string{
	"D95BBAPLIE.edi":          "998aaf333ca95fb6bb492cab79b149261b93a422cf855cece3d076bce0ebb62a",
	"D95BCOARRI.edi":          "f6ca5302abec97694c4ab4bab9078c5de8a2e3ae2078f583f059d39c5a32d188",
	"VIFTSAI0000001.txt":      "7350f94e101491db27f9e1c50dd7cbfb7424b776f2b16ddb6fa0e0f06dc0b638",
	"VIFTSAI0000002.txt":      "6c1913a7af16af145e1c043155d1d8582d6e90eeaac6a0cba0e2bb6c8b96c29d",
	"VIFTSAI0000003.txt":      "1ab9f55b94895553c029c9a8e4bae42a529d61d10f6b85e0c45bebc66ddb8336",
	"aperak.edi":              "155282b88bbae99ad175d0848a4586225cb18c0227eb7580475b620fba536a97",
	"baplie-test.edi":         "a230f4ac3690bf67c065eb0c01a141ce863f9cee83ea8a07003d862240eea19a",
	"d00b_iftsta.edi":         "92b9beed91951cccfe1ca9b175466ed019868653d0c0e34576c86ba4348f4997",
	"d95b_coprar.edi":         "20dd33afb7702b18c7243123d294842920acc407d68047a37a98f23635d68b44",
	"edifact-sample.edi":      "3af096810b79aa380d2a0f5ec4eb098d01b8f409ebd7e4e9abf10561d6305d4f",
	"example_multiline.edi":   "d2ae5e2309bd062b9909bdf0481810f68abb5699824cf8d973e4555b086af4ed",
	"example_order_error.edi": "84532c454694951c89814ffa2baf0869a747454f717bf76d01b2fddd253b8f12",
	"example_order_ok.edi":    "210435f4964f5de7dfcff1dc865610dc0aa992a76f4776ace9cf58b961f3ef81",
	"example_utf8.edi":        "c558a28ff60b8a5c6c745de78e3fcd34c813420ebb8e9ad49221443d98d8ce25",
	"invoic01.edi":            "da281edb402143a7b210d613b38afe63ec2c2e5d0a7b34dd7390df273053bdd0",
	"invoic_d93a_una.edi":     "86ffebd3fae82b4d1c382666ce78991e8114d28f6a68737686c69585567ff5ef",
	"invoic_d97b.edi":         "2b8431d3dce2d5936363a3db3314920486ed37a524c656b339f8121d8408618a",
	"invoic_d97b_bad.edi":     "d0d580a67c7933f3c73d193e198e20f3cb5439a3b041fbc2e190b1f09a7d0b2a",
	"invoice1.edi":            "bace96c9cb1fb81b635ae4c0b54eaf8539d7766b7b848fbd43a1e61138766141",
	"order.edi":               "f870e4d5cf85f738c62f27c145bdd4611719bd19354048b551316f30caa5caaa",
	"orders-with-group.edi":   "fae28cc33555a607448041a55aacc276bbb563c7ac11766a2a1b7cc650537252",
	"orders01.edi":            "df080c83f76ab2e077728a2bb92c73f273a6278f3a7782799bf4b3a7043a6990",
	"simple.edi":              "bfd3cf133fcc3fecc16eec519195e0b767ac70841158a065b1d5e447f626eab6",
	"simple.edi mutations":    "90a0a3d91f37fef6ff8cd037f6a9c0ec67013a7ec144f963dc25321bccfd9a2e",
	"wikipedia_en.edi":        "3a88b1c58fb592b9b1234cde89f622923d9ead38261eabcbaf8c6432d4c32c8e",
	"wrapped_invoic_d97b.edi": "e3ae1dbeac677f7d1ad0248bffebdd84b788a69a2967b766cce9e99d603e94ab",
}

func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// mutationsTrace is the trace of every one-byte change (to a service
// character, CR, LF, space, digit, letter or non-ASCII byte) and deletion
// of data.
func mutationsTrace(data []byte, wrap func([]byte) io.Reader) string {
	var b strings.Builder
	for i := range data {
		for _, c := range []byte("+:'?*\r\n 09AZ\xc3") {
			m := bytes.Clone(data)
			m[i] = c
			b.WriteString(digest(traceAll(m, wrap)))
		}
		b.WriteString(digest(traceAll(append(bytes.Clone(data[:i]), data[i+1:]...), wrap)))
	}
	return b.String()
}

// TestTracesUnchanged: the rewritten reader finds the same segments,
// values, offsets and errors as the one before it, whether the input comes
// whole, byte by byte or in halves (the mutations: whole).
func TestTracesUnchanged(t *testing.T) {
	t.Parallel()
	dir := testenv.Corpus(t, "edifact")
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) == 0 {
		t.Fatal("no corpus files")
	}
	wraps := map[string]func([]byte) io.Reader{
		"whole":  func(d []byte) io.Reader { return bytes.NewReader(d) },
		"bytes":  func(d []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(d)) },
		"halves": func(d []byte) io.Reader { return iotest.HalfReader(bytes.NewReader(d)) },
	}
	check := func(name string, trace func(func([]byte) io.Reader) string, reads ...string) {
		want, ok := tracedDigests[name]
		if !ok {
			t.Errorf("%s: no digest", name)
			return
		}
		for _, how := range reads {
			w := wraps[how]
			if got := digest(trace(w)); got != want {
				t.Errorf("%s read %s: trace digest %s, want %s", name, how, got, want)
			}
		}
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		check(filepath.Base(f), func(w func([]byte) io.Reader) string { return traceAll(data, w) }, "whole", "bytes", "halves")
		if filepath.Base(f) == "simple.edi" {
			check("simple.edi mutations", func(w func([]byte) io.Reader) string { return mutationsTrace(data, w) }, "whole")
		}
	}
}
