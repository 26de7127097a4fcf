package validate

import (
	"bytes"
	"math/bits"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/lazaret/lazaret/internal/testenv"
)

// TestFaxRowsMatchLibtiff decodes every CCITT page of the corpus with
// decodeFax's row decoder and compares each row, bit for bit, with what
// libtiff's tiffcp -c none makes of the same page: the code tables and
// the 2-D decoding are right where they agree with libtiff everywhere.
func TestFaxRowsMatchLibtiff(t *testing.T) {
	tiffcp, err := exec.LookPath("tiffcp")
	if err != nil {
		if testenv.InCI() {
			t.Fatal("tiffcp (Debian libtiff-tools) is required in CI")
		}
		t.Skip("tiffcp not installed (apt-get install libtiff-tools)")
	}
	checked := 0
	for _, sub := range []string{"good", "edge"} {
		files, _ := filepath.Glob(filepath.Join(testenv.Corpus(t, "tiff", sub), "*"))
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			info, err := WalkTIFF(bytes.NewReader(data), int64(len(data)), DefaultLimits)
			if err != nil {
				continue
			}
			for pi, p := range info.Pages {
				if p.Compression < 2 || p.Compression > 4 {
					continue
				}
				out := filepath.Join(t.TempDir(), "plain.tif")
				if b, err := exec.Command(tiffcp, "-c", "none", "-r", "1", f+","+itoa(pi), out).CombinedOutput(); err != nil {
					t.Logf("%s page %d: tiffcp: %v %s", filepath.Base(f), pi+1, err, b)
					continue
				}
				plain, _ := os.ReadFile(out)
				pinfo, err := WalkTIFF(bytes.NewReader(plain), int64(len(plain)), DefaultLimits)
				if err != nil {
					t.Fatalf("%s: tiffcp output: %v", filepath.Base(f), err)
				}
				pp := pinfo.Pages[0]
				rowBytes := int((p.Width + 7) / 8)
				var want []byte
				for i := range pp.BlockOffsets {
					want = append(want, plain[pp.BlockOffsets[i]:pp.BlockOffsets[i]+pp.BlockCounts[i]]...)
				}
				if pp.FillOrder == 2 {
					for i := range want {
						want[i] = bits.Reverse8(want[i])
					}
				}
				black := byte(0xff)
				if pp.Photometric == 1 {
					black = 0 // min-is-black: a black pixel is a 0 bit
				}
				bad := 0
				y0 := uint64(0)
				lastBlock := -1
				_, err = faxRows(bytes.NewReader(data), &p, DefaultMemoryBudget, "", func(block int, y uint64, changes []int) {
					if block != lastBlock {
						lastBlock = block
						y0 = uint64(block) * p.RowsPerStrip
					}
					row := make([]byte, rowBytes)
					for i := range row {
						row[i] = ^black
					}
					for c := 0; c+1 < len(changes); c += 2 {
						for x := changes[c]; x < changes[c+1]; x++ {
							row[x/8] ^= 0x80 >> (x % 8)
						}
					}
					at := int(y0+y) * rowBytes
					if at+rowBytes > len(want) || !bytes.Equal(maskRow(row, int(p.Width)), maskRow(want[at:at+rowBytes], int(p.Width))) {
						if bad == 0 {
							t.Errorf("%s page %d: row %d differs from libtiff's", filepath.Base(f), pi+1, y0+y)
						}
						bad++
					}
				})
				if err != nil {
					t.Errorf("%s page %d: %v", filepath.Base(f), pi+1, err)
				}
				checked++
			}
		}
	}
	if checked < 10 {
		t.Errorf("only %d CCITT pages compared", checked)
	}
	t.Logf("%d CCITT pages compared with libtiff", checked)
}

// maskRow clears the padding bits after width.
func maskRow(b []byte, width int) []byte {
	out := append([]byte(nil), b...)
	if width%8 != 0 {
		out[len(out)-1] &= 0xff << (8 - width%8)
	}
	return out
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
