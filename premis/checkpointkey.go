package premis

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"syscall"
)

// ErrKeyPermissions: a private key file that others than its owner may
// read or write. ssh refuses such a key ("UNPROTECTED PRIVATE KEY FILE");
// so does Lazaret, since whoever can read the checkpoint signing key can
// sign a rewritten ledger's head.
var ErrKeyPermissions = errors.New("private key accessible by others than its owner")

// maxKeyFile bounds what ReadCheckpointKey reads: a PEM ed25519 key is
// about 120 bytes.
const maxKeyFile = 64 << 10

// ReadCheckpointKey reads the checkpoint signing key at path (a file
// MarshalCheckpointKey wrote, as lazaret ledger keygen does, mode 0600).
// It refuses, before reading a byte, a file its group or others may read
// or write (ErrKeyPermissions, with the chmod that fixes it), a file that
// is not a regular file (a FIFO is not waited on), and a file larger than
// any key.
func ReadCheckpointKey(path string) (ed25519.PrivateKey, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("premis: checkpoint key %s: not a regular file (%s)", path, st.Mode().Type())
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
		return nil, fmt.Errorf("premis: checkpoint key %s: permissions %04o are too open, the key must be readable by its owner only: run chmod 600 %s: %w",
			path, perm, path, ErrKeyPermissions)
	}
	if st.Size() > maxKeyFile {
		return nil, fmt.Errorf("premis: checkpoint key %s: %d bytes, no key is larger than %d", path, st.Size(), maxKeyFile)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, err
	}
	key, err := ParseCheckpointKey(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return key, nil
}
