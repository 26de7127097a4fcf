package validate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Source is where an item's bytes are: Rel beneath Root (an ingest root,
// the batch folder), or, with no Root, the file an operator named on the
// command line.
type Source struct {
	Root string // absolute; empty for a path an operator named
	Rel  string // relative to Root, slash-separated
	Path string // the file when Root is empty; otherwise Root/Rel, for display
	// ID, when set, is the file as it was first seen (at submit): Open
	// refuses any other file at the path as io.file-changed.
	ID FileID
	// Hardlinks lets a file beneath Root have more than one link: an
	// operator's choice for an ingest root (see HardlinkRoots). Without it
	// Open refuses such a file as io.hardlink, since a link can make a file
	// from outside the root appear inside it.
	Hardlinks bool
}

// FileID is a file's identity: its device and inode. The zero FileID is
// none recorded.
type FileID struct {
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
}

// IsZero reports whether no identity was recorded.
func (id FileID) IsZero() bool { return id == FileID{} }

// HardlinkRoots are the ingest roots under which an operator lets
// submitted files have more than one link (a store that deduplicates with
// hard links, rsnapshot's say). Empty: none.
type HardlinkRoots []string

// Allow reports whether a file read beneath root may have more than one
// link: root is one of h or beneath one. Paths are compared after
// filepath.Abs and Clean.
func (h HardlinkRoots) Allow(root string) bool {
	if root == "" {
		return false
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return false
	}
	for _, r := range h {
		base, err := filepath.Abs(r)
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(base, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// SourceOf confines an absolute path to its own folder: the file itself
// may not be a symbolic link.
func SourceOf(path string) Source {
	return Source{Root: filepath.Dir(path), Rel: filepath.Base(path), Path: path}
}

// String is the path opened.
func (s Source) String() string {
	if s.Root == "" {
		return s.Path
	}
	return filepath.Join(s.Root, filepath.FromSlash(s.Rel))
}

// OpenError: a file that may not be read as an item: outside its root,
// reached through a symbolic link, hard-linked, not the file submitted, or
// not a regular file (a FIFO, a device, a folder). Structural:
// dead-lettered, never retried, nothing read.
type OpenError struct {
	Path   string
	Code   string // "io.outside-root", "io.symlink", "io.hardlink", "io.file-changed", "file.not-regular"
	Reason string
	Err    error
}

func (e *OpenError) Error() string {
	return fmt.Sprintf("%s: %s", e.Path, e.Reason)
}
func (e *OpenError) Unwrap() error { return e.Err }

// The causes of an OpenError that are not the kernel's.
var (
	// ErrNotRegular: the path names something other than a regular file.
	ErrNotRegular = errors.New("not a regular file")
	// ErrHardlink: a regular file with more than one link, beneath a root
	// that does not allow them.
	ErrHardlink = errors.New("file has more than one link")
	// ErrReplaced: another file (device and inode) stands where the
	// submitted one was.
	ErrReplaced = errors.New("not the file that was submitted")
)

// Open is the one way an item's bytes are opened: beneath Root without
// following a symbolic link or leaving the root (openat2 with
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, or os.Root where the kernel lacks
// it), never blocking (O_NONBLOCK: a FIFO swapped in is refused at once,
// not waited on), and only a regular file. It returns the file and its
// size as seen at open; readers must not read past it, and a file that
// then grows or shrinks is ErrFileChanged.
//
// Beneath a root, a file with more than one link is refused (io.hardlink:
// openat2 sees names, not inodes, so a hard link made inside the root to a
// file outside it would pass) unless src.Hardlinks; and when src.ID is set,
// a file other than the one recorded then is refused (io.file-changed).
// Both are checked on the open descriptor, so nothing can be swapped in
// between the check and the read.
func Open(src Source) (*os.File, int64, error) {
	var f *os.File
	var err error
	if src.Root == "" {
		f, err = os.OpenFile(src.Path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	} else {
		f, err = openBeneath(src.Root, src.Rel)
	}
	if err != nil {
		return nil, 0, openErr(src, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, &OpenError{Path: src.String(), Code: "file.not-regular", Reason: fmt.Sprintf("%s, not a regular file: nothing was read", fileType(st.Mode())), Err: ErrNotRegular}
	}
	id, links := identity(st)
	if src.Root != "" && !src.Hardlinks && links > 1 {
		f.Close()
		return nil, 0, &OpenError{Path: src.String(), Code: "io.hardlink",
			Reason: fmt.Sprintf("the file has %d links, and a hard link can bring a file from outside the ingest root into it: nothing was read", links),
			Err:    ErrHardlink}
	}
	if !src.ID.IsZero() && id != src.ID {
		f.Close()
		return nil, 0, &OpenError{Path: src.String(), Code: "io.file-changed",
			Reason: fmt.Sprintf("another file now stands at the path (device %d inode %d, submitted as device %d inode %d): nothing was read", id.Dev, id.Ino, src.ID.Dev, src.ID.Ino),
			Err:    ErrReplaced}
	}
	return f, st.Size(), nil
}

// IDOf is the identity of an open file (see Source.ID); the zero
// FileID where the system has none.
func IDOf(f *os.File) FileID {
	st, err := f.Stat()
	if err != nil {
		return FileID{}
	}
	id, _ := identity(st)
	return id
}

// confinedRel cleans a path relative to a root and refuses one that is
// absolute or climbs out.
func confinedRel(rel string) (string, error) {
	clean := filepath.Clean(filepath.FromSlash(rel))
	if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", errOutside
	}
	return clean, nil
}

var errOutside = errors.New("path escapes its root")

func openErr(src Source, err error) error {
	switch {
	case errors.Is(err, errOutside), errors.Is(err, syscall.EXDEV):
		return &OpenError{Path: src.String(), Code: "io.outside-root", Reason: "the path leaves its ingest root " + src.Root + ": nothing was read", Err: err}
	case errors.Is(err, syscall.ELOOP):
		return &OpenError{Path: src.String(), Code: "io.symlink", Reason: "the path goes through a symbolic link: nothing was read", Err: err}
	case errors.Is(err, syscall.ENXIO):
		// open(2) of a Unix socket (or of a device with nothing behind
		// it) fails so: not a file, and retrying would not make it one.
		return &OpenError{Path: src.String(), Code: "file.not-regular", Reason: "a socket or a device, not a regular file: nothing was read", Err: fmt.Errorf("%w (%w)", ErrNotRegular, err)}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		pe.Path = src.String()
		return pe
	}
	return &fs.PathError{Op: "open", Path: src.String(), Err: err}
}

func fileType(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a folder"
	}
	return "a " + m.Type().String()
}

// Within resolves path against the ingest roots: the root it lies beneath
// (the first, in order) and its path relative to it. Paths are compared
// after filepath.Abs and Clean; links are not followed here (Open refuses
// them).
func Within(roots []string, path string) (Source, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Source{}, err
	}
	for _, r := range roots {
		root, err := filepath.Abs(r)
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(root, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && rel != "." {
			return Source{Root: root, Rel: filepath.ToSlash(rel), Path: abs}, nil
		}
	}
	if len(roots) == 0 {
		return Source{}, &OpenError{Path: abs, Code: "io.outside-root", Reason: "no ingest root is configured (ingest_roots): nothing is read", Err: errOutside}
	}
	return Source{}, &OpenError{Path: abs, Code: "io.outside-root", Reason: fmt.Sprintf("not under an ingest root (%s): nothing was read", strings.Join(roots, ", ")), Err: errOutside}
}
