package tiff_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/tiff"
)

// FuzzTIFFDepth is FuzzTIFF seeded with what the deeper checks read: child
// directories, subsampled YCbCr, FillOrder 2, JPEG, old-style JPEG,
// LogLuv, CCITT and WebP pages. No panic, typed errors, offsets in the
// file, and no input slow enough to be a denial of service.
func FuzzTIFFDepth(f *testing.F) {
	seeds := testenv.NewSeeds(f)
	add := func(d ...*fixtures.Dir) {
		var buf bytes.Buffer
		fixtures.WriteDirs(&buf, d)
		seeds.Add(buf.Bytes())
	}
	p := greyDir()
	p.EXIF = exifDir()
	p.EXIF.Interop = &fixtures.Dir{Tags: []fixtures.Tag{fixtures.ASCII(1, "R98")}}
	p.SubIFDs = [][]*fixtures.Dir{{greyDir(), greyDir()}}
	add(p)
	add(ycbcrDir(2, 2, false, false, true), ycbcrDir(4, 2, true, true, false))
	add(fixtures.Image(61, 16, 1, 1, 32773, 0, 8, 0, 0, encodeAll(bilevel(), fixtures.PackBits, fixtures.ReverseBits), fixtures.Shorts(266, 2)))
	add(fixtures.Image(61, 16, 1, 1, 5, 0, 8, 0, 0, encodeAll(bilevel(), fixtures.OldLZW)))
	add(jpegStrips(37, 21, 8, true), jpegTiles(40, 20, 16))
	add(oldJPEG(func(b []byte) []byte { return b }))
	add(fixtures.Image(5, 6, 3, 16, 34676, 32845, 3, 0, 0, [][]byte{logLuvStrip(5, 3), logLuvStrip(5, 3)}))
	for _, name := range []string{"good/goimage-bw-gopher_ccittGroup3.tiff", "good/goimage-bw-gopher_ccittGroup4.tiff",
		"good/libtiff-webp_lossless_rgba_alpha_fully_opaque.tif", "good/libtiff-custom_dir_EXIF_GPS.tiff"} {
		if b, err := os.ReadFile(filepath.Join("..", "..", "shared", "corpus", "tiff", name)); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		start := time.Now()
		defer func() {
			if d := time.Since(start); d > 3*time.Second {
				t.Fatalf("took %s on %d bytes", d, len(data))
			}
		}()
		info, err := tiff.WalkTIFF(bytes.NewReader(data), int64(len(data)), tiff.DefaultLimits)
		if err != nil {
			checkTyped(t, err, len(data))
			return
		}
		_, err = tiff.DecodePages(bytes.NewReader(data), info, tiff.DecodeOptions{PixelBudget: 1 << 20, DecodeUncompressed: true})
		var le *tiff.LimitError
		if err != nil && !errors.As(err, &le) {
			checkTyped(t, err, len(data))
		}
	})
}
