package tiff_test

import (
	"testing"

	"github.com/lazaret/lazaret/fixtures"
)

// TestOddTileSizesDecode: TIFF 6.0 asks for tiles in multiples of 16, but
// libtiff reads others (tiffinfo -D warns "Nonstandard tile width" and
// decodes every tile). x/image/tiff refuses tiles under 8 pixels a side
// ("tile size is too small") and tiles over 1024 pixels that are more than
// 16 past the image ("tile size exceeds image size"): limits of that
// decoder, not damage. Such a page was refused as tiff.undecodable when
// compressed, and accepted when uncompressed; its blocks must be decoded
// (so good data passes and damaged data still fails).
func TestOddTileSizesDecode(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name         string
		w, h, tw, th int
	}{
		{"7x9 tiles", 40, 40, 7, 9},
		{"2048x16 tile on 100x100", 100, 100, 2048, 16},
	} {
		across, down := (c.w+c.tw-1)/c.tw, (c.h+c.th-1)/c.th
		for _, comp := range []struct {
			name string
			code uint16
			enc  func([]byte) []byte
		}{{"Deflate", 8, fixtures.Deflate}, {"PackBits", 32773, fixtures.PackBits}, {"none", 1, func(b []byte) []byte { return b }}} {
			tiles := make([][]byte, across*down)
			for i := range tiles {
				raw := make([]byte, c.tw*c.th)
				for j := range raw {
					raw[j] = byte(i*7 + j)
				}
				tiles[i] = comp.enc(raw)
			}
			data, _ := dirs(t, fixtures.Image(c.w, c.h, 1, 8, comp.code, 1, 0, c.tw, c.th, tiles))
			if _, skipped, err := checkTIFF(data); err != nil || len(skipped) != 0 {
				t.Errorf("%s, %s: %v %v", c.name, comp.name, err, skipped)
			}
			if comp.code == 1 {
				continue
			}
			// A tile cut short must still be refused.
			short := make([][]byte, len(tiles))
			copy(short, tiles)
			short[len(short)-1] = comp.enc(make([]byte, c.tw*c.th/2))
			data, _ = dirs(t, fixtures.Image(c.w, c.h, 1, 8, comp.code, 1, 0, c.tw, c.th, short))
			if _, _, err := checkTIFF(data); err == nil {
				t.Errorf("%s, %s: a short tile accepted", c.name, comp.name)
			}
		}
	}
}
