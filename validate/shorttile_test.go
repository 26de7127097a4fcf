package validate_test

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/tiff"
	"github.com/lazaret/lazaret/validate"
)

// replaceBlock returns a copy of the little-endian classic TIFF data (one
// IFD, as tiffcp writes) whose block i (TileOffsets/TileByteCounts)
// is stream, appended at the end, and the stream's offset.
func replaceBlock(t *testing.T, data []byte, i int, stream []byte) ([]byte, int64) {
	t.Helper()
	le := binary.LittleEndian
	if string(data[:4]) != "II*\x00" {
		t.Fatal("not a little-endian classic TIFF")
	}
	ifd := int(le.Uint32(data[4:]))
	type array struct{ at, size int }
	arrays := map[uint16]array{}
	for e := range int(le.Uint16(data[ifd:])) {
		at := ifd + 2 + 12*e
		tag, typ, count := le.Uint16(data[at:]), le.Uint16(data[at+2:]), le.Uint32(data[at+4:])
		size := map[uint16]int{3: 2, 4: 4}[typ]
		if (tag == 324 || tag == 325) && size > 0 {
			a := array{at + 8, size}
			if int(count)*size > 4 {
				a.at = int(le.Uint32(data[at+8:]))
			}
			arrays[tag] = a
		}
	}
	if len(arrays) != 2 {
		t.Fatalf("no TileOffsets and TileByteCounts (IFD at %d)", ifd)
	}
	out := append(bytes.Clone(data), stream...)
	put := func(a array, v int) {
		if a.size == 2 {
			if v > 0xffff {
				t.Fatalf("%d does not fit a SHORT", v)
			}
			le.PutUint16(out[a.at+2*i:], uint16(v))
			return
		}
		le.PutUint32(out[a.at+4*i:], uint32(v))
	}
	put(arrays[324], len(data))
	put(arrays[325], len(stream))
	return out, int64(len(data))
}

// packBitsLiteral is n pattern bytes as PackBits literal runs.
func packBitsLiteral(n int) []byte {
	var b []byte
	for i := 0; i < n; i += 128 {
		k := min(128, n-i)
		b = append(b, byte(k-1))
		for j := range k {
			b = append(b, byte((i+j)*7))
		}
	}
	return b
}

// deflateOf is n pattern bytes as one zlib stream.
func deflateOf(n int) []byte {
	var buf bytes.Buffer
	w := zlib.NewWriter(&buf)
	for i := range n {
		w.Write([]byte{byte(i * 7)})
	}
	w.Close()
	return buf.Bytes()
}

// TestShortTilesAsLibtiff: a tile whose PackBits or Deflate stream ends
// cleanly short of the whole tile is refused as tiff.short-data at the
// tile's offset, where libtiff fails "Not enough data": in the image's
// interior, at its right edge and at its bottom-right corner (where the
// image decoder, which reads only the pixels inside the image, would let
// it pass), in contiguous and in separate planes. A whole tile passes.
func TestShortTilesAsLibtiff(t *testing.T) {
	t.Parallel()
	tiffcp, tiffinfo := testenv.Tiffcp(t), testenv.Tiffinfo(t)
	dir := t.TempDir()
	// 150x103 RGB in 64x64 tiles: 3 across, 2 down (6 a plane).
	src := filepath.Join(testenv.Corpus(t, "tiff", "good"), "goimage-video-001.tiff")
	type codec struct {
		name   string
		stream func(n int) []byte
	}
	for _, c := range []codec{{"packbits", packBitsLiteral}, {"zip", deflateOf}} {
		for _, planar := range []string{"contig", "separate"} {
			base := filepath.Join(dir, c.name+"-"+planar+".tif")
			if b, err := exec.Command(tiffcp, "-c", c.name, "-p", planar, "-t", "-w", "64", "-l", "64", src, base).CombinedOutput(); err != nil {
				t.Fatalf("tiffcp: %v %s", err, b)
			}
			data, err := os.ReadFile(base)
			if err != nil {
				t.Fatal(err)
			}
			tileBytes := 64 * 64 * 3
			if planar == "separate" {
				tileBytes = 64 * 64
			}
			for _, tc := range []struct {
				what  string
				block int
				n     int
			}{
				{"interior tile a row short", 0, tileBytes - tileBytes/64},
				{"right-edge tile holding only its pixels inside the image", 2, tileBytes * 22 / 64},
				{"bottom-right tile holding only its rows inside the image", 5, tileBytes * 39 / 64},
				{"bottom-right tile one byte short", 5, tileBytes - 1},
				{"bottom-right tile whole", 5, tileBytes},
			} {
				name := fmt.Sprintf("%s %s: %s", c.name, planar, tc.what)
				patched, at := replaceBlock(t, data, tc.block, c.stream(tc.n))
				f := filepath.Join(dir, fmt.Sprintf("%s-%s-%d-%d.tif", c.name, planar, tc.block, tc.n))
				if err := os.WriteFile(f, patched, 0o644); err != nil {
					t.Fatal(err)
				}
				whole := tc.n == tileBytes
				if lib := testenv.LibtiffDecodes(tiffinfo, f); lib != whole {
					t.Fatalf("%s: libtiff decodes it: %v; the test's premise is wrong", name, lib)
				}
				for _, decode := range []bool{false, true} {
					pol := validate.DefaultMasterPolicy()
					pol.DecodeUncompressed = decode
					_, err := validate.CheckMaster(context.Background(), f, nil, pol)
					if whole {
						if err != nil {
							t.Errorf("%s (decode %v): %v", name, decode, err)
						}
						continue
					}
					var te *tiff.FormatError
					if !errors.As(err, &te) || te.Code != "tiff.short-data" || te.Offset != at || te.Page != 1 {
						t.Errorf("%s (decode %v): got %v, want tiff.short-data at byte %d", name, decode, err, at)
					}
				}
			}
		}
	}
}
