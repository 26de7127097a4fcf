package tiff_test

import (
	"bytes"
	"testing"

	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/tiff"
)

// An embedded ICC profile is attacker bytes too: whatever they are, no
// panic, and an error or a profile.
func FuzzReadICC(f *testing.F) {
	seeds := testenv.NewSeeds(f)
	valid := make([]byte, 132)
	copy(valid[36:], "acsp")
	seeds.Add(valid)
	seeds.Add(append(bytes.Repeat([]byte{0xff}, 128), 0, 0, 0, 1))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := tiff.ReadICC(bytes.NewReader(data), 0, int64(len(data)))
		if err == nil && p == nil {
			t.Fatal("no profile and no error")
		}
	})
}
