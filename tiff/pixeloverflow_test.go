package tiff_test

import (
	"errors"
	"testing"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/tiff"
)

// TestPixelCountDoesNotWrap: a page of 4294967295 x 4294967295 has more
// pixels than an int64 holds; the pixel budget's error said it had
// -8589934591.
func TestPixelCountDoesNotWrap(t *testing.T) {
	t.Parallel()
	data, _ := dirs(t, fixtures.Image(1<<32-1, 1<<32-1, 1, 8, 8, 1, 1<<32-1, 0, 0, [][]byte{fixtures.Deflate(make([]byte, 64))}))
	_, _, err := checkTIFF(data)
	var le *tiff.LimitError
	if !errors.As(err, &le) || le.What != "pixels" || le.Have <= le.Limit {
		t.Fatalf("got %v, want a pixels LimitError with a count over the budget", err)
	}
}
