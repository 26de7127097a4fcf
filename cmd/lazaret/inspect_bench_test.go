package main

import (
	"context"
	"os"
	"testing"

	"github.com/lazaret/lazaret/internal/edianchor"
)

// BenchmarkInspect runs `lazaret inspect --json` on the large interchange
// in this process, its output to /dev/null: the one to profile
// (-cpuprofile, -memprofile). The directory's tables and other one-off
// costs are paid in the first iteration only.
func BenchmarkInspect(b *testing.B) {
	path := edianchor.LargeInterchange(b)
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devNull.Close()
	b.SetBytes(st.Size())
	b.ReportAllocs()
	for b.Loop() {
		if err := run(context.Background(), []string{"inspect", "--json", path}, devNull, os.Stderr); err != nil {
			b.Fatal(err)
		}
	}
}
