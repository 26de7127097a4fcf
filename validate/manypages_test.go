package validate_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/tiff"
	"github.com/lazaret/lazaret/validate"
)

// manyPagesRSSBound and manyPagesCPUSeconds are what checking a master of
// 65,535 tiny pages may cost (tracker issue 24, item 6): memory follows
// the structure walked at once, not the number of pages. Before, the walk
// held every page's Page and a string per IFD for the loop check: 133 MB
// for 65,535 pages.
const (
	manyPagesRSSBound   = 64 << 20
	manyPagesCPUSeconds = 5
)

// TestManyPagesInBoundedMemory checks masters of 65,535 and 70,000 pages
// of one pixel each (fixtures.WriteManyPages) in a child process: the
// first is accepted with every page counted and checked, the second
// refused at the IFD cap (Limits.MaxPages, 65,536 directories) on the
// next-IFD pointer of its 65,536th page — and accepted under a policy
// whose cap allows it; all under 64 MiB and 5 seconds of CPU (a bound on
// the work, not the machine's load: the wall-clock time is only logged).
func TestManyPagesInBoundedMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("peak RSS is read from /proc/self/status (Linux)")
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		pages, maxPages int  // maxPages 0: the default policy
		warned          bool // three warnings on every page (warnEveryPage)
		code            string
		page            int
		offset          int64
	}{
		{pages: 65535},
		// 196,605 warnings: before they were capped, 98 MiB.
		{pages: 65535, warned: true},
		// The cap counts IFDs: page 65,537's pointer is the 65,537th.
		{pages: 70000, code: "tiff.too-many-pages", page: 65537, offset: fixtures.ManyPagesIFD(65535) + 2 + 9*12},
		{pages: 70000, maxPages: 70000},
	} {
		name := strconv.Itoa(tc.pages)
		if tc.maxPages != 0 {
			name += "-cap-" + strconv.Itoa(tc.maxPages)
		}
		if tc.warned {
			name += "-warned"
		}
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name+".tif")
			if err := fixtures.WriteManyPagesFile(path, tc.pages); err != nil {
				t.Fatal(err)
			}
			if tc.warned {
				warnEveryPage(t, path, tc.pages)
			}
			rep := checkInChildWith(t, "tiff", tc.maxPages, path)
			o := rep.Outcomes[0]
			verdict := "accepted"
			if o.Err != "" {
				verdict = o.Err
			}
			t.Logf("%d pages (%d bytes): %d counted, %d decoded; peak RSS %.1f MiB in %.2fs, %.2fs of CPU: %s",
				tc.pages, fixtures.ManyPagesSize(tc.pages), o.Pages, o.Decoded, float64(rep.VmHWM)/(1<<20), rep.Seconds, rep.CPUSeconds, verdict)
			switch {
			case tc.code == "" && (o.Err != "" || o.Pages != tc.pages || o.Decoded != tc.pages):
				t.Errorf("%s, %d pages, %d checked to the pixel data; want it accepted with all %d", verdict, o.Pages, o.Decoded, tc.pages)
			case tc.code != "" && (o.Code != tc.code || o.Page != tc.page || o.Offset != tc.offset):
				t.Errorf("got %s (code %q page %d offset %d), want %s on page %d at byte %d", verdict, o.Code, o.Page, o.Offset, tc.code, tc.page, tc.offset)
			}
			if rep.VmHWM >= manyPagesRSSBound {
				t.Errorf("peak RSS %d bytes (%.0f MiB), want under %d MiB", rep.VmHWM, float64(rep.VmHWM)/(1<<20), manyPagesRSSBound>>20)
			}
			if rep.CPUSeconds >= manyPagesCPUSeconds && !testenv.Race {
				t.Errorf("%.1fs of CPU, want under %ds", rep.CPUSeconds, manyPagesCPUSeconds)
			}
		})
	}
}

// TestManyPagesReport: a master of many pages reports the same as one
// checked page by page would: every page counted and decoded, the first
// page's fields (the manifest rules read them), and each page's own
// warnings at its own position.
func TestManyPagesReport(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "many.tif")
	const n = 3000
	if err := fixtures.WriteManyPagesFile(path, n); err != nil {
		t.Fatal(err)
	}
	rep, err := validate.CheckMaster(context.Background(), path, nil, validate.DefaultMasterPolicy())
	if err != nil || rep.Pages != n || rep.Decoded != n || len(rep.Warnings) != 0 {
		t.Fatalf("%v: %d pages, %d decoded, warnings %v; want %d, %d, none", err, rep.Pages, rep.Decoded, rep.Warnings, n, n)
	}
	if p := rep.Info.Pages[0]; rep.Info.PageCount != n || p.Offset != fixtures.ManyPagesIFD(0) || p.Width != 1 || p.BlockOffsets[0] != 8 {
		t.Errorf("info: %d pages, first %+v", rep.Info.PageCount, p)
	}
	// Full decoding too: every page goes through the image decoder.
	pol := validate.DefaultMasterPolicy()
	pol.DecodeUncompressed = true
	if rep, err := validate.CheckMaster(context.Background(), path, nil, pol); err != nil || rep.Decoded != n {
		t.Errorf("decoding every page: %v, %d decoded", err, rep.Decoded)
	}
	// A private tag on pages 2 and 3000 (the tag of their 9th entry,
	// RowsPerStrip, patched to 65000): a warning for each at its IFD, or a
	// refusal naming page 2 under a policy that rejects them.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{1, n - 1} {
		at := fixtures.ManyPagesIFD(i) + 2 + 7*12
		b[at], b[at+1] = 0xe8, 0xfd // 65000, little-endian
	}
	patched := filepath.Join(t.TempDir(), "private.tif")
	if err := os.WriteFile(patched, b, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err = validate.CheckMaster(context.Background(), patched, nil, validate.DefaultMasterPolicy())
	var got []string
	for _, w := range rep.Warnings {
		got = append(got, w.Code+" page "+strconv.Itoa(*w.Page)+" at "+strconv.FormatInt(*w.Offset, 10))
	}
	// 65000 is out of tag order before StripByteCounts: a walk warning
	// at the next entry, then the policy's warning at the IFD.
	want := []string{
		"tiff.tags-unsorted page 2 at " + strconv.FormatInt(fixtures.ManyPagesIFD(1)+2+8*12, 10),
		"tiff.tags-unsorted page 3000 at " + strconv.FormatInt(fixtures.ManyPagesIFD(n-1)+2+8*12, 10),
		"tiff.unknown-tags page 2 at " + strconv.FormatInt(fixtures.ManyPagesIFD(1), 10),
		"tiff.unknown-tags page 3000 at " + strconv.FormatInt(fixtures.ManyPagesIFD(n-1), 10),
	}
	if err != nil || strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("tolerated: %v, warnings %q, want %q", err, got, want)
	}
	pol = validate.DefaultMasterPolicy()
	pol.PrivateTags = "reject"
	_, err = validate.CheckMaster(context.Background(), patched, nil, pol)
	var pe *validate.PolicyError
	if !errors.As(err, &pe) || pe.Page != 2 || pe.Offset != fixtures.ManyPagesIFD(1) || pe.Code != "policy.private-tag" {
		t.Errorf("rejected: got %v, want policy.private-tag on page 2 at %d", err, fixtures.ManyPagesIFD(1))
	}
}

// TestManySubIFDsInBoundedMemory is TestManyPagesInBoundedMemory for one
// page with a chain of 65,534 one-pixel SubIFD images: counted and
// checked, never held together (before, 123 MiB).
func TestManySubIFDsInBoundedMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("peak RSS is read from /proc/self/status (Linux)")
	}
	const n = 65534 // with the page: the 65,535 IFDs of the cap
	path := filepath.Join(t.TempDir(), "subifds.tif")
	chain := make([]*fixtures.Dir, n)
	for i := range chain {
		chain[i] = fixtures.Image(1, 1, 1, 8, 1, 1, 1, 0, 0, [][]byte{{byte(i)}}, fixtures.Longs(254, 1))
	}
	page := greyDir()
	page.SubIFDs = [][]*fixtures.Dir{chain}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fixtures.WriteDirs(f, []*fixtures.Dir{page}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	rep := checkInChild(t, "tiff", path)
	o := rep.Outcomes[0]
	t.Logf("1 page, %d SubIFD images: %d checked; peak RSS %.1f MiB in %.2fs, %.2fs of CPU: %q", n, o.SubDecoded, float64(rep.VmHWM)/(1<<20), rep.Seconds, rep.CPUSeconds, o.Err)
	if o.Err != "" || o.Pages != 1 || o.SubDecoded != n {
		t.Errorf("%q, %d pages, %d SubIFD images checked; want it accepted with 1 and %d", o.Err, o.Pages, o.SubDecoded, n)
	}
	if rep.VmHWM >= manyPagesRSSBound || (rep.CPUSeconds >= manyPagesCPUSeconds && !testenv.Race) {
		t.Errorf("peak RSS %.0f MiB in %.1fs of CPU, want under %d MiB and %ds", float64(rep.VmHWM)/(1<<20), rep.CPUSeconds, manyPagesRSSBound>>20, manyPagesCPUSeconds)
	}
}

// warnEveryPage patches every page of WriteManyPages's file at path to
// draw three warnings: its PhotometricInterpretation (entry 5) becomes
// Threshholding (263), "tiff.no-photometric", and its RowsPerStrip (entry
// 8) the private tag 65000, "tiff.unknown-tags" and, out of tag order,
// "tiff.tags-unsorted" at entry 9.
func warnEveryPage(t *testing.T, path string, n int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		b[fixtures.ManyPagesIFD(i)+2+4*12] = 7 // 262 -> 263, little-endian
		at := fixtures.ManyPagesIFD(i) + 2 + 7*12
		b[at], b[at+1] = 0xe8, 0xfd // 278 -> 65000
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestManyPagesWarningsSummarised: past 100 warnings of one code, a
// master's report counts the rest in one warning of that code naming the
// pages they are on, instead of listing a warning per page.
func TestManyPagesWarningsSummarised(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "warned.tif")
	const n = 300
	if err := fixtures.WriteManyPagesFile(path, n); err != nil {
		t.Fatal(err)
	}
	warnEveryPage(t, path, n)
	rep, err := validate.CheckMaster(context.Background(), path, nil, validate.DefaultMasterPolicy())
	if err != nil || rep.Pages != n || rep.Decoded != n {
		t.Fatalf("%v: %d pages, %d decoded", err, rep.Pages, rep.Decoded)
	}
	listed := map[string]int{}
	var summaries []string
	for _, w := range rep.Warnings {
		if w.Offset == nil {
			summaries = append(summaries, w.Code+" page "+strconv.Itoa(*w.Page)+": "+w.Message)
			continue
		}
		if listed[w.Code]++; *w.Page != listed[w.Code] {
			t.Errorf("%s listed for page %d, want page %d (the first pages are listed)", w.Code, *w.Page, listed[w.Code])
		}
	}
	want := []string{
		"tiff.tags-unsorted page 101: 200 more tiff.tags-unsorted warnings not listed (the first 100 are), on pages 101 to 300",
		"tiff.no-photometric page 101: 200 more tiff.no-photometric warnings not listed (the first 100 are), on pages 101 to 300",
		"tiff.unknown-tags page 101: 200 more pages with unrecognised tags not listed (the first 100 are), pages 101 to 300",
	}
	if len(listed) != 3 || listed["tiff.tags-unsorted"] != 100 || listed["tiff.no-photometric"] != 100 || listed["tiff.unknown-tags"] != 100 {
		t.Errorf("listed %v, want 100 of each code", listed)
	}
	if strings.Join(summaries, "\n") != strings.Join(want, "\n") {
		t.Errorf("summaries:\n%s\nwant:\n%s", strings.Join(summaries, "\n"), strings.Join(want, "\n"))
	}
	// WalkTIFF, for callers that read every page, still lists them all.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	info, err := tiff.WalkTIFF(bytes.NewReader(b), int64(len(b)), tiff.DefaultLimits)
	if err != nil || len(info.Warnings) != 2*n {
		t.Errorf("WalkTIFF: %v, %d warnings, want %d", err, len(info.Warnings), 2*n)
	}
	// Pages the decoder cannot read: Compression (entry 4) 34712, JPEG 2000.
	if err := fixtures.WriteManyPagesFile(path, n); err != nil {
		t.Fatal(err)
	}
	if b, err = os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		at := fixtures.ManyPagesIFD(i) + 2 + 3*12 + 8
		b[at], b[at+1] = 0x98, 0x87 // 34712, little-endian
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err = validate.CheckMaster(context.Background(), path, nil, validate.DefaultMasterPolicy())
	if err != nil || rep.Decoded != 0 || len(rep.Warnings) != 101 {
		t.Fatalf("undecodable: %v, %d decoded, %d warnings; want 0 and 101", err, rep.Decoded, len(rep.Warnings))
	}
	last := rep.Warnings[100]
	if want := "200 more tiff.not-decoded warnings not listed (the first 100 are), on pages 101 to 300"; last.Code != "tiff.not-decoded" || *last.Page != 101 || last.Message != want {
		t.Errorf("undecodable: last warning %s page %d %q, want %q", last.Code, *last.Page, last.Message, want)
	}
}

// TestCorpusIFDLoopsRefused: the loop check, now a set of the offsets met
// with where each was met, still refuses libtiff's loop test images at the
// pointer that closes the loop, naming the directory it goes back to (as
// tiffinfo reports them: "IFD looping").
func TestCorpusIFDLoopsRefused(t *testing.T) {
	t.Parallel()
	dir := testCorpusOrSkip(t, "bad")
	for _, tc := range []struct {
		name   string
		page   int
		path   string
		offset int64
		back   string
	}{
		{"libtiff-test_ifd_loop_to_self.tif", 2, "", 554, "next IFD pointer 408 goes back to page 1"},
		{"libtiff-test_ifd_loop_to_first.tif", 3, "", 308, "next IFD pointer 10 goes back to page 1"},
		{"libtiff-test_ifd_loop_subifd.tif", 2, "SubIFD 1.4", 842, "next IFD pointer 524 goes back to page 2 / SubIFD 1.2"},
	} {
		_, err := validate.CheckMaster(context.Background(), filepath.Join(dir, tc.name), nil, validate.DefaultMasterPolicy())
		var te *tiff.FormatError
		var se *validate.StageError
		if !errors.As(err, &te) || !errors.As(err, &se) || se.Stage != validate.StageStructure || !errors.Is(err, tiff.ErrIFDLoop) {
			t.Errorf("%s: got %v, want an IFD loop at the structure stage", tc.name, err)
			continue
		}
		t.Logf("%s: %v", tc.name, err)
		if te.Page != tc.page || te.Path != tc.path || te.Offset != tc.offset || te.Code != "tiff.ifd-loop" || !strings.Contains(te.Error(), tc.back) {
			t.Errorf("%s: got %v (page %d path %q offset %d), want page %d path %q offset %d, %q",
				tc.name, err, te.Page, te.Path, te.Offset, tc.page, tc.path, tc.offset, tc.back)
		}
	}
}

// manyPagesBench are the masters of BenchmarkCheckMasterManyPages, written
// once per run.
var manyPagesBench sync.Map

func benchManyPages(b *testing.B, n int) {
	v, _ := manyPagesBench.LoadOrStore(n, new(sync.Once))
	path := filepath.Join(os.TempDir(), "lazaret-bench-manypages-"+strconv.Itoa(n)+".tif")
	v.(*sync.Once).Do(func() {
		if err := fixtures.WriteManyPagesFile(path, n); err != nil {
			b.Fatal(err)
		}
	})
	b.SetBytes(fixtures.ManyPagesSize(n))
	b.ReportAllocs()
	check := func() {
		if rep, err := validate.CheckMaster(context.Background(), path, nil, validate.DefaultMasterPolicy()); err != nil || rep.Pages != n {
			b.Fatalf("%v, %d pages", err, rep.Pages)
		}
	}
	runtime.GC()
	b.ResetTimer()
	for b.Loop() {
		check()
	}
	b.StopTimer()
	runtime.GC()
	b.ReportMetric(float64(peakHeap(check))/(1<<20), "peak-heap-MB")
}

func BenchmarkCheckMasterManyPages_10000(b *testing.B) { benchManyPages(b, 10000) }
