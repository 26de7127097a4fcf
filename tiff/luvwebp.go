package tiff

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"golang.org/x/image/webp"
)

// blockSize is the width and rows of block i of p: the image width and the
// strip's rows inside the image, or a whole tile.
func blockSize(p *Page, i int) (width, rows uint64) {
	if p.Tiled {
		return p.TileWidth, p.TileLength
	}
	perPlane := len(p.BlockOffsets)
	if p.Planar == 2 {
		perPlane /= max(int(p.Samples), 1)
	}
	row := uint64(i%max(perPlane, 1)) * p.RowsPerStrip
	return p.Width, min(p.RowsPerStrip, p.Height-min(row, p.Height))
}

// decodeLogLuv decodes SGI LogLuv data (compression 34676 and 34677, Greg
// Ward Larson's encoding as libtiff's tif_luv.c reads it). 34676 stores
// each row as byte planes — four for 32-bit LogLuv (photometric 32845),
// two for 16-bit LogL (32844) — each run-length coded: a byte n >= 128 is
// a run of n-126 copies of the next byte, n < 128 a literal of n bytes.
// 34677 stores three bytes a pixel, uncompressed. Every row must be
// complete; runs past the row's end are cut, as libtiff cuts them. It
// keeps nothing but a read buffer.
func decodeLogLuv(r io.ReaderAt, p *Page) error {
	planes := 4
	if p.Photometric == 32844 {
		planes = 2
	}
	for i := range p.BlockOffsets {
		off := int64(p.BlockOffsets[i])
		br := bufio.NewReaderSize(io.NewSectionReader(storageReader{r}, off, int64(p.BlockCounts[i])), 16<<10)
		width, rows := blockSize(p, i)
		short := func(row uint64, err error) error {
			var re *readErr
			if errors.As(err, &re) {
				return re.err
			}
			return &FormatError{Page: p.Index + 1, Path: p.Path, Tag: blockTag(p), Offset: off, Code: "tiff.short-data",
				Err: fmt.Errorf("%w: LogLuv %s %d ends in row %d of %d", ErrShortData, blockWord(p), i, row+1, rows)}
		}
		for row := uint64(0); row < rows; row++ {
			if p.Compression == 34677 {
				if _, err := br.Discard(int(min(width*3, 1<<30))); err != nil {
					return short(row, err)
				}
				continue
			}
			for plane := 0; plane < planes; plane++ {
				for n := uint64(0); n < width; {
					b, err := br.ReadByte()
					if err != nil {
						return short(row, err)
					}
					if b >= 128 {
						if _, err := br.ReadByte(); err != nil {
							return short(row, err)
						}
						n += uint64(b) - 126
						continue
					}
					lit := min(uint64(b), width-n)
					if _, err := br.Discard(int(lit)); err != nil {
						return short(row, err)
					}
					n += lit
				}
			}
		}
	}
	return nil
}

// decodeWebP decodes a WebP page (compression 50001, as libtiff writes
// it): each strip or tile is a whole WebP file, decoded with
// golang.org/x/image/webp after its header says it is the block's size
// and fits what the memory budget leaves.
func decodeWebP(r io.ReaderAt, p *Page, avail int64) error {
	for i := range p.BlockOffsets {
		off := int64(p.BlockOffsets[i])
		fail := func(code string, cause error, format string, args ...any) error {
			return &FormatError{Page: p.Index + 1, Path: p.Path, Tag: blockTag(p), Offset: off, Code: code,
				Err: fmt.Errorf("%w: WebP %s %d: %s", cause, blockWord(p), i, fmt.Sprintf(format, args...))}
		}
		src := func() io.Reader { return io.NewSectionReader(storageReader{r}, off, int64(p.BlockCounts[i])) }
		var re *readErr
		cfg, err := webp.DecodeConfig(src())
		if errors.As(err, &re) {
			return re.err
		}
		if err != nil {
			return fail("tiff.undecodable", ErrUndecodable, "%v", err)
		}
		width, rows := blockSize(p, i)
		if uint64(cfg.Width) != width || uint64(cfg.Height) < rows || (uint64(cfg.Height) > rows && (p.Tiled || uint64(cfg.Height) > p.RowsPerStrip)) {
			return fail("tiff.webp-size", ErrBadValue, "image is %dx%d, the %s is %dx%d", cfg.Width, cfg.Height, blockWord(p), width, rows)
		}
		if cost := int64(cfg.Width)*int64(cfg.Height)*6 + 64<<10; cost > avail {
			return &LimitError{Page: p.Index + 1, Path: p.Path, Tag: blockTag(p), Offset: off, What: "memory", Have: cost, Limit: avail}
		}
		if err := decodeWebPBlock(src()); err != nil {
			if errors.As(err, &re) {
				return re.err
			}
			return fail("tiff.undecodable", ErrUndecodable, "%v", err)
		}
	}
	return nil
}

func decodeWebPBlock(s io.Reader) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: %v", ErrDecoderPanic, v)
		}
	}()
	_, err = webp.Decode(s)
	return err
}
