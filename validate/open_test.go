package validate_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/lazaret/lazaret/validate"
)

// TestOpenIsConfined: every way an attacker with a batch folder could make
// the worker read something else is refused before a byte is read.
func TestOpenIsConfined(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	outside := t.TempDir()
	secret := filepath.Join(outside, "shadow")
	must(t, os.WriteFile(secret, []byte("root:$6$..."), 0o600))
	must(t, os.WriteFile(filepath.Join(root, "good.tif"), []byte("II*\x00"), 0o644))
	must(t, os.Symlink(secret, filepath.Join(root, "link.tif")))
	must(t, os.Mkdir(filepath.Join(root, "sub"), 0o755))
	must(t, os.Symlink(outside, filepath.Join(root, "away")))
	must(t, syscall.Mkfifo(filepath.Join(root, "fifo.tif"), 0o644))
	cases := []struct {
		rel, code string
	}{
		{"link.tif", "io.symlink"},    // the file itself is a link
		{"away/shadow", "io.symlink"}, // a link on the way
		{"../" + filepath.Base(outside) + "/shadow", "io.outside-root"},
		{"sub/../../x", "io.outside-root"},
		{"fifo.tif", "file.not-regular"}, // would block a plain open forever
		{"sub", "file.not-regular"},
	}
	for _, tc := range cases {
		done := make(chan error, 1)
		go func() {
			f, _, err := validate.Open(validate.Source{Root: root, Rel: tc.rel})
			if f != nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			var oe *validate.OpenError
			if !errors.As(err, &oe) || oe.Code != tc.code {
				t.Errorf("%s: %v, want an OpenError %s", tc.rel, err, tc.code)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the open blocked", tc.rel)
		}
	}
	f, size, err := validate.Open(validate.Source{Root: root, Rel: "good.tif"})
	if err != nil || size != 4 {
		t.Fatalf("a plain file beneath the root: %v (size %d)", err, size)
	}
	f.Close()
	// Without a root (a path an operator typed), a FIFO still never blocks.
	if _, _, err := validate.Open(validate.Source{Path: filepath.Join(root, "fifo.tif")}); !errors.Is(err, validate.ErrNotRegular) {
		t.Errorf("FIFO by path: %v", err)
	}
}

func TestWithinRoots(t *testing.T) {
	t.Parallel()
	roots := []string{"/srv/ingest", "/data/scans"}
	src, err := validate.Within(roots, "/data/scans/b1/m.tif")
	if err != nil || src.Root != "/data/scans" || src.Rel != "b1/m.tif" {
		t.Errorf("inside: %+v %v", src, err)
	}
	for _, p := range []string{"/etc/shadow", "/data/scans/../../etc/shadow", "/data/scansX/m.tif", "/data/scans"} {
		var oe *validate.OpenError
		if _, err := validate.Within(roots, p); !errors.As(err, &oe) || oe.Code != "io.outside-root" {
			t.Errorf("%s: %v, want refused", p, err)
		}
	}
	if _, err := validate.Within(nil, "/srv/ingest/m.tif"); err == nil {
		t.Error("no roots configured: want everything refused")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
