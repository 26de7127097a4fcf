package validate_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/internal/testenv"
)

// Bounds of the shared-strip bomb: what checking a whole file of pages
// sharing one strip may cost (the campaign measured 31.6 CPU-seconds and
// 300 MiB for 50 pages before).
const (
	sharedStripCPUSeconds = 10
	sharedStripRSS        = 256 << 20
)

// TestSharedStripPagesInBudget checks, each in a child process, 50 CCITT
// G4 pages of 10000x10000 pointing at one 1.25 KB strip: decoded once
// (the same blocks read the same way), accepted with all 50 pages
// checked; and the same strip under 50 different widths: refused with
// limit.file-pixels on page 5, when the file has cost four pixel budgets
// (its 10 KB allow no more). Both within 10 CPU-seconds and 256 MiB of
// peak RSS: bounds on the work, not timings of the machine.
func TestSharedStripPagesInBudget(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("peak RSS is read from /proc/self/status (Linux)")
	}
	same, varied := fixtures.SameWidths(50, 10000), fixtures.SharedWidths(50, 10000)
	for _, tc := range []struct {
		name   string
		widths []uint32
		what   string
		page   int
	}{
		{"same", same, "", 0},
		{"varied", varied, "file-pixels", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "shared-g4.tif")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			at, err := fixtures.SharedStripPages(f, tc.widths, 10000)
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
			st, _ := os.Stat(path)
			rep := checkInChild(t, "tiff", path)
			o := rep.Outcomes[0]
			t.Logf("50 G4 pages sharing one strip at byte %d (%d bytes): %d pages, %d decoded; peak RSS %.1f MiB in %.2fs, %.2fs of CPU: %q",
				at, st.Size(), o.Pages, o.Decoded, float64(rep.VmHWM)/(1<<20), rep.Seconds, rep.CPUSeconds, o.Err)
			switch {
			case tc.what == "" && (o.Err != "" || o.Pages != 50 || o.Decoded != 50):
				t.Errorf("%q, %d pages, %d decoded; want it accepted with all 50 checked", o.Err, o.Pages, o.Decoded)
			case tc.what != "" && (o.What != tc.what || o.Page != tc.page):
				t.Errorf("%q (limit %q page %d), want limit.%s on page %d", o.Err, o.What, o.Page, tc.what, tc.page)
			}
			if rep.VmHWM >= sharedStripRSS {
				t.Errorf("peak RSS %.0f MiB, want under %d MiB", float64(rep.VmHWM)/(1<<20), sharedStripRSS>>20)
			}
			if rep.CPUSeconds >= sharedStripCPUSeconds && !testenv.Race {
				t.Errorf("%.1fs of CPU, want under %ds", rep.CPUSeconds, sharedStripCPUSeconds)
			}
		})
	}
}
