package tiff_test

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"io"
	"testing"

	"github.com/lazaret/lazaret/tiff"
)

// zeroTail is head followed by zero bytes up to size: a large (sparse)
// file without the disk.
type zeroTail struct {
	head []byte
	size int64
}

func (z zeroTail) ReadAt(p []byte, off int64) (int, error) {
	if off >= z.size {
		return 0, io.EOF
	}
	n := 0
	if off < int64(len(z.head)) {
		n = copy(p, z.head[off:])
	}
	for ; n < len(p) && off+int64(n) < z.size; n++ {
		p[n] = 0
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// TestClassicTIFFOver4GiB: a classic TIFF may carry data past its last
// 32-bit offset. The decoder's view put the page's IFD copy just past the
// end of the file behind a 32-bit pointer, which wrapped: for a file of
// 2^32+200 bytes the decoder read the IFD at byte 200 instead. There an
// attacker's small good image stood in for a page whose Deflate strip
// fails its checksum (libtiff: "ZIPDecode: Decoding error"), and the
// master was accepted. The same bytes in a small file are refused.
func TestClassicTIFFOver4GiB(t *testing.T) {
	t.Parallel()
	le := binary.LittleEndian
	ifd := func(w, h uint32, comp uint16, so, sbc uint32) []byte {
		b := le.AppendUint16(nil, 9)
		for _, e := range []struct {
			tag, typ uint16
			v        uint32
		}{{256, 4, w}, {257, 4, h}, {258, 3, 8}, {259, 3, uint32(comp)}, {262, 3, 1}, {273, 4, so}, {277, 3, 1}, {278, 4, h}, {279, 4, sbc}} {
			b = le.AppendUint16(b, e.tag)
			b = le.AppendUint16(b, e.typ)
			b = le.AppendUint32(b, 1)
			b = le.AppendUint32(b, e.v)
		}
		return le.AppendUint32(b, 0)
	}
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(make([]byte, 64))
	zw.Close()
	strip := z.Bytes()
	copy(strip[len(strip)-4:], "\xde\xad\xbe\xef") // a wrong Adler-32

	head := make([]byte, 600)
	copy(head, "II*\x00\x08\x00\x00\x00")
	copy(head[8:], ifd(8, 8, 8, 400, uint32(len(strip)))) // the page
	copy(head[200:], ifd(8, 8, 1, 300, 64))               // a decoy, reached by no pointer
	copy(head[400:], strip)

	for _, size := range []int64{int64(len(head)), 1<<32 + 200} {
		r := zeroTail{head, size}
		info, err := tiff.WalkTIFF(r, size, tiff.DefaultLimits)
		if err != nil {
			t.Fatalf("%d bytes: walk: %v", size, err)
		}
		for _, all := range []bool{false, true} {
			_, err = tiff.DecodePages(r, info, tiff.DecodeOptions{PixelBudget: 1 << 20, DecodeUncompressed: all})
			if err == nil {
				t.Errorf("%d bytes (DecodeUncompressed %v): a strip with a bad checksum accepted", size, all)
			}
		}
	}
}
