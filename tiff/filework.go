package tiff

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"runtime"
)

// FilePixelsPerByte is how many pixels a file may have decoded for each
// of its bytes, over all its pages, before the default file pixel budget
// refuses it (see DecodeOptions.FilePixelBudget). Honest data stays far
// below: uncompressed pixels cost a byte or an eighth of one, LZW and
// Deflate scans a byte or more for a few pixels, and a bilevel CCITT scan
// of text 100 to 300 pixels a byte; only blank fax pages go beyond, and
// the floor of four pixel budgets takes a few of them.
const FilePixelsPerByte = 1024

// fileWork bounds the decoding of a file's pages together, not one page
// at a time: pages that point at the same blocks and read them the same
// way (a page-sharing bomb: fifty 10000x10000 CCITT pages on one 1.25 KB
// strip) are decoded once; and every page decoded is charged its pixels
// against one budget for the file, so pages that share data read in
// different ways (another width, another strip height) are refused once
// the file has cost what its size allows (limit.file-pixels), instead of
// each costing a page's worth of CPU and memory.
type fileWork struct {
	limit, spent int64
	page         int64                          // the pixel budget of one page, which decodePixels checks first
	seen         map[[sha256.Size]byte]struct{} // pages decoded cleanly
	decodedBig   bool                           // a page of bigPage pixels or more was decoded
}

func newFileWork(info *TIFFInfo, opt DecodeOptions) fileWork {
	limit := opt.FilePixelBudget
	if limit <= 0 {
		perByte := int64(math.MaxInt64)
		if info.Size < math.MaxInt64/FilePixelsPerByte {
			perByte = info.Size * FilePixelsPerByte
		}
		limit = max(perByte, satMul(opt.PixelBudget, 4))
	}
	return fileWork{limit: limit, page: opt.PixelBudget, seen: map[[sha256.Size]byte]struct{}{}}
}

func satMul(a, b int64) int64 {
	if a > 0 && a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

// bigPage is the size of page (in pixels) whose decoding holds enough
// memory that the garbage of the page before it must be collected first.
const bigPage = 16 << 20

// reclaim collects the garbage of the pages decoded before p when p is
// big: a page's image is garbage once it is checked, but the runtime lets
// the heap grow to twice what is live before it collects, so page after
// page of 100 Mpx would hold two or three images at once (251 MiB for
// pages of one strip read under different widths, 140 MiB for one). A
// collection costs milliseconds; decoding such a page, a second or so.
func (w *fileWork) reclaim(p *Page) {
	if w.decodedBig && p.Width*p.Height >= bigPage {
		runtime.GC()
	}
	w.decodedBig = w.decodedBig || p.Width*p.Height >= bigPage
}

// charge charges p's pixels to the file, or refuses p when they do not
// fit what is left.
func (w *fileWork) charge(p *Page) error {
	px := int64(min(p.Width*p.Height, math.MaxInt64)) // each below 2^32
	if px > w.page {
		return nil // over the page's own budget: limit.pixels says so
	}
	if px > w.limit-w.spent {
		return &LimitError{Page: p.Index + 1, Path: p.Path, Offset: p.Offset, What: "file-pixels", Have: satAdd(w.spent, px), Limit: w.limit}
	}
	w.spent += px
	return nil
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// sameAs is p's signature, and whether a page with that signature was
// already decoded cleanly (no error, no warning, nothing skipped): the
// same blocks read with the same parameters decode to the same pixels.
// Pages whose decoding reads more than the Page holds (a palette's
// colour map, old-style JPEG tables) have no signature (ok false).
func (w *fileWork) sameAs(p *Page) (sig [sha256.Size]byte, same bool) {
	if p.Photometric == 3 || p.OldJPEG != nil {
		return sig, false
	}
	h := sha256.New()
	var b [8]byte
	put := func(vs ...uint64) {
		for _, v := range vs {
			binary.LittleEndian.PutUint64(b[:], v)
			h.Write(b[:])
		}
	}
	list := func(vs []uint64) {
		put(uint64(len(vs)))
		put(vs...)
	}
	tiled := uint64(0)
	if p.Tiled {
		tiled = 1
	}
	put(p.Width, p.Height, p.Samples, p.Compression, p.Photometric, p.Planar, p.RowsPerStrip, tiled, p.TileWidth, p.TileLength,
		p.FillOrder, p.T4Options, p.T6Options, p.Predictor, p.YCbCrSubsampling[0], p.YCbCrSubsampling[1],
		math.Float64bits(p.YCbCrCoefficients[0]), math.Float64bits(p.YCbCrCoefficients[1]), math.Float64bits(p.YCbCrCoefficients[2]),
		uint64(p.JPEGTablesOffset), uint64(p.JPEGTablesLength), uint64(p.JPEGInterchangeOffset), uint64(p.JPEGInterchangeLength))
	list(p.BitsPerSample)
	list(p.SampleFormat)
	list(p.BlockOffsets)
	list(p.BlockCounts)
	h.Sum(sig[:0])
	_, same = w.seen[sig]
	return sig, same
}

// decoded records that a page with signature sig decoded cleanly.
func (w *fileWork) decoded(sig [sha256.Size]byte) {
	if sig != ([sha256.Size]byte{}) {
		w.seen[sig] = struct{}{}
	}
}
