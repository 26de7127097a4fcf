package testenv

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// libtiffTool returns the path of one of libtiff's tools (Debian
// libtiff-tools), failing under CI and skipping elsewhere when it is not
// installed.
func libtiffTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if InCI() {
			t.Fatalf("%s (Debian libtiff-tools) is required in CI", name)
		}
		t.Skipf("%s not installed (apt-get install libtiff-tools)", name)
	}
	return p
}

// Tiffinfo returns the path of libtiff's tiffinfo.
func Tiffinfo(t testing.TB) string { t.Helper(); return libtiffTool(t, "tiffinfo") }

// Tiffcp returns the path of libtiff's tiffcp.
func Tiffcp(t testing.TB) string { t.Helper(); return libtiffTool(t, "tiffcp") }

// Tiffset returns the path of libtiff's tiffset.
func Tiffset(t testing.TB) string { t.Helper(); return libtiffTool(t, "tiffset") }

// LibtiffDecodes runs `tiffinfo -D` (bin) over file (args: -N for main
// page N, 0-based, or -o OFFSET for a SubIFD; none for every page) and
// reports whether libtiff read all the strips or tiles it was asked for:
// exit status 0 and nothing on standard error but warnings. It says
// nothing when libtiff does not even try ("Cannot display data" and the
// like are errors too).
func LibtiffDecodes(bin, file string, args ...string) bool {
	out, ok, _ := libtiffClean(exec.Command(bin, append(append([]string{"-D"}, args...), file)...))
	return ok && bytes.Contains(out, []byte("TIFF Directory at offset"))
}

// LibtiffCopies runs `tiffcp -c none` (bin) over every page of file, into
// a file in dir, and reports whether libtiff read all of it, on the terms
// of LibtiffDecodes; msg is what tiffcp wrote to standard error.
func LibtiffCopies(bin, file, dir string) (ok bool, msg string) {
	_, ok, msg = libtiffClean(exec.Command(bin, "-c", "none", file, filepath.Join(dir, "copy.tif")))
	return ok, msg
}

// libtiffClean runs cmd, one of libtiff's tools, and reports whether it
// exited 0 with nothing on standard error but warnings.
func libtiffClean(cmd *exec.Cmd) (stdout []byte, ok bool, stderr string) {
	var e bytes.Buffer
	cmd.Stderr = &e
	out, err := cmd.Output()
	stderr = strings.TrimSpace(e.String())
	if err != nil {
		return out, false, stderr
	}
	for _, line := range strings.Split(stderr, "\n") {
		if line != "" && !strings.Contains(line, "Warning") {
			return out, false, stderr
		}
	}
	return out, true, stderr
}
