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

// FuzzTIFF: whatever the bytes, the walk and the page decoding never panic,
// every error is typed (or the pixel budget's), and every offset lies in
// the file.
func FuzzTIFF(f *testing.F) {
	seeds := testenv.NewSeeds(f)
	for _, pages := range [][]fixtures.Page{
		{grey(8, 8)},
		{grey(8, 8), {Width: 9, Height: 5, Samples: 3, Deflate: true, RowsPerStrip: 2}},
	} {
		var buf bytes.Buffer
		fixtures.WriteTIFF(&buf, pages)
		seeds.Add(buf.Bytes())
	}
	seeds.Add(fixtures.DimensionBomb())
	for _, c := range smallRLECases() { // ThunderScan and NeXT, sound and cut short
		var buf bytes.Buffer
		fixtures.WriteDirs(&buf, []*fixtures.Dir{c.page})
		seeds.Add(buf.Bytes())
	}
	// Pages sharing one CCITT G4 strip: the same geometry (decoded once),
	// and other widths (charged to the file's pixel budget, refused).
	for _, widths := range [][]uint32{fixtures.SameWidths(8, 1024), fixtures.SharedWidths(8, 1024)} {
		var buf bytes.Buffer
		fixtures.SharedStripPages(&buf, widths, 1024)
		seeds.Add(buf.Bytes())
	}
	if files, err := filepath.Glob(filepath.Join("..", "..", "shared", "corpus", "tiff", "bad", "*")); err == nil {
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil && len(b) < 64<<10 {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		start := time.Now()
		defer func() {
			// A slow input is a denial of service: fail so the fuzzer keeps it.
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
		if err != nil {
			var le *tiff.LimitError
			if errors.As(err, &le) {
				return
			}
			checkTyped(t, err, len(data))
		}
	})
}

func checkTyped(t *testing.T, err error, size int) {
	t.Helper()
	var te *tiff.FormatError
	if !errors.As(err, &te) {
		t.Fatalf("untyped error %T: %v", err, err)
	}
	if te.Offset < 0 || te.Offset > int64(size)+8 {
		t.Fatalf("offset %d outside the %d-byte input: %v", te.Offset, size, err)
	}
	if te.Code == "" {
		t.Fatalf("no code: %v", err)
	}
}
