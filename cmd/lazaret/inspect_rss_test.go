package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/internal/testenv"
)

// inspectArgsEnv holds the arguments (a JSON array) a child process runs
// `lazaret` with, and inspectReportEnv the file it writes its peak resident
// set to (see init).
const (
	inspectArgsEnv   = "LAZARET_TEST_INSPECT_ARGS"
	inspectReportEnv = "LAZARET_TEST_INSPECT_REPORT"
)

// inspectRSSBound is what inspect may cost on an interchange of any size
// (tracker issue 10).
const inspectRSSBound = 64 << 20

// init lets this test binary double as the lazaret process that
// TestInspectLargeInterchangeInBoundedMemory measures: with
// LAZARET_TEST_INSPECT_ARGS set it runs those arguments, writing to its
// real stdout, records its exit code, time and peak resident set (VmHWM)
// in LAZARET_TEST_INSPECT_REPORT, and exits.
func init() {
	raw := os.Getenv(inspectArgsEnv)
	if raw == "" {
		return
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	start := time.Now()
	err := run(context.Background(), args, os.Stdout, os.Stderr)
	rep := childReport{Seconds: time.Since(start).Seconds()}
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		rep.Code = ee.code
	case err != nil:
		rep.Code = 1
		fmt.Fprintln(os.Stderr, err)
	}
	hwm, herr := testenv.PeakRSS()
	if herr != nil {
		fmt.Fprintln(os.Stderr, herr)
		os.Exit(2)
	}
	rep.VmHWM = hwm
	b, _ := json.Marshal(rep)
	if err := os.WriteFile(os.Getenv(inspectReportEnv), b, 0o644); err != nil {
		os.Exit(2)
	}
	os.Exit(0)
}

type childReport struct {
	Code    int     `json:"code"`
	VmHWM   int64   `json:"vm_hwm"`
	Seconds float64 `json:"seconds"`
}

// TestInspectLargeInterchangeInBoundedMemory runs `inspect --json` and
// `inspect` (the table) on the 50 MB benchmark interchange
// (fixtures.LargeInterchange, about 217,000 good messages) in a child
// process: one accepted line per message, and a peak resident set under
// 64 MiB. Before, every verdict was held until the envelope's verdict was
// known and every line until the end: 235-309 MB.
func TestInspectLargeInterchangeInBoundedMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("peak RSS is read from /proc/self/status (Linux)")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "large.edi")
	var buf bytes.Buffer
	if err := fixtures.LargeInterchange(&buf, 50<<20); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	messages := bytes.Count(buf.Bytes(), []byte("UNH+"))
	buf = bytes.Buffer{}
	for _, tc := range []struct {
		name string
		args []string
		// accepted reports whether one line of output is an accepted message.
		accepted func(line []byte) bool
		header   int
	}{
		{"json", []string{"inspect", "--json", path}, func(line []byte) bool {
			var r inspectResult
			return json.Unmarshal(line, &r) == nil && r.Verdict == "accept" && r.MessageRef != "" && r.Offset != nil
		}, 0},
		{"table", []string{"inspect", path}, func(line []byte) bool {
			f := strings.Fields(string(line))
			return len(f) >= 2 && strings.HasPrefix(f[0], path+"#") && f[1] == "accept"
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			report := filepath.Join(dir, tc.name+".json")
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			args, _ := json.Marshal(tc.args)
			cmd.Env = append(os.Environ(), inspectArgsEnv+"="+string(args), inspectReportEnv+"="+report)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines, accepted := 0, 0
			sc := bufio.NewScanner(out)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				if lines++; lines > tc.header && tc.accepted(sc.Bytes()) {
					accepted++
				}
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("child: %v\n%s", err, stderr.Bytes())
			}
			b, err := os.ReadFile(report)
			if err != nil {
				t.Fatal(err)
			}
			var rep childReport
			if err := json.Unmarshal(b, &rep); err != nil {
				t.Fatal(err)
			}
			t.Logf("%d messages: exit %d, %d lines, peak RSS %.1f MiB in %.2fs", messages, rep.Code, lines, float64(rep.VmHWM)/(1<<20), rep.Seconds)
			if rep.Code != 0 || accepted != messages || lines != messages+tc.header {
				t.Errorf("exit %d, %d lines, %d accepted messages; want exit 0 and %d, every one accepted\n%s", rep.Code, lines, accepted, messages, stderr.Bytes())
			}
			if rep.VmHWM >= inspectRSSBound {
				t.Errorf("peak RSS %d bytes (%.0f MiB), want under %d MiB", rep.VmHWM, float64(rep.VmHWM)/(1<<20), inspectRSSBound>>20)
			}
		})
	}
}
