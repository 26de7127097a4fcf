package tiff_test

import (
	"bytes"
	"errors"
	"image"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/tiff"
)

// jpegStrips is a w x h YCbCr JPEG page (compression 7) in strips of rps
// rows, each strip its own JPEG stream; with tables, the streams are
// abbreviated and the page carries JPEGTables.
func jpegStrips(w, h, rps int, withTables bool) *fixtures.Dir {
	img := fixtures.Gradient(w, h)
	var blocks [][]byte
	var tables []byte
	for y := 0; y < h; y += rps {
		full := fixtures.JPEG(img.SubImage(image.Rect(0, y, w, min(y+rps, h))))
		if withTables {
			tables, full = fixtures.SplitJPEG(full)
		}
		blocks = append(blocks, full)
	}
	var extra []fixtures.Tag
	if withTables {
		extra = append(extra, fixtures.Undefined(347, tables))
	}
	return fixtures.Image(w, h, 3, 8, 7, 6, rps, 0, 0, blocks, extra...)
}

// jpegTiles is a w x h grey JPEG page in t x t tiles, with JPEGTables.
func jpegTiles(w, h, t int) *fixtures.Dir {
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 3)
	}
	var blocks [][]byte
	var tables []byte
	for y := 0; y < h; y += t {
		for x := 0; x < w; x += t {
			tile := image.NewGray(image.Rect(0, 0, t, t))
			for ty := 0; ty < t; ty++ {
				for tx := 0; tx < t; tx++ {
					if x+tx < w && y+ty < h {
						tile.Pix[ty*t+tx] = img.Pix[(y+ty)*w+x+tx]
					}
				}
			}
			var full []byte
			tables, full = fixtures.SplitJPEG(fixtures.JPEG(tile))
			blocks = append(blocks, full)
		}
	}
	return fixtures.Image(w, h, 1, 8, 7, 1, 0, t, t, blocks, fixtures.Undefined(347, tables))
}

// TestJPEGIsDecoded: JPEG-in-TIFF strips and tiles decode with
// image/jpeg, JPEGTables merged; on main they were only walked.
func TestJPEGIsDecoded(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		d    *fixtures.Dir
	}{
		{"strips with tables, short last strip", jpegStrips(37, 21, 8, true)},
		{"strips, whole streams", jpegStrips(37, 21, 16, false)},
		{"grey tiles with tables", jpegTiles(40, 20, 16)},
	} {
		data, _ := dirs(t, c.d)
		if _, skipped, err := checkTIFF(data); err != nil || len(skipped) != 0 {
			t.Errorf("%s: %v %v", c.name, err, skipped)
		}
	}
}

func TestJPEGFaultsArePlaced(t *testing.T) {
	t.Parallel()
	// The second strip's scan is cut short.
	d := jpegStrips(37, 21, 8, true)
	d.Blocks[1] = d.Blocks[1][:len(d.Blocks[1])/2]
	data, lay := dirs(t, d)
	_, _, err := checkTIFF(data)
	wantPos(t, err, tiff.ErrUndecodable, 1, "", 273, lay.Blocks["page 1"][1])

	// The second tile's stream is a frame bigger than the tile.
	d = jpegTiles(40, 20, 16)
	_, big := fixtures.SplitJPEG(fixtures.JPEG(image.NewGray(image.Rect(0, 0, 32, 16))))
	d.Blocks[1] = big
	data, lay = dirs(t, d)
	_, _, err = checkTIFF(data)
	wantPos(t, err, tiff.ErrBadValue, 1, "", 324, lay.Blocks["page 1"][1])

	// A strip whose frame is shorter than its rows.
	d = jpegStrips(37, 21, 8, false)
	d.Blocks[0] = fixtures.JPEG(fixtures.Gradient(37, 4))
	data, lay = dirs(t, d)
	_, _, err = checkTIFF(data)
	wantPos(t, err, tiff.ErrShortData, 1, "", 273, lay.Blocks["page 1"][0])

	// JPEGTables that are not a JPEG stream.
	d = jpegStrips(37, 21, 8, true)
	d.Tags[len(d.Tags)-1] = fixtures.Undefined(347, []byte("not a JPEG stream"))
	data, lay = dirs(t, d)
	_, _, err = checkTIFF(data)
	wantPos(t, err, tiff.ErrUndecodable, 1, "", 347, lay.Value["page 1 347"])
}

// TestJPEGMemoryBudget: a JPEG block is refused before it is decoded when
// its frame needs more than the memory budget leaves.
func TestJPEGMemoryBudget(t *testing.T) {
	t.Parallel()
	data, lay := dirs(t, jpegStrips(1024, 1024, 1024, true))
	r := bytes.NewReader(data)
	info, err := tiff.WalkTIFF(r, int64(len(data)), tiff.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	for _, budget := range []int64{2 << 20, 64 << 20} {
		_, err = tiff.DecodePages(r, info, tiff.DecodeOptions{PixelBudget: 1 << 30, MemoryBudget: budget})
		var le *tiff.LimitError
		over := errors.As(err, &le)
		switch {
		case budget == 2<<20 && (!over || le.What != "jpeg" || le.Offset != lay.Blocks["page 1"][0] || le.Have <= le.Limit):
			t.Errorf("budget %d: got %v, want a jpeg *LimitError at byte %d", budget, err, lay.Blocks["page 1"][0])
		case budget == 64<<20 && err != nil:
			t.Errorf("budget %d: %v", budget, err)
		}
	}
}

// oldJPEG is a 37x21 old-style JPEG page (compression 6) as Wang and
// others wrote them: JPEGInterchangeFormat points at the stream's headers,
// the one strip holds the scan from its SOS on. scan edits the strip.
func oldJPEG(scan func([]byte) []byte) *fixtures.Dir {
	full := fixtures.JPEG(fixtures.Gradient(37, 21))
	sos := bytes.Index(full, []byte{0xff, 0xda})
	d := fixtures.Image(37, 21, 3, 8, 6, 6, 21, 0, 0, [][]byte{scan(full[sos:])})
	d.Tags = append(d.Tags, fixtures.Undefined(40000, full[:sos])) // the headers, somewhere in the file
	return d
}

// TestOldJPEGIsDecoded: an old-style JPEG page whose stream is its
// interchange headers then its strips is decoded; one whose scan
// image/jpeg cannot decode is checked structurally and reported as not
// decoded (libtiff's reader of the format is more lenient than any
// standard); one without a stream to decode is reported so.
func TestOldJPEGIsDecoded(t *testing.T) {
	t.Parallel()
	build := func(scan func([]byte) []byte, interchange bool) []byte {
		d := oldJPEG(scan)
		data, lay := dirs(t, d)
		if !interchange {
			return data
		}
		// Point 513/514 at the headers written as tag 40000's value.
		d.Tags = append(d.Tags, fixtures.Longs(513, uint32(lay.Value["page 1 40000"])),
			fixtures.Longs(514, uint32(len(d.Tags[len(d.Tags)-1].Value))))
		data2, lay2 := dirs(t, d)
		if lay2.Value["page 1 40000"] != lay.Value["page 1 40000"] {
			t.Fatal("layout moved")
		}
		return data2
	}
	same := func(b []byte) []byte { return b }
	if _, skipped, err := checkTIFF(build(same, true)); err != nil || len(skipped) != 0 {
		t.Errorf("old-style JPEG: %v %v", err, skipped)
	}
	cut := func(b []byte) []byte { return append(append([]byte(nil), b[:len(b)/2]...), 0xff, 0xd9) }
	_, skipped, err := checkTIFF(build(cut, true))
	if err != nil || len(skipped) != 1 || !strings.Contains(skipped[0].Reason, "old-style JPEG") {
		t.Errorf("cut scan: got %v %v, want one old-style JPEG warning", err, skipped)
	}
	_, skipped, err = checkTIFF(build(same, false))
	if err != nil || len(skipped) != 1 || !strings.Contains(skipped[0].Reason, "no JPEGInterchangeFormat") {
		t.Errorf("no interchange stream: got %v %v", err, skipped)
	}
	// A stream pointer past the end of the file is refused by the walk.
	data := build(same, true)
	d := oldJPEG(same)
	d.Tags = append(d.Tags, fixtures.Longs(513, uint32(len(data)+100)))
	data, lay := dirs(t, d)
	_, _, err = checkTIFF(data)
	wantPos(t, err, tiff.ErrOutsideFile, 1, "", 513, lay.Value["page 1 513"])
}

// TestOldJPEGFromTables: an old-style JPEG page with no interchange
// stream, its tables in JPEGQTables, JPEGDCTables and JPEGACTables and
// its strip the scan data alone (as libtiff's ojpeg_zackthecat test image
// is), is decoded from a stream built out of those tables; a scan cut
// short leaves it not decoded, with the reason.
func TestOldJPEGFromTables(t *testing.T) {
	t.Parallel()
	q, dc, ac, scan := fixtures.OldJPEGParts(fixtures.JPEG(fixtures.Gradient(37, 21)))
	if len(q) != 2 || len(dc) != 2 || len(ac) != 2 {
		t.Fatalf("image/jpeg wrote %d, %d, %d tables", len(q), len(dc), len(ac))
	}
	build := func(scan []byte) []byte {
		blobs := func() []fixtures.Tag {
			return []fixtures.Tag{fixtures.Undefined(460, bytes.Join(q, nil)), fixtures.Undefined(461, bytes.Join(dc, nil)), fixtures.Undefined(462, bytes.Join(ac, nil))}
		}
		d := fixtures.Image(37, 21, 3, 8, 6, 6, 21, 0, 0, [][]byte{scan}, append(blobs(), fixtures.Shorts(530, 2, 2), fixtures.Shorts(512, 1))...)
		_, lay := dirs(t, d)
		v := func(tag int) uint32 { return uint32(lay.Value["page 1 "+itoa(tag)]) }
		// Cb and Cr share the second tables, as image/jpeg codes them.
		d.Tags = append(d.Tags, fixtures.Longs(519, v(460), v(460)+64, v(460)+64),
			fixtures.Longs(520, v(461), v(461)+uint32(len(dc[0])), v(461)+uint32(len(dc[0]))),
			fixtures.Longs(521, v(462), v(462)+uint32(len(ac[0])), v(462)+uint32(len(ac[0]))))
		data, lay2 := dirs(t, d)
		if lay2.Value["page 1 460"] != lay.Value["page 1 460"] || lay2.Value["page 1 462"] != lay.Value["page 1 462"] {
			t.Fatal("layout moved")
		}
		return data
	}
	if _, skipped, err := checkTIFF(build(scan)); err != nil || len(skipped) != 0 {
		t.Errorf("old-style JPEG from tables: %v %v", err, skipped)
	}
	_, skipped, err := checkTIFF(build(scan[:len(scan)/3]))
	if err != nil || len(skipped) != 1 || !strings.Contains(skipped[0].Reason, "built from the tables") {
		t.Errorf("cut scan: got %v %v", err, skipped)
	}
}
