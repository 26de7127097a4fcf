package validate_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
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
	// A Unix socket: open(2) fails with ENXIO, which read as unclassified.
	sock, err := net.Listen("unix", filepath.Join(root, "sock.tif"))
	must(t, err)
	defer sock.Close()
	cases = append(cases, struct{ rel, code string }{"sock.tif", "file.not-regular"})
	// A device node (as root: a copy of /dev/null), where mknod is allowed.
	if syscall.Mknod(filepath.Join(root, "null.tif"), syscall.S_IFCHR|0o666, 1<<8|3) == nil {
		cases = append(cases, struct{ rel, code string }{"null.tif", "file.not-regular"})
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

// TestOpenRefusesHardlinks: a hard link made inside the root to a file
// outside it passes openat2 (names, not inodes), so a file with more than
// one link is refused unless the operator allows them for the root; the
// manifest check refuses it at submit the same way.
func TestOpenRefusesHardlinks(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	secret := filepath.Join(t.TempDir(), "shadow")
	must(t, os.WriteFile(secret, []byte("root:$6$..."), 0o600))
	must(t, os.Link(secret, filepath.Join(root, "m.tif")))
	_, _, err := validate.Open(validate.Source{Root: root, Rel: "m.tif"})
	var oe *validate.OpenError
	if !errors.As(err, &oe) || oe.Code != "io.hardlink" || !errors.Is(err, validate.ErrHardlink) {
		t.Fatalf("hard link: %v, want io.hardlink", err)
	}
	f, _, err := validate.Open(validate.Source{Root: root, Rel: "m.tif", Hardlinks: true})
	if err != nil {
		t.Fatalf("hard links allowed: %v", err)
	}
	f.Close()
	m := &validate.Manifest{BatchID: "b1", Submitter: "t", Items: []validate.Item{{ObjectID: "m", Kind: "tiff", Path: "m.tif",
		SHA256: strings.Repeat("ab", 32), ColorProfile: "sRGB", ResolutionDPI: "400"}}}
	if err := m.Check(root, false); err == nil || !strings.Contains(err.Error(), "links") {
		t.Errorf("manifest check of a hard-linked item: %v", err)
	}
	if err := m.Check(root, true); err != nil {
		t.Errorf("manifest check, hard links allowed: %v", err)
	}
}

// TestOpenRequiresTheSubmittedFile: with an identity recorded, another
// file at the path — the same bytes under a new inode — is refused.
func TestOpenRequiresTheSubmittedFile(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	p := filepath.Join(root, "m.tif")
	must(t, os.WriteFile(p, []byte("II*\x00"), 0o644))
	f, _, err := validate.Open(validate.Source{Root: root, Rel: "m.tif"})
	must(t, err)
	id := validate.IDOf(f)
	f.Close()
	if id.IsZero() {
		t.Fatal("no identity on this system")
	}
	f, _, err = validate.Open(validate.Source{Root: root, Rel: "m.tif", ID: id})
	must(t, err)
	f.Close()
	must(t, os.WriteFile(p+".new", []byte("II*\x00"), 0o644))
	must(t, os.Rename(p+".new", p))
	_, _, err = validate.Open(validate.Source{Root: root, Rel: "m.tif", ID: id})
	var oe *validate.OpenError
	if !errors.As(err, &oe) || oe.Code != "io.file-changed" || !errors.Is(err, validate.ErrReplaced) {
		t.Fatalf("replaced file: %v, want io.file-changed", err)
	}
}

func TestHardlinkRoots(t *testing.T) {
	t.Parallel()
	h := validate.HardlinkRoots{"/srv/dedup", "/data/x/"}
	for root, want := range map[string]bool{"/srv/dedup": true, "/srv/dedup/b1": true, "/srv/dedupX": false, "/srv/dedup/../other": false,
		"/data/x/b": true, "/data": false, "": false} {
		if got := h.Allow(root); got != want {
			t.Errorf("Allow(%q) = %v, want %v", root, got, want)
		}
	}
	if validate.HardlinkRoots(nil).Allow("/srv/dedup") {
		t.Error("no roots: want none allowed")
	}
}

// TestReadManifestIsConfined: a manifest that is a link is refused before
// it is read, whether or not its target exists, and the refusal quotes
// nothing of the target.
func TestReadManifestIsConfined(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "passwd")
	must(t, os.WriteFile(outside, []byte("root:x:0:0:root:/root:/bin/bash\n"), 0o644))
	must(t, os.Symlink(outside, filepath.Join(root, "exists.json")))
	must(t, os.Symlink(outside+".gone", filepath.Join(root, "dangling.json")))
	must(t, os.Link(outside, filepath.Join(root, "hard.json")))
	var msgs []string
	for _, name := range []string{"exists.json", "dangling.json", "hard.json"} {
		_, _, err := validate.ReadManifest(validate.Source{Root: root, Rel: name, Path: filepath.Join(root, name)})
		if !errors.Is(err, validate.ErrManifestUnreadable) {
			t.Errorf("%s: %v, want ErrManifestUnreadable", name, err)
		}
		if err != nil && strings.Contains(err.Error(), "root:x") {
			t.Errorf("%s: the error quotes the target: %v", name, err)
		}
		if err != nil {
			msgs = append(msgs, strings.ReplaceAll(err.Error(), name, "NAME"))
		}
	}
	if len(msgs) >= 2 && msgs[0] != msgs[1] {
		t.Errorf("a link to a file that exists and one to a file that does not are told apart:\n%s\n%s", msgs[0], msgs[1])
	}
	if _, _, err := validate.ReadManifestFile(filepath.Join(root, "exists.json")); !errors.Is(err, validate.ErrManifestUnreadable) {
		t.Errorf("ReadManifestFile through a link: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
