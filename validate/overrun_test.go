package validate_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/tiff"
	"github.com/lazaret/lazaret/validate"
)

// TestOverrunningStripsReadAsLibtiffReads makes, with libtiff's own tools,
// the quirk of older encoders: a strip whose LZW, Deflate or PackBits data
// decodes past the rows it holds (tiffcp writes the corpus page as one
// strip, tiffset then declares fewer rows). libtiff reads such a strip to
// its rows without a word; Lazaret reads it the same, with a
// tiff.block-overrun warning that names the strip, whether the page is
// counted (the default) or decoded (DecodeUncompressed). A strip that runs
// on far past its rows is a decompression bomb to Lazaret (limit.inflate)
// even where libtiff, which stops at the rows, reads it: that is the one
// disagreement, by design.
func TestOverrunningStripsReadAsLibtiffReads(t *testing.T) {
	t.Parallel()
	tiffcp, tiffset, tiffinfo := testenv.Tiffcp(t), testenv.Tiffset(t), testenv.Tiffinfo(t)
	src := filepath.Join(testenv.Corpus(t, "tiff", "good"), "goimage-video-001-gray.tiff") // 150x103 grey
	const width, height = 150, 103
	cases := []struct {
		rows     int // declared instead of 103
		refused  bool
		overrunB int // bytes past the rows
	}{
		{height - 1, false, width},       // one row more: a few bytes to a row is what encoders do
		{height - 20, false, 20 * width}, // 3000 bytes: within 4 KiB
		{20, true, 83 * width},           // four times its rows
	}
	dir := t.TempDir()
	for _, codec := range []string{"lzw", "zip", "packbits"} {
		for _, tc := range cases {
			name := fmt.Sprintf("%s-%d", codec, tc.rows)
			f := filepath.Join(dir, name+".tif")
			run := func(bin string, args ...string) {
				if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
					t.Fatalf("%s: %s %v: %v %s", name, filepath.Base(bin), args, err, out)
				}
			}
			run(tiffcp, "-c", codec, "-r", "1000", src, f)
			run(tiffset, "-s", "257", strconv.Itoa(tc.rows), f)
			run(tiffset, "-s", "278", strconv.Itoa(tc.rows), f)
			if !testenv.LibtiffDecodes(tiffinfo, f) {
				t.Fatalf("%s: libtiff does not decode it; the test's premise is wrong", name)
			}
			for _, decode := range []bool{false, true} {
				pol := validate.DefaultMasterPolicy()
				pol.DecodeUncompressed = decode
				rep, err := validate.CheckMaster(context.Background(), f, nil, pol)
				if tc.refused {
					var le *tiff.LimitError
					if !errors.As(err, &le) || le.What != "inflate" || le.Page != 1 || le.Limit != int64(tc.rows*width+4096) {
						t.Errorf("%s (decode %v): got %v, want limit.inflate past %d bytes", name, decode, err, tc.rows*width+4096)
					}
					continue
				}
				if err != nil {
					t.Errorf("%s (decode %v): refused: %v; libtiff reads it", name, decode, err)
					continue
				}
				var got []string
				for _, w := range rep.Warnings {
					if w.Code == "tiff.block-overrun" {
						got = append(got, w.Message)
					}
				}
				want := fmt.Sprintf("strip 0 decompresses to %d bytes, %d more than its rows hold", tc.rows*width+tc.overrunB, tc.overrunB)
				if len(got) != 1 || !strings.HasPrefix(got[0], want) {
					t.Errorf("%s (decode %v): overrun warnings %q, want one starting %q", name, decode, got, want)
				}
				if rep.Decoded != 1 {
					t.Errorf("%s (decode %v): %d pages decoded, want 1", name, decode, rep.Decoded)
				}
			}
		}
	}
}
