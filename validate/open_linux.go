package validate

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// openBeneath opens rel beneath root with openat2: no symbolic link
// anywhere in rel, no escape by "..", no magic links, without blocking.
// Kernels older than 5.6 lack openat2; os.Root then keeps the walk inside
// the root, and O_NOFOLLOW refuses a link as the file itself.
func openBeneath(root, rel string) (*os.File, error) {
	clean, err := confinedRel(rel)
	if err != nil {
		return nil, err
	}
	dir, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: root, Err: err}
	}
	defer unix.Close(dir)
	fd, err := unix.Openat2(dir, clean, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NONBLOCK | unix.O_CLOEXEC | unix.O_NOCTTY | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) { // no openat2, or a sandbox that filters it
		return openInRoot(root, clean)
	}
	if err != nil {
		return nil, &os.PathError{Op: "openat2", Path: filepath.Join(root, clean), Err: err}
	}
	return os.NewFile(uintptr(fd), filepath.Join(root, clean)), nil
}

// openInRoot is the fallback: os.Root refuses escapes (also through links),
// O_NOFOLLOW refuses the file itself being a link.
func openInRoot(root, clean string) (*os.File, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.OpenFile(clean, os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_NOCTTY, 0)
}
