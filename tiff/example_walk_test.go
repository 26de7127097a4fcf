package tiff_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/tiff"
)

// WalkTIFF reads the structure; a fault comes back as a *FormatError that
// names the page, the tag and the byte, and truncation wraps
// io.ErrUnexpectedEOF.
func ExampleWalkTIFF() {
	var buf bytes.Buffer
	if _, err := fixtures.WriteTIFF(&buf, []fixtures.Page{{Width: 16, Height: 8, Samples: 1, RowsPerStrip: 8, DPI: 400}}); err != nil {
		log.Fatal(err)
	}
	data := buf.Bytes()
	info, err := tiff.WalkTIFF(bytes.NewReader(data), int64(len(data)), tiff.DefaultLimits)
	fmt.Println(info.PageCount, info.Pages[0].Width, info.Pages[0].Height, err)

	_, err = tiff.WalkTIFF(bytes.NewReader(data[:6]), 6, tiff.DefaultLimits)
	var fe *tiff.FormatError
	fmt.Println(errors.As(err, &fe), errors.Is(err, io.ErrUnexpectedEOF))
	// Output:
	// 1 16 8 <nil>
	// true true
}
