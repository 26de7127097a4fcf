package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/internal/edianchor"
)

// BenchmarkInspectVsTokenizer measures `lazaret inspect` on the large
// interchange (edianchor.LargeInterchange, about 217,000 good messages)
// against the anchor tokenizer (edianchor.Tokenize) on the same file, in
// the same run: each iteration runs both in turn, alternating which goes
// first. Issue 26 asks inspect for at most 4 times the tokenizer's CPU.
//
// CPU is process user+sys time, as the kernel counts it: inspect runs as a
// child process (this test binary, see init in inspect_rss_test.go) with
// its output to /dev/null, so its CPU is all of the process's, from its
// start to its exit, every thread's (the garbage collector's too) and the
// one-off costs a real `lazaret inspect` pays (the directory's tables,
// the registries); the tokenizer runs in this process, one goroutine,
// measured with getrusage around it. Wall time would charge inspect for
// the neighbours' load on a shared machine and leave out the collector's
// work on the other core.
//
// x-tokenizer-cpu is inspect's CPU over the tokenizer's, from the least of
// each (the estimate least disturbed by other load: below 4 meets the
// target), x-tokenizer-cpu-mean from their sums; inspect-cores is how many
// cores inspect kept busy. Run it with -benchtime=5x or more.
//
// The floor is what any inspect that reports fixity pays before it checks
// anything, measured in the same iterations: the tokenizer reading through
// SHA-256 (inspect prints the file's digest), and the CPU of a whole
// inspect process on an interchange of two messages (the start: runtime,
// directory tables, registries). floor-cpu-ms is their sum, and
// x-tokenizer-floor that over the tokenizer's: what is left of the 4x for
// checking 2.4 million segments and writing 217,000 verdicts is
// 4 - x-tokenizer-floor tokenizers.
func BenchmarkInspectVsTokenizer(b *testing.B) {
	for _, c := range []struct {
		name  string
		flags []string
	}{
		{"json", []string{"--json"}},
		{"table", nil},
		// The verdicts kept from the first read fit the budget; with none
		// kept, the interchange is read twice, as one too large for it is.
		{"json-reread", []string{"--json", "--interchange-budget", "1"}},
	} {
		b.Run(c.name, func(b *testing.B) { benchInspectVsTokenizer(b, c.flags) })
	}
}

func benchInspectVsTokenizer(b *testing.B, flags []string) {
	path := edianchor.LargeInterchange(b)
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	args := append(append([]string{"inspect"}, flags...), path)
	rawArgs, _ := json.Marshal(args)
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devNull.Close()
	report := filepath.Join(b.TempDir(), "report.json")
	buf := make([]byte, 1<<20)

	small := filepath.Join(b.TempDir(), "small.edi")
	if err := writeSmallInterchange(small); err != nil {
		b.Fatal(err)
	}
	smallArgs, _ := json.Marshal(append(append([]string{"inspect"}, flags...), small))

	var cTok, cInspect, tInspect time.Duration
	bestTok, bestInspect := time.Duration(1<<62), time.Duration(1<<62)
	bestDigest, bestStart := time.Duration(1<<62), time.Duration(1<<62)
	var peak int64
	tokenize := func() {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		c0 := processCPU()
		s, err := edianchor.Tokenize(f, buf)
		dc := processCPU() - c0
		if err != nil || s.Segments < 100000 {
			b.Fatalf("%+v %v", s, err)
		}
		cTok, bestTok = cTok+dc, min(bestTok, dc)
	}
	// digest is the floor's read: the tokenizer through SHA-256.
	digest := func() {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		h := sha256.New()
		c0 := processCPU()
		s, err := edianchor.Tokenize(io.TeeReader(f, h), buf)
		h.Sum(nil)
		dc := processCPU() - c0
		if err != nil || s.Segments < 100000 {
			b.Fatalf("%+v %v", s, err)
		}
		bestDigest = min(bestDigest, dc)
	}
	// child runs this test binary as `lazaret` with args, its CPU (all of
	// the process's) returned.
	child := func(args []byte) (time.Duration, childReport) {
		os.Remove(report)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), inspectArgsEnv+"="+string(args), inspectReportEnv+"="+report)
		cmd.Stdout = devNull
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			b.Fatalf("inspect: %v\n%s", err, stderr.Bytes())
		}
		var rep childReport
		raw, err := os.ReadFile(report)
		if err == nil {
			err = json.Unmarshal(raw, &rep)
		}
		if err != nil || rep.Code != 0 {
			b.Fatalf("inspect: exit %d: %v\n%s", rep.Code, err, stderr.Bytes())
		}
		return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), rep
	}
	inspect := func() {
		start := time.Now()
		dc, rep := child(rawArgs)
		tInspect += time.Since(start)
		cInspect, bestInspect = cInspect+dc, min(bestInspect, dc)
		peak = max(peak, rep.VmHWM)
	}
	floor := func() {
		digest()
		dc, _ := child(smallArgs)
		bestStart = min(bestStart, dc)
	}
	b.SetBytes(st.Size())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			tokenize()
			inspect()
		} else {
			inspect()
			tokenize()
		}
		b.StopTimer()
		floor()
		b.StartTimer()
	}
	b.StopTimer()
	floorCPU := bestDigest + bestStart
	b.ReportMetric(float64(floorCPU.Microseconds())/1000, "floor-cpu-ms")
	b.ReportMetric(floorCPU.Seconds()/bestTok.Seconds(), "x-tokenizer-floor")
	b.ReportMetric(bestInspect.Seconds()/bestTok.Seconds(), "x-tokenizer-cpu")
	b.ReportMetric(cInspect.Seconds()/cTok.Seconds(), "x-tokenizer-cpu-mean")
	b.ReportMetric(float64(bestInspect.Milliseconds()), "inspect-cpu-ms")
	b.ReportMetric(float64(bestTok.Microseconds())/1000, "tokenizer-cpu-ms")
	b.ReportMetric(cInspect.Seconds()/tInspect.Seconds(), "inspect-cores")
	b.ReportMetric(float64(peak)/(1<<20), "inspect-peak-RSS-MB")
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// writeSmallInterchange writes the large interchange's first two messages
// (fixtures.LargeInterchange cut short): an inspect of it pays the start
// and little else.
func writeSmallInterchange(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	err = fixtures.LargeInterchange(w, 300)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
