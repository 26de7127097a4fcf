package validate_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/validate"
)

// libtiffGaps are the corpus files with pages libtiff decodes and Lazaret
// does not, and why. The test fails when a file here is no longer a gap,
// so the list only shrinks.
var libtiffGaps = map[string]string{}

// tiffinfo returns the path of libtiff's tiffinfo: required under CI,
// skipped elsewhere when it is not installed.
func tiffinfo(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("tiffinfo")
	if err != nil {
		if testenv.InCI() {
			t.Fatal("tiffinfo (Debian libtiff-tools) is required in CI")
		}
		t.Skip("tiffinfo not installed (apt-get install libtiff-tools)")
	}
	return p
}

var dirHeader = regexp.MustCompile(`(?m)^=== TIFF directory \d+ ===$`)

// libtiffDecodes runs `tiffinfo -D` over one directory (args: -N for main
// page N, 0-based, or -o OFFSET for a SubIFD) and reports whether libtiff
// read all its strips or tiles: exit status 0 and nothing on standard
// error but warnings. It says nothing when libtiff does not even try
// ("Cannot display data" and the like are errors too).
func libtiffDecodes(t *testing.T, bin, file string, args ...string) bool {
	cmd := exec.Command(bin, append(append([]string{"-D"}, args...), file)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || !bytes.Contains(out, []byte("TIFF Directory at offset")) {
		return false
	}
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if line != "" && !strings.Contains(line, "Warning") {
			return false
		}
	}
	return true
}

// TestDecodedPagesVersusLibtiff counts, over the corpus's good and edge
// TIFFs (but those both libtiff and Lazaret refuse), the pages decoded to their pixels by Lazaret (CheckMaster's
// decoded_pages, and its SubIFD images) and by libtiff (`tiffinfo -D`, one
// directory at a time), and requires Lazaret to decode every page libtiff
// decodes, file by file, except the recorded gaps. Files in bad/ are
// refused by Lazaret as a whole (TestCorpusBadIsRefusedWithOffset); they
// are counted for the record only.
func TestDecodedPagesVersusLibtiff(t *testing.T) {
	bin := tiffinfo(t)
	var total struct{ lazaret, libtiff, lazaretSub, libtiffSub, badLibtiff int }
	for _, sub := range []string{"good", "edge", "bad"} {
		for _, f := range corpusFiles(t, sub) {
			name := filepath.Base(f)
			out, _ := exec.Command(bin, f).Output()
			pages := len(dirHeader.FindAll(out, -1))
			lib := 0
			for n := 0; n < pages; n++ {
				if libtiffDecodes(t, bin, f, "-"+strconv.Itoa(n)) {
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
			// CheckMaster's report counts SubIFD images without holding
			// them: WalkTIFF lists them, with their offsets for libtiff.
			if data, rerr := os.ReadFile(f); rerr == nil && rep.Info != nil {
				info, _ := validate.WalkTIFF(bytes.NewReader(data), int64(len(data)), validate.DefaultLimits)
				for _, p := range info.SubImages {
					if libtiffDecodes(t, bin, f, "-o", strconv.FormatInt(p.Offset, 10)) {
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
