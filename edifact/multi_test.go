package edifact_test

import (
	"errors"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"

	"github.com/lazaret/lazaret/edifact"
)

// twoInterchanges is a file of two interchanges that reuse the control
// reference and the message reference; the second declares other
// separators in its own UNA. § marks the UNH of each message and the
// start of the second interchange (its UNA).
const twoInterchanges = "UNB+UNOC:3+S+R+261130:1200+1'\n§UNH+1+IFTMIN:D:99B:UN'\nBGM+610+A+9'\nUNT+3+1'\n§UNH+2+IFTMIN:D:99B:UN'\nBGM+610+B+9'\nUNT+3+2'\nUNZ+2+1'\n" +
	"\n§UNA|*.? !UNB*UNOC|3*S*R*261130|1201*1!\n§UNH*1*IFTMIN|D|99B|UN!\nBGM*610*C*9!\nUNT*3*1!\nUNZ*1*1!\n"

// marked removes the § markers from text and returns their offsets.
func marked(text string) (string, []int64) {
	var offs []int64
	for {
		i := strings.Index(text, "§")
		if i < 0 {
			return text, offs
		}
		offs = append(offs, int64(i))
		text = text[:i] + text[i+len("§"):]
	}
}

type seen struct {
	Ref               string
	Interchange, Num  int
	Offset            int64
	SecondSegmentText string
}

// TestSeveralInterchanges: each UNB .. UNZ of a file is read on its own
// (its separators, its counts, its message numbers), with offsets from
// the start of the file, and none is refused as data after UNZ.
func TestSeveralInterchanges(t *testing.T) {
	t.Parallel()
	text, offs := marked(twoInterchanges)
	var got []seen
	for _, cb := range []bool{true, false} {
		var fn func(*edifact.Message) error
		if cb {
			fn = func(m *edifact.Message) error {
				got = append(got, seen{m.Ref, m.Interchange, m.Number, m.Offset, m.Segment(1).Value(2, 1)})
				return nil
			}
		}
		ic, err := edifact.Parse(strings.NewReader(text), edifact.Limits{}, fn)
		if err != nil {
			t.Fatalf("callback %v: %v", cb, err)
		}
		second := ic.Next
		if ic.Number != 1 || second == nil || second.Number != 2 || second.Next != nil || ic.Last() != second {
			t.Fatalf("callback %v: chain %+v", cb, ic)
		}
		if ic.Messages != 2 || second.Messages != 1 || ic.Reference != "1" || second.Reference != "1" {
			t.Errorf("callback %v: messages %d, %d", cb, ic.Messages, second.Messages)
		}
		if second.Start != offs[2] || second.Offset != offs[2]+9 || !second.HasUNA || second.Delimiters.Element != '*' || ic.HasUNA || ic.Delimiters.Element != '+' {
			t.Errorf("callback %v: second interchange at %d (UNB %d, UNA %v %q), want %d", cb, second.Start, second.Offset, second.HasUNA, second.Delimiters.Element, offs[2])
		}
		if ic.Time != "1200" || second.Time != "1201" {
			t.Errorf("callback %v: times %q %q", cb, ic.Time, second.Time)
		}
	}
	want := []seen{{"1", 1, 1, offs[0], "A"}, {"2", 1, 2, offs[1], "B"}, {"1", 2, 1, offs[3], "C"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	// Read a byte at a time, the reader finds the second interchange the
	// same.
	got = nil
	if _, err := edifact.Parse(iotest.OneByteReader(strings.NewReader(text)), edifact.Limits{}, func(m *edifact.Message) error {
		got = append(got, seen{m.Ref, m.Interchange, m.Number, m.Offset, m.Segment(1).Value(2, 1)})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages read a byte at a time (-want +got):\n%s", diff)
	}
	env := edifact.ReadEnvelope(strings.NewReader(text), edifact.Limits{})
	if len(env.Messages) != 2 || env.UNZCount != "2" || env.Time != "1200" {
		t.Errorf("the first interchange's envelope: %+v", env)
	}
	env = edifact.ReadEnvelopeAt(strings.NewReader(text[offs[2]:]), offs[2], edifact.Limits{})
	if len(env.Messages) != 1 || env.Messages[0].Offset != offs[3] || env.Time != "1201" || !env.HasUNA || env.Delimiters.Element != '*' {
		t.Errorf("the second interchange's envelope: %+v", env)
	}
}

// TestDataBetweenInterchanges: what is neither whitespace nor an
// interchange, between interchanges or after the last, is still data
// after UNZ, at its offset; a fault in the second interchange is at its
// offset in the file.
func TestDataBetweenInterchanges(t *testing.T) {
	t.Parallel()
	text, offs := marked(twoInterchanges)
	first := text[:offs[2]]
	cases := []struct {
		name, in string
		at       int64
		cause    error
	}{
		{"garbage between", first + "XYZ+1'\n" + text[offs[2]:], offs[2], edifact.ErrAfterUNZ},
		{"garbage after the second", text + "XYZ+1'\n", int64(len(text)), edifact.ErrAfterUNZ},
		{"UNT count in the second", strings.Replace(text, "UNT*3*1!", "UNT*4*1!", 1), int64(strings.Index(text, "UNT*3*1!") + 4), edifact.ErrCount},
		{"UNZ reference of the second", text[:len(text)-3] + "9!\n", int64(len(text) - 3), edifact.ErrReference},
		{"second without UNZ", text[:strings.LastIndex(text, "UNZ")], int64(strings.LastIndex(text, "UNZ")), edifact.ErrMissingUNZ},
	}
	for _, c := range cases {
		for _, cb := range []bool{true, false} {
			var fn func(*edifact.Message) error
			if cb {
				fn = func(*edifact.Message) error { return nil }
			}
			ic, err := edifact.Parse(strings.NewReader(c.in), edifact.Limits{}, fn)
			var se *edifact.SyntaxError
			if !errors.As(err, &se) || !errors.Is(err, c.cause) || se.Offset != c.at {
				t.Errorf("%s (callback %v): %v, want %v at byte %d", c.name, cb, err, c.cause, c.at)
			}
			if c.cause != edifact.ErrAfterUNZ && ic.Last().Number != 2 {
				t.Errorf("%s: the parse stopped in interchange %d, want 2", c.name, ic.Last().Number)
			}
		}
	}
	// The number of interchanges is bounded.
	many := strings.Repeat(first, 5)
	_, err := edifact.Parse(strings.NewReader(many), edifact.Limits{MaxInterchanges: 4}, nil)
	var se *edifact.SyntaxError
	if !errors.Is(err, edifact.ErrTooManyInterchanges) || !errors.As(err, &se) || se.Offset != int64(3*len(first)+strings.Index(first, "UNZ")) {
		t.Errorf("five interchanges, limit four: %v", err)
	}
	if _, err := edifact.Parse(strings.NewReader(many), edifact.Limits{MaxInterchanges: 5}, nil); err != nil {
		t.Errorf("five interchanges, limit five: %v", err)
	}
}
