package edifact_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/edifact"
)

// TestParseSegmentsLimits: ParseSegments keeps no segment, yet stops a
// message at the limits on what it would keep as Parse does, with the
// same error.
func TestParseSegmentsLimits(t *testing.T) {
	t.Parallel()
	var in bytes.Buffer
	in.WriteString("UNB+UNOC:3+S:ZZ+R:ZZ+261202:1200+1'UNH+1+IFTMIN:D:99B:UN'BGM+610+X+9'")
	for range 200 {
		in.WriteString("FTX+AAI+++" + strings.Repeat("A", 300) + ":" + strings.Repeat("B", 9000) + "'\r\n")
	}
	in.WriteString("UNT+203+1'UNZ+1+1'")
	for i, lim := range []edifact.Limits{
		{},
		{MaxMessageSegments: 100},
		{MaxMessageBytes: 1 << 20},
		{MaxMessageBytes: 9300*100 + 7},
	} {
		var want, got []int
		_, errWant := edifact.Parse(bytes.NewReader(in.Bytes()), lim, func(m *edifact.Message) error {
			want = append(want, m.Len())
			return nil
		})
		_, errGot := edifact.ParseSegments(bytes.NewReader(in.Bytes()), lim, func(*edifact.Message, int, *edifact.Segment) {}, func(m *edifact.Message) error {
			got = append(got, m.Len())
			return nil
		})
		if (errWant == nil) != (i == 0) {
			t.Fatalf("%+v: Parse: %v", lim, errWant)
		}
		if fmt.Sprint(errGot) != fmt.Sprint(errWant) || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%+v: ParseSegments %v %v, Parse %v %v", lim, errGot, got, errWant, want)
		}
	}
}
