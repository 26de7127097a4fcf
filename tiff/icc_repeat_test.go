package tiff_test

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/lazaret/lazaret/tiff"
)

// TestReadICCRepeatedDesc: a profile's tag table may list the same 'desc'
// entry over and over (every entry pointing at one large text). Each was
// converted to a string in turn, so the work grew with the square of the
// profile: 12 s for a 1 MiB profile in a 1 MiB TIFF, most of an hour for
// the 16 MiB allowed. The text is read once, whatever the table says.
func TestReadICCRepeatedDesc(t *testing.T) {
	const n = 256 << 10
	count := n / 2 / 12
	descAt := 132 + 12*count
	b := make([]byte, n)
	be := binary.BigEndian
	be.PutUint32(b, n)
	copy(b[16:], "GRAY")
	copy(b[36:], "acsp")
	be.PutUint32(b[128:], uint32(count))
	for i := 0; i < count; i++ {
		e := b[132+12*i:]
		copy(e, "desc")
		be.PutUint32(e[4:], uint32(descAt))
		be.PutUint32(e[8:], uint32(n-descAt))
	}
	copy(b[descAt:], "desc")
	be.PutUint32(b[descAt+8:], uint32(n-descAt-12))
	copy(b[descAt+12:], bytes.Repeat([]byte("A"), n-descAt-12))

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	p, err := tiff.ReadICC(bytes.NewReader(b), 0, n)
	runtime.ReadMemStats(&after)
	if err != nil || len(p.Description) != n-descAt-12 {
		t.Fatalf("ReadICC: %v, description of %d bytes", err, len(p.Description))
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8*n {
		t.Errorf("a %d-byte profile allocated %d bytes: the description is read once per table entry", n, alloc)
	}
}
