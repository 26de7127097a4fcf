package tiff_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/tiff"
)

// logLuvStrip is rows rows of a width-pixel 32-bit LogLuv strip as
// compression 34676 stores it: per row, four byte planes, each a run (a
// byte n >= 128 repeats the next byte n-126 times) then a literal.
func logLuvStrip(width, rows int) []byte {
	var b []byte
	for r := 0; r < rows; r++ {
		for plane := 0; plane < 4; plane++ {
			run := width - 1
			b = append(b, byte(run+126), byte(plane*40+r))
			b = append(b, 1, byte(r)) // one literal byte: the last pixel
		}
	}
	return b
}

// TestLogLuvIsDecoded: SGILog (34676) and SGILog24 (34677) data decode,
// as libtiff decodes them; a row cut short is refused at its strip. On
// main these pages were left as "not decoded".
func TestLogLuvIsDecoded(t *testing.T) {
	t.Parallel()
	luv := func(comp uint16, strips [][]byte) *fixtures.Dir {
		return fixtures.Image(5, 6, 3, 16, comp, 32845, 3, 0, 0, strips, fixtures.Shorts(339, 2, 2, 2))
	}
	data, _ := dirs(t, luv(34676, [][]byte{logLuvStrip(5, 3), logLuvStrip(5, 3)}))
	if _, skipped, err := checkTIFF(data); err != nil || len(skipped) != 0 {
		t.Fatalf("SGILog: %v %v", err, skipped)
	}
	data, _ = dirs(t, luv(34677, [][]byte{make([]byte, 5*3*3), make([]byte, 5*3*3)}))
	if _, skipped, err := checkTIFF(data); err != nil || len(skipped) != 0 {
		t.Fatalf("SGILog24: %v %v", err, skipped)
	}
	s := logLuvStrip(5, 3)
	data, lay := dirs(t, luv(34676, [][]byte{logLuvStrip(5, 3), s[:len(s)-3]}))
	_, _, err := checkTIFF(data)
	wantPos(t, err, tiff.ErrShortData, 1, "", 273, lay.Blocks["page 1"][1])
	data, lay = dirs(t, luv(34677, [][]byte{make([]byte, 5*3*3-1), make([]byte, 5*3*3)}))
	_, _, err = checkTIFF(data)
	wantPos(t, err, tiff.ErrShortData, 1, "", 273, lay.Blocks["page 1"][0])
}

// TestWebPIsDecoded: libtiff's lossless WebP test image decodes with
// x/image/webp; the same file with its VP8L signature broken is refused
// at its strip.
func TestWebPIsDecoded(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(testCorpusOrSkip(t, "good"), "libtiff-webp_lossless_rgba_alpha_fully_opaque.tif"))
	if err != nil {
		t.Fatal(err)
	}
	info, skipped, err := checkTIFF(data)
	if err != nil || len(skipped) != 0 {
		t.Fatalf("WebP: %v %v", err, skipped)
	}
	at := int64(info.Pages[0].BlockOffsets[0])
	if !bytes.Equal(data[at:at+4], []byte("RIFF")) || !bytes.Equal(data[at+12:at+16], []byte("VP8L")) {
		t.Fatalf("strip at %d is not a VP8L WebP file: % x", at, data[at:at+16])
	}
	data[at+20] ^= 0xff // the VP8L signature byte, 0x2f
	_, _, err = checkTIFF(data)
	wantPos(t, err, tiff.ErrUndecodable, 1, "", 273, at)
}
