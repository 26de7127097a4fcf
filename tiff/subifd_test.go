package tiff_test

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/tiff"
)

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

func exifDir() *fixtures.Dir {
	return &fixtures.Dir{Tags: []fixtures.Tag{fixtures.Rationals(33434, 1, 125), fixtures.ASCII(36867, "2026:01:15 10:30:00")}}
}

// checkTIFF walks data and decodes its pixels, as CheckMaster does.
func checkTIFF(data []byte) (*tiff.TIFFInfo, []*tiff.UnsupportedError, error) {
	r := bytes.NewReader(data)
	info, err := tiff.WalkTIFF(r, int64(len(data)), tiff.DefaultLimits)
	if err != nil {
		return info, nil, err
	}
	skipped, err := tiff.DecodePages(r, info, tiff.DecodeOptions{PixelBudget: 1 << 30, DecodeUncompressed: true})
	return info, skipped, err
}

// wantPos checks that err is a *FormatError with cause at page, path, tag and
// offset.
func wantPos(t *testing.T, err error, cause error, page int, path string, tag uint16, offset int64) {
	t.Helper()
	var te *tiff.FormatError
	if !errors.As(err, &te) {
		t.Fatalf("got %v, want a *FormatError", err)
	}
	if !errors.Is(err, cause) || te.Page != page || te.Path != path || te.Tag != tag || te.Offset != offset {
		t.Fatalf("got %v (page %d path %q tag %d offset %d), want %v at page %d path %q tag %d offset %d",
			err, te.Page, te.Path, te.Tag, te.Offset, cause, page, path, tag, offset)
	}
}

func TestChildDirectoriesAreWalked(t *testing.T) {
	t.Parallel()
	p1 := greyDir()
	p1.EXIF = exifDir()
	p1.EXIF.Interop = &fixtures.Dir{Tags: []fixtures.Tag{fixtures.ASCII(1, "R98")}}
	p1.GPS = &fixtures.Dir{Tags: []fixtures.Tag{{Tag: 0, Type: 1, Count: 4, Value: []byte{2, 3, 0, 0}}}}
	p2 := greyDir()
	p2.SubIFDs = [][]*fixtures.Dir{{greyDir(fixtures.Longs(254, 1)), greyDir(fixtures.Longs(254, 1))}, {greyDir()}}
	p2.SubIFDs[1][0].EXIF = exifDir()
	data, lay := dirs(t, p1, p2)
	info, skipped, err := checkTIFF(data)
	if err != nil || len(skipped) != 0 {
		t.Fatalf("valid file: %v %v", err, skipped)
	}
	var gotDirs []string
	for _, d := range info.Directories {
		gotDirs = append(gotDirs, "page "+itoa(d.Page)+" / "+d.Path)
		if d.Offset != lay.IFD["page "+itoa(d.Page)+" / "+d.Path] {
			t.Errorf("%s at %d, written at %d", d.Path, d.Offset, lay.IFD["page "+itoa(d.Page)+" / "+d.Path])
		}
	}
	wantDirs := []string{"page 1 / EXIF", "page 1 / EXIF / Interoperability", "page 1 / GPS", "page 2 / SubIFD 2 / EXIF"}
	if !equalStrings(gotDirs, wantDirs) {
		t.Errorf("directories %q, want %q", gotDirs, wantDirs)
	}
	var gotSubs []string
	for _, p := range info.SubImages {
		gotSubs = append(gotSubs, "page "+itoa(p.Index+1)+" / "+p.Path)
	}
	wantSubs := []string{"page 2 / SubIFD 1", "page 2 / SubIFD 1.2", "page 2 / SubIFD 2"}
	if !equalStrings(gotSubs, wantSubs) {
		t.Errorf("sub-images %q, want %q", gotSubs, wantSubs)
	}
	if len(info.Pages) != 2 {
		t.Errorf("%d pages, want 2: child images are not pages", len(info.Pages))
	}
}

// TestChildDirectoryPositions breaks one thing in a child directory at a
// time and checks the error names page, path, tag and byte.
func TestChildDirectoryPositions(t *testing.T) {
	t.Parallel()
	le := binary.LittleEndian
	build := func() *fixtures.Dir {
		p := greyDir()
		p.EXIF = exifDir()
		p.EXIF.Interop = &fixtures.Dir{Tags: []fixtures.Tag{fixtures.ASCII(1, "R98")}}
		p.SubIFDs = [][]*fixtures.Dir{{greyDir()}}
		return p
	}
	_, lay := dirs(t, greyDir(), build())
	cases := []struct {
		name   string
		patch  func(b []byte)
		cause  error
		path   string
		tag    uint16
		offset int64
	}{
		{"EXIF pointer 0", func(b []byte) { le.PutUint32(b[lay.Pointer["page 2 / EXIF"]:], 0) },
			tiff.ErrBadValue, "", 34665, lay.Pointer["page 2 / EXIF"]},
		{"EXIF pointer past the end", func(b []byte) { le.PutUint32(b[lay.Pointer["page 2 / EXIF"]:], 1<<30) },
			tiff.ErrOutsideFile, "EXIF", 0, lay.Pointer["page 2 / EXIF"]},
		{"Interoperability IFD with no entries", func(b []byte) { le.PutUint16(b[lay.IFD["page 2 / EXIF / Interoperability"]:], 0) },
			tiff.ErrBadEntry, "EXIF / Interoperability", 0, lay.IFD["page 2 / EXIF / Interoperability"]},
		{"EXIF entry of type 0", func(b []byte) { le.PutUint16(b[lay.Entry["page 2 / EXIF 33434"]+2:], 0) },
			tiff.ErrBadEntry, "EXIF", 33434, lay.Entry["page 2 / EXIF 33434"] + 2},
		{"EXIF value past the end", func(b []byte) { le.PutUint32(b[lay.Entry["page 2 / EXIF 33434"]+8:], 1<<30) },
			tiff.ErrOutsideFile, "EXIF", 33434, lay.Entry["page 2 / EXIF 33434"] + 8},
		{"EXIF pointer of type ASCII", func(b []byte) { le.PutUint16(b[lay.Entry["page 2 34665"]+2:], 2) },
			tiff.ErrBadEntry, "", 34665, lay.Entry["page 2 34665"] + 2},
		{"Interoperability pointing back at page 1", func(b []byte) {
			le.PutUint32(b[lay.Pointer["page 2 / EXIF / Interoperability"]:], uint32(lay.IFD["page 1"]))
		}, tiff.ErrIFDLoop, "EXIF / Interoperability", 0, lay.Pointer["page 2 / EXIF / Interoperability"]},
		{"SubIFD pointing at its own page", func(b []byte) { le.PutUint32(b[lay.Pointer["page 2 / SubIFD 1"]:], uint32(lay.IFD["page 2"])) },
			tiff.ErrIFDLoop, "SubIFD 1", 0, lay.Pointer["page 2 / SubIFD 1"]},
		{"SubIFD whose next pointer loops to itself", func(b []byte) {
			le.PutUint32(b[lay.IFD["page 2 / SubIFD 1"]+2+12*9:], uint32(lay.IFD["page 2 / SubIFD 1"]))
		}, tiff.ErrIFDLoop, "SubIFD 1.2", 0, lay.IFD["page 2 / SubIFD 1"] + 2 + 12*9},
		{"SubIFD without ImageLength", func(b []byte) { le.PutUint16(b[lay.Entry["page 2 / SubIFD 1 257"]:], 999) },
			tiff.ErrMissingTag, "SubIFD 1", 257, lay.IFD["page 2 / SubIFD 1"]},
		{"SubIFD strip past the end", func(b []byte) { le.PutUint32(b[lay.Value["page 2 / SubIFD 1 273"]:], 1<<30) },
			tiff.ErrOutsideFile, "SubIFD 1", 273, lay.Value["page 2 / SubIFD 1 273"]},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data, _ := dirs(t, greyDir(), build())
			c.patch(data)
			_, _, err := checkTIFF(data)
			wantPos(t, err, c.cause, 2, c.path, c.tag, c.offset)
		})
	}
}

func TestSubIFDPixelsAreDecoded(t *testing.T) {
	t.Parallel()
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(make([]byte, 64))
	zw.Close()
	good := z.Bytes()
	bad := append([]byte(nil), good...)
	bad[len(bad)-1] ^= 0xff // Adler-32 checksum
	for _, c := range []struct {
		name  string
		block []byte
		ok    bool
	}{{"good", good, true}, {"bad checksum", bad, false}} {
		p := greyDir()
		p.SubIFDs = [][]*fixtures.Dir{{fixtures.Image(8, 8, 1, 8, 8, 1, 8, 0, 0, [][]byte{c.block})}}
		data, lay := dirs(t, greyDir(), p)
		_, skipped, err := checkTIFF(data)
		if c.ok {
			if err != nil || len(skipped) != 0 {
				t.Errorf("%s: %v %v", c.name, err, skipped)
			}
			continue
		}
		var te *tiff.FormatError
		if !errors.As(err, &te) || te.Page != 2 || te.Path != "SubIFD 1" || te.Offset < lay.Blocks["page 2 / SubIFD 1"][0] {
			t.Errorf("%s: got %v, want a decode error in page 2 / SubIFD 1", c.name, err)
		}
	}
}

func TestChildDirectoriesAreBounded(t *testing.T) {
	t.Parallel()
	// Six levels of SubIFDs: deeper than Lazaret follows.
	leaf := greyDir()
	top := leaf
	for i := 0; i < 5; i++ {
		d := greyDir()
		d.SubIFDs = [][]*fixtures.Dir{{top}}
		top = d
	}
	data, lay := dirs(t, top)
	_, _, err := checkTIFF(data)
	path := "SubIFD 1 / SubIFD 1 / SubIFD 1 / SubIFD 1"
	wantPos(t, err, tiff.ErrIFDDepth, 1, path, 330, lay.Entry["page 1 / "+path+" 330"])

	// The IFD cap counts child directories.
	p := greyDir()
	p.EXIF, p.GPS = exifDir(), exifDir()
	data, lay = dirs(t, p)
	lim := tiff.DefaultLimits
	lim.MaxPages = 2
	_, err = tiff.WalkTIFF(bytes.NewReader(data), int64(len(data)), lim)
	wantPos(t, err, tiff.ErrTooManyPages, 1, "GPS", 0, lay.Pointer["page 1 / GPS"])
}

func itoa(n int) string { return strconv.Itoa(n) }

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestCorpusChildDirectoryFindings pins what walking child directories
// finds in the shared corpus: the offsets libtiff's tiffinfo prints for
// the same directories, and the faults it refuses the files for.
func TestCorpusChildDirectoryFindings(t *testing.T) {
	t.Parallel()
	read := func(sub, name string) []byte {
		b, err := os.ReadFile(filepath.Join(testCorpusOrSkip(t, sub), name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// tiffinfo: "EXIF directory within directory 0 ... at offset 0x2e2
	// (738)", "GPS directory ... at offset 0x1bc (444)".
	info, _, err := checkTIFF(read("good", "libtiff-custom_dir_EXIF_GPS.tiff"))
	if err != nil || len(info.Directories) != 2 ||
		info.Directories[0] != (tiff.Directory{Page: 1, Path: "EXIF", Offset: 738, Entries: info.Directories[0].Entries}) ||
		info.Directories[1] != (tiff.Directory{Page: 1, Path: "GPS", Offset: 444, Entries: info.Directories[1].Entries}) {
		t.Errorf("EXIF and GPS: %v %+v", err, info.Directories)
	}
	// tiffinfo: SubIFD chains at 1800 and 1324 (page 1), and 1990 then
	// 1562 (page 2).
	info, _, err = checkTIFF(read("good", "libtiff-tiff_with_subifd_chain.tif"))
	var got []string
	for _, p := range info.SubImages {
		got = append(got, fmt.Sprintf("page %d / %s at %d", p.Index+1, p.Path, p.Offset))
	}
	want := []string{"page 1 / SubIFD 1 at 1800", "page 1 / SubIFD 2 at 1324", "page 2 / SubIFD 1 at 1990", "page 2 / SubIFD 1.2 at 1562"}
	if err != nil || !equalStrings(got, want) {
		t.Errorf("SubIFD chains: %v %q, want %q", err, got, want)
	}
	// The child IFD at 155 holds only a JPEG thumbnail pointer (513,
	// 514): no ImageWidth, no ImageLength (tiffinfo: "MissingRequired").
	_, _, err = checkTIFF(read("edge", "pillow-child_ifd_jpeg.tiff"))
	wantPos(t, err, tiff.ErrMissingTag, 1, "SubIFD 1", 256, 155)
	// A SubIFD chain that loops: its fourth IFD's next pointer (at byte
	// 842) goes back to its second (at 524).
	_, _, err = checkTIFF(read("bad", "libtiff-test_ifd_loop_subifd.tif"))
	wantPos(t, err, tiff.ErrIFDLoop, 2, "SubIFD 1.4", 0, 842)
}
