//go:build zlib && cgo

package tiff

/*
#cgo LDFLAGS: -lz
#include <stdlib.h>
#include <zlib.h>

static z_stream *lz_new(void) {
	z_stream *s = calloc(1, sizeof(z_stream));
	if (s != NULL && inflateInit(s) != Z_OK) {
		free(s);
		s = NULL;
	}
	return s;
}

static void lz_free(z_stream *s) {
	inflateEnd(s);
	free(s);
}

// lz_inflate inflates the zlib stream in into out in one call: 1 when it
// ended (checksum included) within both, with what it made and took.
static int lz_inflate(z_stream *s, unsigned char *in, unsigned in_len, unsigned char *out, unsigned out_len,
		unsigned long *made, unsigned long *took) {
	if (inflateReset(s) != Z_OK)
		return 0;
	s->next_in = in;
	s->avail_in = in_len;
	s->next_out = out;
	s->avail_out = out_len;
	int r = inflate(s, Z_FINISH);
	*made = s->total_out;
	*took = s->total_in;
	return r == Z_STREAM_END;
}
*/
import "C"

import (
	"math"
	"runtime"
	"unsafe"
)

// inflateBackendName: this build inflates the Deflate blocks of the strict
// count with the system zlib (through cgo).
const inflateBackendName = "zlib " + C.ZLIB_VERSION

// zlib accepts no stream Go's decoders refuse (Go's decoder follows
// zlib's rules; where they differ, a precode of one codeword, Go is the one
// that accepts), so what it counts is what the decoder would; the
// differential and fuzz tests (inflate_backend_test.go) hold it to that.
// libdeflate, tried too, is faster but reads streams Go refuses (length
// symbols 286 and 287, distance symbols 30 and 31, unused codewords of
// incomplete codes): proving its output with a Go pass made it no faster
// than klauspost.

// wholeInflater is one zlib inflate stream: for one goroutine at a time
// (the inflater that holds it), freed when that inflater is dropped.
type wholeInflater struct {
	s *C.z_stream
}

func newWholeInflater() *wholeInflater {
	s := C.lz_new()
	if s == nil {
		return nil // out of memory: the Go decoder counts instead
	}
	w := &wholeInflater{s: s}
	runtime.AddCleanup(w, func(s *C.z_stream) { C.lz_free(s) }, s)
	return w
}

// zlib decompresses the zlib stream at the start of in into out, which
// holds the most it may decompress to, and returns the bytes it made and
// the bytes of in the stream took (header and checksum included). ok is
// false for anything but a complete stream whose checksum matched and
// whose output fit.
func (w *wholeInflater) zlib(in, out []byte) (n, used int, ok bool) {
	if len(in) == 0 || len(out) == 0 || len(in) > math.MaxUint32 || len(out) > math.MaxUint32 {
		return 0, 0, false
	}
	var made, took C.ulong
	r := C.lz_inflate(w.s, (*C.uchar)(unsafe.Pointer(unsafe.SliceData(in))), C.unsigned(len(in)),
		(*C.uchar)(unsafe.Pointer(unsafe.SliceData(out))), C.unsigned(len(out)), &made, &took)
	// w too: the call holds only w.s, and once w is unreachable its cleanup
	// frees the stream, which would free it under zlib's feet.
	runtime.KeepAlive(w)
	runtime.KeepAlive(in)
	runtime.KeepAlive(out)
	if r != 1 || uint64(made) > uint64(len(out)) || uint64(took) > uint64(len(in)) {
		return 0, 0, false
	}
	return int(made), int(took), true
}
