package tiff

import (
	"bytes"
	"compress/zlib"
	"hash/adler32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/internal/testenv"
)

// Both inflate backends of the strict count give the same answer: what
// inflateWhole (wholeFlate, or zlib in the zlib build) accepts, klauspost
// and compress/zlib count to the same length without an error. Anything
// inflateWhole does not accept is counted by klauspost, so these tests are
// the whole difference between inflateWhole and the streaming count.

// countBoth counts the zlib block src with a bound of bound bytes both
// ways: whole reports whether inflateWhole accepted it (and got what it
// counted), and goGot, goErr are klauspost's count (limit bound+1).
func countBoth(t testing.TB, src []byte, bound uint64) (whole bool, got, goGot uint64, goErr error) {
	t.Helper()
	in := newInflater(bytes.NewReader(src))
	in.lzw = new(lzwTable)
	in.whole = make([]byte, len(src))
	copy(in.whole, src)
	in.wi = newWholeInflater()
	in.out = make([]byte, 0, bound)
	got, whole = in.inflateWhole(src, bound+1)
	// klauspost, on the same bytes: the block streamed (whole has capacity
	// 0, so count reads through the SectionReader and bufio).
	k := newInflater(bytes.NewReader(src))
	k.lzw = new(lzwTable)
	p := &Page{Compression: 8, BlockOffsets: []uint64{0}, BlockCounts: []uint64{uint64(len(src))}}
	goGot, _, goErr = k.count(p, 0, bound+1)
	return whole, got, goGot, goErr
}

func checkBoth(t testing.TB, name string, src []byte, bound uint64) (whole bool) {
	t.Helper()
	whole, got, goGot, goErr := countBoth(t, src, bound)
	if whole && (goErr != nil || goGot != got || got > bound) {
		t.Errorf("%s: the whole inflater counted %d of at most %d; klauspost %d, %v", name, got, bound, goGot, goErr)
	}
	if whole {
		// And what compress/zlib, the decoder's inflater, reads.
		std, err := zlib.NewReader(bytes.NewReader(src))
		if err == nil {
			var n int64
			n, err = io.Copy(io.Discard, std)
			if err == nil && uint64(n) != got {
				t.Errorf("%s: the whole inflater counted %d; compress/zlib %d", name, got, n)
			}
		}
		if err != nil {
			t.Errorf("%s: the whole inflater counted %d; compress/zlib: %v", name, got, err)
		}
	}
	return whole
}

// TestInflateBackendsOnCorpus: every Deflate strip and tile of the shared
// corpus (good, edge and bad files), counted both ways against its bound.
func TestInflateBackendsOnCorpus(t *testing.T) {
	t.Parallel()
	var blocks, whole, goOK int
	for _, sub := range []string{"good", "edge", "bad"} {
		files, _ := filepath.Glob(filepath.Join(testenv.Corpus(t, "tiff", sub), "*"))
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			info, err := WalkTIFF(bytes.NewReader(data), int64(len(data)), DefaultLimits)
			if info == nil {
				continue
			}
			_ = err // a walk that fails part way still lists the pages before
			for pi := range info.Pages {
				p := &info.Pages[pi]
				if p.Compression != 8 && p.Compression != 32946 {
					continue
				}
				for i := range p.BlockOffsets {
					off, n := p.BlockOffsets[i], p.BlockCounts[i]
					if off > uint64(len(data)) || n > uint64(len(data))-off {
						continue
					}
					bound := blockBound(p, i)
					blocks++
					if checkBoth(t, filepath.Base(f), data[off:off+n], bound) {
						whole++
					}
					if _, _, goGot, err := countBoth(t, data[off:off+n], bound); err == nil && goGot <= bound {
						goOK++
					}
				}
			}
		}
	}
	t.Logf("%s: %d Deflate blocks, %d read by klauspost, %d by the whole inflater", InflateBackend(), blocks, goOK, whole)
	if blocks == 0 {
		t.Fatal("no Deflate blocks in the corpus")
	}
	if whole != goOK {
		// Not a verdict difference (klauspost counts those), but the
		// zlib build would be no faster on real files.
		t.Errorf("the whole inflater read %d of the %d blocks klauspost reads", whole, goOK)
	}
}

// zlibOf compresses data at level.
func zlibOf(t testing.TB, data []byte, level int) []byte {
	var b bytes.Buffer
	w, err := zlib.NewWriterLevel(&b, level)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(data)
	w.Close()
	return b.Bytes()
}

// bitWriter writes a Deflate stream by hand (fixtures.DeflateWriter),
// with the fixed code's literals and a zlib wrapper.
type bitWriter struct{ fixtures.DeflateWriter }

// fixedLiteral writes literal b in the fixed Huffman code.
func (w *bitWriter) fixedLiteral(b byte) {
	if b < 144 {
		w.Code(0x30+uint64(b), 8)
	} else {
		w.Code(0x190+uint64(b-144), 9)
	}
}

// zlibWrap puts a zlib header before the Deflate stream of w and the
// Adler-32 of want after it.
func (w *bitWriter) zlibWrap(want []byte) []byte {
	w.Flush()
	a := adler32.Checksum(want)
	return append(append([]byte{0x78, 0x01}, w.Bytes...), byte(a>>24), byte(a>>16), byte(a>>8), byte(a))
}

// lenientStreams are zlib streams libdeflate decompresses (to the bytes
// given, which their checksums are of) and Go's decoders refuse.
func lenientStreams() map[string][2][]byte {
	out := map[string][2][]byte{}
	// Distance symbol 30 in a fixed block (libdeflate: distance 24577 and
	// 13 extra bits).
	var w bitWriter
	w.Bits(1, 1) // BFINAL
	w.Bits(1, 2) // fixed
	for i := 0; i < 30000; i++ {
		w.fixedLiteral('a')
	}
	w.Code(1, 7)  // length symbol 257: 3 bytes
	w.Code(30, 5) // distance symbol 30
	w.Bits(0, 13) // its extra bits
	w.Code(0, 7)  // end of block
	want := bytes.Repeat([]byte("a"), 30003)
	out["distance symbol 30"] = [2][]byte{w.zlibWrap(want), want}
	// Length symbol 286 in a fixed block (libdeflate: length 258).
	w = bitWriter{}
	w.Bits(1, 1)
	w.Bits(1, 2)
	w.fixedLiteral('b')
	w.Code(0xc6, 8) // literal/length symbol 286
	w.Code(0, 5)    // distance symbol 0: 1
	w.Code(0, 7)
	want = bytes.Repeat([]byte("b"), 259)
	out["length symbol 286"] = [2][]byte{w.zlibWrap(want), want}
	return out
}

// TestLenientStreamsRefused: a stream libdeflate reads and Go's decoder
// does not (the reason the zlib build does not use libdeflate) is not
// counted by the whole inflater either, so it fails in both builds.
func TestLenientStreamsRefused(t *testing.T) {
	t.Parallel()
	for name, c := range lenientStreams() {
		src, want := c[0], c[1]
		whole, _, _, goErr := countBoth(t, src, uint64(len(want)+10))
		if goErr == nil {
			t.Errorf("%s: Go's decoder reads it", name)
		}
		if whole {
			t.Errorf("%s: the whole inflater counted it", name)
		}
	}
}

// hostileSeeds are zlib streams around the edges: valid, truncated, with
// trailing bytes, a wrong checksum, bounds below and above their output.
func hostileSeeds(t testing.TB) (srcs [][]byte, bounds []uint32) {
	rng := rand.New(rand.NewPCG(3, 4))
	noise := make([]byte, 3000)
	for i := range noise {
		noise[i] = byte(rng.IntN(256)) & 0xf3
	}
	for _, level := range []int{0, 1, 6, 9, -2} {
		z := zlibOf(t, noise, level)
		for _, b := range []uint32{3000, 2999, 3001, 0, 1} {
			srcs, bounds = append(srcs, z), append(bounds, b)
		}
		srcs, bounds = append(srcs, z[:len(z)-1], z[:len(z)-5], z[:len(z)/2], append(bytes.Clone(z), 1, 2, 3)), append(bounds, 3000, 3000, 3000, 3000)
		bad := bytes.Clone(z)
		bad[len(bad)-1] ^= 1
		srcs, bounds = append(srcs, bad), append(bounds, 3000)
	}
	for _, c := range lenientStreams() {
		srcs, bounds = append(srcs, c[0]), append(bounds, uint32(len(c[1])))
	}
	return srcs, bounds
}

func TestInflateBackendsOnHostileStreams(t *testing.T) {
	t.Parallel()
	srcs, bounds := hostileSeeds(t)
	whole := 0
	for i := range srcs {
		if checkBoth(t, "seed", srcs[i], uint64(bounds[i])) {
			whole++
		}
	}
	if whole == 0 {
		t.Error("the whole inflater counted no seed")
	}
}

// FuzzInflateBackends: on any bytes and bound, what the whole inflater
// counts klauspost counts the same, without an error.
func FuzzInflateBackends(f *testing.F) {
	srcs, bounds := hostileSeeds(f)
	seeds := testenv.NewSeeds(f)
	for i := range srcs {
		seeds.Add(srcs[i], bounds[i])
	}
	f.Fuzz(func(t *testing.T, src []byte, bound uint32) {
		checkBoth(t, "input", src, uint64(bound%(1<<20)))
	})
}

// BenchmarkInflateNoisy: one noisy strip (8000 RGB pixels by 16 rows, as
// the noisy master's) counted by the build's whole inflater and by
// klauspost. MB/s is of the pixels.
func BenchmarkInflateNoisy(b *testing.B) {
	b.Run("whole", func(b *testing.B) { benchInflate(b, true) })
	b.Run("klauspost", func(b *testing.B) { benchInflate(b, false) })
}

func benchInflate(b *testing.B, whole bool) {
	data, err := fixtures.NoisyTIFF(fixtures.Noisy{Width: 8000, Height: 16, Samples: 3, RowsPerStrip: 16, Compression: 8, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	info, err := WalkTIFF(bytes.NewReader(data), int64(len(data)), DefaultLimits)
	if err != nil {
		b.Fatal(err)
	}
	p := &info.Pages[0]
	bound := blockBound(p, 0)
	in := newInflater(bytes.NewReader(data))
	in.lzw = new(lzwTable)
	if whole {
		in.whole = make([]byte, 0, p.BlockCounts[0])
		in.wi = newWholeInflater()
		in.out = make([]byte, 0, blockLimit(bound))
	}
	b.SetBytes(int64(bound))
	b.ReportAllocs()
	for b.Loop() {
		if got, _, err := in.count(p, 0, blockLimit(bound)+1); err != nil || got != bound {
			b.Fatalf("counted %d, %v; want %d", got, err, bound)
		}
	}
}
