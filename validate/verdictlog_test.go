package validate

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestVerdictLogChunks: a log of more verdicts than one chunk holds, one
// of them with a reference longer than a chunk, gives back every verdict
// as it was added, in order: plain ones, unknown-directory ones and whole
// ones, across the chunks' ends.
func TestVerdictLogChunks(t *testing.T) {
	t.Parallel()
	var l verdictLog
	var want []MessageResult
	offset := int64(0)
	for n := 1; n <= 30000; n++ {
		offset += int64(100 + n%7)
		v := MessageResult{Ref: strconv.Itoa(n), Type: "IFTMIN", Number: n, Offset: offset}
		switch {
		case n == 12345:
			v.Ref = strings.Repeat("R", logChunk+10)
		case n%3 == 0:
			v.Type = "VERMAS"
			v.Warnings = unknownDirectory("no message directory for VERMAS:D:16A:UN; only the envelope was checked", offset)
		case n%1000 == 0:
			v.Err = errors.New("bad")
		}
		l.add(&v, "")
		want = append(want, v)
	}
	if len(l.chunks) < 3 {
		t.Fatalf("%d chunks: the test wants several", len(l.chunks))
	}
	var got []MessageResult
	if err := l.each(func(v MessageResult) error { got = append(got, v); return nil }); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
		t.Errorf("each (-want +got):\n%s", diff)
	}
	// Warnings made a batch at a time are each verdict's own: one
	// appended to does not write into the next.
	for _, v := range got {
		if cap(v.Warnings) != len(v.Warnings) {
			t.Fatalf("message %d: warnings of length %d, capacity %d", v.Number, len(v.Warnings), cap(v.Warnings))
		}
	}
}
