package edifact_test

import (
	"io"
	"testing"

	"github.com/lazaret/lazaret/edifact"
)

// BenchmarkReadEnvelope: the second pass a CONTRL costs (every service
// segment kept as sent), against BenchmarkParse in the same run.
func BenchmarkReadEnvelope(b *testing.B) {
	benchFile(b, func(r io.Reader) {
		if env := edifact.ReadEnvelope(r, edifact.Limits{}); env.Stopped != nil || !env.HasUNZ {
			b.Fatalf("stopped: %v", env.Stopped)
		}
	})
}
