package edifact

import (
	"bytes"
	"testing"
)

// TestStoreCostPerSegment: a kept FTX+AAI+++X' costs its 11 bytes, a word
// for each of its four components and its record: under 64 bytes more
// than its bytes (a Segment of its own with slices took some 290 more).
func TestStoreCostPerSegment(t *testing.T) {
	t.Parallel()
	const n = 100_000
	var in bytes.Buffer
	in.WriteString("UNB+UNOA:3+S:ZZ+R:ZZ+261202:1200+1'UNH+1+IFTMIN:D:99B:UN'")
	for range n {
		in.WriteString("FTX+AAI+++X'")
	}
	in.WriteString("UNT+100002+1'UNZ+1+1'")
	var held, raw int64
	_, err := Parse(&in, Limits{}, func(m *Message) error {
		held = m.st.retained()
		for _, s := range m.All() {
			raw += int64(len(s.Raw()))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if per := float64(held-raw) / n; per >= 64 || held < raw {
		t.Errorf("%d bytes held for %d bytes of %d segments: %.1f bytes a segment over its bytes, want under 64", held, raw, n+2, per)
	} else {
		t.Logf("%.1f bytes a segment over its bytes", per)
	}
}
