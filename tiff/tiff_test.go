package tiff_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/tiff"
	"github.com/lazaret/lazaret/validate"
)

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

// TestWalkPositions patches single bytes (or words) of a valid three-page
// file and checks that the error names the right page, tag and byte.
func TestWalkPositions(t *testing.T) {
	t.Parallel()
	base, lay := encode(t, grey(16, 16), grey(16, 16), grey(16, 16))
	le := binary.LittleEndian
	// entry i of page p starts at IFD+2+12*i; the writer's tag order is
	// 256 257 258 259 262 273 277 278 279 282 283 284 296 305 306.
	entry := func(p, i int) int64 { return lay.IFDOffsets[p] + 2 + 12*int64(i) }
	cases := []struct {
		name   string
		patch  func(b []byte) []byte
		cause  error
		page   int
		offset int64
		tag    uint16
	}{
		{"bad byte order", func(b []byte) []byte { b[0] = 'X'; return b }, tiff.ErrNotTIFF, 0, 0, 0},
		{"bad magic", func(b []byte) []byte { b[2] = 41; return b }, tiff.ErrNotTIFF, 0, 2, 0},
		{"next pointer past EOF on page 2", func(b []byte) []byte {
			le.PutUint32(b[lay.NextPtrAt[1]:], 1<<30)
			return b
		}, tiff.ErrOutsideFile, 3, lay.NextPtrAt[1], 0},
		{"loop from page 3 to page 2", func(b []byte) []byte {
			le.PutUint32(b[lay.NextPtrAt[2]:], uint32(lay.IFDOffsets[1]))
			return b
		}, tiff.ErrIFDLoop, 4, lay.NextPtrAt[2], 0},
		{"field type 0 in page 2 entry 3 (Compression)", func(b []byte) []byte {
			le.PutUint16(b[entry(1, 3)+2:], 0)
			return b
		}, tiff.ErrBadEntry, 2, entry(1, 3) + 2, 259},
		{"zero width on page 3", func(b []byte) []byte {
			le.PutUint32(b[entry(2, 0)+8:], 0)
			return b
		}, tiff.ErrZeroSize, 3, entry(2, 0), 256},
		{"strip offset past EOF on page 1", func(b []byte) []byte {
			// StripOffsets is entry 5; two strips, so its values sit at its pointer.
			at := int64(le.Uint32(b[entry(0, 5)+8:]))
			le.PutUint32(b[at+4:], 1<<20)
			return b
		}, tiff.ErrOutsideFile, 1, 0 /* set below */, 273},
		{"truncated inside page 2", func(b []byte) []byte { return b[:lay.IFDOffsets[1]+40] }, tiff.ErrTruncated, 2, lay.IFDOffsets[1] + 2, 0},
		{"short uncompressed strip on page 1", func(b []byte) []byte {
			at := int64(le.Uint32(b[entry(0, 8)+8:])) // StripByteCounts values
			le.PutUint32(b[at:], 100)
			return b
		}, tiff.ErrShortData, 1, 0, 279},
	}
	for _, tc := range cases {
		b := tc.patch(bytes.Clone(base))
		_, err := walk(b)
		var te *tiff.FormatError
		if !errors.As(err, &te) {
			t.Errorf("%s: got %v, want a *FormatError", tc.name, err)
			continue
		}
		if !errors.Is(err, tc.cause) {
			t.Errorf("%s: cause %v, want %v", tc.name, err, tc.cause)
		}
		want := tc.offset
		if tc.name == "strip offset past EOF on page 1" {
			want = int64(le.Uint32(b[entry(0, 5)+8:])) + 4
		}
		if tc.name == "short uncompressed strip on page 1" {
			want = int64(le.Uint32(b[entry(0, 8)+8:]))
		}
		if te.Page != tc.page || te.Offset != want || te.Tag != tc.tag {
			t.Errorf("%s: page %d offset %d tag %d, want page %d offset %d tag %d (%v)", tc.name, te.Page, te.Offset, te.Tag, tc.page, want, tc.tag, err)
		}
	}
	if errors.Is(tiff.ErrTruncated, io.ErrUnexpectedEOF) == false {
		t.Error("ErrTruncated must wrap io.ErrUnexpectedEOF")
	}
}

func TestWalkMultiPage(t *testing.T) {
	t.Parallel()
	data, lay := encode(t, grey(10, 7), grey(20, 9), fixtures.Page{Width: 5, Height: 5, Samples: 3, Deflate: true})
	info, err := walk(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Pages) != 3 {
		t.Fatalf("%d pages, want 3", len(info.Pages))
	}
	for i, p := range info.Pages {
		if p.Offset != lay.IFDOffsets[i] {
			t.Errorf("page %d at %d, want %d", i+1, p.Offset, lay.IFDOffsets[i])
		}
	}
	if info.Pages[1].Width != 20 || info.Pages[1].Height != 9 || info.Pages[2].Compression != 8 || info.Pages[0].XResolution != 400 {
		t.Errorf("page fields: %+v", info.Pages)
	}
}

// TestPageCap: a chain longer than the cap is refused at the cap.
func TestPageCap(t *testing.T) {
	t.Parallel()
	pages := make([]fixtures.Page, 6)
	for i := range pages {
		pages[i] = grey(4, 4)
	}
	data, lay := encode(t, pages...)
	lim := tiff.DefaultLimits
	lim.MaxPages = 5
	_, err := tiff.WalkTIFF(bytes.NewReader(data), int64(len(data)), lim)
	var te *tiff.FormatError
	if !errors.As(err, &te) || !errors.Is(err, tiff.ErrTooManyPages) || te.Offset != lay.NextPtrAt[4] {
		t.Fatalf("got %v, want ErrTooManyPages at %d", err, lay.NextPtrAt[4])
	}
}

// TestDimensionBombAllocatesNothing: a 138-byte file claiming 100000x100000
// pixels is refused by the pixel budget before the decoder allocates.
func TestDimensionBombAllocatesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bomb.tif")
	if err := os.WriteFile(path, fixtures.DimensionBomb(), 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := validate.CheckMaster(context.Background(), path, nil, validate.DefaultMasterPolicy())
	runtime.ReadMemStats(&after)
	var le *tiff.LimitError
	if !errors.As(err, &le) || le.Have != 100000*100000 || le.Page != 1 {
		t.Fatalf("got %v, want a LimitError for 1e10 pixels on page 1", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
		t.Fatalf("refusing the bomb allocated %d bytes", grew)
	}
}

func TestCorruptStripNamesPageAndBlock(t *testing.T) {
	t.Parallel()
	p := fixtures.Page{Width: 32, Height: 32, Samples: 3, Deflate: true, RowsPerStrip: 8}
	data, lay := encode(t, grey(8, 8), p)
	at := lay.StripOffsets[1][2] + 2
	for i := int64(0); i < 8; i++ {
		data[at+i] ^= 0xFF
	}
	path := filepath.Join(t.TempDir(), "corrupt.tif")
	os.WriteFile(path, data, 0o644)
	_, err := validate.CheckMaster(context.Background(), path, nil, validate.DefaultMasterPolicy())
	var te *tiff.FormatError
	if !errors.As(err, &te) || !errors.Is(err, tiff.ErrUndecodable) {
		t.Fatalf("got %v, want ErrUndecodable", err)
	}
	if te.Page != 2 || te.Offset != lay.StripOffsets[1][2] {
		t.Errorf("page %d offset %d, want page 2 at the third strip, byte %d", te.Page, te.Offset, lay.StripOffsets[1][2])
	}
}

func TestBigTIFFIsWalked(t *testing.T) {
	t.Parallel()
	// A minimal little-endian BigTIFF: 4x2 grey, one uncompressed strip.
	var b bytes.Buffer
	le := binary.LittleEndian
	b.WriteString("II+\x00")
	binary.Write(&b, le, uint16(8))
	binary.Write(&b, le, uint16(0))
	binary.Write(&b, le, uint64(16))
	type e struct {
		tag, typ uint16
		n, v     uint64
	}
	ents := []e{{256, 3, 1, 4}, {257, 3, 1, 2}, {258, 3, 1, 8}, {259, 3, 1, 1}, {262, 3, 1, 1}, {273, 16, 1, 0}, {277, 3, 1, 1}, {278, 3, 1, 2}, {279, 16, 1, 8}}
	stripAt := uint64(16 + 8 + 20*len(ents) + 8)
	binary.Write(&b, le, uint64(len(ents)))
	for _, x := range ents {
		if x.tag == 273 {
			x.v = stripAt
		}
		binary.Write(&b, le, x.tag)
		binary.Write(&b, le, x.typ)
		binary.Write(&b, le, x.n)
		binary.Write(&b, le, x.v)
	}
	binary.Write(&b, le, uint64(0))
	b.Write([]byte{1, 2, 3, 4, 5, 6, 7, 8})
	info, err := walk(b.Bytes())
	if err != nil || !info.BigTIFF || len(info.Pages) != 1 || info.Pages[0].BlockOffsets[0] != stripAt {
		t.Fatalf("info %+v err %v", info, err)
	}
	short := b.Bytes()[:len(b.Bytes())-3]
	if _, err := walk(short); !errors.Is(err, tiff.ErrOutsideFile) {
		t.Errorf("strip past EOF in BigTIFF: %v", err)
	}
}

func TestIdentify(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ head, puid string }{
		{"II*\x00", "fmt/353"}, {"MM\x00*", "fmt/353"}, {"II+\x00", "fmt/1917"}, {"MM\x00+", "fmt/1917"},
		{"\xff\xd8\xff\xe0", "fmt/43"}, {"\x89PNG\r\n\x1a\n", "fmt/11"}, {"%PDF-1.7", "fmt/276"}, {"hello", ""},
	} {
		if got, _ := tiff.Identify([]byte(tc.head)); got != tc.puid {
			t.Errorf("Identify(%q) = %q, want %q", tc.head, got, tc.puid)
		}
	}
}

// testCorpusOrSkip is the directory of the shared TIFF corpus sub ("good",
// "bad", "edge"), or skips the test where the corpus is absent.
func testCorpusOrSkip(t *testing.T, sub string) string {
	return testenv.Corpus(t, "tiff", sub)
}

// corpusFiles lists the files of the shared TIFF corpus sub.
func corpusFiles(t *testing.T, sub string) []string {
	t.Helper()
	dir := testenv.Corpus(t, "tiff", sub)
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no files in %s: %v", dir, err)
	}
	return files
}
