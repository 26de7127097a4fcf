package edifact_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/edifact"
)

// FuzzContrl: whatever the input, the CONTRL that answers it is written
// without panic and reads back through Parse as one CONTRL message.
func FuzzContrl(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		out := contrlOf(t, string(data))
		n := 0
		_, err := edifact.Parse(strings.NewReader(out), edifact.Limits{}, func(m *edifact.Message) error {
			if m.Type != "CONTRL" {
				t.Fatalf("message %s in the CONTRL", m.Type)
			}
			n++
			return nil
		})
		if err != nil || n != 1 {
			t.Fatalf("%d messages, %v:\n%s", n, err, out)
		}
		noControls(t, out)
	})
}

// noControls fails t when a reply holds a control character other than
// the newline after each segment and its own service characters (a
// sender may declare control characters as separators in its UNA): none
// from the input's values reaches a reply.
func noControls(t *testing.T, out string) {
	t.Helper()
	service := ""
	if strings.HasPrefix(out, "UNA") && len(out) >= 9 {
		service = out[3:9]
	}
	for i := 0; i < len(out); i++ {
		if c := out[i]; (c < 0x20 || c == 0x7f) && c != '\n' && strings.IndexByte(service, c) < 0 {
			t.Fatalf("byte %#x at %d of the reply:\n%q", c, i, out)
		}
	}
}

// FuzzAperak: whatever the input, the APERAK that answers its messages
// (and one more, whose reference, tag and text are the input's own bytes)
// is written without panic (or refused with an error, for a reference the
// sender's separators cannot carry) and reads back through Parse as one
// APERAK per message.
func FuzzAperak(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var msgs []edifact.AperakMessage
		ic, _ := edifact.Parse(bytes.NewReader(data), edifact.Limits{}, func(m *edifact.Message) error {
			am := edifact.AperakMessage{Ref: m.Ref, Type: m.Type, Number: len(msgs) + 1, Offset: m.Offset}
			for i, s := range m.All() {
				am.Errors = append(am.Errors, edifact.AperakError{Code: s.Value(1, 1), Segment: i + 1, Tag: s.Tag, Element: 1, Offset: s.Offset, Text: s.Value(2, 1)})
			}
			msgs = append(msgs, am)
			return nil
		})
		raw := string(data)
		msgs = append(msgs, edifact.AperakMessage{Ref: raw[:min(len(raw), 80)], Errors: []edifact.AperakError{{Code: raw[:min(len(raw), 8)], Tag: raw[:min(len(raw), 3)], Text: raw}}})
		var out bytes.Buffer
		rep := edifact.AperakReport{Interchange: ic, Envelope: edifact.ReadEnvelope(bytes.NewReader(data), edifact.Limits{}), Messages: msgs}
		if err := edifact.WriteAPERAK(&out, rep); err != nil {
			return // a reference that cannot be written with the sender's separators (no release character)
		}
		n := 0
		_, err := edifact.Parse(bytes.NewReader(out.Bytes()), edifact.Limits{}, func(m *edifact.Message) error {
			if m.Type != "APERAK" {
				t.Fatalf("message %s in the APERAK", m.Type)
			}
			n++
			return nil
		})
		if err != nil || n != len(msgs) {
			t.Fatalf("%d messages of %d, %v:\n%q", n, len(msgs), err, out.String())
		}
		noControls(t, out.String())
	})
}
