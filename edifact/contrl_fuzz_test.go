package edifact_test

import (
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
	})
}
