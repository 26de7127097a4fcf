package tiff_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/tiff"
)

// thunderRow is one 16-pixel row of ThunderScan data in four codes: a
// raw pixel (1), three 2-bit deltas (+1, skip... : 3 of them count here:
// +1, 0, -1), two 3-bit deltas (+3, -2) and a run of 10: 1+3+2+10 = 16.
var thunderRow = []byte{0xc0 | 7, 0x40 | 1<<4 | 0<<2 | 3, 0x80 | 3<<3 | 6, 10}

// thunderStrip is rows rows of thunderRow.
func thunderStrip(rows int) []byte {
	var b []byte
	for range rows {
		b = append(b, thunderRow...)
	}
	return b
}

// nextStrip is three 10-pixel rows of NeXT data (3 bytes a row): one
// stored whole, one a span of two bytes at byte 1, one of runs (grey 2
// for 5 pixels, grey 3 for 5).
func nextStrip() []byte {
	return []byte{0x00, 0x1b, 0xe4, 0x40, 0x40, 0x00, 0x01, 0x00, 0x02, 0xaa, 0x55, 0x85, 0xc5}
}

func thunderPage(strips ...[]byte) *fixtures.Dir {
	return fixtures.Image(16, 4*len(strips), 1, 4, 32809, 1, 4, 0, 0, strips)
}

func nextPage(strips ...[]byte) *fixtures.Dir {
	return fixtures.Image(10, 3*len(strips), 1, 2, 32766, 1, 3, 0, 0, strips)
}

// smallRLECases are the ThunderScan and NeXT masters of the tests: sound
// ones, and ones whose data ends early or holds what the codec cannot,
// with the cause and the strip (index into the layout's blocks) where it
// is refused. libtiff: whether `tiffinfo -D` reads every strip.
func smallRLECases() []struct {
	name    string
	page    *fixtures.Dir
	cause   error
	strip   int
	libtiff bool
} {
	full := thunderStrip(4)
	return []struct {
		name    string
		page    *fixtures.Dir
		cause   error
		strip   int
		libtiff bool
	}{
		{"ThunderScan sound", thunderPage(full, full), nil, 0, true},
		{"ThunderScan strip 10 codes short", thunderPage(full, full[:len(full)-10]), tiff.ErrShortData, 1, false},
		{"ThunderScan row one pixel short", thunderPage(full, append(thunderStrip(3), thunderRow[0], thunderRow[1], thunderRow[2], 9)), tiff.ErrShortData, 1, false},
		{"ThunderScan run past the row", thunderPage(append(thunderStrip(3), thunderRow[0], thunderRow[1], thunderRow[2], 11), full), tiff.ErrUndecodable, 0, false},
		{"NeXT sound", nextPage(nextStrip(), nextStrip()), nil, 0, true},
		{"NeXT run row cut", nextPage(nextStrip(), nextStrip()[:12]), tiff.ErrShortData, 1, false},
		{"NeXT stored row cut", nextPage(nextStrip()[:3], nextStrip()), tiff.ErrShortData, 0, false},
		{"NeXT span past the row", nextPage(nextStrip(), []byte{0x00, 1, 2, 3, 0x40, 0, 2, 0, 2, 1, 1, 0x85, 0xc5}), tiff.ErrUndecodable, 1, false},
		// Rows missing at a row's start: libtiff leaves them white and says
		// nothing; Lazaret refuses a master whose rows are missing.
		{"NeXT last row missing", nextPage(nextStrip(), nextStrip()[:11]), tiff.ErrShortData, 1, true},
	}
}

// TestThunderScanAndNeXTAreDecoded: ThunderScan (32809) and NeXT (32766)
// pages are decoded: a sound one passes with nothing left undecoded, a
// strip whose data ends early (ten codes short, one pixel short) is
// refused at its offset as short data, and data that breaks the codec as
// undecodable. Before, every one of them was accepted as not decoded.
func TestThunderScanAndNeXTAreDecoded(t *testing.T) {
	t.Parallel()
	for _, c := range smallRLECases() {
		data, lay := dirs(t, c.page)
		_, skipped, err := checkTIFF(data)
		if c.cause == nil {
			if err != nil || len(skipped) != 0 {
				t.Errorf("%s: %v, not decoded %v", c.name, err, skipped)
			}
			continue
		}
		var fe *tiff.FormatError
		if !errors.As(err, &fe) || !errors.Is(err, c.cause) || fe.Offset != lay.Blocks["page 1"][c.strip] || fe.Tag != 273 || fe.Page != 1 {
			t.Errorf("%s: %v, want %v at strip %d (byte %d)", c.name, err, c.cause, c.strip, lay.Blocks["page 1"][c.strip])
		}
	}
	// A page the codec is not defined for is not decoded, and says why.
	data, _ := dirs(t, fixtures.Image(16, 4, 1, 8, 32809, 1, 4, 0, 0, [][]byte{thunderStrip(4)}))
	if _, skipped, err := checkTIFF(data); err != nil || len(skipped) != 1 || skipped[0].Compression != 0 {
		t.Errorf("8-bit ThunderScan: %v %+v", err, skipped)
	}
}

// TestUnknownCompressionStaysNotDecoded: a page in a compression no
// decoder knows is accepted as not decoded under today's policy, and
// names its compression for a policy that would refuse it.
func TestUnknownCompressionStaysNotDecoded(t *testing.T) {
	t.Parallel()
	data, _ := dirs(t, fixtures.Image(8, 8, 1, 8, 52479, 1, 8, 0, 0, [][]byte{make([]byte, 40)}))
	_, skipped, err := checkTIFF(data)
	if err != nil || len(skipped) != 1 || skipped[0].Compression != 52479 {
		t.Fatalf("compression 52479: %v %+v", err, skipped)
	}
	data, _ = dirs(t, fixtures.Image(8, 8, 1, 8, 6, 1, 8, 0, 0, [][]byte{make([]byte, 40)}))
	if _, skipped, _ := checkTIFF(data); len(skipped) > 0 && skipped[0].Compression != 0 {
		t.Errorf("old-style JPEG is known, not decoded for another reason: %+v", skipped)
	}
}

// TestThunderScanAndNeXTAgreeWithLibtiff: libtiff's `tiffinfo -D` reads
// the sound pages and refuses the broken ones ("Not enough data", "Too
// much data"), where Lazaret does; the one difference is a NeXT strip
// whose last rows are missing, which libtiff leaves white.
func TestThunderScanAndNeXTAgreeWithLibtiff(t *testing.T) {
	t.Parallel()
	tiffinfo := testenv.Tiffinfo(t)
	dir := t.TempDir()
	for i, c := range smallRLECases() {
		data, _ := dirs(t, c.page)
		path := filepath.Join(dir, "case"+string(rune('a'+i))+".tif")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if got := testenv.LibtiffDecodes(tiffinfo, path); got != c.libtiff {
			t.Errorf("%s: libtiff reads it: %v, want %v", c.name, got, c.libtiff)
		}
	}
}
