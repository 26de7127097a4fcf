package tiff_test

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/tiff"
)

// ycbcrDir is a 13x11 8-bit YCbCr image subsampled h x v: in strips of 4
// rows, or in 16x16 tiles; contiguous or planar; uncompressed or Deflate.
func ycbcrDir(h, v int, planar, tiled, deflate bool) *fixtures.Dir {
	const w, ht, rps, tile = 13, 11, 4, 16
	var blocks [][]byte
	plane := func(width, rows int, chroma bool) []byte {
		if chroma {
			return make([]byte, ((width+h-1)/h)*((rows+v-1)/v))
		}
		return make([]byte, width*rows)
	}
	block := func(width, rows, p int) []byte {
		if !planar {
			return fixtures.YCbCrUnits(width, rows, h, v)
		}
		return plane(width, rows, p > 0)
	}
	planes := 1
	if planar {
		planes = 3
	}
	for p := 0; p < planes; p++ {
		if tiled {
			for i := 0; i < 1; i++ { // 13x11 fits one 16x16 tile
				blocks = append(blocks, block(tile, tile, p))
			}
			continue
		}
		for y := 0; y < ht; y += rps {
			blocks = append(blocks, block(w, min(rps, ht-y), p))
		}
	}
	comp := uint16(1)
	if deflate {
		comp = 8
		for i := range blocks {
			blocks[i] = fixtures.Deflate(blocks[i])
		}
	}
	tw, th := 0, 0
	if tiled {
		tw, th = tile, tile
	}
	pc := uint16(1)
	if planar {
		pc = 2
	}
	return fixtures.Image(w, ht, 3, 8, comp, 6, rps, tw, th, blocks,
		fixtures.Shorts(284, pc), fixtures.Shorts(530, uint16(h), uint16(v)),
		fixtures.Rationals(529, 299, 1000, 587, 1000, 114, 1000),
		fixtures.Rationals(532, 0, 1, 255, 1, 128, 1, 255, 1, 128, 1, 255, 1))
}

// TestYCbCrSubsampledIsDecoded: strips and tiles of subsampled YCbCr hold
// data units (TIFF 6.0 §21), fewer bytes than three samples a pixel; on
// main they were refused as short.
func TestYCbCrSubsampledIsDecoded(t *testing.T) {
	t.Parallel()
	for _, s := range [][2]int{{1, 1}, {2, 1}, {2, 2}, {4, 1}, {4, 2}, {4, 4}} {
		for _, planar := range []bool{false, true} {
			for _, tiled := range []bool{false, true} {
				for _, deflate := range []bool{false, true} {
					name := fmt.Sprintf("%dx%d planar=%v tiled=%v deflate=%v", s[0], s[1], planar, tiled, deflate)
					data, _ := dirs(t, ycbcrDir(s[0], s[1], planar, tiled, deflate))
					_, skipped, err := checkTIFF(data)
					if err != nil || len(skipped) != 0 {
						t.Errorf("%s: %v %v", name, err, skipped)
					}
				}
			}
		}
	}
}

// TestYCbCrShortBlocks cuts one byte from a block and checks the error
// names it.
func TestYCbCrShortBlocks(t *testing.T) {
	t.Parallel()
	// Uncompressed 4:2:0, strip 2 (rows 4..7) one byte short: the walk
	// names its StripByteCounts value.
	d := ycbcrDir(2, 2, false, false, false)
	d.Blocks[1] = d.Blocks[1][:len(d.Blocks[1])-1]
	data, lay := dirs(t, d)
	_, _, err := checkTIFF(data)
	wantPos(t, err, tiff.ErrShortData, 1, "", 279, lay.Value["page 1 279"]+4)

	// Deflate 4:2:2 planar, the Cr plane's first strip decompresses one
	// byte short: the decoder names the block.
	d = ycbcrDir(2, 1, true, false, false)
	i := 6 // plane 2, strip 1
	d.Blocks[i] = d.Blocks[i][:len(d.Blocks[i])-1]
	for j := range d.Blocks {
		d.Blocks[j] = fixtures.Deflate(d.Blocks[j])
	}
	d.Tags[3] = fixtures.Shorts(259, 8)
	data, lay = dirs(t, d)
	_, _, err = checkTIFF(data)
	wantPos(t, err, tiff.ErrShortData, 1, "", 0, lay.Blocks["page 1"][i])
}

// TestYCbCrCoefficientsAndReference: the conversion to RGB divides by the
// luma coefficients and by white minus black; zero, infinite or equal
// values are refused where they are.
func TestYCbCrCoefficientsAndReference(t *testing.T) {
	t.Parallel()
	le := binary.LittleEndian
	cases := []struct {
		name  string
		patch func(b []byte, lay *fixtures.DirLayout)
		tag   uint16
		at    func(lay *fixtures.DirLayout) int64
	}{
		{"LumaGreen 0", func(b []byte, lay *fixtures.DirLayout) { le.PutUint32(b[lay.Value["page 1 529"]+8:], 0) },
			529, func(lay *fixtures.DirLayout) int64 { return lay.Value["page 1 529"] + 8 }},
		{"LumaBlue 1/0", func(b []byte, lay *fixtures.DirLayout) { le.PutUint32(b[lay.Value["page 1 529"]+20:], 0) },
			529, func(lay *fixtures.DirLayout) int64 { return lay.Value["page 1 529"] + 16 }},
		{"Cb white equals black", func(b []byte, lay *fixtures.DirLayout) { le.PutUint32(b[lay.Value["page 1 532"]+24:], 128) },
			532, func(lay *fixtures.DirLayout) int64 { return lay.Value["page 1 532"] + 16 }},
		{"ReferenceBlackWhite 0/0", func(b []byte, lay *fixtures.DirLayout) {
			le.PutUint64(b[lay.Value["page 1 532"]+40:], 0)
		}, 532, func(lay *fixtures.DirLayout) int64 { return lay.Value["page 1 532"] + 40 }},
	}
	for _, c := range cases {
		data, lay := dirs(t, ycbcrDir(2, 2, false, false, false))
		c.patch(data, lay)
		_, _, err := checkTIFF(data)
		t.Run(c.name, func(t *testing.T) { wantPos(t, err, tiff.ErrBadValue, 1, "", c.tag, c.at(lay)) })
	}
}
