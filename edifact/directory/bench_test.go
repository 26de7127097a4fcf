package directory_test

import (
	"io"
	"os"
	"runtime"
	"testing"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/edifact/directory"
	"github.com/lazaret/lazaret/internal/edianchor"
)

// benchFile runs fn over the large interchange, reporting MB/s, allocations
// and the heap the process holds at the end.
func benchFile(b *testing.B, fn func(io.Reader)) {
	path := edianchor.LargeInterchange(b)
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	b.ReportAllocs()
	runtime.GC()
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
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapSys)/(1<<20), "heap-sys-MB")
}

// BenchmarkParse is the anchor: edifact.Parse alone, envelope checks in
// constant memory.
func BenchmarkParse(b *testing.B) {
	benchFile(b, func(r io.Reader) {
		if _, err := edifact.Parse(r, edifact.Limits{}, nil); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkParseMessages is Parse handing every message, its segments
// kept, to a callback: what any message check costs before it starts.
func BenchmarkParseMessages(b *testing.B) {
	benchFile(b, func(r io.Reader) {
		n := 0
		if _, err := edifact.Parse(r, edifact.Limits{}, func(m *edifact.Message) error { n += m.Len(); return nil }); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkParseDirectory is Parse with every message checked against its
// directory (the IFTMIN D:99B half; VERMAS has no table and is skipped).
func BenchmarkParseDirectory(b *testing.B) { benchDirectory(b) }

func benchDirectory(b *testing.B) {
	benchFile(b, func(r io.Reader) {
		checked, findings := 0, 0
		report := func(directory.Finding) { findings++ }
		_, err := edifact.Parse(r, edifact.Limits{}, func(m *edifact.Message) error {
			if def := directory.Lookup(m.Version, m.Release, m.Type); def != nil {
				def.Validate(m, directory.Options{}, report)
				checked++
			}
			return nil
		})
		if err != nil || checked == 0 || findings != 0 {
			b.Fatalf("%v: %d messages checked, %d findings", err, checked, findings)
		}
	})
}

// BenchmarkDirectoryOnly is the checker alone over messages parsed
// beforehand (the first 20,000 of the large interchange; SetBytes counts
// their bytes, UNH to UNT), so that its cost is seen apart from Parse's.
func BenchmarkDirectoryOnly(b *testing.B) { benchDirectoryOnly(b, false) }

// BenchmarkDirectorySegments is BenchmarkDirectoryOnly with every message's
// segments held one by one (SetSegments), not in the compact store Parse
// keeps them in: what is left is the checker's own work, which
// DirectoryOnly measures beside the rebuilding of each segment.
func BenchmarkDirectorySegments(b *testing.B) { benchDirectoryOnly(b, true) }

func benchDirectoryOnly(b *testing.B, unpacked bool) {
	f, err := os.Open(edianchor.LargeInterchange(b))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	type parsed struct {
		m   edifact.Message
		def *directory.Message
	}
	var ms []parsed
	var size int64
	stop := io.EOF
	_, err = edifact.Parse(f, edifact.Limits{}, func(m *edifact.Message) error {
		c := m.Clone()
		last := c.Segment(c.Len() - 1)
		size += last.Offset + int64(len(last.Raw())) + 1 - c.Offset
		if unpacked {
			segs := make([]edifact.Segment, 0, m.Len())
			for _, s := range m.All() {
				segs = append(segs, s.Clone())
			}
			c.SetSegments(segs)
		}
		ms = append(ms, parsed{*c, directory.Lookup(m.Version, m.Release, m.Type)})
		if len(ms) == 20000 {
			return stop
		}
		return nil
	})
	if err != stop {
		b.Fatal(err)
	}
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	findings := 0
	report := func(directory.Finding) { findings++ }
	for i := 0; i < b.N; i++ {
		for j := range ms {
			if p := &ms[j]; p.def != nil {
				p.def.Validate(&p.m, directory.Options{}, report)
			}
		}
	}
	if findings != 0 {
		b.Fatalf("%d findings", findings)
	}
}
