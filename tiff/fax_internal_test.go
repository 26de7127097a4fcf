package tiff

import (
	"bufio"
	"bytes"
	"fmt"
	"image/color"
	"math/bits"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	xtiff "golang.org/x/image/tiff"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/internal/testenv"
)

// bilevelRows is a bilevel page as rows of (width+7)/8 bytes, most
// significant bit first, a 1 bit for a black pixel and the padding after
// the width clear: the form in which decoders are compared.
type bilevelRows struct {
	width, rowBytes int
	b               []byte
}

func newBilevelRows(width, height int) *bilevelRows {
	rb := (width + 7) / 8
	return &bilevelRows{width: width, rowBytes: rb, b: make([]byte, rb*height)}
}

func (r *bilevelRows) set(x, y int) { r.b[y*r.rowBytes+x/8] |= 0x80 >> (x % 8) }

func (r *bilevelRows) height() int { return len(r.b) / r.rowBytes }

// firstDiff is the first row in which r and o differ, -1 when none does.
func (r *bilevelRows) firstDiff(o *bilevelRows) int {
	if r.width != o.width || len(r.b) != len(o.b) {
		return 0
	}
	for y := 0; y < r.height(); y++ {
		at := y * r.rowBytes
		if !bytes.Equal(r.b[at:at+r.rowBytes], o.b[at:at+r.rowBytes]) {
			return y
		}
	}
	return -1
}

// libtiffRows is page pi of file as libtiff decodes it: tiffcp -c none of
// that page, its strips read back bit for bit.
func libtiffRows(t *testing.T, tiffcp, file string, pi int) (*bilevelRows, error) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "plain.tif")
	if b, err := exec.Command(tiffcp, "-c", "none", "-r", "1", fmt.Sprintf("%s,%d", file, pi), out).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("tiffcp -c none: %v %s", err, b)
	}
	plain, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	info, err := WalkTIFF(bytes.NewReader(plain), int64(len(plain)), DefaultLimits)
	if err != nil {
		t.Fatalf("%s: tiffcp output: %v", filepath.Base(file), err)
	}
	p := info.Pages[0]
	if p.Compression != 1 || p.Samples != 1 || p.BitsPerSample[0] != 1 || p.Tiled {
		t.Fatalf("%s: tiffcp -c none wrote compression %d, %d samples of %v bits", filepath.Base(file), p.Compression, p.Samples, p.BitsPerSample)
	}
	rows := newBilevelRows(int(p.Width), int(p.Height))
	var raw []byte
	for i := range p.BlockOffsets {
		raw = append(raw, plain[p.BlockOffsets[i]:p.BlockOffsets[i]+p.BlockCounts[i]]...)
	}
	if len(raw) < len(rows.b) {
		t.Fatalf("%s: tiffcp -c none wrote %d bytes for %d", filepath.Base(file), len(raw), len(rows.b))
	}
	for i := range rows.b {
		c := raw[i]
		if p.FillOrder == 2 {
			c = bits.Reverse8(c)
		}
		if p.Photometric == 1 {
			c = ^c // min-is-black: a black pixel is a 0 bit
		}
		rows.b[i] = c
	}
	if rows.width%8 != 0 {
		for y := 0; y < rows.height(); y++ {
			rows.b[(y+1)*rows.rowBytes-1] &= 0xff << (8 - rows.width%8)
		}
	}
	return rows, nil
}

// faxPageRows is page p decoded by Lazaret's own CCITT decoder.
func faxPageRows(data []byte, p *Page) (*bilevelRows, error) {
	if p.Tiled {
		return nil, fmt.Errorf("tiled page")
	}
	rows := newBilevelRows(int(p.Width), int(p.Height))
	u, err := faxRows(bytes.NewReader(data), p, DefaultMemoryBudget, "", func(block int, y uint64, changes []int) {
		y += uint64(block) * p.RowsPerStrip
		for c := 0; c+1 < len(changes); c += 2 {
			for x := changes[c]; x < changes[c+1]; x++ {
				rows.set(x, int(y))
			}
		}
	})
	if u != nil {
		return nil, u
	}
	return rows, err
}

// ximageRows is page p decoded by golang.org/x/image/tiff, as decodePage
// hands it over.
func ximageRows(data []byte, info *TIFFInfo, p *Page) (*bilevelRows, error) {
	pr, err := newPageReader(bytes.NewReader(data), info, p, nil)
	if err != nil {
		return nil, err
	}
	img, err := xtiff.Decode(pr)
	if err != nil {
		return nil, err
	}
	b := img.Bounds()
	rows := newBilevelRows(b.Dx(), b.Dy())
	for y := 0; y < b.Dy(); y++ {
		for x := 0; x < b.Dx(); x++ {
			if color.GrayModel.Convert(img.At(b.Min.X+x, b.Min.Y+y)).(color.Gray).Y < 0x80 {
				rows.set(x, y)
			}
		}
	}
	return rows, nil
}

// eachCorpusTIFF hands fn every good and edge corpus TIFF the walk reads,
// with its bytes and its structure.
func eachCorpusTIFF(t *testing.T, fn func(f string, data []byte, info *TIFFInfo)) {
	t.Helper()
	for _, sub := range []string{"good", "edge"} {
		files, _ := filepath.Glob(filepath.Join(testenv.Corpus(t, "tiff", sub), "*"))
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if info, err := WalkTIFF(bytes.NewReader(data), int64(len(data)), DefaultLimits); err == nil {
				fn(f, data, info)
			}
		}
	}
}

// TestFaxRowsMatchLibtiff decodes every CCITT page of the corpus with
// decodeFax's row decoder and compares each row, bit for bit, with what
// libtiff's tiffcp -c none makes of the same page: the code tables and
// the 2-D decoding are right where they agree with libtiff everywhere.
func TestFaxRowsMatchLibtiff(t *testing.T) {
	tiffcp := testenv.Tiffcp(t)
	checked := 0
	eachCorpusTIFF(t, func(f string, data []byte, info *TIFFInfo) {
		for pi, p := range info.Pages {
			if p.Compression < 2 || p.Compression > 4 {
				continue
			}
			want, err := libtiffRows(t, tiffcp, f, pi)
			if err != nil {
				t.Logf("%s page %d: %v", filepath.Base(f), pi+1, err)
				continue
			}
			got, err := faxPageRows(data, &p)
			if err != nil {
				t.Errorf("%s page %d: %v", filepath.Base(f), pi+1, err)
			} else if y := got.firstDiff(want); y >= 0 {
				t.Errorf("%s page %d: row %d differs from libtiff's", filepath.Base(f), pi+1, y)
			}
			checked++
		}
	})
	if checked < 10 {
		t.Errorf("only %d CCITT pages compared", checked)
	}
	t.Logf("%d CCITT pages compared with libtiff", checked)
}

// faxSchemes are tiffcp's CCITT codings: Group 3 one- and two-dimensional,
// with EOL codes packed or byte-aligned (T4Options bits 0 and 2), and
// Group 4.
var faxSchemes = []string{"g3:1d", "g3:2d", "g3:1d:fill", "g3:2d:fill", "g4"}

// faxMatrixSources are the corpus files rewritten in every CCITT coding:
// each with a CCITT page, and bilevel pages in other encodings so that
// there is more than one image.
func faxMatrixSources(t *testing.T) []string {
	var out []string
	eachCorpusTIFF(t, func(f string, _ []byte, info *TIFFInfo) {
		for _, p := range info.Pages {
			if p.Compression >= 2 && p.Compression <= 4 {
				out = append(out, f)
				break
			}
		}
	})
	good := testenv.Corpus(t, "tiff", "good")
	for _, name := range []string{"goimage-bw-uncompressed.tiff", "goimage-bw-packbits.tiff", "goimage-bw-deflate.tiff"} {
		out = append(out, filepath.Join(good, name))
	}
	return out
}

// TestFaxMatrixMatchesLibtiff rewrites every CCITT file of the corpus,
// and bilevel files in other encodings, with tiffcp in every CCITT coding
// and both fill orders (and, from its Group 3 1-D files, in compression
// 2, which tiffcp does not write), and requires of each file libtiff decodes
// (tiffinfo -D) that CheckMaster decodes all its pages without error, and
// that the pixels of each page, from Lazaret's CCITT decoder and from
// golang.org/x/image/tiff wherever Lazaret leaves a page to it, equal
// libtiff's bit for bit.
func TestFaxMatrixMatchesLibtiff(t *testing.T) {
	tiffcp, tiffinfo := testenv.Tiffcp(t), testenv.Tiffinfo(t)
	dir := t.TempDir()
	var made, libtiffReads, agree int
	for _, src := range faxMatrixSources(t) {
		for _, scheme := range faxSchemes {
			for _, order := range []string{"msb2lsb", "lsb2msb"} {
				name := fmt.Sprintf("%s.%s.%s.tif", strings.TrimSuffix(filepath.Base(src), filepath.Ext(src)), strings.ReplaceAll(scheme, ":", "-"), order)
				out := filepath.Join(dir, name)
				if b, err := exec.Command(tiffcp, "-c", scheme, "-f", order, src, out).CombinedOutput(); err != nil {
					t.Logf("%s: tiffcp: %v %s", name, err, b)
					continue
				}
				made++
				if !testenv.LibtiffDecodes(tiffinfo, out) {
					t.Logf("%s: libtiff does not decode it", name)
					continue
				}
				libtiffReads++
				if faxMatrixAgrees(t, tiffcp, out) {
					agree++
				}
				if scheme != "g3:1d" {
					continue
				}
				// The same rows as compression 2 (Modified Huffman, each row
				// on a byte boundary, no EOL codes): tiffcp writes none.
				mh := strings.Replace(out, ".g3-1d.", ".mh.", 1)
				if !modifiedHuffman(t, out, mh) {
					continue
				}
				made++
				if !testenv.LibtiffDecodes(tiffinfo, mh) {
					t.Logf("%s: libtiff does not decode it", filepath.Base(mh))
					continue
				}
				libtiffReads++
				if faxMatrixAgrees(t, tiffcp, mh) {
					agree++
				}
			}
		}
	}
	t.Logf("%d files made, %d decoded by libtiff, %d of those decoded by Lazaret to libtiff's pixels", made, libtiffReads, agree)
	if made < 100 {
		t.Errorf("only %d files made", made)
	}
}

// faxMatrixAgrees checks one generated file: the walk and decode's verdict and
// every page's pixels, each decoder's, against libtiff's.
func faxMatrixAgrees(t *testing.T, tiffcp, file string) bool {
	t.Helper()
	name := filepath.Base(file)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// As CheckMaster reads it under the default policy.
	r := bytes.NewReader(data)
	info, err := WalkTIFF(r, int64(len(data)), DefaultLimits)
	var skipped []*UnsupportedError
	if err == nil {
		skipped, err = DecodePages(r, info, DecodeOptions{PixelBudget: 100_000_000, MemoryBudget: DefaultMemoryBudget})
	}
	if err != nil || len(skipped) > 0 {
		pages := 0
		if info != nil {
			pages = info.PageCount
		}
		t.Errorf("%s: Lazaret decodes %d of %d pages: %v", name, pages-len(skipped), pages, err)
		return false
	}
	ok := true
	for pi := range info.Pages {
		p := &info.Pages[pi]
		want, err := libtiffRows(t, tiffcp, file, pi)
		if err != nil {
			t.Errorf("%s page %d: %v", name, pi+1, err)
			return false
		}
		got, err := faxPageRows(data, p)
		if err != nil {
			t.Errorf("%s page %d: Lazaret's CCITT decoder: %v", name, pi+1, err)
			ok = false
		} else if y := got.firstDiff(want); y >= 0 {
			t.Errorf("%s page %d: Lazaret's CCITT decoder: row %d differs from libtiff's", name, pi+1, y)
			ok = false
		}
		if faxOwn(info, p) != "" {
			continue // decodePage never hands the page to x/image
		}
		if got, err := ximageRows(data, info, p); err == nil {
			if y := got.firstDiff(want); y >= 0 {
				t.Errorf("%s page %d: golang.org/x/image/tiff decodes it and row %d differs from libtiff's", name, pi+1, y)
				ok = false
			}
		}
	}
	return ok
}

// modifiedHuffman writes to out the pages of the Group 3 1-D file g3 (EOL
// codes packed) as compression 2: each row's codes moved to a byte
// boundary, the EOLs dropped, fill order and photometric kept. It reports
// false, having logged why, for a page it cannot rewrite.
func modifiedHuffman(t *testing.T, g3, out string) bool {
	t.Helper()
	data, err := os.ReadFile(g3)
	if err != nil {
		t.Fatal(err)
	}
	info, err := WalkTIFF(bytes.NewReader(data), int64(len(data)), DefaultLimits)
	if err != nil {
		t.Fatalf("%s: %v", filepath.Base(g3), err)
	}
	var pages []*fixtures.Dir
	for _, p := range info.Pages {
		if p.Compression != 3 || p.T4Options&5 != 0 || p.Tiled {
			t.Logf("%s: not Group 3 1-D with packed EOLs in strips", filepath.Base(g3))
			return false
		}
		var strips [][]byte
		for i := range p.BlockOffsets {
			raw := data[p.BlockOffsets[i] : p.BlockOffsets[i]+p.BlockCounts[i]]
			f := &faxBits{r: bufio.NewReader(bytes.NewReader(raw)), lsb: p.FillOrder == 2}
			_, rows := blockSize(&p, i)
			l := &faxLine{width: int(p.Width), limit: 2*int(p.Width) + 8}
			l.reset()
			bit := func(at int64) byte {
				c := raw[at/8]
				if p.FillOrder == 2 {
					c = bits.Reverse8(c)
				}
				return c >> (7 - at%8) & 1
			}
			var mh []byte
			for y := uint64(0); y < rows; y++ {
				f.eol()
				start := f.read*8 - int64(f.n)
				if err := l.oneD(f); err != nil {
					t.Logf("%s: strip %d row %d: %v", filepath.Base(g3), i, y+1, err)
					return false
				}
				row := make([]byte, (f.read*8-int64(f.n)-start+7)/8)
				for k := range int64(len(row)) * 8 {
					if at := start + k; at < f.read*8-int64(f.n) && bit(at) == 1 {
						row[k/8] |= 0x80 >> (k % 8)
					}
				}
				mh = append(mh, row...)
			}
			if p.FillOrder == 2 {
				mh = fixtures.ReverseBits(mh)
			}
			strips = append(strips, mh)
		}
		pages = append(pages, fixtures.Image(int(p.Width), int(p.Height), 1, 1, 2, uint16(p.Photometric), int(p.RowsPerStrip), 0, 0, strips,
			fixtures.Shorts(266, uint16(p.FillOrder))))
	}
	var buf bytes.Buffer
	if _, err := fixtures.WriteDirs(&buf, pages); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return true
}
