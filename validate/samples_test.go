package validate_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/tiff"
	"github.com/lazaret/lazaret/validate"
)

// sampleImage is a 24x20 single-strip uncompressed page of one sample of
// bps bits in SampleFormat sf, its bytes a pattern.
func sampleImage(t *testing.T, bps, sf int) []byte {
	t.Helper()
	const w, h = 24, 20
	strip := make([]byte, w*h*bps/8)
	for i := range strip {
		strip[i] = byte(i*7 + i/13)
	}
	data, _ := dirs(t, fixtures.Image(w, h, 1, bps, 1, 1, h, 0, 0, [][]byte{strip}, fixtures.Shorts(339, uint16(sf))))
	return data
}

// TestWideAndComplexSamplesAsLibtiff: complex samples (SampleFormat 5 and 6)
// and samples of up to 128 bits (a complex IEEE double) are read where
// libtiff reads them — uncompressed, and as tiffcp rewrites them in LZW,
// Deflate and PackBits, in strips and in tiles — and their blocks counted
// against their rows. Wider samples, which no SampleFormat defines, are
// refused (libtiff reads them as bytes: the one disagreement, by design).
func TestWideAndComplexSamplesAsLibtiff(t *testing.T) {
	t.Parallel()
	tiffcp, tiffinfo := testenv.Tiffcp(t), testenv.Tiffinfo(t)
	dir := t.TempDir()
	for _, s := range []struct{ bps, sf int }{{32, 6}, {64, 6}, {128, 6}, {32, 5}, {64, 5}, {128, 5}, {128, 3}, {128, 1}, {96, 6}} {
		src := filepath.Join(dir, fmt.Sprintf("bps%d-sf%d.tif", s.bps, s.sf))
		if err := os.WriteFile(src, sampleImage(t, s.bps, s.sf), 0o644); err != nil {
			t.Fatal(err)
		}
		files := []string{src}
		for _, layout := range [][]string{{"-c", "lzw"}, {"-c", "zip"}, {"-c", "packbits"}, {"-c", "zip", "-t", "-w", "16", "-l", "16"}, {"-c", "packbits", "-t", "-w", "16", "-l", "16"}} {
			out := filepath.Join(dir, fmt.Sprintf("bps%d-sf%d-%d.tif", s.bps, s.sf, len(files)))
			if b, err := exec.Command(tiffcp, append(layout, src, out)...).CombinedOutput(); err != nil {
				t.Fatalf("tiffcp %v: %v %s", layout, err, b)
			}
			files = append(files, out)
		}
		for _, f := range files {
			if !testenv.LibtiffDecodes(tiffinfo, f) {
				t.Fatalf("%s: libtiff does not decode it; the test's premise is wrong", filepath.Base(f))
			}
			for _, decode := range []bool{false, true} {
				pol := validate.DefaultMasterPolicy()
				pol.DecodeUncompressed = decode
				rep, err := validate.CheckMaster(context.Background(), f, nil, pol)
				if err != nil {
					t.Errorf("%s (decode %v): refused: %v; libtiff reads it", filepath.Base(f), decode, err)
					continue
				}
				if rep.Decoded != 1 {
					t.Errorf("%s (decode %v): %d pages decoded, want 1 (warnings %+v)", filepath.Base(f), decode, rep.Decoded, rep.Warnings)
				}
			}
		}
	}
	// A plane of 256-bit samples: no sample format is that wide.
	data := sampleImage(t, 256, 6)
	_, err := tiff.WalkTIFF(bytes.NewReader(data), int64(len(data)), tiff.DefaultLimits)
	var te *tiff.FormatError
	if !errors.As(err, &te) || te.Code != "tiff.bad-value" || te.Tag != 258 {
		t.Errorf("256-bit samples: got %v, want tiff.bad-value on BitsPerSample", err)
	}
}

// TestPolicyRefusesSampleFormats: a collection that refuses complex data in
// its masters gets a policy failure naming the page (semantic: the file
// is sound), while the same file passes a policy that does not.
func TestPolicyRefusesSampleFormats(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := filepath.Join(dir, "complex.tif")
	if err := os.WriteFile(f, sampleImage(t, 128, 6), 0o644); err != nil {
		t.Fatal(err)
	}
	pol := validate.DefaultMasterPolicy()
	if _, err := validate.CheckMaster(context.Background(), f, nil, pol); err != nil {
		t.Fatalf("default policy: %v", err)
	}
	for _, refuse := range [][]string{{"complex-float"}, {"complex-int", "complex-float"}} {
		pol.RefuseSampleFormats = refuse
		_, err := validate.CheckMaster(context.Background(), f, nil, pol)
		var pe *validate.PolicyError
		if !errors.As(err, &pe) || pe.Code != "policy.sample-format" || pe.Page != 1 || pe.Offset == 0 {
			t.Errorf("refusing %v: got %v, want policy.sample-format on page 1", refuse, err)
		}
	}
	pol.RefuseSampleFormats = []string{"complex-int"}
	if _, err := validate.CheckMaster(context.Background(), f, nil, pol); err != nil {
		t.Errorf("refusing complex-int only: %v", err)
	}
	// Pages past the first are streamed, never held: the rule still
	// finds the second page of a file.
	strip := make([]byte, 8*8*16)
	two, _ := dirs(t, greyDir(), fixtures.Image(8, 8, 1, 128, 1, 1, 8, 0, 0, [][]byte{strip}, fixtures.Shorts(339, 6)))
	f2 := filepath.Join(dir, "second-page-complex.tif")
	if err := os.WriteFile(f2, two, 0o644); err != nil {
		t.Fatal(err)
	}
	pol.RefuseSampleFormats = []string{"complex-float"}
	_, err := validate.CheckMaster(context.Background(), f2, nil, pol)
	if pe := (*validate.PolicyError)(nil); !errors.As(err, &pe) || pe.Code != "policy.sample-format" || pe.Page != 2 {
		t.Errorf("complex second page: got %v, want policy.sample-format on page 2", err)
	}
	pol.RefuseSampleFormats = []string{"complex"}
	if err := pol.Validate(); err == nil {
		t.Error("a policy refusing an unknown sample format name validates")
	}
}
