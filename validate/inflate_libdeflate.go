//go:build libdeflate && cgo

package validate

/*
#cgo LDFLAGS: -ldeflate
#include <libdeflate.h>
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// inflateBackendName: this build inflates the Deflate blocks of the strict
// count with the system libdeflate (through cgo), and proves each one with
// strictDeflate before it counts.
const inflateBackendName = "libdeflate " + C.LIBDEFLATE_VERSION_STRING

// wholeBackend: this build has a wholeInflater.
const wholeBackend = true

// wholeProof: libdeflate reads streams Go's decoders refuse (see
// strictDeflate), so what it accepts is proved before it counts.
const wholeProof = true

// wholeInflater is one libdeflate decompressor: for one goroutine at a
// time (the inflater that holds it), freed when that inflater is dropped.
type wholeInflater struct {
	d *C.struct_libdeflate_decompressor
}

func newWholeInflater() *wholeInflater {
	d := C.libdeflate_alloc_decompressor()
	if d == nil {
		return nil // out of memory: the Go decoder counts instead
	}
	w := &wholeInflater{d: d}
	runtime.AddCleanup(w, func(d *C.struct_libdeflate_decompressor) { C.libdeflate_free_decompressor(d) }, d)
	return w
}

// zlib decompresses the zlib stream at the start of in into out, which
// holds the most it may decompress to, and returns the bytes it made and
// the bytes of in the stream took (header and checksum included). ok is
// false for anything but a complete stream whose checksum matched and
// whose output fit.
func (w *wholeInflater) zlib(in, out []byte) (n, used int, ok bool) {
	if len(in) == 0 || len(out) == 0 {
		return 0, 0, false
	}
	var nin, nout C.size_t
	r := C.libdeflate_zlib_decompress_ex(w.d, unsafe.Pointer(unsafe.SliceData(in)), C.size_t(len(in)),
		unsafe.Pointer(unsafe.SliceData(out)), C.size_t(len(out)), &nin, &nout)
	runtime.KeepAlive(in)
	runtime.KeepAlive(out)
	if r != C.LIBDEFLATE_SUCCESS || int(nout) > len(out) || int(nin) > len(in) {
		return 0, 0, false
	}
	return int(nout), int(nin), true
}
