package validate_test

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/lazaret/lazaret/internal/testenv"
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
			var te *validate.TIFFError
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
			if rep.Info != nil {
				for _, p := range rep.Info.SubImages {
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
