package tiff_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/tiff"
)

// TestPagesSharingAStrip: pages on one CCITT strip read the same way are
// decoded once and all checked; read in different ways, they are charged
// to the file's pixel budget and refused (limit.file-pixels) on the page
// that passes it, at that page's IFD. An explicit FilePixelBudget takes
// the place of the default.
func TestPagesSharingAStrip(t *testing.T) {
	t.Parallel()
	const side = 2048 // 4 Mpx a page, the pixel budget below: four of them outweigh the file's 1,024 a byte
	build := func(widths []uint32) ([]byte, *tiff.TIFFInfo) {
		var buf bytes.Buffer
		if _, err := fixtures.SharedStripPages(&buf, widths, side); err != nil {
			t.Fatal(err)
		}
		info, err := tiff.WalkTIFF(bytes.NewReader(buf.Bytes()), int64(buf.Len()), tiff.DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		return buf.Bytes(), info
	}
	opt := tiff.DecodeOptions{PixelBudget: side * side}
	data, info := build(fixtures.SameWidths(50, side))
	if skipped, err := tiff.DecodePages(bytes.NewReader(data), info, opt); err != nil || len(skipped) != 0 {
		t.Fatalf("50 pages read the same way: %v, skipped %v", err, skipped)
	}
	data, info = build(fixtures.SharedWidths(50, side))
	_, err := tiff.DecodePages(bytes.NewReader(data), info, opt)
	var le *tiff.LimitError
	if !errors.As(err, &le) || le.What != "file-pixels" || le.Page != 5 || le.Offset != info.Pages[4].Offset || le.Limit != 4*side*side {
		t.Fatalf("50 widths: %v, want limit.file-pixels on page 5 at its IFD", err)
	}
	opt.FilePixelBudget = 2 * side * side
	if _, err := tiff.DecodePages(bytes.NewReader(data), info, opt); !errors.As(err, &le) || le.Page != 3 || le.Limit != 2*side*side {
		t.Fatalf("a file budget of two pages: %v, want a refusal on page 3", err)
	}
}
