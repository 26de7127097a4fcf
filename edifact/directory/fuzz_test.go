package directory_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/edifact/directory"
	"github.com/lazaret/lazaret/internal/testenv"
)

// FuzzValidate: whatever the input, checking its messages against their
// directories does not panic, and every finding has a known kind, a
// position inside its message and an offset inside the input. A new
// Checker finds the same, in the same order, as Validate's, which are
// reused and skip the segments they saw pass before.
func FuzzValidate(f *testing.F) {
	seeds := testenv.NewSeeds(f)
	files, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "corpus", "edifact", "*"))
	for _, p := range files { // third-party: never written as seeds
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	fx, _ := filepath.Glob(filepath.Join("..", "..", "fixtures", "logistics", "*.edi"))
	for _, p := range fx {
		if data, err := os.ReadFile(p); err == nil {
			seeds.Add(data)
		}
	}
	seeds.Add([]byte("UNB+UNOC:4+S+R+261201:1200+1'UNH+1+APERAK:D:96A:UN'BGM+X*Y+1?+2+9'DTM'UNT+4+1'UNZ+1+1'"))
	known := map[directory.Kind]bool{}
	for _, k := range directory.Kinds() {
		known[k] = true
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		edifact.Parse(bytes.NewReader(data), edifact.Limits{MaxSegments: 10000}, func(m *edifact.Message) error {
			def := directory.Lookup(m.Version, m.Release, m.Type)
			if def == nil {
				return nil
			}
			var got, want []directory.Finding
			def.Validate(m, directory.Options{}, func(x directory.Finding) {
				if !known[x.Kind] || x.Segment < 1 || x.Segment > m.Len() || x.Offset < 0 || x.Offset > int64(len(data)) || x.Reason == "" {
					t.Fatalf("finding %+v in a message of %d segments, input of %d bytes", x, m.Len(), len(data))
				}
				got = append(got, x)
			})
			var fresh directory.Checker
			fresh.Begin(def, directory.Options{}, func(x directory.Finding) { want = append(want, x) })
			for i, s := range m.All() {
				fresh.Segment(i, s)
			}
			fresh.End()
			if !slices.Equal(got, want) {
				t.Fatalf("a reused Checker finds\n%v\na new one\n%v", got, want)
			}
			return nil
		})
	})
}
