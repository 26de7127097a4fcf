package tiff_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/tiff"
)

func bigDirs(t testing.TB, pages ...*fixtures.Dir) ([]byte, *fixtures.DirLayout) {
	t.Helper()
	var buf bytes.Buffer
	lay, err := fixtures.WriteBigDirs(&buf, pages)
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), lay
}

// TestBigTIFFPixelsAreDecoded: x/image/tiff reads classic TIFF only; the
// pixel data of BigTIFF pages goes through Lazaret's own decoders (Deflate,
// PackBits, JPEG, CCITT, child directories), with the same positions.
func TestBigTIFFPixelsAreDecoded(t *testing.T) {
	t.Parallel()
	g4, err := os.ReadFile(filepath.Join(testCorpusOrSkip(t, "good"), "goimage-bw-gopher_ccittGroup4.tiff"))
	if err != nil {
		t.Fatal(err)
	}
	gi, _, err := checkTIFF(g4)
	if err != nil {
		t.Fatal(err)
	}
	gp := gi.Pages[0]
	var faxStrips [][]byte
	for i := range gp.BlockOffsets {
		faxStrips = append(faxStrips, g4[gp.BlockOffsets[i]:gp.BlockOffsets[i]+gp.BlockCounts[i]])
	}
	fax := fixtures.Image(int(gp.Width), int(gp.Height), 1, 1, 4, 0, int(gp.RowsPerStrip), 0, 0, faxStrips)
	withSub := fixtures.Image(61, 16, 1, 1, 32773, 0, 8, 0, 0, encodeAll(bilevel(), fixtures.PackBits))
	withSub.SubIFDs = [][]*fixtures.Dir{{fixtures.Image(8, 8, 1, 8, 8, 1, 8, 0, 0, [][]byte{fixtures.Deflate(make([]byte, 64))})}}
	withSub.EXIF = exifDir()
	data, lay := bigDirs(t, withSub, jpegStrips(37, 21, 8, true), fax)
	info, skipped, err := checkTIFF(data)
	if err != nil || len(skipped) != 0 || !info.BigTIFF || len(info.Pages) != 3 || len(info.SubImages) != 1 || len(info.Directories) != 1 {
		t.Fatalf("BigTIFF: %v %v %+v", err, skipped, info)
	}

	// A broken Deflate stream in the SubIFD image, and zeros in the fax
	// strip, are refused where they are.
	sub := lay.Blocks["page 1 / SubIFD 1"][0]
	bad := append([]byte(nil), data...)
	bad[sub+4] ^= 0xff
	_, _, err = checkTIFF(bad)
	wantPos(t, err, tiff.ErrUndecodable, 1, "SubIFD 1", 0, sub)
	bad = append([]byte(nil), data...)
	at := lay.Blocks["page 3"][0] + 20
	copy(bad[at:], make([]byte, 8))
	_, _, err = checkTIFF(bad)
	var te *tiff.FormatError
	if !errors.As(err, &te) || te.Page != 3 || te.Offset < at-2 || te.Offset > at+8 {
		t.Errorf("zeros in the BigTIFF fax strip at %d: %v", at, err)
	}
}

// TestFaxMemoryBudget: a Group 4 row of zero-length horizontal runs grows
// its changing elements without advancing; they are counted against the
// memory budget and refused before they outgrow it.
func TestFaxMemoryBudget(t *testing.T) {
	t.Parallel()
	var bits []byte
	for i := 0; i < 200; i++ {
		bits = append(bits, "001"+"00110101"+"0000110111"...) // H, white 0, black 0
	}
	strip := make([]byte, (len(bits)+7)/8)
	for i, b := range bits {
		if b == '1' {
			strip[i/8] |= 0x80 >> (i % 8)
		}
	}
	data, lay := bigDirs(t, fixtures.Image(1000, 1, 1, 1, 4, 0, 1, 0, 0, [][]byte{strip}))
	r := bytes.NewReader(data)
	info, err := tiff.WalkTIFF(r, int64(len(data)), tiff.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tiff.DecodePages(r, info, tiff.DecodeOptions{PixelBudget: 1 << 20, MemoryBudget: info.Held + 1600})
	var le *tiff.LimitError
	if !errors.As(err, &le) || le.What != "memory" || le.Offset < lay.Blocks["page 1"][0] || le.Offset > lay.Blocks["page 1"][0]+int64(len(strip)) {
		t.Errorf("small budget: got %v, want a memory *LimitError in the strip", err)
	}
	_, err = tiff.DecodePages(r, info, tiff.DecodeOptions{PixelBudget: 1 << 20})
	if !errors.Is(err, tiff.ErrShortData) {
		t.Errorf("default budget: got %v, want the row to end short", err)
	}
}
