package validate_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/tiff"
	"github.com/lazaret/lazaret/validate"
)

// edgeDecisions is the policy for every file in the corpus's tiff/edge
// folder: accepted (with or without warnings) or refused with a structural
// error. Each decision is deliberate; the reason is beside it.
var edgeDecisions = map[string]struct {
	accept bool
	why    string
}{
	"goimage-no_compress.tiff":                             {true, "Compression absent: baseline default 1 (none) applies; warned"},
	"goimage-no_rps.tiff":                                  {true, "RowsPerStrip absent: default 2^32-1 (one strip) applies"},
	"imagetiff-no_rows_per_strip.tiff":                     {true, "RowsPerStrip absent on a 512x512 RGB image; one strip, complete"},
	"libtiff-deflate-last-strip-extra-data.tiff":           {true, "extra trailing bytes after a complete deflate strip do not lose data"},
	"libtiff-ojpeg_chewey_subsamp21_multi_strip.tiff":      {true, "old-style JPEG is deprecated but valid; its interchange headers and strips (restart markers put back) decode"},
	"libtiff-ojpeg_zackthecat_subsamp22_single_strip.tiff": {true, "old-style JPEG without an interchange stream: decoded from a stream built out of its table tags (tiffinfo -D does not decode it: \"Cannot display data\")"},
	"libtiff-ojpeg_single_strip_no_rowsperstrip.tiff":      {false, "an IFD entry of field type 0 (libtiff also errors on this file)"},
	"libtiff-testfax3_bug54_1dnoEOL.tif":                   {true, "G3 1-D without EOL codes: libtiff decodes it, and so does Lazaret's own CCITT decoder"},
	"libtiff-testfax3_bug_513.tiff":                        {true, "valid G3; the failure was a libtiff bug; decodes here"},
	"imagetiff-tiled-oversize-gray-i8.tif":                 {true, "tiles past the image edge are legal padding; block data verified"},
	"imagetiff-extra_bits_rgb_8b.tiff":                     {true, "RGB plus an unspecified extra sample; structure fine, decoder declines, warned"},
	"libtiffpic-text.tif":                                  {false, "ThunderScan strip 5 ends two rows early: short data, as libtiff -D finds it (\"Not enough data at scanline 320 (0 != 1512)\")"},
	"pillow-total-pages-zero.tif":                          {true, "PageNumber total 0 means unknown; multi-page G3 with padded EOLs, decoded"},
	"pillow-multipage_out_of_order.tiff":                   {true, "IFDs stored out of file order are legal"},
	"pillow-tiff_wrong_bits_per_sample_2.tiff":             {true, "excess BitsPerSample values: warned, the first SamplesPerPixel values are used"},
	"pillow-separate_planar_extra_samples.tiff":            {false, "a plane with StripByteCounts 0 has no data (libtiff -D fails too)"},
	"pillow-child_ifd_jpeg.tiff":                           {false, "the child (SubIFD) image has no ImageLength: refused at page 1 / SubIFD 1 (libtiff also errors on this file)"},
}

func corpusFiles(t *testing.T, sub string) []string {
	t.Helper()
	dir := testenv.Corpus(t, "tiff", sub)
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no files in %s: %v", dir, err)
	}
	return files
}

func TestCorpusGoodIsAccepted(t *testing.T) {
	t.Parallel()
	for _, f := range corpusFiles(t, "good") {
		rep, err := validate.CheckMaster(context.Background(), f, nil, validate.DefaultMasterPolicy())
		if err != nil {
			t.Errorf("%s: refused: %v", filepath.Base(f), err)
			continue
		}
		if rep.PUID != "fmt/353" && rep.PUID != "fmt/1917" && rep.PUID != "fmt/155" {
			t.Errorf("%s: PUID %q", filepath.Base(f), rep.PUID)
		}
		if rep.Pages == 0 || len(rep.SHA256) != 64 {
			t.Errorf("%s: report %+v", filepath.Base(f), rep)
		}
	}
}

func TestCorpusBadIsRefusedWithOffset(t *testing.T) {
	t.Parallel()
	for _, f := range corpusFiles(t, "bad") {
		st, _ := os.Stat(f)
		_, err := validate.CheckMaster(context.Background(), f, nil, validate.DefaultMasterPolicy())
		var te *tiff.FormatError
		if !errors.As(err, &te) {
			t.Errorf("%s: want a structural *tiff.FormatError, got %v", filepath.Base(f), err)
			continue
		}
		if te.Offset < 0 || te.Offset > st.Size() {
			t.Errorf("%s: offset %d outside the %d-byte file", filepath.Base(f), te.Offset, st.Size())
		}
		if te.Code == "" {
			t.Errorf("%s: no code on %v", filepath.Base(f), te)
		}
	}
}

func TestCorpusEdgeDecisions(t *testing.T) {
	t.Parallel()
	files := corpusFiles(t, "edge")
	for _, f := range files {
		name := filepath.Base(f)
		d, ok := edgeDecisions[name]
		if !ok {
			t.Errorf("%s: no decision recorded for this edge file", name)
			continue
		}
		rep, err := validate.CheckMaster(context.Background(), f, nil, validate.DefaultMasterPolicy())
		switch {
		case d.accept && err != nil:
			t.Errorf("%s: refused (%v); decided: accept, %s", name, err, d.why)
		case !d.accept:
			var te *tiff.FormatError
			if !errors.As(err, &te) {
				t.Errorf("%s: got %v; decided: refuse as structural, %s", name, err, d.why)
			}
		case d.accept && rep == nil:
			t.Errorf("%s: no report", name)
		}
	}
	if len(files) != len(edgeDecisions) {
		t.Errorf("%d edge files, %d decisions: keep the table in step with the corpus", len(files), len(edgeDecisions))
	}
}

func testCorpusOrSkip(t *testing.T, sub string) string {
	return testenv.Corpus(t, "tiff", sub)
}

func TestGeoTIFFIsIdentified(t *testing.T) {
	t.Parallel()
	rep, err := validate.CheckMaster(context.Background(), filepath.Join(testCorpusOrSkip(t, "good"), "imagetiff-geo-5b.tif"), nil, validate.DefaultMasterPolicy())
	if err != nil || rep.PUID != "fmt/155" || rep.Format != "GeoTIFF" {
		t.Fatalf("GeoTIFF: %s %s %v", rep.PUID, rep.Format, err)
	}
	rep, err = validate.CheckMaster(context.Background(), filepath.Join(testCorpusOrSkip(t, "good"), "pillow-hopper.tif"), nil, validate.DefaultMasterPolicy())
	if err != nil || rep.PUID != "fmt/353" {
		t.Fatalf("plain TIFF: %s %v", rep.PUID, err)
	}
}
