package edifact_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/edifact"
)

// mark is where a position test's input says the reported offset is: the
// marker is taken out of the input before it is read, and the offset
// reported must be the byte it stood before.
const mark = "§"

// unmark is the input without its marker and the marker's offset.
func unmark(t *testing.T, in string) (string, int64) {
	t.Helper()
	i := strings.Index(in, mark)
	if i < 0 || strings.Count(in, mark) != 1 {
		t.Fatalf("input needs exactly one %s: %q", mark, in)
	}
	return in[:i] + in[i+len(mark):], int64(i)
}

// TestErrorPositions pins, for every cause the reader and the envelope
// checks report, the byte offset, the segment (in the message, UNH = 1,
// and in the interchange, UNB = 1), the tag, the element and the component
// each error names, read with and without a callback (the same positions
// either way), so that a change that moves a reported position by one
// byte fails here, not only in a digest of the external corpus.
func TestErrorPositions(t *testing.T) {
	t.Parallel()
	const (
		unb = "UNB+UNOA:2+S+R+261130:1200+X1'"
		msg = "UNH+1+VERMAS:D:16A:UN'BGM+749'UNT+3+1'"
		unz = "UNZ+1+X1'"
	)
	both, cbOnly := []bool{false, true}, []bool{true}
	cases := []struct {
		name    string
		in      string // with the marker at the offset reported
		lim     edifact.Limits
		modes   []bool // read without (false) and with (true) a callback
		cause   error
		code    int
		tag     string
		segment int // in the message, UNH = 1; 0 outside one
		index   int // in the interchange, UNB = 1
		element int
		comp    int
	}{
		{"empty input", "§", edifact.Limits{}, both, edifact.ErrMissingUNB, 13, "", 0, 0, 0, 0},
		{"first segment not UNB", "§UNH+1+VERMAS:D:16A:UN'BGM+749'UNT+3+1'" + unz, edifact.Limits{}, both, edifact.ErrMissingUNB, 13, "UNH", 0, 1, 0, 0},
		{"bad UNA", "UNA:§:+.? '" + unb + msg + unz, edifact.Limits{}, both, edifact.ErrBadUNA, 20, "UNA", 0, 0, 0, 0},
		{"syntax identifier missing", "UNB+§:2+S+R+261130:1200+X1'" + msg + unz, edifact.Limits{}, both, edifact.ErrMissingElement, 13, "UNB", 0, 1, 1, 1},
		{"syntax version", "UNB+UNOA:§5+S+R+261130:1200+X1'" + msg + unz, edifact.Limits{}, both, nil, 2, "UNB", 0, 1, 1, 2},
		{"sender missing", "UNB+UNOA:2+§+R+261130:1200+X1'" + msg + unz, edifact.Limits{}, both, edifact.ErrMissingElement, 13, "UNB", 0, 1, 2, 1},
		{"recipient missing", "UNB+UNOA:2+S+§+261130:1200+X1'" + msg + unz, edifact.Limits{}, both, edifact.ErrMissingElement, 13, "UNB", 0, 1, 3, 1},
		{"reference missing", "UNB+UNOA:2+S+R+261130:1200+§'" + msg + unz, edifact.Limits{}, both, edifact.ErrMissingElement, 13, "UNB", 0, 1, 5, 0},
		{"bad tag", unb + "UNH+1+VERMAS:D:16A:UN'§bgm+749'UNT+3+1'" + unz, edifact.Limits{}, both, edifact.ErrBadTag, 12, "bgm", 2, 3, 0, 0},
		{"unterminated", unb + msg + "§UNZ+1+X1", edifact.Limits{}, both, edifact.ErrUnterminated, 13, "UNZ", 0, 5, 0, 0},
		{"segment too long", unb + "UNH+1+VERMAS:D:16A:UN'§FTX+" + strings.Repeat("A", 200) + "'UNT+3+1'" + unz, edifact.Limits{MaxSegmentBytes: 100}, both, edifact.ErrSegmentTooLong, 39, "FTX", 2, 3, 0, 0},
		// The offset of a segment with too many constituents is the segment's.
		{"too many elements", unb + "UNH+1+VERMAS:D:16A:UN'§BGM+1+2+3+4+5+6+7+8+9'UNT+3+1'" + unz, edifact.Limits{MaxComponents: 8}, both, edifact.ErrTooManyElements, 16, "BGM", 2, 3, 9, 0},
		{"dangling release", unb + "UNH+1+VERMAS:D:16A:UN'BGM+749§?\n'UNT+3+1'" + unz, edifact.Limits{}, both, edifact.ErrDanglingRelease, 21, "BGM", 2, 3, 1, 1},
		{"message reference missing", unb + "UNH+§+VERMAS:D:16A:UN'BGM+749'UNT+3+'" + unz, edifact.Limits{}, both, edifact.ErrMissingElement, 13, "UNH", 1, 2, 1, 0},
		{"message identifier incomplete", unb + "UNH+1+§VERMAS:D'BGM+749'UNT+3+1'" + unz, edifact.Limits{}, both, edifact.ErrMissingElement, 13, "UNH", 1, 2, 2, 0},
		{"duplicate message reference", unb + msg + "UNH+§1+VERMAS:D:16A:UN'BGM+749'UNT+3+1'UNZ+2+X1'", edifact.Limits{}, both, edifact.ErrDuplicateMessage, 26, "UNH", 1, 5, 1, 0},
		{"segment outside a message", unb + "§BGM+1'" + msg + unz, edifact.Limits{}, both, edifact.ErrOutsideMessage, 33, "BGM", 0, 2, 0, 0},
		{"UNT without UNH", unb + msg + "§UNT+3+1'" + unz, edifact.Limits{}, both, edifact.ErrOutsideMessage, 33, "UNT", 0, 5, 0, 0},
		{"UNT reference", unb + "UNH+1+VERMAS:D:16A:UN'BGM+749'UNT+3+§2'" + unz, edifact.Limits{}, both, edifact.ErrReference, 28, "UNT", 3, 4, 2, 0},
		{"UNT count", unb + "UNH+1+VERMAS:D:16A:UN'BGM+749'UNT+§4+1'" + unz, edifact.Limits{}, both, edifact.ErrCount, 29, "UNT", 3, 4, 1, 0},
		{"UNH before UNT", unb + "UNH+1+VERMAS:D:16A:UN'BGM+749'§UNH+2+VERMAS:D:16A:UN'UNT+3+2'" + unz, edifact.Limits{}, both, edifact.ErrMissingUNT, 13, "UNH", 3, 4, 0, 0},
		{"UNZ before UNT", unb + "UNH+1+VERMAS:D:16A:UN'BGM+749'§" + unz, edifact.Limits{}, both, edifact.ErrMissingUNT, 13, "UNZ", 3, 4, 0, 0},
		{"input ends in a message", unb + "§UNH+1+VERMAS:D:16A:UN'BGM+749'", edifact.Limits{}, both, edifact.ErrMissingUNT, 13, "UNH", 1, 2, 0, 0},
		{"UNZ reference", unb + msg + "UNZ+1+§X2'", edifact.Limits{}, both, edifact.ErrReference, 28, "UNZ", 0, 5, 2, 0},
		{"UNZ count", unb + msg + "UNZ+§2+X1'", edifact.Limits{}, both, edifact.ErrCount, 29, "UNZ", 0, 5, 1, 0},
		{"no messages", unb + "§UNZ+0+X1'", edifact.Limits{}, both, edifact.ErrEmpty, 32, "UNZ", 0, 2, 0, 0},
		{"input ends without UNZ", unb + msg + "§", edifact.Limits{}, both, edifact.ErrMissingUNZ, 13, "UNZ", 0, 5, 0, 0},
		{"data after UNZ", unb + msg + unz + "§UNH+2'", edifact.Limits{}, both, edifact.ErrAfterUNZ, 33, "UNH", 0, 6, 0, 0},
		{"second UNB", unb + msg + "§" + unb + unz, edifact.Limits{}, both, edifact.ErrAfterUNZ, 33, "UNB", 0, 5, 0, 0},
		{"unterminated after UNZ", unb + msg + unz + "§UNH+2", edifact.Limits{}, both, edifact.ErrAfterUNZ, 33, "UNH", 0, 6, 0, 0},
		{"group reference missing", unb + "UNG+VERMAS+S+R+261130:1200+§'" + msg + "UNE+1+G1'" + unz, edifact.Limits{}, both, edifact.ErrMissingElement, 13, "UNG", 0, 2, 5, 0},
		{"UNE reference", unb + "UNG+VERMAS+S+R+261130:1200+G1'" + msg + "UNE+1+§G2'" + unz, edifact.Limits{}, both, edifact.ErrReference, 28, "UNE", 0, 6, 2, 0},
		{"UNE count", unb + "UNG+VERMAS+S+R+261130:1200+G1'" + msg + "UNE+§2+G1'" + unz, edifact.Limits{}, both, edifact.ErrCount, 29, "UNE", 0, 6, 1, 0},
		{"UNE without UNG", unb + msg + "§UNE+1+G1'" + unz, edifact.Limits{}, both, edifact.ErrOutsideMessage, 33, "UNE", 0, 5, 0, 0},
		{"UNZ before UNE", unb + "UNG+VERMAS+S+R+261130:1200+G1'" + msg + "§" + unz, edifact.Limits{}, both, edifact.ErrMissingUNE, 13, "UNZ", 0, 6, 0, 0},
		{"UNG inside a group", unb + "UNG+VERMAS+S+R+261130:1200+G1'" + msg + "§UNG+VERMAS+S+R+261130:1200+G2'" + unz, edifact.Limits{}, both, edifact.ErrMissingUNE, 13, "UNG", 0, 6, 0, 0},
		{"input ends in a group", unb + "§UNG+VERMAS+S+R+261130:1200+G1'" + msg, edifact.Limits{}, both, edifact.ErrMissingUNE, 13, "UNG", 0, 2, 0, 0},
		{"UNG after a message", unb + msg + "§UNG+VERMAS+S+R+261130:1200+G1'" + msg + "UNE+1+G1'" + unz, edifact.Limits{}, both, edifact.ErrGroupsMixed, 30, "UNG", 0, 5, 0, 0},
		{"message after a group", unb + "UNG+VERMAS+S+R+261130:1200+G1'" + msg + "UNE+1+G1'§UNH+2+VERMAS:D:16A:UN'BGM+749'UNT+3+2'" + unz, edifact.Limits{}, both, edifact.ErrGroupsMixed, 30, "UNH", 0, 7, 0, 0},
		{"too many segments", unb + "UNH+1+VERMAS:D:16A:UN'§BGM+749'UNT+3+1'" + unz, edifact.Limits{MaxSegments: 2}, both, edifact.ErrTooManySegments, 18, "BGM", 2, 3, 0, 0},
		{"too many message segments", unb + "UNH+1+VERMAS:D:16A:UN'BGM+749'§UNT+3+1'" + unz, edifact.Limits{MaxMessageSegments: 2}, cbOnly, edifact.ErrTooManySegments, 18, "UNT", 3, 4, 0, 0},
		{"message too large", unb + "UNH+1+VERMAS:D:16A:UN'§FTX+" + strings.Repeat("A", 300) + "'UNT+3+1'" + unz, edifact.Limits{MaxMessageBytes: 200}, cbOnly, edifact.ErrMessageTooLarge, 18, "FTX", 2, 3, 0, 0},
	}
	for _, tc := range cases {
		in, want := unmark(t, tc.in)
		for _, cb := range tc.modes {
			var on func(*edifact.Message) error
			if cb {
				on = func(*edifact.Message) error { return nil }
			}
			_, err := edifact.Parse(strings.NewReader(in), tc.lim, on)
			var se *edifact.SyntaxError
			if !errors.As(err, &se) {
				t.Errorf("%s (callback %v): %v", tc.name, cb, err)
				continue
			}
			if tc.cause != nil && !errors.Is(err, tc.cause) {
				t.Errorf("%s (callback %v): cause %v, want %v", tc.name, cb, err, tc.cause)
			}
			got := [7]any{se.Offset, se.Code, se.Tag, se.Segment, se.Index, se.Element, se.Component}
			exp := [7]any{want, tc.code, tc.tag, tc.segment, tc.index, tc.element, tc.comp}
			if got != exp {
				t.Errorf("%s (callback %v): offset, code, tag, segment, index, element, component\n got %v\nwant %v\n(%v)", tc.name, cb, got, exp, err)
			}
		}
	}
}

// The positions reported beside SyntaxError: an unsupported syntax
// identifier (UnsupportedError, at UNB) and a byte outside the declared
// repertoire (Message.Charset: the byte, its segment in the message).
func TestUnsupportedAndCharsetPositions(t *testing.T) {
	t.Parallel()
	in, want := unmark(t, "UNA:+.? '§UNB+UNOQ:3+S+R+261130:1200+X1'UNH+1+VERMAS:D:16A:UN'BGM+749'UNT+3+1'UNZ+1+X1'")
	_, err := edifact.Parse(strings.NewReader(in), edifact.Limits{}, nil)
	var ue *edifact.UnsupportedError
	if !errors.As(err, &ue) || ue.Offset != want {
		t.Errorf("UNOQ: %v, want an UnsupportedError at byte %d", err, want)
	}
	in, want = unmark(t, "UNB+UNOA:2+S+R+261130:1200+X1'UNH+1+VERMAS:D:16A:UN'BGM+749'FTX+AAI+++AB§c'UNT+4+1'UNZ+1+X1'")
	var got *edifact.CharsetIssue
	_, err = edifact.Parse(strings.NewReader(in), edifact.Limits{}, func(m *edifact.Message) error {
		if m.Charset != nil {
			c := *m.Charset
			got = &c
		}
		return nil
	})
	if err != nil || got == nil || got.Offset != want || got.Segment != 3 || got.Byte != 'c' {
		t.Errorf("%v, charset issue %+v, want byte 'c' at %d in segment 3", err, got, want)
	}
}
