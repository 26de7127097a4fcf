package tiff

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/zlib"
	"errors"
	"fmt"
	"io"

	kzlib "github.com/klauspost/compress/zlib"
	"golang.org/x/image/tiff/lzw"
)

// DefaultMemoryBudget is what checking one master may hold, in bytes: the
// strip and tile arrays of all its pages, then the decoder's buffers and
// the band of pixels it decodes. A worker at concurrency N needs N budgets.
const DefaultMemoryBudget = 256 << 20

// What the budget is charged, in bytes. The figures are upper bounds of
// what the code below and golang.org/x/image/tiff allocate; they are
// charged before the allocation they stand for.
const (
	// blockCost is what the walk keeps for each strip or tile of a page:
	// its offset and its byte count, a uint64 each.
	blockCost = 2 * 8
	// pageCost is what the walk keeps for a page besides its block arrays
	// (the Page, its slices, its warnings and its place in the loop check).
	pageCost = 1 << 10
	// decodeBlockCost is what decoding holds for each strip or tile it
	// decodes at once: x/image/tiff reads the offsets and byte counts (4
	// bytes each in the file) into []uint (8 each), and the view rewrites
	// them for a band (4 each).
	decodeBlockCost = 2*(4+8) + 2*4
	// decodeFixed covers the decoder's own state, an inflater's window and
	// the view's copy of the IFD.
	decodeFixed = 1 << 20
	// blockBufferFactor: x/image/tiff reads each block into a buffer that
	// doubles as it grows, so a block of n bytes may hold up to 3n while the
	// last copy is made.
	blockBufferFactor = 3
)

// blockTag is the tag that lists p's blocks: StripOffsets or TileOffsets.
func blockTag(p *Page) uint16 {
	if p.Tiled {
		return tagTileOffsets
	}
	return tagStripOffsets
}

// blockRowBits is the bits of one row of block i of p: all samples of a
// pixel, or one sample for a plane of a planar page.
func blockRowBits(p *Page, i int) uint64 {
	bps := func(s uint64) uint64 { return p.BitsPerSample[min(s, uint64(len(p.BitsPerSample)-1))] }
	if p.Planar == 2 {
		perPlane := max(uint64(len(p.BlockOffsets))/max(p.Samples, 1), 1)
		return bps(uint64(i) / perPlane)
	}
	var bits uint64
	for s := uint64(0); s < p.Samples; s++ {
		bits += bps(s)
	}
	return bits
}

// blockNeed is the bytes block i of p must decompress to: its rows inside
// the image (a whole tile for a tile).
func blockNeed(p *Page, i int) uint64 {
	rowBits := blockRowBits(p, i)
	if p.Tiled {
		return mulSat(ceilDiv(mulSat(p.TileWidth, rowBits), 8), p.TileLength)
	}
	perPlane := uint64(len(p.BlockOffsets))
	if p.Planar == 2 {
		perPlane /= max(p.Samples, 1)
	}
	row := uint64(i) % max(perPlane, 1) * p.RowsPerStrip
	return mulSat(ceilDiv(mulSat(p.Width, rowBits), 8), min(p.RowsPerStrip, p.Height-min(row, p.Height)))
}

// blockBound is the most bytes block i of p may decompress to: the rows it
// is declared to hold. For a strip that is RowsPerStrip rows even at the
// bottom of the image — writers may fill the last strip (libtiff's own
// deflate-last-strip-extra-data test image does) — and for a tile a whole
// tile. Anything beyond is a decompression bomb, not pixel data.
func blockBound(p *Page, i int) uint64 {
	if p.Tiled {
		return blockNeed(p, i)
	}
	return mulSat(ceilDiv(mulSat(p.Width, blockRowBits(p, i)), 8), p.RowsPerStrip)
}

// Honest encoders are not exact: older ones, Mac ones among them, let an
// LZW stream run a byte or a few past the strip, and libtiff decodes such a
// block to its rows and ignores the rest. Lazaret does the same, with a
// tiff.block-overrun warning, up to blockLimit; only past it is the block
// a decompression bomb (limit.inflate).
const (
	overrunShare = 8       // a block may run on by an eighth of its bound...
	overrunMin   = 4 << 10 // ...or 4 KiB, whichever is more
)

// blockLimit is the most a block whose rows hold bound bytes may
// decompress to before it is refused: bound plus an overrun no honest
// encoder reaches.
func blockLimit(bound uint64) uint64 {
	return addSat(bound, max(bound/overrunShare, overrunMin))
}

// overran checks the count got of block i of p against its bound: past
// blockLimit it is a *LimitError; past the bound but within the limit it
// is noted on the page (see DecodePages) and read as its rows.
func overran(p *Page, i int, got, bound uint64) error {
	if limit := blockLimit(bound); got > limit {
		return inflateError(p, i, limit)
	}
	if got > bound {
		p.noteOverrun(i, got, bound)
	}
	return nil
}

// inflatable reports whether p's blocks are decompressed by a reader whose
// output only the data bounds (LZW, Deflate, PackBits). CCITT readers are
// told the block's width and height and stop there; uncompressed blocks
// are as long as their byte counts, which the walk checked against the
// file.
func inflatable(p *Page) bool {
	switch p.Compression {
	case 5, 8, 32946, 32773:
		return true
	}
	return false
}

// errZlibHeader: a Deflate block does not start with a usable zlib header.
var errZlibHeader = errors.New("zlib header")

// inflater decompresses the blocks of a page one at a time into nothing,
// counting, and never further than it is asked to: it holds a decoder's
// state and two buffers, whatever the data says.
type inflater struct {
	r  io.ReaderAt
	br *bufio.Reader
	z  io.ReadCloser // zlib, reused through zlib.Resetter
	fl io.ReadCloser // raw Deflate after the zlib header, when fast
	// fast skips the Adler-32 checksum of Deflate blocks, which costs as
	// much as inflating them: checkInflate only counts, the decoder that
	// follows it checks the checksum.
	fast bool
	pb   packBits
	buf  []byte
	// whole, when its capacity is not 0, is where a block that fits is read
	// in one read and decompressed from memory.
	whole []byte
	wr    bytes.Reader
	// lzw, when not nil, counts LZW and PackBits blocks read whole without
	// decoding them (lzwCount, packBitsCount), and Deflate blocks with
	// klauspost/compress, 1.4 times as fast as compress/flate on noisy
	// masters; an error there is not the decoder's error. (Only the strict
	// count sets it: any error there hands the page to the decoder, so the
	// errors reported still come from the standard library's decoders.)
	lzw *lzwTable
	kz  io.ReadCloser // klauspost zlib, reused
	// wi and out, when out's capacity is not 0 (the strict count), inflate
	// a Deflate block read whole into out in one call (see inflateWhole). Anything else (a block that does not fit, bad
	// data, a bomb) is counted by klauspost as without them.
	wi    *wholeInflater
	out   []byte
	ioErr error // the first read error that was not EOF: the storage, not the data
}

func newInflater(r io.ReaderAt) *inflater { return &inflater{r: r} }

// ReadAt records a storage failure, so that it is not mistaken for corrupt
// data.
func (in *inflater) ReadAt(p []byte, off int64) (int, error) {
	n, err := in.r.ReadAt(p, off)
	if err != nil && !errors.Is(err, io.EOF) && in.ioErr == nil {
		in.ioErr = err
	}
	return n, err
}

// count decompresses block i of p and returns how many bytes it yields,
// stopping at limit (so at most limit bytes are produced), and the error
// that ended the data early, if any (nil at a clean end or at the limit).
// ok is false when the compression is not one it reads.
func (in *inflater) count(p *Page, i int, limit uint64) (got uint64, ok bool, err error) {
	var src flate.Reader // the compressed bytes, buffered: io.ByteReader too
	if c := p.BlockCounts[i]; c <= uint64(cap(in.whole)) {
		// One read of the whole block; a short read is a truncated block,
		// as it is through the SectionReader.
		m, err := in.ReadAt(in.whole[:c], int64(p.BlockOffsets[i]))
		if err != nil && in.ioErr != nil {
			return 0, true, err
		}
		if in.lzw != nil {
			switch p.Compression {
			case 5:
				got, err := lzwCount(in.lzw, in.whole[:m], limit)
				return got, true, err
			case 32773:
				got, err := packBitsCount(in.whole[:m], limit)
				return got, true, err
			case 8, 32946:
				if got, ok := in.inflateWhole(in.whole[:m], limit); ok {
					return got, true, nil
				}
			}
		}
		in.wr.Reset(in.whole[:m])
		src = &in.wr
	} else {
		sr := io.NewSectionReader(in, int64(p.BlockOffsets[i]), int64(p.BlockCounts[i]))
		if in.br == nil {
			in.br = bufio.NewReaderSize(sr, 16<<10)
		} else {
			in.br.Reset(sr)
		}
		src = in.br
	}
	var dec io.Reader
	switch p.Compression {
	case 5:
		lz := lzw.NewReader(src, lzw.MSB, 8)
		defer lz.Close()
		dec = lz
	case 8, 32946:
		if in.fast {
			if err := zlibHeader(src); err != nil {
				return 0, true, fmt.Errorf("%w: %w", errZlibHeader, err)
			}
			if in.fl == nil {
				in.fl = flate.NewReader(src)
			} else if err := in.fl.(flate.Resetter).Reset(src, nil); err != nil {
				return 0, true, err
			}
			dec = in.fl
			break
		}
		if in.lzw != nil {
			if in.kz == nil {
				in.kz, err = kzlib.NewReader(src)
			} else {
				err = in.kz.(kzlib.Resetter).Reset(src, nil)
			}
			if err != nil {
				in.kz = nil
				return 0, true, fmt.Errorf("%w: %w", errZlibHeader, err)
			}
			dec = in.kz
			break
		}
		if in.z == nil {
			in.z, err = zlib.NewReader(src)
		} else {
			err = in.z.(zlib.Resetter).Reset(src, nil)
		}
		if err != nil {
			in.z = nil
			return 0, true, fmt.Errorf("%w: %w", errZlibHeader, err)
		}
		dec = in.z
	case 32773:
		in.pb = packBits{r: src}
		dec = &in.pb
	default:
		return 0, false, nil
	}
	if in.buf == nil {
		in.buf = make([]byte, 32<<10)
	}
	lr := io.LimitedReader{R: dec, N: int64(min(limit, 1<<62))}
	for {
		n, rerr := lr.Read(in.buf)
		got += uint64(n)
		if rerr != nil {
			if errors.Is(rerr, io.EOF) {
				rerr = nil
			}
			return got, true, rerr
		}
	}
}

// inflateWhole counts the zlib block src with the build's wholeInflater
// (wholeFlate, or zlib), when there is one and out holds the most the block may
// decompress to (limit-1 bytes): ok only when it read the block to its
// checksum.
func (in *inflater) inflateWhole(src []byte, limit uint64) (got uint64, ok bool) {
	if in.wi == nil || limit == 0 || limit-1 > uint64(cap(in.out)) || len(src) < 2 {
		return 0, false
	}
	out := in.out[:limit-1]
	n, _, ok := in.wi.zlib(src, out)
	if !ok {
		return 0, false
	}
	return uint64(n), true
}

// zlibHeader reads and checks the two bytes of a zlib header (RFC 1950)
// as compress/zlib does: Deflate, a window of at most 32 KiB, the check
// bits right, no preset dictionary (TIFF has none to give).
func zlibHeader(r io.Reader) error {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	if h[0]&0x0f != 8 || h[0]>>4 > 7 || (uint(h[0])<<8|uint(h[1]))%31 != 0 {
		return zlib.ErrHeader
	}
	if h[1]&0x20 != 0 {
		return zlib.ErrDictionary
	}
	return nil
}

// checkInflate counts blocks [first, first+n) of p before they are
// decoded: a block that decompresses to more than it may hold
// (blockLimit) is refused with a *LimitError naming it, after at most
// limit+1 bytes. A block whose stream ends cleanly short of its rows is
// refused as tiff.short-data; corrupt or truncated data is left to the
// decoder, which reports it as it always has; a read error from the
// storage is returned.
func checkInflate(in *inflater, p *Page, first, n int) error {
	if !inflatable(p) {
		return nil
	}
	for i := first; i < first+n; i++ {
		bound := blockBound(p, i)
		got, _, cerr := in.count(p, i, blockLimit(bound)+1)
		if in.ioErr != nil {
			return in.ioErr
		}
		if err := overran(p, i, got, bound); err != nil {
			return err
		}
		if need := blockNeed(p, i); cerr == nil && got < need {
			// A stream that ends cleanly short of its rows. The decoder
			// reads only the pixels inside the image, so a tile at the
			// right or bottom edge would pass it; libtiff wants the whole
			// tile ("Not enough data"), and so does Lazaret.
			return shortData(p, i, got, need)
		}
	}
	return nil
}

// shortData refuses block i of p, which decompresses to got bytes where
// its rows need need.
func shortData(p *Page, i int, got, need uint64) *FormatError {
	return &FormatError{Page: p.Index + 1, Path: p.Path, Offset: int64(p.BlockOffsets[i]), Code: "tiff.short-data",
		Err: fmt.Errorf("%w: block %d decompresses to %d bytes, its rows need %d", ErrShortData, i, got, need)}
}

// inflateError refuses block i of p, which decompresses past limit bytes.
func inflateError(p *Page, i int, limit uint64) *LimitError {
	return &LimitError{Page: p.Index + 1, Tag: blockTag(p), Offset: int64(p.BlockOffsets[i]), What: "inflate",
		Have: int64(min(limit+1, 1<<62)), Limit: int64(min(limit, 1<<62))}
}

// bands is how a page's blocks group into the bands it is decoded in: a
// unit is one strip, or one row of tiles.
type bands struct {
	units         int    // strips, or rows of tiles
	rowsPerUnit   uint64 // image rows in a unit
	blocksPerUnit int    // 1, or tiles across
	perBand       int    // units decoded at once
}

func bandsOf(p *Page) bands {
	if p.Tiled {
		across := int(ceilDiv(p.Width, p.TileWidth))
		return bands{units: len(p.BlockOffsets) / max(across, 1), rowsPerUnit: p.TileLength, blocksPerUnit: across}
	}
	return bands{units: len(p.BlockOffsets), rowsPerUnit: p.RowsPerStrip, blocksPerUnit: 1}
}

// decodeCost is the most that decoding k units of p at once holds: the
// image x/image/tiff allocates for their rows, the buffer of its largest
// block, and the block arrays.
func decodeCost(p *Page, g bands, k int, largest uint64) int64 {
	c := mulSat(mulSat(p.Width, mulSat(uint64(k), g.rowsPerUnit)), imageBytesPerPixel(p))
	c = addSat(c, mulSat(largest, blockBufferFactor))
	c = addSat(c, mulSat(uint64(k*g.blocksPerUnit), decodeBlockCost)+decodeFixed)
	return int64(min(c, 1<<62))
}

// imageBytesPerPixel is what x/image/tiff allocates a pixel of p: RGBA or
// RGBA64 for RGB, Gray or Gray16 for grey, a byte for a palette index.
func imageBytesPerPixel(p *Page) uint64 {
	wide := p.BitsPerSample[0] > 8
	switch p.Photometric {
	case 0, 1:
		if wide {
			return 2
		}
		return 1
	case 3:
		return 1
	case 2:
		if wide {
			return 8
		}
		return 4
	}
	return 8
}

// planBands decides how many units of p are decoded at once: as many as
// the band size allows (bandPixels, so that memory follows the band, not
// the page) and the memory left (avail) holds. ok is false when not even
// one unit fits: the page is then counted, not decoded.
func planBands(p *Page, avail int64) (g bands, ok bool) {
	g = bandsOf(p)
	g.perBand = g.units
	if p.Width*p.Height > bandPixels && g.rowsPerUnit > 0 {
		g.perBand = max(1, int(bandPixels/(p.Width*g.rowsPerUnit)))
	}
	largest := largestBlock(p)
	// The last band of a tiled page may have to start a row of tiles early
	// (see decodeBands): plan for one unit more.
	extra := 0
	if p.Tiled && g.units > 1 {
		extra = 1
	}
	for g.perBand > 0 && decodeCost(p, g, min(g.perBand+extra, g.units), largest) > avail {
		g.perBand /= 2
	}
	return g, g.perBand > 0
}

// largestBlock is the most bytes the decoder may read one block of p
// into: what it may decompress to, or an uncompressed block's byte count.
func largestBlock(p *Page) uint64 {
	var largest uint64
	for i := range p.BlockOffsets {
		largest = max(largest, blockLimit(blockBound(p, i)))
		if p.Compression == 1 {
			largest = max(largest, p.BlockCounts[i])
		}
	}
	return largest
}

func addSat(a, b uint64) uint64 {
	if a > ^uint64(0)-b {
		return ^uint64(0)
	}
	return a + b
}
