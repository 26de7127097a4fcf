package testenv

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
)

// PeakRSS is this process's peak resident set size in bytes (VmHWM, from
// /proc/self/status: Linux only). Tests that bound memory run the work in
// a child process and have it report this.
func PeakRSS() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmHWM in /proc/self/status")
}
