package validate_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/tiff"
	"github.com/lazaret/lazaret/validate"
)

// libtiffGaps are the corpus files with pages libtiff decodes and Lazaret
// does not, and why. The test fails when a file here is no longer a gap,
// so the list only shrinks.
var libtiffGaps = map[string]string{}

var dirHeader = regexp.MustCompile(`(?m)^=== TIFF directory \d+ ===$`)

// TestDecodedPagesVersusLibtiff counts, over the corpus's good and edge
// TIFFs (but those both libtiff and Lazaret refuse), the pages decoded to their pixels by Lazaret (CheckMaster's
// decoded_pages, and its SubIFD images) and by libtiff (`tiffinfo -D`, one
// directory at a time), and requires Lazaret to decode every page libtiff
// decodes, file by file, except the recorded gaps. Files in bad/ are
// refused by Lazaret as a whole (TestCorpusBadIsRefusedWithOffset); they
// are counted for the record only.
func TestDecodedPagesVersusLibtiff(t *testing.T) {
	bin := testenv.Tiffinfo(t)
	var total struct{ lazaret, libtiff, lazaretSub, libtiffSub, badLibtiff int }
	for _, sub := range []string{"good", "edge", "bad"} {
		for _, f := range corpusFiles(t, sub) {
			name := filepath.Base(f)
			out, _ := exec.Command(bin, f).Output()
			pages := len(dirHeader.FindAll(out, -1))
			lib := 0
			for n := 0; n < pages; n++ {
				if testenv.LibtiffDecodes(bin, f, "-"+strconv.Itoa(n)) {
					lib++
				}
			}
			if sub == "bad" {
				total.badLibtiff += lib
				continue
			}
			rep, err := validate.CheckMaster(context.Background(), f, nil, validate.DefaultMasterPolicy())
			var te *tiff.FormatError
			if errors.As(err, &te) && exec.Command(bin, "-D", f).Run() != nil {
				// Both refuse the file as a whole (libtiff may still read
				// single pages of it, one at a time).
				t.Logf("%s/%s: refused by both: %v", sub, name, err)
				continue
			}
			laz, lazSub := rep.Decoded, rep.SubDecoded
			libSub := 0
			if err != nil {
				laz, lazSub = 0, 0
			}
			// CheckMaster's report counts SubIFD images without holding
			// them: WalkTIFF lists them, with their offsets for libtiff.
			if data, rerr := os.ReadFile(f); rerr == nil && rep.Info != nil {
				info, _ := tiff.WalkTIFF(bytes.NewReader(data), int64(len(data)), tiff.DefaultLimits)
				for _, p := range info.SubImages {
					if testenv.LibtiffDecodes(bin, f, "-o", strconv.FormatInt(p.Offset, 10)) {
						libSub++
					}
				}
			}
			total.lazaret += laz
			total.libtiff += lib
			total.lazaretSub += lazSub
			total.libtiffSub += libSub
			if laz != lib || lazSub != libSub {
				t.Logf("%s/%s: pages decoded: Lazaret %d, libtiff %d; SubIFD images: Lazaret %d, libtiff %d (err %v)", sub, name, laz, lib, lazSub, libSub, err)
			}
			why, gap := libtiffGaps[name]
			switch {
			case (laz < lib || lazSub < libSub) && !gap:
				t.Errorf("%s: libtiff decodes %d pages and %d SubIFD images, Lazaret %d and %d", name, lib, libSub, laz, lazSub)
			case laz >= lib && lazSub >= libSub && gap:
				t.Errorf("%s: recorded as a gap (%s) but Lazaret now decodes all libtiff does: drop it from libtiffGaps", name, why)
			}
		}
	}
	t.Logf("pages decoded over good+edge: Lazaret %d, libtiff %d; SubIFD images: Lazaret %d, libtiff %d; libtiff also decodes %d pages of the bad files, which Lazaret refuses",
		total.lazaret, total.libtiff, total.lazaretSub, total.libtiffSub, total.badLibtiff)
	if total.lazaret < total.libtiff || total.lazaretSub < total.libtiffSub {
		t.Errorf("Lazaret decodes %d pages and %d SubIFD images, libtiff %d and %d", total.lazaret, total.lazaretSub, total.libtiff, total.libtiffSub)
	}
}

// libtiffVerdictGaps are the corpus files libtiff reads whole (tiffcp -c
// none) and Lazaret calls structurally broken, and why that is right. The
// test fails on any other such file, and when a file here is no longer
// one, so the list only shrinks or grows with a reason.
//
// libtiff's tools report much damage as warnings and carry on: a tag whose
// value lies past the end of the file is dropped ("IO error during reading
// ...; tag ignored"), an IFD chain that loops is cut where it loops, and
// tiffcp never visits SubIFDs. Lazaret refuses all three: in a
// preservation master a lost tag is lost information, and a looping chain
// leaves unknown which pages the file meant to hold.
var libtiffVerdictGaps = map[string]string{
	"pillow-child_ifd_jpeg.tiff":                "its child (SubIFD) image lacks ImageLength; tiffcp skips SubIFDs, tiffinfo -D reports the missing field and fails (edgeDecisions)",
	"goimage-invalid-palette-ref.tiff":          "XResolution and YResolution point past the end of the file; libtiff ignores both tags with a warning",
	"libtiff-test_ifd_loop_subifd.tif":          "a SubIFD chain loops; libtiff stops at the loop with a warning",
	"libtiff-test_ifd_loop_to_first.tif":        "the IFD chain loops back to page 1; libtiff stops at the loop with a warning",
	"libtiff-test_ifd_loop_to_self.tif":         "the IFD chain loops; libtiff stops at the loop with a warning",
	"pillow-multipage_multiple_frame_loop.tiff": "the IFD chain loops back to page 1; libtiff stops at the loop with a warning",
	"pillow-multipage_single_frame_loop.tiff":   "the IFD chain loops back to page 1; libtiff stops at the loop with a warning",
}

// lazaretVerdict is CheckMaster's verdict in a word: "broken" for a
// structural failure (*tiff.FormatError), "over a limit" (*LimitError), "refused"
// for any other error (policy, format), "reads it" with every page
// decoded, "reads it, N of M pages decoded" otherwise.
func lazaretVerdict(rep *validate.Report, err error) string {
	var te *tiff.FormatError
	var le *tiff.LimitError
	switch {
	case errors.As(err, &te):
		return "broken"
	case errors.As(err, &le):
		return "over a limit"
	case err != nil:
		return "refused"
	case rep.Decoded < rep.Pages:
		return fmt.Sprintf("reads it, %d of %d pages decoded", rep.Decoded, rep.Pages)
	}
	return "reads it"
}

// TestVerdictVersusLibtiff sets CheckMaster's verdict (DefaultMasterPolicy)
// on every TIFF of the corpus, good, edge and bad, beside libtiff's:
// whether `tiffcp -c none` reads all of the file. It logs a table of the
// files on which they disagree, and fails where libtiff reads a file that
// Lazaret calls structurally broken, unless libtiffVerdictGaps says why.
func TestVerdictVersusLibtiff(t *testing.T) {
	bin := testenv.Tiffcp(t)
	var table strings.Builder
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "file\tlibtiff says\tLazaret says\tLazaret's error\twhy Lazaret is right (libtiffVerdictGaps)")
	var files, disagree int
	for _, sub := range []string{"good", "edge", "bad"} {
		for _, f := range corpusFiles(t, sub) {
			files++
			name := sub + "/" + filepath.Base(f)
			libOK, msg := testenv.LibtiffCopies(bin, f, t.TempDir())
			lib := "reads it"
			if !libOK {
				lib = "tiffcp fails: " + firstError(msg)
			}
			rep, err := validate.CheckMaster(context.Background(), f, nil, validate.DefaultMasterPolicy())
			laz := lazaretVerdict(rep, err)
			lazOK := strings.HasPrefix(laz, "reads it")
			why, gap := libtiffVerdictGaps[filepath.Base(f)]
			broken := libOK && laz == "broken"
			switch {
			case broken && !gap:
				t.Errorf("%s: libtiff reads it, Lazaret calls it broken: %v", name, err)
			case !broken && gap:
				t.Errorf("%s: recorded in libtiffVerdictGaps (%s) but Lazaret %s: drop it", name, why, laz)
			}
			if libOK == lazOK {
				continue
			}
			disagree++
			e := ""
			if err != nil {
				e = err.Error()
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, lib, laz, e, why)
		}
	}
	tw.Flush()
	t.Logf("%d of %d corpus TIFFs where libtiff and Lazaret disagree:\n%s", disagree, files, table.String())
}

// firstError is the first line of libtiff's standard error that is not a
// warning, the file's path left out.
func firstError(stderr string) string {
	for _, line := range strings.Split(stderr, "\n") {
		if line != "" && !strings.Contains(line, "Warning") {
			if i := strings.LastIndex(line, ".tif: "); i >= 0 {
				line = line[i+len(".tif: "):]
			} else if i := strings.LastIndex(line, ".tiff: "); i >= 0 {
				line = line[i+len(".tiff: "):]
			}
			return line
		}
	}
	return "(exit status only)"
}
