package tiff_test

import (
	"testing"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/tiff"
)

// bilevel is a 61x16 1-bit page's data, two strips of 8 rows, with runs
// and noise so that every codec has work.
func bilevel() [][]byte {
	const rowBytes = 8 // ceil(61/8)
	var strips [][]byte
	for s := 0; s < 2; s++ {
		b := make([]byte, 8*rowBytes)
		for i := range b {
			if i%3 != 0 {
				b[i] = byte(i*37 + s)
			}
		}
		strips = append(strips, b)
	}
	return strips
}

func encodeAll(strips [][]byte, enc ...func([]byte) []byte) [][]byte {
	out := make([][]byte, len(strips))
	for i, b := range strips {
		for _, e := range enc {
			b = e(b)
		}
		out[i] = b
	}
	return out
}

// TestFillOrder2IsHonoured: FillOrder 2 stores each byte's bits reversed;
// the codec must see them reversed back. On main, PackBits and Deflate
// data written so were refused as truncated or undecodable.
func TestFillOrder2IsHonoured(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		comp uint16
		enc  func([]byte) []byte
	}{{"PackBits", 32773, fixtures.PackBits}, {"Deflate", 8, fixtures.Deflate}, {"none", 1, func(b []byte) []byte { return b }}} {
		blocks := encodeAll(bilevel(), c.enc, fixtures.ReverseBits)
		data, _ := dirs(t, fixtures.Image(61, 16, 1, 1, c.comp, 0, 8, 0, 0, blocks, fixtures.Shorts(266, 2)))
		if _, skipped, err := checkTIFF(data); err != nil || len(skipped) != 0 {
			t.Errorf("%s, FillOrder 2: %v %v", c.name, err, skipped)
		}
		// The same bytes claimed as FillOrder 1 are not that codec's data
		// (uncompressed is any bytes).
		if c.comp != 1 {
			data, _ = dirs(t, fixtures.Image(61, 16, 1, 1, c.comp, 0, 8, 0, 0, blocks))
			if _, _, err := checkTIFF(data); err == nil {
				t.Errorf("%s: bit-reversed data accepted as FillOrder 1", c.name)
			}
		}
	}
}

// TestFillOrder2ShortStrip: a FillOrder 2 PackBits strip missing its last
// literal is refused at that strip.
func TestFillOrder2ShortStrip(t *testing.T) {
	t.Parallel()
	blocks := encodeAll(bilevel(), fixtures.PackBits, fixtures.ReverseBits)
	blocks[1] = blocks[1][:len(blocks[1])-1]
	data, lay := dirs(t, fixtures.Image(61, 16, 1, 1, 32773, 0, 8, 0, 0, blocks, fixtures.Shorts(266, 2)))
	_, _, err := checkTIFF(data)
	wantPos(t, err, tiff.ErrShortData, 1, "", 0, lay.Blocks["page 1"][1])
}

// TestOldStyleLZWIsDecoded: pre-TIFF-6 LZW (LSB-first codes) decodes, as
// libtiff decodes it; on main it was left as "not decoded".
func TestOldStyleLZWIsDecoded(t *testing.T) {
	t.Parallel()
	blocks := encodeAll(bilevel(), fixtures.OldLZW)
	data, _ := dirs(t, fixtures.Image(61, 16, 1, 1, 5, 0, 8, 0, 0, blocks))
	if _, skipped, err := checkTIFF(data); err != nil || len(skipped) != 0 {
		t.Fatalf("old-style LZW: %v %v", err, skipped)
	}
	blocks[0] = blocks[0][:len(blocks[0])/2]
	data, lay := dirs(t, fixtures.Image(61, 16, 1, 1, 5, 0, 8, 0, 0, blocks))
	_, _, err := checkTIFF(data)
	wantPos(t, err, tiff.ErrShortData, 1, "", 0, lay.Blocks["page 1"][0])
}
