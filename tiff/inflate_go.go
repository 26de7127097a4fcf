//go:build !zlib

package tiff

// inflateBackendName: this build inflates the Deflate blocks of the strict
// count with klauspost/compress (pure Go). Build with -tags zlib for the
// system zlib (cgo), which inflates noisy masters 1.6-1.8 times as fast.
const inflateBackendName = "klauspost/compress"

// wholeBackend: this build has a wholeInflater.
const wholeBackend = false

// wholeInflater stands for the zlib stream of the zlib build; this build
// has none.
type wholeInflater struct{}

func newWholeInflater() *wholeInflater { return nil }

func (w *wholeInflater) zlib(in, out []byte) (n, used int, ok bool) { return 0, 0, false }
