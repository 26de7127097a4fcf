package validate_test

import (
	"bytes"
	"testing"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/tiff"
)

// The fixture builders the master-policy tests share with package tiff's
// tests (tiff_test.go, subifd_test.go there).

func encode(t testing.TB, pages ...fixtures.Page) ([]byte, *fixtures.Layout) {
	t.Helper()
	var buf bytes.Buffer
	lay, err := fixtures.WriteTIFF(&buf, pages)
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), lay
}

func grey(w, h int) fixtures.Page {
	return fixtures.Page{Width: w, Height: h, Samples: 1, RowsPerStrip: 8, DPI: 400}
}

func walk(data []byte) (*tiff.TIFFInfo, error) {
	return tiff.WalkTIFF(bytes.NewReader(data), int64(len(data)), tiff.DefaultLimits)
}

func dirs(t testing.TB, pages ...*fixtures.Dir) ([]byte, *fixtures.DirLayout) {
	t.Helper()
	var buf bytes.Buffer
	lay, err := fixtures.WriteDirs(&buf, pages)
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), lay
}

// greyDir is an 8x8 8-bit grey image in one uncompressed strip.
func greyDir(extra ...fixtures.Tag) *fixtures.Dir {
	return fixtures.Image(8, 8, 1, 8, 1, 1, 8, 0, 0, [][]byte{make([]byte, 64)}, extra...)
}
