//go:build !linux

package validate

import (
	"os"
	"syscall"
)

// openBeneath opens rel beneath root through os.Root, which refuses any
// escape (also through links); O_NOFOLLOW refuses a link as the file.
func openBeneath(root, rel string) (*os.File, error) {
	clean, err := confinedRel(rel)
	if err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.OpenFile(clean, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
}
