package validate_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/internal/testenv"
)

// longMessageRSSBound and longMessageCPUSeconds are what checking one message
// of a million segments may cost a worker (tracker issue 24, item 6).
const (
	longMessageRSSBound   = 64 << 20
	longMessageCPUSeconds = 5
)

// TestLongMessageInBoundedMemory checks interchanges of one message of
// short FTX segments (fixtures.LongMessage) in a child process, as a worker
// does: 1,000,000 of them, refused at segment 1,000,001 for more than
// Limits.MaxMessageSegments with a peak resident set under 64 MiB in under
// 5 s of CPU; and 999,998, kept whole and judged against its message
// directory (no BGM; FTX past its 99 repetitions), under the same bounds:
// findings past max_findings are counted, not written out. Before, every kept
// segment cost about 304 bytes: 208 MiB, and a refusal for the message's
// size at segment 448,889.
func TestLongMessageInBoundedMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("peak RSS is read from /proc/self/status (Linux)")
	}
	for _, tc := range []struct {
		name     string
		segments int
		code     string // the verdict's code
		at       int    // and its segment in the message
	}{
		{"1M", 1_000_000, "edifact.too-many-segments", 1_000_001},
		{"under-limit", 999_998, "edifact.bgm.missing", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, size := writeTemp(t, "long.edi", func(w io.Writer) error { return fixtures.LongMessage(w, tc.segments) })
			rep := checkInChild(t, "edifact", path)
			o := rep.Outcomes[0]
			t.Logf("%d segments, %d-byte file: peak RSS %.1f MiB in %.2fs, %.2fs of CPU: %s at segment %d, byte %d: %s",
				tc.segments, size, float64(rep.VmHWM)/(1<<20), rep.Seconds, rep.CPUSeconds, o.Code, o.Page, o.Offset, o.Err)
			if o.Code != tc.code || o.Page != tc.at {
				t.Errorf("got %s at segment %d (%s), want %s at segment %d", o.Code, o.Page, o.Err, tc.code, tc.at)
			}
			if rep.VmHWM >= longMessageRSSBound {
				t.Errorf("peak RSS %d bytes (%.0f MiB), want under %d MiB", rep.VmHWM, float64(rep.VmHWM)/(1<<20), longMessageRSSBound>>20)
			}
			if rep.CPUSeconds >= longMessageCPUSeconds && !testenv.Race {
				t.Errorf("%.2fs of CPU, want under %ds", rep.CPUSeconds, longMessageCPUSeconds)
			}
		})
	}
}

// TestFailingLongMessageInBoundedMemory is TestLongMessageInBoundedMemory
// for a message whose segments each break a logistics rule: one IFTMIN of
// 999,990 DTM segments with a date that is not one (20261331, format
// 102). The rules' findings are bounded as the directory's are (by
// max_findings); before, each was built and kept, a million RuleErrors
// and a joined message text of some 100 MB: 1.9 GB of peak resident set
// for a 22 MB file.
func TestFailingLongMessageInBoundedMemory(t *testing.T) {
	rep := checkIFTMINInChild(t, "dates.edi", func(w *bufio.Writer) int {
		const n = 999_990
		for range n {
			w.WriteString("DTM+137:20261331:102'\n")
		}
		return n
	})
	if rep.CPUSeconds >= longMessageCPUSeconds && !testenv.Race {
		t.Errorf("%.2fs of CPU, want under %ds", rep.CPUSeconds, longMessageCPUSeconds)
	}
}

// TestLongPartiesInBoundedMemory is TestLongMessageInBoundedMemory for a
// message of 500 NADs whose functions (3035, an..3) are 60,000 distinct
// bytes each, and neither of the two IFTMIN requires: a 30 MB file that
// cost 196 MiB of peak resident set while every function was kept and
// named whole in each missing party's finding, and 129 MiB while each
// directory finding (code-unknown) still quoted its value whole.
func TestLongPartiesInBoundedMemory(t *testing.T) {
	checkIFTMINInChild(t, "parties.edi", func(w *bufio.Writer) int {
		const n = 500
		q := strings.Repeat("Q", 60_000)
		for i := range n {
			fmt.Fprintf(w, "NAD+%06d%s'\n", i, q)
		}
		return n
	})
}

// checkIFTMINInChild writes an interchange of one IFTMIN whose segments
// after its BGM are what body writes (it returns how many), checks it in a
// child process (checkInChild), logs what that cost and fails the test if
// its peak resident set reached longMessageRSSBound.
func checkIFTMINInChild(t *testing.T, name string, body func(*bufio.Writer) int) bombReport {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("peak RSS is read from /proc/self/status (Linux)")
	}
	path, size := writeTemp(t, name, func(f io.Writer) error {
		w := bufio.NewWriter(f)
		w.WriteString("UNB+UNOC:3+A:ZZ+B:ZZ+261130:1200+F1'\nUNH+1+IFTMIN:D:99B:UN'\nBGM+610+B1+9'\n")
		n := body(w)
		fmt.Fprintf(w, "UNT+%d+1'\nUNZ+1+F1'\n", n+3)
		return w.Flush()
	})
	rep := checkInChild(t, "edifact", path)
	o := rep.Outcomes[0]
	t.Logf("%d-byte file: peak RSS %.1f MiB in %.2fs, %.2fs of CPU: %s at segment %d, %d bytes of error text",
		size, float64(rep.VmHWM)/(1<<20), rep.Seconds, rep.CPUSeconds, o.Code, o.Page, len(o.Err))
	if rep.VmHWM >= longMessageRSSBound && !testenv.Race {
		t.Errorf("peak RSS %d bytes (%.0f MiB), want under %d MiB", rep.VmHWM, float64(rep.VmHWM)/(1<<20), longMessageRSSBound>>20)
	}
	return rep
}

// writeTemp writes a file named name in the test's temporary directory
// with write, and returns its path and size.
func writeTemp(t *testing.T, name string, write func(io.Writer) error) (path string, size int64) {
	t.Helper()
	path = filepath.Join(t.TempDir(), name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := write(f); err != nil {
		f.Close()
		t.Fatal(err)
	}
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path, st.Size()
}
