package validate

import (
	"bytes"
	"compress/flate"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	kflate "github.com/klauspost/compress/flate"
)

// goInflate is what Go's decoder makes of a raw Deflate stream: the bytes
// it decompresses to and whether it ended without an error.
func goInflate(src []byte) ([]byte, bool) {
	out, err := io.ReadAll(io.LimitReader(kflate.NewReader(bytes.NewReader(src)), 1<<20))
	return out, err == nil
}

// deflateSamples are streams from Go's encoders at every level (stored,
// fixed, dynamic, Huffman-only), over noise, text-like and constant data.
func deflateSamples(t testing.TB) [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	var out [][]byte
	for _, size := range []int{0, 1, 7, 300, 5000, 70000} {
		noise := make([]byte, size)
		for i := range noise {
			noise[i] = byte(rng.IntN(256))
		}
		text := bytes.Repeat([]byte("lazaret quarantine "), size/19+1)[:size]
		flat := make([]byte, size)
		for _, data := range [][]byte{noise, text, flat} {
			for _, level := range []int{flate.NoCompression, flate.BestSpeed, 5, flate.BestCompression, flate.HuffmanOnly} {
				var b bytes.Buffer
				w, err := flate.NewWriter(&b, level)
				if err != nil {
					t.Fatal(err)
				}
				w.Write(data)
				w.Close()
				out = append(out, b.Bytes())
			}
		}
	}
	return out
}

func strictOK(s *deflateScan, src, out []byte) bool {
	end, ok := strictDeflate(s, src, out)
	if ok && (end < 1 || end > len(src)) {
		panic("strictDeflate: end outside src")
	}
	return ok
}

func TestStrictDeflateAgreesWithGo(t *testing.T) {
	var s deflateScan
	for i, src := range deflateSamples(t) {
		out, wok := goInflate(src)
		if !wok || !strictOK(&s, src, out) {
			t.Errorf("sample %d: Go %v, strict refuses", i, wok)
		}
		if len(out) > 0 {
			bad := bytes.Clone(out)
			bad[len(bad)/2]++
			if strictOK(&s, src, bad) || strictOK(&s, src, out[:len(out)-1]) || strictOK(&s, src, append(out, 0)) {
				t.Errorf("sample %d: strict accepts output Go does not make", i)
			}
		}
	}
}

// FuzzStrictDeflate: strictDeflate accepts a stream with the output Go's
// decoder makes of it exactly when that decoder reads it without an
// error, and it accepts no other output (one byte changed, one short).
func FuzzStrictDeflate(f *testing.F) {
	for _, src := range deflateSamples(f) {
		if len(src) < 4000 {
			f.Add(src, uint16(0))
		}
	}
	var s deflateScan
	f.Fuzz(func(t *testing.T, src []byte, at uint16) {
		out, wok := goInflate(src)
		if ok := strictOK(&s, src, out); ok != wok {
			t.Fatalf("strict says %v, Go says %v (%d bytes)", ok, wok, len(out))
		}
		if len(out) == 0 {
			return
		}
		bad := bytes.Clone(out)
		bad[int(at)%len(bad)]++
		if strictOK(&s, src, bad) || strictOK(&s, src, out[:len(out)-1]) {
			t.Fatalf("strict accepts output Go does not make")
		}
	})
}

// BenchmarkStrictDeflate: strictDeflate over the strips of the noisy
// Deflate master, from memory, one goroutine.
func BenchmarkStrictDeflate(b *testing.B) {
	path := filepath.Join(os.TempDir(), "lazaret-bench-noisy-8000x6000x3-c8-s1.tif")
	data, err := os.ReadFile(path)
	if err != nil {
		b.Skip("run BenchmarkNoisy first: ", err)
	}
	info, err := WalkTIFF(bytes.NewReader(data), int64(len(data)), DefaultLimits)
	if err != nil {
		b.Fatal(err)
	}
	p := info.Pages[0]
	var s deflateScan
	outs := make([][]byte, len(p.BlockOffsets))
	for j := range p.BlockOffsets {
		outs[j], _ = goInflate(data[p.BlockOffsets[j]+2 : p.BlockOffsets[j]+p.BlockCounts[j]])
	}
	var n int
	b.SetBytes(int64(pageBytes(&p)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range p.BlockOffsets {
			if !strictOK(&s, data[p.BlockOffsets[j]+2:p.BlockOffsets[j]+p.BlockCounts[j]], outs[j]) {
				b.Fatal("strip", j)
			}
			n += len(outs[j])
		}
	}
	b.ReportMetric(float64(n)/(1<<20)/b.Elapsed().Seconds(), "pixel-MB/s")
}
