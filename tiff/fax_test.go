package tiff_test

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/tiff"
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
		var te *tiff.FormatError
		if !errors.As(err, &te) || !errors.Is(err, tiff.ErrUndecodable) || te.Page != 1 || te.Offset < at-2 || te.Offset > at+8 {
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
	var te *tiff.FormatError
	if !errors.As(err, &te) || !errors.Is(err, tiff.ErrShortData) || te.Offset < end-2 || te.Offset > end {
		t.Errorf("cut strip: got %v, want short data at byte %d", err, end)
	}
}

// faxCode packs code words written as strings of 0s and 1s, spaces
// ignored, first bit most significant, the last byte padded with zeros.
func faxCode(words string) []byte {
	bits := strings.ReplaceAll(words, " ", "")
	out := make([]byte, (len(bits)+7)/8)
	for i, c := range bits {
		if c == '1' {
			out[i/8] |= 0x80 >> (i % 8)
		}
	}
	return out
}

// TestFaxGroup3TwoD: an 8x2 Group 3 page coded two-dimensionally, EOL
// codes packed, decodes in either fill order. golang.org/x/image/tiff
// reads the tag bit after each EOL as a run's code and called it an
// invalid code (issue 24, item 2).
func TestFaxGroup3TwoD(t *testing.T) {
	t.Parallel()
	// EOL, tag 1 (1-D): white 8; EOL, tag 0 (2-D): V0, b1 at the end.
	strip := faxCode("000000000001 1 10011  000000000001 0 1")
	for _, fill := range []uint16{1, 2} {
		b := strip
		if fill == 2 {
			b = fixtures.ReverseBits(b)
		}
		data, _ := dirs(t, fixtures.Image(8, 2, 1, 1, 3, 0, 2, 0, 0, [][]byte{b}, fixtures.Longs(292, 1), fixtures.Shorts(266, fill)))
		if _, skipped, err := checkTIFF(data); err != nil || len(skipped) != 0 {
			t.Errorf("FillOrder %d: %v %v", fill, err, skipped)
		}
	}
}

// TestFaxUncompressedMode: a row that enters uncompressed mode (T.4
// annex A), which Lazaret does not decode (nor does libtiff), leaves the
// page not decoded, at that row's byte, where the options tag allows the
// mode (bit 1), and is an invalid code where it does not.
func TestFaxUncompressedMode(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		comp  uint16
		tag   uint16
		strip []byte
		at    int64 // the byte of the row's code, in the strip
	}{
		// Row 1 all white (V0); row 2 the 2-D extension 0000001, 111.
		{"Group 4", 4, 293, faxCode("1 0000001 111"), 0},
		// EOL; the 1-D extension 000000001, 111, where a white run's
		// code should be.
		{"Group 3 1-D", 3, 292, faxCode("000000000001 000000001 111"), 1},
		// EOL, tag 1: white 8; EOL, tag 0: the 2-D extension.
		{"Group 3 2-D", 3, 292, faxCode("000000000001 1 10011 000000000001 0 0000001 111"), 3},
	} {
		opts := uint32(2)
		if c.name == "Group 3 2-D" {
			opts |= 1
		}
		data, lay := dirs(t, fixtures.Image(8, 2, 1, 1, c.comp, 0, 2, 0, 0, [][]byte{c.strip}, fixtures.Longs(c.tag, opts)))
		_, skipped, err := checkTIFF(data)
		want := lay.Blocks["page 1"][0] + c.at
		if err != nil || len(skipped) != 1 || !strings.Contains(skipped[0].Reason, "uncompressed mode") || skipped[0].Offset != want {
			t.Errorf("%s, uncompressed mode allowed: %v %v, want not decoded at byte %d", c.name, err, skipped, want)
		}
		data, _ = dirs(t, fixtures.Image(8, 2, 1, 1, c.comp, 0, 2, 0, 0, [][]byte{c.strip}, fixtures.Longs(c.tag, opts&^2)))
		if _, _, err := checkTIFF(data); !errors.Is(err, tiff.ErrUndecodable) {
			t.Errorf("%s, uncompressed mode not allowed: got %v, want undecodable", c.name, err)
		}
	}
}
