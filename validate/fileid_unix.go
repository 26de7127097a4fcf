//go:build unix

package validate

import (
	"io/fs"
	"syscall"
)

// identity is a file's device and inode, and its link count.
func identity(st fs.FileInfo) (FileID, uint64) {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return FileID{}, 1
	}
	return FileID{Dev: uint64(sys.Dev), Ino: uint64(sys.Ino)}, uint64(sys.Nlink)
}
