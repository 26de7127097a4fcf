package tiff

import (
	"bytes"
	"errors"
	"image"
	"testing"

	xtiff "golang.org/x/image/tiff"

	"github.com/lazaret/lazaret/fixtures"
)

// TestBandViews decodes tiled and striped pages band by band through the
// view and checks every pixel of every band against the generator's
// pattern: a band is exactly its rows of the page.
func TestBandViews(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		data func() []byte
	}{
		{"tiles 256, deflate", func() []byte {
			return tiled(t, fixtures.TiledPage{Width: 1000, Height: 1100, Tile: 256, Samples: 1, Deflate: true})
		}},
		{"tiles 1040, last band shorter than a tile", func() []byte {
			return tiled(t, fixtures.TiledPage{Width: 1040, Height: 2180, Tile: 1040, Samples: 1})
		}},
		{"strips of 16 rows, deflate", func() []byte {
			var b bytes.Buffer
			if _, err := fixtures.WriteTIFF(&b, []fixtures.Page{{Width: 300, Height: 250, Samples: 1, RowsPerStrip: 16, Deflate: true}}); err != nil {
				t.Fatal(err)
			}
			return b.Bytes()
		}},
	}
	for _, tc := range cases {
		data := tc.data()
		r := bytes.NewReader(data)
		info, err := WalkTIFF(r, int64(len(data)), DefaultLimits)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		p := &info.Pages[0]
		g := bandsOf(p)
		for _, per := range []int{1, 2, 3} {
			for first := 0; first < g.units; first += per {
				start, n := first, min(per, g.units-first)
				rows := min(uint64(n)*g.rowsPerUnit, p.Height-uint64(start)*g.rowsPerUnit)
				if p.Tiled && start > 0 && p.TileLength > 1024 && rows+16 < p.TileLength {
					start, n, rows = start-1, n+1, rows+p.TileLength
				}
				pr, err := newPageReader(r, info, p, &band{first: start * g.blocksPerUnit, n: n * g.blocksPerUnit, rows: rows})
				if err != nil {
					t.Fatal(err)
				}
				img, err := xtiff.Decode(pr)
				if err != nil {
					t.Fatalf("%s: band of %d from unit %d: %v", tc.name, n, start, err)
				}
				grey := img.(*image.Gray)
				if b := grey.Bounds(); b.Dx() != int(p.Width) || b.Dy() != int(rows) {
					t.Fatalf("%s: band from unit %d is %v, want %dx%d", tc.name, start, b, p.Width, rows)
				}
				y0 := start * int(g.rowsPerUnit)
				for y := 0; y < int(rows); y++ {
					for x := 0; x < int(p.Width); x++ {
						if got, want := grey.Pix[y*grey.Stride+x], fixtures.Pattern(x, y0+y, 0, 0); got != want {
							t.Fatalf("%s: band from unit %d: pixel (%d,%d) is %d, want %d", tc.name, start, x, y0+y, got, want)
						}
					}
				}
			}
		}
	}
}

// TestDecodeInBands: with the memory left for one, two or four rows of
// tiles, a tiled page decodes band by band, and a corrupt tile is named by
// its page and offset whichever band it falls in.
func TestDecodeInBands(t *testing.T) {
	t.Parallel()
	page := fixtures.TiledPage{Width: 2048, Height: 2048, Tile: 256, Samples: 1, Deflate: true}
	var buf bytes.Buffer
	lay, err := fixtures.WriteTiledTIFF(&buf, page)
	if err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	info, err := WalkTIFF(bytes.NewReader(data), int64(len(data)), DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	p := &info.Pages[0]
	for _, per := range []int{1, 2, 4, 8} {
		g := bandsOf(p)
		avail := decodeCost(p, g, min(per+1, g.units), largestBlock(p))
		if got, ok := planBands(p, avail); !ok || got.perBand != per {
			t.Fatalf("with %d bytes: %d rows of tiles a band (ok %v), want %d", avail, got.perBand, ok, per)
		}
		if _, err := DecodePages(bytes.NewReader(data), info, DecodeOptions{PixelBudget: 1 << 30, MemoryBudget: info.Held + avail}); err != nil {
			t.Fatalf("%d rows of tiles a band: %v", per, err)
		}
		bad := bytes.Clone(data)
		tileAt := lay.StripOffsets[0][8*5+3] // row 5, column 3
		for i := int64(2); i < 10; i++ {
			bad[tileAt+i] ^= 0xff
		}
		_, err := DecodePages(bytes.NewReader(bad), info, DecodeOptions{PixelBudget: 1 << 30, MemoryBudget: info.Held + avail})
		var te *FormatError
		if !errors.As(err, &te) || te.Page != 1 || te.Offset < tileAt || te.Offset >= tileAt+lay.StripCounts[0][8*5+3] {
			t.Errorf("%d rows of tiles a band, corrupt tile at %d: got %v", per, tileAt, err)
		}
	}
	// With less than one row of tiles, the page is counted, not decoded.
	if _, ok := planBands(p, decodeFixed); ok {
		t.Error("a row of tiles fits in decodeFixed bytes")
	}
	if _, err := DecodePages(bytes.NewReader(data), info, DecodeOptions{PixelBudget: 1 << 30, MemoryBudget: info.Held + 1}); err != nil {
		t.Errorf("counted instead of decoded: %v", err)
	}
}

func tiled(t *testing.T, p fixtures.TiledPage) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := fixtures.WriteTiledTIFF(&b, p); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
