package validate_test

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kzlib "github.com/klauspost/compress/zlib"
	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/tiff"
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
		sha256Read(b, path, buf)
	}
}

// sha256Read is the fixity floor: the file read through SHA-256 with buf.
func sha256Read(b *testing.B, path string, buf []byte) {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.CopyBuffer(h, f, buf); err != nil {
		b.Fatal(err)
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

// Noisy masters (fixtures.Noisy): content that compresses as real masters
// do, written once per machine into the temp folder like benchMasters.
var noisyMasters = map[string]fixtures.Noisy{
	"none":     {Width: 8000, Height: 6000, Samples: 3, Compression: 1, Seed: 1},
	"lzw":      {Width: 8000, Height: 6000, Samples: 3, Compression: 5, Seed: 1},
	"deflate":  {Width: 8000, Height: 6000, Samples: 3, Compression: 8, Seed: 1},
	"packbits": {Width: 8000, Height: 6000, Samples: 3, Compression: 32773, Seed: 1},
}

// smallMasters are the size of the items of a typical small-item batch:
// about 4 KB and 64 KB of pixels, in each compression.
var smallMasters = map[string]fixtures.Noisy{}

func init() {
	for _, c := range []struct {
		name string
		code int
	}{{"none", 1}, {"lzw", 5}, {"deflate", 8}, {"packbits", 32773}} {
		smallMasters["4K-"+c.name] = fixtures.Noisy{Width: 36, Height: 36, Samples: 3, Compression: c.code, Seed: 2}
		smallMasters["64K-"+c.name] = fixtures.Noisy{Width: 148, Height: 148, Samples: 3, Compression: c.code, Seed: 2}
	}
}

func noisyFile(b *testing.B, key string, m fixtures.Noisy) string {
	b.Helper()
	benchMu.Lock()
	defer benchMu.Unlock()
	path := filepath.Join(os.TempDir(), fmt.Sprintf("lazaret-bench-noisy-%dx%dx%d-c%d-s%d.tif", m.Width, m.Height, m.Samples, m.Compression, m.Seed))
	if _, err := os.Stat(path); err == nil {
		return path
	}
	data, err := fixtures.NoisyTIFF(m)
	if err != nil {
		b.Fatal(err)
	}
	tmp := path + ".partial"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		b.Fatal(err)
	}
	return path
}

func pixelMB(m fixtures.Noisy) float64 { return float64(m.Width*m.Height*m.Samples) / (1 << 20) }

// BenchmarkNoisy: master validation with fixity (CheckMaster) over the
// noisy 8000x6000 RGB master in each compression. MB/s is of the file,
// pixel-MB/s of the pixels it holds.
func BenchmarkNoisy(b *testing.B) {
	for _, name := range []string{"none", "lzw", "deflate", "packbits"} {
		m := noisyMasters[name]
		b.Run(name, func(b *testing.B) {
			path := noisyFile(b, name, m)
			st, _ := os.Stat(path)
			b.SetBytes(st.Size())
			b.ReportAllocs()
			pol := validate.DefaultMasterPolicy()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := validate.CheckMaster(context.Background(), path, nil, pol); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(pixelMB(m)/(b.Elapsed().Seconds()/float64(b.N)), "pixel-MB/s")
			b.ReportMetric(float64(st.Size())/(1<<20), "file-MB")
		})
	}
}

// BenchmarkNoisyVsAnchors times, in each iteration and in rotating order,
// the three readings of the same noisy master: CheckMaster, libtiff's
// `tiffinfo -D` (which decodes every strip; skipped when not installed)
// and a plain SHA-256 of the file. It reports each one's pixel-MB/s and
// CheckMaster's throughput as a multiple of the anchors' (x-tiffinfo,
// x-sha256: above 1 is faster). On a machine shared with other work the
// wall-clock ratio at two cores says more about the neighbours than about
// Lazaret, so it also reports the CPU time both took: x-tiffinfo-cpu is
// the ratio per core (CheckMaster's pixels per CPU-second over tiffinfo's,
// which uses one core) and check-cores how many cores CheckMaster kept
// busy; on an idle machine x-tiffinfo is about their product. The inflate
// backend (tiff.InflateBackend) is in the benchmark's log.
func BenchmarkNoisyVsAnchors(b *testing.B) {
	b.Logf("inflate: %s", tiff.InflateBackend())
	tiffinfo, _ := exec.LookPath("tiffinfo")
	for _, name := range []string{"none", "lzw", "deflate", "packbits"} {
		m := noisyMasters[name]
		b.Run(name, func(b *testing.B) {
			path := noisyFile(b, name, m)
			pol := validate.DefaultMasterPolicy()
			buf := make([]byte, 1<<20)
			var tCheck, tInfo, tSHA, cCheck, cInfo time.Duration
			runs := []func(){
				func() {
					t0, c0 := time.Now(), processCPU()
					if _, err := validate.CheckMaster(context.Background(), path, nil, pol); err != nil {
						b.Fatal(err)
					}
					tCheck += time.Since(t0)
					cCheck += processCPU() - c0
				},
				func() {
					if tiffinfo == "" {
						return
					}
					t0 := time.Now()
					cmd := exec.Command(tiffinfo, "-D", path)
					var stderr strings.Builder
					cmd.Stderr = &stderr
					if err := cmd.Run(); err != nil || stderr.Len() > 0 {
						b.Fatalf("tiffinfo -D: %v: %s", err, stderr.String())
					}
					tInfo += time.Since(t0)
					cInfo += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
				},
				func() {
					t0 := time.Now()
					sha256Read(b, path, buf)
					tSHA += time.Since(t0)
				},
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for j := range runs {
					runs[(i+j)%len(runs)]()
				}
			}
			px := pixelMB(m) * float64(b.N)
			b.ReportMetric(px/tCheck.Seconds(), "check-pixel-MB/s")
			b.ReportMetric(px/tSHA.Seconds(), "sha256-pixel-MB/s")
			b.ReportMetric(tSHA.Seconds()/tCheck.Seconds(), "x-sha256")
			if tiffinfo != "" {
				b.ReportMetric(px/tInfo.Seconds(), "tiffinfo-pixel-MB/s")
				b.ReportMetric(tInfo.Seconds()/tCheck.Seconds(), "x-tiffinfo")
				if cCheck > 0 && cInfo > 0 {
					b.ReportMetric(cInfo.Seconds()/cCheck.Seconds(), "x-tiffinfo-cpu")
					b.ReportMetric(cCheck.Seconds()/tCheck.Seconds(), "check-cores")
				}
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkSmall: CheckMaster over 4 KB and 64 KB noisy masters, the items
// of a small-item batch; allocs/op and B/op are the figures to watch.
func BenchmarkSmall(b *testing.B) {
	names := make([]string, 0, len(smallMasters))
	for k := range smallMasters {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		m := smallMasters[name]
		b.Run(name, func(b *testing.B) {
			path := noisyFile(b, name, m)
			st, _ := os.Stat(path)
			b.SetBytes(st.Size())
			b.ReportAllocs()
			pol := validate.DefaultMasterPolicy()
			for i := 0; i < b.N; i++ {
				if _, err := validate.CheckMaster(context.Background(), path, nil, pol); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkInflateNoisy: the strips of the noisy Deflate master inflated
// from memory, checksum included, by compress/zlib and by
// klauspost/compress/zlib (which the strict count uses: this is the
// measurement that chose it). One goroutine.
func BenchmarkInflateNoisy(b *testing.B) {
	path := noisyFile(b, "deflate", noisyMasters["deflate"])
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	info, err := tiff.WalkTIFF(bytes.NewReader(data), int64(len(data)), tiff.DefaultLimits)
	if err != nil {
		b.Fatal(err)
	}
	p := info.Pages[0]
	buf := make([]byte, 32<<10)
	for _, lib := range []string{"std", "klauspost"} {
		b.Run(lib, func(b *testing.B) {
			var z io.ReadCloser
			var out int64
			for i := 0; i < b.N; i++ {
				for j := range p.BlockOffsets {
					src := bytes.NewReader(data[p.BlockOffsets[j] : p.BlockOffsets[j]+p.BlockCounts[j]])
					var err error
					switch {
					case z == nil && lib == "std":
						z, err = zlib.NewReader(src)
					case z == nil:
						z, err = kzlib.NewReader(src)
					case lib == "std":
						err = z.(zlib.Resetter).Reset(src, nil)
					default:
						err = z.(kzlib.Resetter).Reset(src, nil)
					}
					if err != nil {
						b.Fatal(err)
					}
					n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{z}, buf)
					if err != nil {
						b.Fatal(err)
					}
					out += n
				}
			}
			b.ReportMetric(float64(out)/(1<<20)/b.Elapsed().Seconds(), "pixel-MB/s")
		})
	}
}
