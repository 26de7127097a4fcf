package validate_test

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/lazaret/lazaret/validate"
)

// TestFaxDecodedWhereXImageDeclines: Group 3 without EOL codes, Group 3
// with byte-aligned EOLs, and a Group 4 image whose runs reach past the
// row are decoded (libtiff decodes them; golang.org/x/image/ccitt does
// not); broken data in them is refused at its byte.
func TestFaxDecodedWhereXImageDeclines(t *testing.T) {
	t.Parallel()
	read := func(sub, name string) []byte {
		b, err := os.ReadFile(filepath.Join(testCorpusOrSkip(t, sub), name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, c := range []struct{ sub, name string }{
		{"good", "libtiff-testfax4.tiff"},              // Group 4
		{"good", "libtiffpic-fax2d.tif"},               // Group 3, EOLs padded, FillOrder 2
		{"edge", "libtiff-testfax3_bug54_1dnoEOL.tif"}, // Group 3 1-D, no EOLs, 63 strips
		{"edge", "pillow-total-pages-zero.tif"},        // Group 3, EOLs padded, three pages
	} {
		data := read(c.sub, c.name)
		info, skipped, err := checkTIFF(data)
		if err != nil || len(skipped) != 0 {
			t.Errorf("%s: %v %v", c.name, err, skipped)
			continue
		}
		// Zero bytes in the middle of the first strip: no code starts
		// with sixteen zeros (an EOL in a 2-D or EOL-less row is out of
		// place too).
		p := info.Pages[0]
		at := int64(p.BlockOffsets[0] + p.BlockCounts[0]/2)
		bad := append([]byte(nil), data...)
		copy(bad[at:], make([]byte, 8))
		_, _, err = checkTIFF(bad)
		var te *validate.TIFFError
		if !errors.As(err, &te) || !errors.Is(err, validate.ErrUndecodable) || te.Page != 1 || te.Offset < at-2 || te.Offset > at+8 {
			t.Errorf("%s with zeros at %d: got %v, want undecodable within bytes %d..%d", c.name, at, err, at-2, at+8)
		}
	}
	// The first strip of the EOL-less file cut to a third: its rows end
	// early.
	data := read("edge", "libtiff-testfax3_bug54_1dnoEOL.tif")
	info, _, _ := checkTIFF(data)
	p := info.Pages[0]
	countsAt := int64(0)
	for _, o := range []int64{int64(p.Offset) + 2} {
		for e := int64(0); e < int64(binary.LittleEndian.Uint16(data[p.Offset:])); e++ {
			if binary.LittleEndian.Uint16(data[o+12*e:]) == 279 {
				countsAt = int64(binary.LittleEndian.Uint32(data[o+12*e+8:]))
			}
		}
	}
	binary.LittleEndian.PutUint32(data[countsAt:], uint32(p.BlockCounts[0]/3))
	_, _, err := checkTIFF(data)
	end := int64(p.BlockOffsets[0] + p.BlockCounts[0]/3)
	var te *validate.TIFFError
	if !errors.As(err, &te) || !errors.Is(err, validate.ErrShortData) || te.Offset < end-2 || te.Offset > end {
		t.Errorf("cut strip: got %v, want short data at byte %d", err, end)
	}
}
