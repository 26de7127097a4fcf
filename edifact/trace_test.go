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
	"D95BBAPLIE.edi":          "6e6fd93da450123b70505ecd8c4a61d54b1df5cfdfc7e08887ae766bb4730b52",
	"D95BCOARRI.edi":          "a676b436719399dd06ba43b3b6ac5dd0d1da60dd781e7572171516ad6413ba4c",
	"VIFTSAI0000001.txt":      "10bbaed39a815862f80f75b64647a6c8008b0831350ed114227556ef22a118f9",
	"VIFTSAI0000002.txt":      "bd2015ad0ff9eae2bc89766d9f2031038c8edbdda41cc8a5d1e13bc96688c71e",
	"VIFTSAI0000003.txt":      "dc98a0f5bddc0f6e08ba601849eda699b4d7d4b7a70b98b3bcd9a86d14c6ade4",
	"aperak.edi":              "155282b88bbae99ad175d0848a4586225cb18c0227eb7580475b620fba536a97",
	"baplie-test.edi":         "a230f4ac3690bf67c065eb0c01a141ce863f9cee83ea8a07003d862240eea19a",
	"d00b_iftsta.edi":         "7fab8748eb9e3f3926a8a4ca4bd53e67267f543133c507f6cbdd929bd701e772",
	"d95b_coprar.edi":         "20dd33afb7702b18c7243123d294842920acc407d68047a37a98f23635d68b44",
	"edifact-sample.edi":      "e149a7cfe8e174f5a0c94576f7c1575c9e7a45bef6e7f8a92ef06adeea776581",
	"example_multiline.edi":   "d2ae5e2309bd062b9909bdf0481810f68abb5699824cf8d973e4555b086af4ed",
	"example_order_error.edi": "ad13ac1223cc188a573c3661734e7ae54c5732df6187be00f30aea189647a1c7",
	"example_order_ok.edi":    "45b36994c0340a8030c9c4794f02591b28c180b91b92f93541651f65abbf67b8",
	"example_utf8.edi":        "73cfdf4eb2a9954755d70cc72cb392ef40de36d803df2ddc35aa2bdbb58c4e71",
	"invoic01.edi":            "cd9b04f57a11175398d9f47fb458ce37cfc5ca763baa35f4cfa53830084915f5",
	"invoic_d93a_una.edi":     "958d07c505cef52ec757ae8ce9dad4742f333c866e9078d86682b9b94a84d3b9",
	"invoic_d97b.edi":         "51c6cfbb099556d534bef8cd105cdb863e28b464af30f4de7c5129f3983fb951",
	"invoic_d97b_bad.edi":     "20a235ae35e43c8e4e3c75197bf4aec99e299689f1d6e26fa579042692f08012",
	"invoice1.edi":            "c90e8fbb5d0b61d723154be74f6be7566a1def7558b618b0a9a0325e0e665169",
	"order.edi":               "f870e4d5cf85f738c62f27c145bdd4611719bd19354048b551316f30caa5caaa",
	"orders-with-group.edi":   "fae28cc33555a607448041a55aacc276bbb563c7ac11766a2a1b7cc650537252",
	"orders01.edi":            "97227e10a02764e314f340398ad5386b4753808fbcf7060518b71f015c2a6717",
	"simple.edi":              "e5e04173f297a3cbaae120bed4fc1565f1ec88d35275a8f8e580080b8506150b",
	"simple.edi mutations":    "ea0d79e87e6daa127e1f5546e35a4ae79b20a776daaf642cc5a34bb8c5978814",
	"wikipedia_en.edi":        "3a88b1c58fb592b9b1234cde89f622923d9ead38261eabcbaf8c6432d4c32c8e",
	"wrapped_invoic_d97b.edi": "2bc5e05ae5116e553d16b52aa2734d82aeb594187294c1d14113014f09d2a76e",
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
