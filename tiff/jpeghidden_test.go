package tiff_test

import (
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/lazaret/lazaret/fixtures"
)

// hiddenFrameJPEG is a JPEG stream with two readings. Read as image/jpeg
// reads it, "\xff\x00" after SOI is extraneous data, skipped, and the
// stream is a w x h grey frame whose scan fills every block (two Huffman
// codes of one bit, both for the same symbol: any bits decode); then
// another frame header, an error. Read as a marker with a length, the
// "\xff\x00" segments hide all of that, and the one frame is 8x8.
func hiddenFrameJPEG(w, h int) []byte {
	be := binary.BigEndian
	seg := func(m byte, payload []byte) []byte {
		return append(be.AppendUint16([]byte{0xff, m}, uint16(len(payload)+2)), payload...)
	}
	sof := func(w, h int) []byte {
		return seg(0xc0, []byte{8, byte(h >> 8), byte(h), byte(w >> 8), byte(w), 1, 1, 0x11, 0})
	}
	dqt := make([]byte, 65)
	for i := 1; i < 65; i++ {
		dqt[i] = 1
	}
	huff := func(class byte) []byte { return seg(0xc4, append([]byte{class, 2}, make([]byte, 17)...)) }
	var s []byte
	s = append(s, seg(0xdb, dqt)...)
	s = append(s, sof(w, h)...)
	s = append(s, huff(0x00)...)
	s = append(s, huff(0x10)...)
	s = append(s, seg(0xda, []byte{1, 1, 0, 0, 63, 0})...)
	s = append(s, make([]byte, (w/8)*(h/8)/4+64)...)
	out := []byte{0xff, 0xd8}
	for len(s) > 0 {
		n := min(len(s), 60000)
		out = append(be.AppendUint16(append(out, 0xff, 0), uint16(n+2)), s[:n]...)
		s = s[n:]
	}
	return append(append(out, sof(8, 8)...), 0xff, 0xd9)
}

// TestJPEGHiddenFrame: the frame header that sizes a JPEG strip before
// decoding (against the strip and the memory budget) must be the one
// image/jpeg decodes. A "\xff\x00" after a marker is extraneous data to
// image/jpeg, not a marker with a length: read as one, an 8x8 page hid a
// 16384x16384 frame, and inspect held 286 MB for a 1 MB file under a
// 256 MB budget (4 GB for 65535x65535).
func TestJPEGHiddenFrame(t *testing.T) {
	const side = 2048 // a 4 MiB image
	data, _ := dirs(t, fixtures.Image(8, 8, 1, 8, 7, 1, 8, 0, 0, [][]byte{hiddenFrameJPEG(side, side)}))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err := checkTIFF(data)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("a strip holding a second frame accepted")
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > side*side/2 {
		t.Errorf("an 8x8 JPEG page allocated %d bytes before it was refused (%v): the decoder read a frame the check did not", alloc, err)
	}
}
