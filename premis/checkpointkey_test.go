//go:build unix

package premis_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lazaret/lazaret/premis"
)

// TestCheckpointKeyReadableByOthersIsRefused: a signing key that its
// group or others may read was used silently; now it is refused as ssh
// refuses one, naming chmod 600, and the same key at 0600 (0400) is read.
func TestCheckpointKeyReadableByOthersIsRefused(t *testing.T) {
	t.Parallel()
	key, _ := premis.GenerateCheckpointKey()
	pemKey, err := premis.MarshalCheckpointKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, perm := range []os.FileMode{0o644, 0o640, 0o604, 0o660, 0o602, 0o620, 0o666} {
		p := filepath.Join(dir, "open.key")
		os.Remove(p)
		if err := os.WriteFile(p, pemKey, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, perm); err != nil {
			t.Fatal(err)
		}
		_, err := premis.ReadCheckpointKey(p)
		if !errors.Is(err, premis.ErrKeyPermissions) || !strings.Contains(err.Error(), "chmod 600 "+p) {
			t.Errorf("mode %04o: %v, want ErrKeyPermissions naming chmod 600", perm, err)
		}
	}
	for _, perm := range []os.FileMode{0o600, 0o400} {
		p := filepath.Join(dir, "own.key")
		os.Remove(p)
		if err := os.WriteFile(p, pemKey, 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, perm)
		got, err := premis.ReadCheckpointKey(p)
		if err != nil || !got.Equal(key) {
			t.Errorf("mode %04o: %v", perm, err)
		}
	}
	// Not a key, not a file: clear errors, no hang on a FIFO.
	fifo := filepath.Join(dir, "fifo.key")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := premis.ReadCheckpointKey(fifo); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a FIFO: %v", err)
	}
	big := filepath.Join(dir, "big.key")
	if err := os.WriteFile(big, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := premis.ReadCheckpointKey(big); err == nil || !strings.Contains(err.Error(), "no key is larger") {
		t.Errorf("a 1 MiB file: %v", err)
	}
	if _, err := premis.ReadCheckpointKey(dir); err == nil {
		t.Error("a folder was read as a key")
	}
}
