package edifact_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/fixtures"
)

// describe is every value and offset of a message.
func describe(m *edifact.Message) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %d\n", m.Ref, m.Type, m.Offset)
	for _, s := range m.All() {
		fmt.Fprintf(&b, "%s@%d %q", s.Tag, s.Offset, s.Raw())
		for e := 1; e <= s.Elements(); e++ {
			for c := 1; c <= s.Components(e); c++ {
				fmt.Fprintf(&b, " %q@%d", s.Value(e, c), s.ValueOffset(e, c))
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestMessageCloneOutlivesCallback: Parse reuses a message's buffers for
// the next one; a Clone keeps every byte, value and offset.
func TestMessageCloneOutlivesCallback(t *testing.T) {
	t.Parallel()
	var in bytes.Buffer
	msgs := []fixtures.Msg{fixtures.VERMAS("1", fixtures.ContainerOK1, 20000), fixtures.IFTMIN("2", [2]string{"CZ", "CN"}, "NLRTM", "SGSIN", fixtures.ContainerOK2, "847130"),
		fixtures.VERMAS("3", fixtures.ContainerOK2, 31000)}
	if err := fixtures.WriteInterchange(&in, fixtures.Interchange{Sender: "S", Recipient: "R", Ref: "1", UNA: true, Msgs: msgs}); err != nil {
		t.Fatal(err)
	}
	var want []string
	var kept []*edifact.Message
	if _, err := edifact.Parse(bytes.NewReader(in.Bytes()), edifact.Limits{}, func(m *edifact.Message) error {
		want = append(want, describe(m))
		kept = append(kept, m.Clone())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(kept) != len(msgs) {
		t.Fatalf("%d messages, want %d", len(kept), len(msgs))
	}
	for i, m := range kept {
		if got := describe(m); got != want[i] {
			t.Errorf("message %d after the parse:\n%s\nduring its callback:\n%s", i+1, got, want[i])
		}
	}
}

// TestMessageAllNested: All rebuilds segments into memory the message
// keeps; an iteration inside another (or beside it, on another goroutine)
// gets its own, so neither sees the other's segments.
func TestMessageAllNested(t *testing.T) {
	t.Parallel()
	var in bytes.Buffer
	msgs := []fixtures.Msg{fixtures.IFTMIN("1", [2]string{"CZ", "CN"}, "NLRTM", "SGSIN", fixtures.ContainerOK2, "847130")}
	if err := fixtures.WriteInterchange(&in, fixtures.Interchange{Sender: "S", Recipient: "R", Ref: "1", Msgs: msgs}); err != nil {
		t.Fatal(err)
	}
	if _, err := edifact.Parse(bytes.NewReader(in.Bytes()), edifact.Limits{}, func(m *edifact.Message) error {
		want := describe(m)
		for i, s := range m.All() {
			before := fmt.Sprintf("%d %s@%d %q", i, s.Tag, s.Offset, s.Raw())
			if got := describe(m); got != want {
				t.Errorf("nested in segment %d:\n%s\nwant:\n%s", i, got, want)
			}
			done := make(chan string)
			go func() { done <- describe(m) }()
			if got := <-done; got != want {
				t.Errorf("on another goroutine in segment %d:\n%s\nwant:\n%s", i, got, want)
			}
			if after := fmt.Sprintf("%d %s@%d %q", i, s.Tag, s.Offset, s.Raw()); after != before {
				t.Errorf("the outer segment changed under the inner iterations: %s, was %s", after, before)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestUnterminatedPastTheLimit: a last segment without terminator, longer
// than the segment limit but short, is unterminated (as before the reader
// had its own buffer), whichever way the input arrives.
func TestUnterminatedPastTheLimit(t *testing.T) {
	t.Parallel()
	in := "UNA!+0  \"" + strings.Repeat("0", 61)
	for _, r := range []io.Reader{strings.NewReader(in), iotest.OneByteReader(strings.NewReader(in))} {
		_, err := edifact.Parse(r, edifact.Limits{MaxSegmentBytes: 40}, nil)
		var se *edifact.SyntaxError
		if !errors.As(err, &se) || !errors.Is(err, edifact.ErrUnterminated) || se.Offset != 9 {
			t.Errorf("got %v, want an unterminated segment at byte 9", err)
		}
	}
}
