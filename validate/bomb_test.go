package validate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/tiff"
	"github.com/lazaret/lazaret/validate"
)

// bombEnv names the files a child process checks (see TestMain), and
// bombKindEnv says what they are: "tiff" (the default) or "edifact".
// bombMaxPagesEnv, when set, is the policy's cap on IFDs (Limits.MaxPages)
// for TIFF masters.
const (
	bombEnv         = "LAZARET_TEST_BOMB"
	bombKindEnv     = "LAZARET_TEST_BOMB_KIND"
	bombMaxPagesEnv = "LAZARET_TEST_BOMB_MAX_PAGES"
)

// rssBound is what one bomb may cost a worker: the default memory budget.
const rssBound = 256 << 20

// TestMain lets this test binary double as the child process that
// TestBombsStayInBudget measures: with LAZARET_TEST_BOMB set it checks the
// files listed there (separated by the OS path list separator) at once, as
// a worker with that much concurrency would, prints what it found and its
// peak resident set (VmHWM) as JSON, and exits.
func TestMain(m *testing.M) {
	if paths := os.Getenv(bombEnv); paths != "" {
		os.Exit(bombChild(os.Getenv(bombKindEnv), filepath.SplitList(paths)))
	}
	os.Exit(m.Run())
}

// bombOutcome is what CheckMaster said about one master in a child.
type bombOutcome struct {
	Err    string `json:"err,omitempty"`
	What   string `json:"what,omitempty"` // *LimitError
	Page   int    `json:"page,omitempty"`
	Tag    uint16 `json:"tag,omitempty"`
	Offset int64  `json:"offset"`
	Code   string `json:"code,omitempty"` // *tiff.FormatError, or *edifact.SyntaxError's Name
	// Messages is how many verdicts an accepted interchange handed over.
	Messages int `json:"messages,omitempty"`
	// Pages and Decoded are a master's page counts (Report.Pages, Decoded).
	Pages   int `json:"pages,omitempty"`
	Decoded int `json:"decoded,omitempty"`
	// SubDecoded is Report.SubDecoded: SubIFD images checked.
	SubDecoded int `json:"sub_decoded,omitempty"`
}

type bombReport struct {
	Outcomes []bombOutcome `json:"outcomes"`
	VmHWM    int64         `json:"vm_hwm"` // bytes
	Seconds  float64       `json:"seconds"`
	// CPUSeconds is the CPU time (user and system) the child used, start
	// to end: what a bound on the work is checked against, since the
	// wall-clock time also counts whatever else the machine runs.
	CPUSeconds float64 `json:"cpu_seconds"`
}

func bombChild(kind string, paths []string) int {
	start := time.Now()
	rep := bombReport{Outcomes: make([]bombOutcome, len(paths))}
	var wg sync.WaitGroup
	for i, path := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if kind == "edifact" {
				// Both reads: the envelope, then every message's verdict
				// handed over, as a worker routes it.
				var res *validate.InterchangeResult
				_, res, err = validate.CheckInterchange(context.Background(), path, nil, validate.Builtin(), validate.DefaultEDIRules(), "")
				if err == nil {
					err = res.EachMessage(context.Background(), func(m validate.MessageResult) error {
						rep.Outcomes[i].Messages++
						return nil
					})
				}
			} else {
				pol := validate.DefaultMasterPolicy()
				if n, _ := strconv.Atoi(os.Getenv(bombMaxPagesEnv)); n > 0 {
					pol.Limits.MaxPages = n
				}
				var mr *validate.Report
				mr, err = validate.CheckMaster(context.Background(), path, nil, pol)
				rep.Outcomes[i].Pages, rep.Outcomes[i].Decoded, rep.Outcomes[i].SubDecoded = mr.Pages, mr.Decoded, mr.SubDecoded
			}
			o := &rep.Outcomes[i]
			var le *tiff.LimitError
			var te *tiff.FormatError
			var se *edifact.SyntaxError
			var re *validate.RuleError
			switch {
			case errors.As(err, &le):
				o.What, o.Page, o.Tag, o.Offset = le.What, le.Page, le.Tag, le.Offset
			case errors.As(err, &te):
				o.Code, o.Page, o.Tag, o.Offset = te.Code, te.Page, te.Tag, te.Offset
			case errors.As(err, &se):
				o.Code, o.Page, o.Offset = se.Name(), se.Segment, se.Offset
			case errors.As(err, &re):
				o.Code, o.Page, o.Offset = re.Code, re.Segment, re.Offset
			}
			if err != nil {
				o.Err = err.Error()
			}
		}()
	}
	wg.Wait()
	rep.Seconds, rep.CPUSeconds = time.Since(start).Seconds(), processCPU().Seconds()
	hwm, err := testenv.PeakRSS()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	rep.VmHWM = hwm
	if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
		return 2
	}
	return 0
}

// checkInChild checks the masters in a fresh child process, so that its
// peak resident set is theirs alone.
func checkInChild(t *testing.T, kind string, paths ...string) bombReport {
	t.Helper()
	return checkInChildWith(t, kind, 0, paths...)
}

// checkInChildWith is checkInChild under a policy whose cap on IFDs is
// maxPages (0: the default).
func checkInChildWith(t *testing.T, kind string, maxPages int, paths ...string) bombReport {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), bombEnv+"="+strings.Join(paths, string(os.PathListSeparator)), bombKindEnv+"="+kind)
	if maxPages > 0 {
		cmd.Env = append(cmd.Env, bombMaxPagesEnv+"="+strconv.Itoa(maxPages))
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, stderr.Bytes())
	}
	var rep bombReport
	if err := json.Unmarshal(out, &rep); err != nil || len(rep.Outcomes) != len(paths) {
		t.Fatalf("child said %q: %v", out, err)
	}
	return rep
}

// TestBombsStayInBudget regenerates every memory bomb of tracker issue 8
// and checks each in a child process: the refusal is the LimitError it must
// be (What, page, tag, and the byte it names, inside the file) — or, for a
// bomb a bounded check must accept, no error — and the child's peak
// resident set stays under the default memory budget. Two bombs checked at
// once, as a worker at concurrency 2 would, stay under it too, and four
// at once under 1 GiB.
func TestBombsStayInBudget(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("peak RSS is read from /proc/self/status (Linux)")
	}
	dir := t.TempDir()
	type written struct {
		bomb   fixtures.Bomb
		path   string
		offset int64
		size   int64
	}
	byName := map[string]written{}
	var order []string
	for _, bm := range fixtures.Bombs() {
		path := filepath.Join(dir, bm.Name+".tif")
		off, err := bm.WriteFile(path)
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		byName[bm.Name] = written{bm, path, off, st.Size()}
		order = append(order, bm.Name)
	}
	check := func(t *testing.T, w written, o bombOutcome) {
		t.Helper()
		if w.bomb.What == "" {
			if o.Err != "" {
				t.Errorf("%s: refused (%s); want it accepted: %s", w.bomb.Name, o.Err, w.bomb.Why)
			}
			return
		}
		if o.What != w.bomb.What || o.Page != w.bomb.Page || o.Tag != w.bomb.Tag || o.Offset != w.offset {
			t.Errorf("%s: got %q (what %q page %d tag %d offset %d), want a LimitError %q on page %d, tag %d, at byte %d",
				w.bomb.Name, o.Err, o.What, o.Page, o.Tag, o.Offset, w.bomb.What, w.bomb.Page, w.bomb.Tag, w.offset)
		}
		if o.Offset < 0 || o.Offset >= w.size {
			t.Errorf("%s: offset %d outside the %d-byte file", w.bomb.Name, o.Offset, w.size)
		}
	}
	bound := func(t *testing.T, name string, size int64, rep bombReport) {
		t.Helper()
		result := "accepted"
		if e := rep.Outcomes[0].Err; e != "" {
			result = e
		}
		t.Logf("%s: %d-byte file, peak RSS %.1f MiB in %.2fs: %s", name, size, float64(rep.VmHWM)/(1<<20), rep.Seconds, result)
		if testenv.Race {
			t.Logf("%s: race detector on: the RSS bound is not checked", name)
		} else if rep.VmHWM >= rssBound {
			t.Errorf("%s: peak RSS %d bytes (%.0f MiB), want under %d MiB", name, rep.VmHWM, float64(rep.VmHWM)/(1<<20), rssBound>>20)
		}
	}
	for _, name := range order {
		w := byName[name]
		t.Run(name, func(t *testing.T) {
			rep := checkInChild(t, "tiff", w.path)
			check(t, w, rep.Outcomes[0])
			bound(t, name, w.size, rep)
		})
	}
	t.Run("two-at-once", func(t *testing.T) {
		a, b := byName["deflate-strip-rgb16"], byName["packbits-strip"]
		rep := checkInChild(t, "tiff", a.path, b.path)
		check(t, a, rep.Outcomes[0])
		check(t, b, rep.Outcomes[1])
		bound(t, "two-at-once", a.size+b.size, rep)
	})
	// A worker at concurrency 4 fed only bombs, the heaviest four at once
	// (one of them accepted, decoded in bands): under 1 GiB together.
	t.Run("four-at-once", func(t *testing.T) {
		names := []string{"tiled", "deflate-strip-rgb16", "packbits-strip", "strip-array-sum"}
		var paths []string
		var size int64
		for _, n := range names {
			paths = append(paths, byName[n].path)
			size += byName[n].size
		}
		rep := checkInChild(t, "tiff", paths...)
		for i, n := range names {
			check(t, byName[n], rep.Outcomes[i])
		}
		t.Logf("four-at-once: %d bytes of files, peak RSS %.1f MiB in %.2fs", size, float64(rep.VmHWM)/(1<<20), rep.Seconds)
		if rep.VmHWM >= 1<<30 {
			t.Errorf("four bombs at once: peak RSS %.0f MiB, want under 1024 MiB", float64(rep.VmHWM)/(1<<20))
		}
	})
}

// TestInterchangeBombsStayInBudget is TestBombsStayInBudget for the
// interchange bombs: each is refused where the reader's per-message budget
// runs out, or accepted with every message's verdict handed over (both
// reads), with the peak resident set under the bound. (2,000,000 messages
// peak at 25-35 MiB on an idle machine; a starved one stretches GC cycles
// and has measured up to 96 MiB.)
func TestInterchangeBombsStayInBudget(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("peak RSS is read from /proc/self/status (Linux)")
	}
	dir := t.TempDir()
	for _, bm := range fixtures.EDIBombs() {
		t.Run(bm.Name, func(t *testing.T) {
			if bm.Open != "" && os.Getenv("LAZARET_TEST_OPEN_BOMBS") == "" {
				t.Skipf("not bounded yet: %s (LAZARET_TEST_OPEN_BOMBS=1 measures it)", bm.Open)
			}
			path := filepath.Join(dir, bm.Name+".edi")
			if err := bm.WriteFile(path); err != nil {
				t.Fatal(err)
			}
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			rep := checkInChild(t, "edifact", path)
			o := rep.Outcomes[0]
			result := "accepted"
			if o.Err != "" {
				result = o.Err
			}
			t.Logf("%s: %d-byte file, peak RSS %.1f MiB in %.2fs: %s (%d verdicts)", bm.Name, st.Size(), float64(rep.VmHWM)/(1<<20), rep.Seconds, result, o.Messages)
			switch {
			case bm.Refused == "" && o.Err != "":
				t.Errorf("refused (%s); want it accepted: %s", o.Err, bm.Why)
			case bm.Refused == "" && o.Messages != bm.Messages:
				t.Errorf("%d verdicts handed over, want %d", o.Messages, bm.Messages)
			case bm.Refused != "" && o.Code != bm.Refused:
				t.Errorf("got %q (code %q), want %s", o.Err, o.Code, bm.Refused)
			case bm.Refused != "" && (o.Offset <= 0 || o.Offset >= st.Size() || o.Page <= 0):
				t.Errorf("segment %d at byte %d: want a position inside the %d-byte file", o.Page, o.Offset, st.Size())
			}
			if testenv.Race {
				t.Logf("race detector on: the RSS bound is not checked")
			} else if rep.VmHWM >= rssBound {
				t.Errorf("peak RSS %d bytes (%.0f MiB), want under %d MiB", rep.VmHWM, float64(rep.VmHWM)/(1<<20), rssBound>>20)
			}
		})
	}
}
