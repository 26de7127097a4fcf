package tiff

import (
	"bytes"
	"compress/zlib"
	"hash/adler32"
	"io"
	"math/rand/v2"
	"testing"
)

// skewed is size bytes whose values fall off exponentially (scale: the
// mean), with runs copied from up to 40 KB back: Huffman codes of up to
// 15 bits and matches at every distance.
func skewed(rng *rand.Rand, size int, scale float64) []byte {
	data := make([]byte, 0, size)
	for len(data) < size {
		if len(data) > 300 && rng.IntN(8) == 0 {
			back := 1 + rng.IntN(min(len(data), 40000))
			n := min(3+rng.IntN(300), size-len(data))
			for range n {
				data = append(data, data[len(data)-back])
			}
			continue
		}
		data = append(data, byte(min(255, rng.ExpFloat64()*scale)))
	}
	return data
}

// TestWholeFlateAsStdlib: wholeFlate reads the streams compress/zlib
// writes at every level to their bytes, and of those streams with a bit
// flipped or cut short it accepts only what compress/zlib reads, to the
// same bytes and the same end.
func TestWholeFlateAsStdlib(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	var f wholeFlate
	out := make([]byte, 100_000)
	accepted := 0
	for _, size := range []int{0, 1, 100, 5000, 70000} {
		for _, scale := range []float64{0.5, 3, 40} {
			data := skewed(rng, size, scale)
			for _, level := range []int{0, 1, 6, 9, -2} {
				z := zlibOf(t, data, level)
				n, used, ok := f.zlib(z, out)
				if !ok || !bytes.Equal(out[:n], data) || used != len(z) {
					t.Fatalf("size %d scale %v level %d: read %v, %d bytes (equal %v), took %d of %d", size, scale, level, ok, n, bytes.Equal(out[:n], data), used, len(z))
				}
				for k := range 40 {
					bad := bytes.Clone(z)
					if k%8 == 7 {
						bad = bad[:rng.IntN(len(bad))]
					} else {
						bad[rng.IntN(len(bad))] ^= 1 << rng.IntN(8)
					}
					if asStdlib(t, &f, bad, out) {
						accepted++
					}
				}
			}
		}
	}
	t.Logf("%d damaged streams read the same by both", accepted)
}

// asStdlib checks wholeFlate against compress/zlib on src: whatever it
// reads, compress/zlib reads to the same bytes, ending at the same byte.
func asStdlib(t *testing.T, f *wholeFlate, src, out []byte) (ok bool) {
	t.Helper()
	n, used, ok := f.zlib(src, out)
	if !ok {
		return false
	}
	r := bytes.NewReader(src)
	std, err := zlib.NewReader(r)
	var got []byte
	if err == nil {
		got, err = io.ReadAll(std)
	}
	if err != nil || !bytes.Equal(got, out[:n]) || used != len(src)-r.Len() {
		t.Errorf("wholeFlate read %d bytes, took %d; compress/zlib read %d (equal %v), took %d: %v",
			n, used, len(got), bytes.Equal(got, out[:n]), len(src)-r.Len(), err)
	}
	return true
}

// TestAdler32Sum: adler32Sum is hash/adler32's, at every length around
// its steps and reductions and on bytes that make the largest sums.
func TestAdler32Sum(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	data := make([]byte, 70000)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	ff := bytes.Repeat([]byte{0xff}, len(data))
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 4095, 4096, 4097, 4103, 4104, 5552, 5553, 8192, 65536, 70000} {
		for _, p := range [][]byte{data[:n], ff[:n], data[len(data)-n:]} {
			if got, want := adler32Sum(p), adler32.Checksum(p); got != want {
				t.Errorf("%d bytes: %08x, want %08x", n, got, want)
			}
		}
	}
}

// TestWholeFlateLeavesTinyBlocks: a stream of dynamic blocks of a few
// hundred bytes each (a table built for every 300 bytes made) is left to
// klauspost, which reads it; blocks of a few KiB are read whole.
func TestWholeFlateLeavesTinyBlocks(t *testing.T) {
	t.Parallel()
	data := skewed(rand.New(rand.NewPCG(1, 2)), 100_000, 3)
	for _, c := range []struct {
		chunk int
		whole bool
	}{{300, false}, {5000, true}} {
		var b bytes.Buffer
		w, err := zlib.NewWriterLevel(&b, zlib.HuffmanOnly) // dynamic blocks, one a flush
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(data); i += c.chunk {
			w.Write(data[i:min(i+c.chunk, len(data))])
			w.Flush()
		}
		w.Close()
		var f wholeFlate
		_, _, whole := f.zlib(b.Bytes(), make([]byte, len(data)))
		_, _, goGot, goErr := countBoth(t, b.Bytes(), uint64(len(data)))
		if whole != c.whole || goErr != nil || goGot != uint64(len(data)) {
			t.Errorf("blocks of %d bytes: read whole %v, want %v; klauspost %d of %d, %v", c.chunk, whole, c.whole, goGot, len(data), goErr)
		}
	}
}
