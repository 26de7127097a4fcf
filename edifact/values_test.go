package edifact_test

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/edifact"
)

// segmentsOf reads every segment of text, each cloned.
func segmentsOf(t *testing.T, text string) []edifact.Segment {
	t.Helper()
	r := edifact.NewReader(strings.NewReader(text), edifact.Limits{})
	var out []edifact.Segment
	for {
		s, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s.Clone())
	}
}

// TestSameValues: segments of the same bytes split the same way are the
// same at any offset, others are not, and a copy made with CloneInto is
// the same as its original.
func TestSameValues(t *testing.T) {
	t.Parallel()
	plain := segmentsOf(t, "LOC+9+NLRTM:139:6'\r\nLOC+9+NLRTM:139:6'LOC+9+NLRTM:139:7'LOC+9+NLRTM+139:6'LOC+9+NL?+RTM:139:6'")
	// The same bytes, split by other separators, or with another release
	// character.
	other := segmentsOf(t, "UNA*+.? 'LOC+9+NLRTM:139:6'LOC+9+NL?+RTM:139:6'")
	released := segmentsOf(t, "UNA:+.! 'LOC+9+NL?+RTM:139:6'")
	for _, c := range []struct {
		name string
		a, b edifact.Segment
		want bool
	}{
		{"at another offset", plain[0], plain[1], true},
		{"another value", plain[0], plain[2], false},
		{"another element", plain[0], plain[3], false},
		{"a release character", plain[0], plain[4], false},
		{"the same release character", plain[4], plain[4], true},
		{"other separators", plain[0], other[0], false},
		{"other separators, a release character", plain[4], other[1], false},
		{"a release character that is data", plain[4], released[0], false},
	} {
		if got := c.a.SameValues(&c.b); got != c.want {
			t.Errorf("%s: SameValues(%q, %q) = %v, want %v", c.name, c.a.Raw(), c.b.Raw(), got, c.want)
		}
	}
	var dst edifact.Segment
	for i := range plain {
		plain[i].CloneInto(&dst)
		if !dst.SameValues(&plain[i]) || dst.Offset != plain[i].Offset || dst.Tag != plain[i].Tag {
			t.Errorf("CloneInto of %q gives %q at %d", plain[i].Raw(), dst.Raw(), dst.Offset)
		}
	}
}

// A Printable writer writes a value's control characters as %HH and
// leaves the caller's values as they were; service characters are still
// released.
func TestWriterPrintable(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	w := edifact.NewWriter(&b, edifact.DefaultDelimiters)
	w.Printable = true
	el := []string{"A\x1bB", "ok", "\x00+\x7f"}
	if err := w.WriteSegment("FTX", edifact.E("AAO"), el, edifact.E("plain")); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	if got, want := b.String(), "FTX+AAO+A%1BB:ok:%00?+%7F+plain'"; got != want {
		t.Errorf("wrote %q, want %q", got, want)
	}
	if el[0] != "A\x1bB" || el[2] != "\x00+\x7f" {
		t.Errorf("the caller's values changed: %q", el)
	}
}

// A reply echoes the sender's service characters, the information
// separators of syntax level B included, but never NUL, ESC or another
// control character: then it has the default ones.
func TestReplyDelimitersAreNeverControls(t *testing.T) {
	t.Parallel()
	levelB := edifact.Delimiters{Component: 0x1f, Element: 0x1d, Decimal: '.', Release: '?', Terminator: 0x1c}
	if got := edifact.ReplyDelimiters(&edifact.Envelope{HasUNA: true, Delimiters: levelB}); got != levelB {
		t.Errorf("level B separators: %+v", got)
	}
	for _, d := range []edifact.Delimiters{
		{Component: ':', Element: 0, Decimal: '.', Release: '?', Terminator: '\''},
		{Component: ':', Element: '+', Decimal: '.', Release: 0x1b, Terminator: '\''},
		{Component: ':', Element: '+', Decimal: 0x7f, Release: '?', Terminator: '\''},
		{Component: ':', Element: '+', Decimal: '.', Release: '?', Repetition: 0x07, Terminator: '\''},
		{Component: ':', Element: '+', Decimal: '.', Release: '?', Terminator: 0},
	} {
		if got := edifact.ReplyDelimiters(&edifact.Envelope{HasUNA: true, Delimiters: d}); got != edifact.DefaultDelimiters {
			t.Errorf("%+v: reply delimiters %+v", d, got)
		}
	}
	// Through the parser: a UNA that declares NUL as element separator.
	in := "UNA:\x00.? 'UNB\x00UNOC:3\x00S\x00R\x00261130:1200\x00X1'UNH\x001\x00VERMAS:D:16A:UN'UNT\x003\x001'UNZ\x001\x00X1'"
	var out bytes.Buffer
	if err := edifact.WriteCONTRL(&out, edifact.ContrlReport{Envelope: edifact.ReadEnvelope(strings.NewReader(in), edifact.Limits{})}); err != nil {
		t.Fatal(err)
	}
	if strings.IndexByte(out.String(), 0) >= 0 || !strings.HasPrefix(out.String(), "UNA:+.? '") {
		t.Errorf("CONTRL to a NUL separator:\n%q", out.String())
	}
}
