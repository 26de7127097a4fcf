package tiff

import (
	"bufio"
	"compress/lzw"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"math/bits"

	tifflzw "golang.org/x/image/tiff/lzw"
)

// codecFields reads the fields that change how block data is decoded:
// FillOrder, Predictor and the JPEG table and stream pointers.
func (w *walker) codecFields(p *Page, entries map[uint16]entry) error {
	var err error
	var ok bool
	if p.FillOrder, ok, err = w.one(entries, tagFillOrder, 1); err != nil {
		return err
	}
	if p.FillOrder != 1 && p.FillOrder != 2 {
		w.warn("tiff.bad-fill-order", entries[tagFillOrder].at+8, "FillOrder %d is neither 1 nor 2; 1 assumed", p.FillOrder)
		p.FillOrder = 1
	}
	_ = ok
	if p.Predictor, _, err = w.one(entries, tagPredictor, 1); err != nil {
		return err
	}
	if p.T4Options, _, err = w.one(entries, tagT4Options, 0); err != nil {
		return err
	}
	if p.T6Options, _, err = w.one(entries, tagT6Options, 0); err != nil {
		return err
	}
	p.JPEGTablesOffset, p.JPEGTablesLength = -1, 0
	if e, ok := entries[tagJPEGTables]; ok {
		if e.typ != typeUndefined && e.typ != typeByte {
			return w.fail(e.tag, e.at+2, "tiff.bad-type", ErrBadEntry, "JPEGTables type %d, want UNDEFINED", e.typ)
		}
		p.JPEGTablesOffset, p.JPEGTablesLength = e.valueAt, e.valueLen
	}
	if p.Compression == 6 {
		t := &OldJPEGTables{}
		if t.Proc, _, err = w.one(entries, tagJPEGProc, 1); err != nil {
			return err
		}
		if t.RestartInterval, _, err = w.one(entries, tagJPEGRestartInterval, 0); err != nil {
			return err
		}
		for _, f := range []struct {
			tag uint16
			dst *[]uint64
		}{{tagJPEGQTables, &t.Q}, {tagJPEGDCTables, &t.DC}, {tagJPEGACTables, &t.AC}} {
			if e, ok := entries[f.tag]; ok {
				if *f.dst, err = w.uints(e, w.lim.MaxSamples); err != nil {
					return err
				}
			}
		}
		p.OldJPEG = t
	}
	p.JPEGInterchangeOffset = -1
	if off, ok, err := w.one(entries, tagJPEGInterchangeFormat, 0); err != nil {
		return err
	} else if ok {
		n, _, err := w.one(entries, tagJPEGInterchangeFormatLngth, 0)
		if err != nil {
			return err
		}
		e := entries[tagJPEGInterchangeFormat]
		if off >= uint64(w.size) || (n > 0 && n > uint64(w.size)-off) {
			return w.fail(e.tag, e.valueAt, "tiff.value-outside-file", ErrOutsideFile,
				"old-style JPEG stream of %d bytes at %d runs past the end of the %d-byte file", n, off, w.size)
		}
		p.JPEGInterchangeOffset, p.JPEGInterchangeLength = int64(off), int64(n)
		if n == 0 {
			p.JPEGInterchangeLength = w.size - int64(off)
		}
	}
	return nil
}

// reversed reads r with the bits of every byte reversed: FillOrder 2
// data, which stores the first bit of a byte in its least significant
// bit, presented most significant bit first, as every codec expects.
type reversed struct{ r io.Reader }

func (b reversed) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	for i := range p[:n] {
		p[i] = bits.Reverse8(p[i])
	}
	return n, err
}

// blockSource is block i of p's raw bytes, FillOrder honoured: CCITT
// readers take the fill order themselves; every other codec gets the bits
// most significant first.
func blockSource(r io.ReaderAt, p *Page, i int) io.Reader {
	var src io.Reader = io.NewSectionReader(storageReader{r}, int64(p.BlockOffsets[i]), int64(p.BlockCounts[i]))
	if p.FillOrder == 2 && p.Compression != 2 && p.Compression != 3 && p.Compression != 4 {
		src = reversed{src}
	}
	return src
}

// ownCodec reports whether openBlock decompresses p's blocks.
func ownCodec(p *Page) bool {
	switch p.Compression {
	case 1, 5, 8, 32946, 32773:
		return true
	}
	return false
}

// openBlock returns a reader of block i of p decompressed: none, LZW (TIFF
// 6 or the old LSB-first variant), Deflate or PackBits, FillOrder
// honoured. close releases the decompressor.
func openBlock(r io.ReaderAt, p *Page, i int, old bool) (dec io.Reader, closeFn func(), err error) {
	src := bufio.NewReaderSize(blockSource(r, p, i), 16<<10)
	switch p.Compression {
	case 1:
		return src, func() {}, nil
	case 5:
		if old {
			// Pre-TIFF-6 LZW writes codes least significant bit first and
			// widens them one code later: compress/lzw's GIF variant.
			lz := lzw.NewReader(src, lzw.LSB, 8)
			return lz, func() { lz.Close() }, nil
		}
		lz := tifflzw.NewReader(src, tifflzw.MSB, 8)
		return lz, func() { lz.Close() }, nil
	case 8, 32946:
		z, err := zlib.NewReader(src)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %w", errZlibHeader, err)
		}
		return z, func() { z.Close() }, nil
	case 32773:
		return &packBits{r: src}, func() {}, nil
	}
	return nil, nil, fmt.Errorf("compression %d", p.Compression)
}

// decodeLossless decompresses every block of p itself: for pages whose
// bytes x/image/tiff would misread (FillOrder 2, old-style LZW) or whose
// layout it does not know (subsampled YCbCr). Each block must yield the
// bytes its rows need and no more than it may hold (a *LimitError past
// blockLimit; an overrun within it is noted on p), and its stream must end cleanly (an LZW stream without
// an end code is tolerated, as elsewhere). unit, if not nil, is handed
// every block's bytes in order, in pieces of at most one data-unit row. It
// holds one piece and one decompressor at a time.
func decodeLossless(r io.ReaderAt, p *Page, old bool, unit func(i int, piece []byte)) (issues []blockIssue, err error) {
	noEOI := false
	var buf []byte
	for i := range p.BlockOffsets {
		off := int64(p.BlockOffsets[i])
		need, bound := rawNeed(p, i), rawBound(p, i)
		limit := blockLimit(bound)
		dec, closeFn, err := openBlock(r, p, i, old)
		if err != nil {
			return nil, blockErr(p, off, "tiff.undecodable", err)
		}
		// Pieces of 32 KiB, whole data units for the YCbCr conversion: a
		// row of units is as many bytes, so pieces stay aligned on them.
		piece := uint64(32 << 10)
		if unit != nil {
			u := p.YCbCrSubsampling[0]*p.YCbCrSubsampling[1] + 2
			piece = piece / u * u
		}
		piece = min(piece, max(need, 1))
		if uint64(cap(buf)) < piece {
			buf = make([]byte, piece)
		}
		var got uint64
		var rerr error
		for rerr == nil && got <= limit {
			b := buf[:min(piece, limit+1-got)]
			n := 0
			for n < len(b) && rerr == nil {
				var m int
				m, rerr = dec.Read(b[n:])
				n += m
			}
			if unit != nil && got < need {
				unit(i, b[:min(uint64(n), need-got)])
			}
			got += uint64(n)
		}
		closeFn()
		if rerr == io.EOF || (p.Compression == 1 && errors.Is(rerr, io.ErrUnexpectedEOF)) {
			rerr = nil // a clean end; ErrUnexpectedEOF is a stream cut short
		}
		var perr *readErr
		if errors.As(rerr, &perr) {
			return nil, perr.err
		}
		switch {
		case got > limit:
			return nil, inflateError(p, i, limit)
		case got < need && rerr != nil && !errors.Is(rerr, io.ErrUnexpectedEOF):
			return nil, blockErr(p, off, "tiff.undecodable", rerr)
		case got < need:
			return nil, shortData(p, i, got, need)
		case errors.Is(rerr, io.ErrUnexpectedEOF) && p.Compression == 5:
			noEOI = true
		case errors.Is(rerr, io.ErrUnexpectedEOF):
			return nil, &FormatError{Page: p.Index + 1, Path: p.Path, Offset: off, Code: "tiff.truncated-data", Err: fmt.Errorf("%w: %w", ErrUndecodable, ErrTruncated)}
		case rerr != nil:
			return nil, blockErr(p, off, "tiff.undecodable", rerr)
		}
		if got > bound {
			p.noteOverrun(i, got, bound)
		}
	}
	if noEOI {
		issues = append(issues, blockIssue{"tiff.lzw-no-eoi", "LZW data ends without an end-of-information code; all rows are present", p.Offset})
	}
	return issues, nil
}

// readErr marks a read error of the storage, not of the data.
type readErr struct{ err error }

func (e *readErr) Error() string { return e.err.Error() }

// storageReader wraps a file so that its read errors (not EOF) are told
// apart from corrupt data.
type storageReader struct{ r io.ReaderAt }

func (s storageReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := s.r.ReadAt(p, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return n, &readErr{err}
	}
	return n, err
}

// decodeOwn decodes the pages Lazaret decodes itself rather than through
// golang.org/x/image/tiff: JPEG (compression 7) and old-style JPEG (6);
// ThunderScan (32809) and NeXT (32766);
// YCbCr; FillOrder 2 and old-style LZW data, and Group 3 2-D fax data,
// which that decoder would misread; the CCITT pages faxOwn names. handled
// is false for every other page. What could not be decoded is added to
// skipped; the block issues go to info.Warnings.
func decodeOwn(r io.ReaderAt, info *TIFFInfo, p *Page, avail int64, skipped *[]*UnsupportedError) (handled bool, err error) {
	old := false
	switch {
	case p.Compression == 7:
		return true, decodeJPEGPage(r, info, p, avail, skipped)
	case p.Compression == 6:
		return true, decodeOldJPEG(r, info, p, avail, skipped)
	case p.Compression == 50001:
		return true, decodeWebP(r, p, avail)
	case faxOwn(info, p) != "":
		u, err := decodeFax(r, p, avail, faxOwn(info, p))
		if u != nil {
			*skipped = append(*skipped, u)
		}
		return true, err
	case (p.Compression == 34676 && (p.Photometric == 32844 || p.Photometric == 32845)) || (p.Compression == 34677 && p.Photometric == 32845):
		return true, decodeLogLuv(r, p)
	case smallRLE(p):
		u, err := decodeSmallRLE(r, p)
		if u != nil {
			*skipped = append(*skipped, u)
		}
		return true, err
	case !ownCodec(p):
		return false, nil
	case p.Compression == 5 && oldLZW(r, p):
		old = true
	case p.Photometric == 6, p.FillOrder == 2, viewless(info) && p.Compression != 1, p.Compression != 1 && tilesRefused(p):
	default:
		return false, nil
	}
	var unit func(int, []byte)
	if p.Photometric == 6 && p.Planar == 1 && p.Samples == 3 && allBits(p, 8) {
		unit = ycbcrToRGB(p)
	}
	issues, err := decodeLossless(r, p, old, unit)
	if err != nil {
		return true, err
	}
	for _, is := range issues {
		off, pg := is.offset, p.Index+1
		info.warn(Warning{Code: is.code, Message: is.msg, Page: &pg, Path: p.Path, Offset: &off})
	}
	return true, nil
}

// tilesRefused reports whether x/image/tiff refuses p's tile size before
// reading a tile: under 8 pixels a side ("tile size is too small"), or
// over 1024 and more than 16 past a side of the image ("tile size exceeds
// image size"). TIFF 6.0 asks for multiples of 16, but libtiff reads such
// tiles (warning "Nonstandard tile width") and so does decodeLossless:
// they are that decoder's limits, not damage.
func tilesRefused(p *Page) bool {
	if !p.Tiled {
		return false
	}
	if p.TileWidth < 8 || p.TileLength < 8 {
		return true
	}
	return (p.TileWidth > p.Width+16 || p.TileLength > p.Height+16) && (p.TileWidth > 1024 || p.TileLength > 1024)
}

func allBits(p *Page, b uint64) bool {
	for _, x := range p.BitsPerSample {
		if x != b {
			return false
		}
	}
	return true
}

// ycbcrToRGB converts each row of 8-bit contiguous YCbCr data units to RGB
// with the page's luma coefficients (TIFF 6.0 §21), as a viewer would.
// The colours are not kept: the conversion proves every data unit is
// there and can be rendered.
func ycbcrToRGB(p *Page) func(int, []byte) {
	h, v := p.YCbCrSubsampling[0], p.YCbCrSubsampling[1]
	lr, lg, lb := p.YCbCrCoefficients[0], p.YCbCrCoefficients[1], p.YCbCrCoefficients[2]
	unit := int(h*v + 2)
	var sink float64
	return func(_ int, row []byte) {
		for ; len(row) >= unit; row = row[unit:] {
			cb, cr := float64(row[unit-2])-128, float64(row[unit-1])-128
			for _, y := range row[:unit-2] {
				r := float64(y) + (2-2*lr)*cr
				b := float64(y) + (2-2*lb)*cb
				sink += r + b + (float64(y)-lr*r-lb*b)/lg
			}
		}
		_ = sink
	}
}
