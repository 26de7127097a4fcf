package validate_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/validate"
)

// Large generated masters for benchmarks, written once per machine into the
// temp folder (they are hundreds of MB: never committed).
var benchMasters = map[string][]fixtures.Page{
	"rgb8000x6000-none":    {{Width: 8000, Height: 6000, Samples: 3, RowsPerStrip: 16}},
	"rgb8000x6000-deflate": {{Width: 8000, Height: 6000, Samples: 3, RowsPerStrip: 16, Deflate: true}},
	"rgb1000x800x50-none":  repeatPage(fixtures.Page{Width: 1000, Height: 800, Samples: 3, RowsPerStrip: 16}, 50),
}

func repeatPage(p fixtures.Page, n int) []fixtures.Page {
	out := make([]fixtures.Page, n)
	for i := range out {
		out[i] = p
	}
	return out
}

var benchMu sync.Mutex

func benchMaster(b *testing.B, name string) string {
	b.Helper()
	benchMu.Lock()
	defer benchMu.Unlock()
	path := filepath.Join(os.TempDir(), "lazaret-bench-"+name+".tif")
	if _, err := os.Stat(path); err == nil {
		return path
	}
	tmp := path + ".partial"
	f, err := os.Create(tmp)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 4<<20)
	if _, err := fixtures.WriteTIFF(w, benchMasters[name]); err != nil {
		b.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	if err := os.Rename(tmp, path); err != nil {
		b.Fatal(err)
	}
	return path
}

// peakHeap samples the live heap while fn runs and returns the largest value.
func peakHeap(fn func()) uint64 {
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	fn()
	close(stop)
	<-done
	return peak.Load()
}

func benchCheckMaster(b *testing.B, name string) { benchCheck(b, name, validate.DefaultMasterPolicy()) }

func benchCheck(b *testing.B, name string, pol validate.MasterPolicy) {
	path := benchMaster(b, name)
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	b.ReportAllocs()
	check := func() {
		if _, err := validate.CheckMaster(context.Background(), path, nil, pol); err != nil {
			b.Fatal(err)
		}
	}
	runtime.GC()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		check()
	}
	b.StopTimer()
	// Peak heap is sampled in one extra run outside the timing: sampling
	// stops the world and would distort the throughput.
	runtime.GC()
	b.ReportMetric(float64(peakHeap(check))/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(st.Size())/(1<<20), "file-MB")
	var raw float64
	for _, p := range benchMasters[name] {
		raw += float64(p.Width * p.Height * p.Samples)
	}
	b.ReportMetric(raw/(1<<20)/(b.Elapsed().Seconds()/float64(b.N)), "pixel-MB/s")
}

func benchSHA256(b *testing.B, name string) {
	path := benchMaster(b, name)
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	buf := make([]byte, 1<<20)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		h := sha256.New()
		if _, err := io.CopyBuffer(h, f, buf); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

func BenchmarkSHA256Read_8000x6000_None(b *testing.B)    { benchSHA256(b, "rgb8000x6000-none") }
func BenchmarkCheckMaster_8000x6000_None(b *testing.B)   { benchCheckMaster(b, "rgb8000x6000-none") }
func BenchmarkSHA256Read_8000x6000_Deflate(b *testing.B) { benchSHA256(b, "rgb8000x6000-deflate") }
func BenchmarkCheckMaster_8000x6000_Deflate(b *testing.B) {
	benchCheckMaster(b, "rgb8000x6000-deflate")
}
func BenchmarkSHA256Read_50Pages(b *testing.B)  { benchSHA256(b, "rgb1000x800x50-none") }
func BenchmarkCheckMaster_50Pages(b *testing.B) { benchCheckMaster(b, "rgb1000x800x50-none") }

// The same uncompressed master with the image decoder forced over it.
func BenchmarkCheckMaster_8000x6000_None_FullDecode(b *testing.B) {
	pol := validate.DefaultMasterPolicy()
	pol.DecodeUncompressed = true
	benchCheck(b, "rgb8000x6000-none", pol)
}
