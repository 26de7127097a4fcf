package tiff_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/tiff"
)

// countingReader counts the bytes read from r.
type countingReader struct {
	r *bytes.Reader
	n atomic.Int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n.Add(int64(n))
	return n, err
}

// TestCompressedBlocksReadOnce: checking the pixel data of a valid LZW,
// Deflate or PackBits page reads each block once — it is not counted and
// then decoded again.
func TestCompressedBlocksReadOnce(t *testing.T) {
	t.Parallel()
	for _, c := range []int{5, 8, 32773} {
		data, err := fixtures.NoisyTIFF(fixtures.Noisy{Width: 300, Height: 200, Samples: 3, RowsPerStrip: 16, Compression: c, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		info, err := tiff.WalkTIFF(bytes.NewReader(data), int64(len(data)), tiff.DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		var blocks int64
		for _, n := range info.Pages[0].BlockCounts {
			blocks += int64(n)
		}
		cr := &countingReader{r: bytes.NewReader(data)}
		skipped, err := tiff.DecodePages(cr, info, tiff.DecodeOptions{PixelBudget: 1 << 30})
		if err != nil || len(skipped) != 0 {
			t.Fatalf("compression %d: %v %v", c, skipped, err)
		}
		// The IFD and a few header reads come on top of the blocks.
		if got := cr.n.Load(); got > blocks+4096 {
			t.Errorf("compression %d: read %d bytes for %d bytes of blocks", c, got, blocks)
		}
	}
}

// TestFastCountAsDecoder: on damaged LZW, Deflate and PackBits masters the
// strict count (the default) and the image decoder (DecodeUncompressed)
// give the same verdict: the same error, warnings and skipped pages.
func TestFastCountAsDecoder(t *testing.T) {
	t.Parallel()
	geos := []fixtures.Noisy{
		{Width: 61, Height: 53, Samples: 3, RowsPerStrip: 8, Seed: 9},
		{Width: 40, Height: 30, Samples: 1, RowsPerStrip: 30, Seed: 4},
	}
	for _, g := range geos {
		for _, c := range []int{5, 8, 32773} {
			g.Compression = c
			clean, err := fixtures.NoisyTIFF(g)
			if err != nil {
				t.Fatal(err)
			}
			info, err := tiff.WalkTIFF(bytes.NewReader(clean), int64(len(clean)), tiff.DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			p := info.Pages[0]
			start := int(p.BlockOffsets[0])
			state := uint64(c)
			rnd := func(n int) int {
				state = state*6364136223846793005 + 1442695040888963407
				return int(state>>33) % n
			}
			for k := 0; k < 300; k++ {
				data := append([]byte(nil), clean...)
				for j := 0; j <= k%4; j++ {
					at := start + rnd(len(data)-start)
					switch k % 3 {
					case 0:
						data[at] ^= byte(1 << rnd(8))
					case 1:
						data[at] = byte(rnd(256))
					default:
						data[at] = 0x80 // a PackBits no-op, an odd LZW code
					}
				}
				name := fmt.Sprintf("%dx%dx%d c%d damage %d", g.Width, g.Height, g.Samples, c, k)
				fast, fastWarn, fastErr := decodeWith(t, data, false)
				dec, decWarn, decErr := decodeWith(t, data, true)
				if fmt.Sprint(fastErr) != fmt.Sprint(decErr) || !reflect.DeepEqual(fastErr, decErr) {
					t.Errorf("%s: count says %v, decoder says %v", name, fastErr, decErr)
				}
				if !reflect.DeepEqual(fast, dec) || !reflect.DeepEqual(fastWarn, decWarn) {
					t.Errorf("%s: count skipped %v warned %v, decoder skipped %v warned %v", name, fast, fastWarn, dec, decWarn)
				}
			}
		}
	}
}

func decodeWith(t *testing.T, data []byte, decoder bool) ([]*tiff.UnsupportedError, []tiff.Warning, error) {
	t.Helper()
	info, err := tiff.WalkTIFF(bytes.NewReader(data), int64(len(data)), tiff.DefaultLimits)
	if err != nil {
		t.Fatal(err) // damage is only in the pixel data
	}
	skipped, err := tiff.DecodePages(bytes.NewReader(data), info, tiff.DecodeOptions{PixelBudget: 1 << 30, DecodeUncompressed: decoder})
	return skipped, info.Warnings, err
}

// TestFastCountAsDecoderOnCorpus: on every TIFF of the shared corpus that
// the walk accepts, and on copies of its LZW, Deflate and PackBits masters
// with damaged pixel data, the strict count and the image decoder give the
// same verdict.
func TestFastCountAsDecoderOnCorpus(t *testing.T) {
	t.Parallel()
	compared, damaged := 0, 0
	for _, sub := range []string{"good", "bad", "edge"} {
		for _, f := range corpusFiles(t, sub) {
			clean, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			info, err := tiff.WalkTIFF(bytes.NewReader(clean), int64(len(clean)), tiff.DefaultLimits)
			if err != nil {
				continue // refused before any pixel is read
			}
			variants := [][]byte{clean}
			for _, p := range info.Pages {
				if p.Compression != 5 && p.Compression != 8 && p.Compression != 32773 || len(p.BlockOffsets) == 0 {
					continue
				}
				for k := 0; k < 20; k++ {
					b := int(p.BlockOffsets[k%len(p.BlockOffsets)])
					n := int(p.BlockCounts[k%len(p.BlockOffsets)])
					if n == 0 || b+n > len(clean) {
						continue
					}
					data := append([]byte(nil), clean...)
					data[b+(k*7919)%n] ^= byte(1 << (k % 8))
					variants = append(variants, data)
				}
			}
			for i, data := range variants {
				fast, fastWarn, fastErr := decodeWith(t, data, false)
				dec, decWarn, decErr := decodeWith(t, data, true)
				name := fmt.Sprintf("%s/%s variant %d", sub, filepath.Base(f), i)
				if fmt.Sprint(fastErr) != fmt.Sprint(decErr) || !reflect.DeepEqual(fastErr, decErr) {
					t.Errorf("%s: count says %v, decoder says %v", name, fastErr, decErr)
				}
				if !reflect.DeepEqual(fast, dec) || !reflect.DeepEqual(fastWarn, decWarn) {
					t.Errorf("%s: count skipped %v warned %v, decoder skipped %v warned %v", name, fast, fastWarn, dec, decWarn)
				}
				compared++
				if i > 0 {
					damaged++
				}
			}
		}
	}
	if damaged == 0 {
		t.Fatalf("compared %d files, none damaged: the corpus has no LZW, Deflate or PackBits master", compared)
	}
}
