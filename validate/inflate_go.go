//go:build !libdeflate && !zlib

package validate

// inflateBackendName: this build inflates the Deflate blocks of the strict
// count with klauspost/compress (pure Go). Build with -tags libdeflate for
// the system libdeflate.
const inflateBackendName = "klauspost/compress"

// wholeBackend: this build has a wholeInflater.
const wholeBackend = false

// wholeProof: whether what the wholeInflater accepts is proved with
// strictDeflate (unused here).
const wholeProof = false

// wholeInflater stands for the libdeflate decompressor of the libdeflate
// build; this build has none.
type wholeInflater struct{}

func newWholeInflater() *wholeInflater { return nil }

func (w *wholeInflater) zlib(in, out []byte) (n, used int, ok bool) { return 0, 0, false }
