//go:build !zlib

package tiff

// inflateBackendName: this build inflates the Deflate blocks of the strict
// count in pure Go: a block read whole with wholeFlate, any other (and any
// wholeFlate refuses) with klauspost/compress. Build with -tags zlib for
// the system zlib (cgo) instead of wholeFlate.
const inflateBackendName = "wholeFlate, klauspost/compress"

// wholeInflater is wholeFlate in this build: its tables, for one goroutine
// at a time (the inflater that holds it).
type wholeInflater struct{ f wholeFlate }

func newWholeInflater() *wholeInflater { return new(wholeInflater) }

func (w *wholeInflater) zlib(in, out []byte) (n, used int, ok bool) { return w.f.zlib(in, out) }
