package edifact_test

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/fixtures"
)

var (
	bigOnce sync.Once
	bigPath string
)

// bigInterchange is a generated ~50 MB interchange in the temp folder.
func bigInterchange(b *testing.B) string {
	bigOnce.Do(func() {
		bigPath = filepath.Join(os.TempDir(), "lazaret-bench-50mb.edi")
		if st, err := os.Stat(bigPath); err == nil && st.Size() > 50<<20 {
			return
		}
		f, err := os.Create(bigPath + ".partial")
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriterSize(f, 1<<20)
		if err := fixtures.LargeInterchange(w, 50<<20); err != nil {
			b.Fatal(err)
		}
		w.Flush()
		f.Close()
		os.Rename(bigPath+".partial", bigPath)
	})
	return bigPath
}

func benchFile(b *testing.B, fn func(io.Reader)) {
	path := bigInterchange(b)
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	b.ReportAllocs()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		fn(f)
		f.Close()
	}
	b.StopTimer()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapSys)/(1<<20), "heap-sys-MB")
}

// BenchmarkRawSplit is the floor: a bare split on the segment terminator.
func BenchmarkRawSplit(b *testing.B) {
	benchFile(b, func(r io.Reader) {
		br := bufio.NewReaderSize(r, 64<<10)
		n := 0
		for {
			_, err := br.ReadSlice('\'')
			if err == io.EOF {
				break
			}
			n++
		}
		if n < 100000 {
			b.Fatalf("%d segments", n)
		}
	})
}

// BenchmarkParse: every segment, element and component with its offset,
// and every envelope check, in constant memory.
func BenchmarkParse(b *testing.B) {
	benchFile(b, func(r io.Reader) {
		if _, err := edifact.Parse(r, edifact.Limits{}, nil); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkParseMessages also hands every message, with copies of its
// segments, to a callback (what the validation tiers use).
func BenchmarkParseMessages(b *testing.B) {
	benchFile(b, func(r io.Reader) {
		n := 0
		if _, err := edifact.Parse(r, edifact.Limits{}, func(m *edifact.Message) error { n += len(m.Segments); return nil }); err != nil {
			b.Fatal(err)
		}
	})
}
