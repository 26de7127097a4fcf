package testenv

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Seeds adds a fuzz target's seeds, and with LAZARET_WRITE_SEEDS=1 (make
// fuzz-seeds) also writes each as a file of the target's committed seed
// corpus, testdata/fuzz/<Target>/, in the go fuzz v1 encoding. Only seeds
// Lazaret makes itself go through it: inputs read from ../shared/corpus
// are third-party files, added with f.Add and never copied in.
type Seeds struct {
	f     *testing.F
	write bool
	dir   string
}

// NewSeeds starts the seeds of fuzz target f.
func NewSeeds(f *testing.F) *Seeds {
	return &Seeds{f: f, write: os.Getenv("LAZARET_WRITE_SEEDS") == "1", dir: filepath.Join("testdata", "fuzz", f.Name())}
}

// Add adds one seed (the values of one call of the fuzz function).
func (s *Seeds) Add(args ...any) {
	s.f.Helper()
	s.f.Add(args...)
	if !s.write {
		return
	}
	var b strings.Builder
	b.WriteString("go test fuzz v1\n")
	for _, a := range args {
		switch v := a.(type) {
		case []byte:
			fmt.Fprintf(&b, "[]byte(%q)\n", v)
		case string:
			fmt.Fprintf(&b, "string(%q)\n", v)
		default: // ints, uints, bool, floats: their Go literal
			fmt.Fprintf(&b, "%T(%v)\n", v, v)
		}
	}
	sum := sha256.Sum256([]byte(b.String()))
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		s.f.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.dir, hex.EncodeToString(sum[:8])), []byte(b.String()), 0o644); err != nil {
		s.f.Fatal(err)
	}
}
