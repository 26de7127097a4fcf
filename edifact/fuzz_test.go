package edifact_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/internal/testenv"
)

func seeds(f *testing.F) {
	own := testenv.NewSeeds(f)
	own.Add([]byte(sample))
	var b bytes.Buffer
	fixtures.WriteInterchange(&b, fixtures.Interchange{Sender: "S", Recipient: "R", Ref: "1", UNA: true,
		Msgs: []fixtures.Msg{fixtures.VERMAS("1", fixtures.ContainerOK1, 20000), fixtures.IFTMIN("2", [2]string{"CZ", "CN"}, "NLRTM", "SGSIN", fixtures.ContainerOK2, "847130")}})
	own.Add(b.Bytes())
	// Two interchanges in one file, and a binary object (ISO 9735-8).
	two, _ := marked(twoInterchanges)
	own.Add([]byte(two))
	pkg, _ := marked(withPackage(len(object), len(object), 3, "P1"))
	own.Add([]byte(pkg))
	// The cases of the replies and message identity: references shared
	// by messages, an unsupported syntax identifier, control characters
	// and NUL in echoed values, a 10-character container number, syntax 4
	// with its own separators.
	const vermas = "UNH+1+VERMAS:D:16A:UN'BGM+749'EQD+CN+CSQU305438+45G1:6346:5'UNT+4+1'"
	for _, in := range []string{
		"UNB+UNOA:2+S+R+261130:1200+X1'" + vermas + vermas + vermas + "UNZ+3+X1'",
		"UNA:+.? 'UNB+UNOQ:3+S+R+261130:1200+X1'" + vermas + "UNZ+1+X1'",
		"UNB+UNOC:3+S\x1bX+R\x00Y+261130:1200+X\x1b1'UNH+1\x00+VERMAS:D:16A:UN'BGM+749'UNT+3+1\x00'UNZ+1+X\x1b1'",
		"UNA:+.?*'UNB+UNOC:4+S+R+20261130:1200+X1'" + vermas + "UNZ+1+X1'",
	} {
		own.Add([]byte(in))
	}
	if files, err := filepath.Glob(filepath.Join("..", "..", "shared", "corpus", "edifact", "*")); err == nil {
		for _, p := range files {
			if d, err := os.ReadFile(p); err == nil {
				f.Add(d)
			}
		}
	}
}

// FuzzParse: no panic, every error typed, every offset inside the input.
func FuzzParse(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := edifact.Parse(bytes.NewReader(data), edifact.Limits{MaxSegmentBytes: 4096}, func(m *edifact.Message) error {
			for _, s := range m.All() {
				if s.Offset < 0 || s.Offset >= int64(len(data)) {
					t.Fatalf("segment %s offset %d outside %d bytes", s.Tag, s.Offset, len(data))
				}
				for e := 1; e <= s.Elements(); e++ {
					if o := s.ValueOffset(e, 1); o < s.Offset || o > int64(len(data)) {
						t.Fatalf("element offset %d outside", o)
					}
				}
			}
			return nil
		})
		if err == nil {
			return
		}
		var se *edifact.SyntaxError
		var ue *edifact.UnsupportedError
		switch {
		case errors.As(err, &se):
			if se.Offset < 0 || se.Offset > int64(len(data)) || se.Code == 0 {
				t.Fatalf("bad error: offset %d code %d: %v", se.Offset, se.Code, err)
			}
		case errors.As(err, &ue):
		default:
			t.Fatalf("untyped error %T: %v", err, err)
		}
	})
}

// FuzzRoundTrip: every segment the reader reads, written back by the
// writer and read again, has the same values.
func FuzzRoundTrip(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		r := edifact.NewReader(bytes.NewReader(data), edifact.Limits{MaxSegmentBytes: 4096})
		for n := 0; n < 200; n++ {
			s, err := r.Next()
			if err != nil {
				return
			}
			els := make([][]string, s.Elements())
			for e := range els {
				for c := 1; c <= s.Components(e+1); c++ {
					els[e] = append(els[e], s.Value(e+1, c))
				}
			}
			var b bytes.Buffer
			d := r.Delimiters()
			w := edifact.NewWriter(&b, d)
			if err := w.WriteSegment(s.Tag, els...); err != nil {
				if d.Release == 0 {
					continue // a value with a service character cannot be written without one
				}
				t.Fatalf("write %s: %v", s.Tag, err)
			}
			w.Flush()
			r2 := edifact.NewReader(bytes.NewReader(b.Bytes()), edifact.Limits{MaxSegmentBytes: 1 << 20})
			r2.SetDelimiters(d)
			s2, err := r2.Next()
			if err != nil && err != io.EOF {
				t.Fatalf("re-read %q: %v", b.Bytes(), err)
			}
			for e := range els {
				for c := range els[e] {
					if got := s2.Value(e+1, c+1); got != els[e][c] {
						t.Fatalf("%s element %d:%d: %q became %q (written %q)", s.Tag, e+1, c+1, els[e][c], got, b.Bytes())
					}
				}
			}
		}
	})
}

// FuzzParseSegments: the segments ParseSegments hands to onSegment are
// those Parse's messages yield, value for value, the messages those Parse
// hands over with as many segments, and the verdict Parse's.
func FuzzParseSegments(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		lim := edifact.Limits{MaxSegmentBytes: 4096}
		var want [][]string // every message's segments, from Parse
		icWant, errWant := edifact.Parse(bytes.NewReader(data), lim, func(m *edifact.Message) error {
			var segs []string
			for _, s := range m.All() {
				segs = append(segs, segmentText(s))
			}
			want = append(want, segs)
			return nil
		})
		var seen []string // what onSegment saw of the message being read
		n := 0
		icGot, errGot := edifact.ParseSegments(bytes.NewReader(data), lim, func(m *edifact.Message, i int, s *edifact.Segment) {
			if i != len(seen) {
				t.Fatalf("message %s: segment %d after %d", m.Ref, i, len(seen))
			}
			seen = append(seen, segmentText(s))
		}, func(m *edifact.Message) error {
			if n >= len(want) {
				t.Fatalf("message %s: Parse handed over %d messages", m.Ref, len(want))
			}
			if m.Len() != len(seen) || m.Len() != len(want[n]) {
				t.Fatalf("message %s: Len %d, %d segments seen, Parse's has %d", m.Ref, m.Len(), len(seen), len(want[n]))
			}
			for i := range seen {
				if seen[i] != want[n][i] {
					t.Fatalf("message %s segment %d:\nonSegment %s\nParse     %s", m.Ref, i, seen[i], want[n][i])
				}
			}
			seen, n = seen[:0], n+1
			return nil
		})
		if fmt.Sprint(errGot) != fmt.Sprint(errWant) || n != len(want) || icGot.Messages != icWant.Messages {
			t.Fatalf("ParseSegments: %v, %d messages; Parse: %v, %d", errGot, n, errWant, len(want))
		}
	})
}

// segmentText is everything s says about itself: tag, position, bytes,
// the byte outside the repertoire, and every value with its position.
func segmentText(s *edifact.Segment) string {
	off, c, bad := s.BadByte()
	b := fmt.Appendf(nil, "%s %d %d %q %d %d %v %d |", s.Tag, s.Offset, s.Index, s.Raw(), off, c, bad, s.Elements())
	for i := range s.ValueCount() {
		e, comp, r, o, v := s.ValueAt(i, nil)
		b = fmt.Appendf(b, " %d:%d:%d@%d=%q", e, comp, r, o, v)
	}
	return string(b)
}
