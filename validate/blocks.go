package validate

import (
	"compress/zlib"
	"errors"
	"fmt"
	"io"

	"golang.org/x/image/tiff/lzw"
)

// blockIssue is a tolerated irregularity found while checking block data.
type blockIssue struct {
	code, msg string
	offset    int64
}

// VerifyBlocks decompresses every strip or tile of p that uses a lossless
// compression Lazaret can read (none, LZW, Deflate, PackBits) and checks that
// it yields at least the bytes its rows need. It is the pixel-data check for
// pages the image decoder cannot render (planar layouts, CMYK, 12-bit,
// floating point) and the arbiter when the decoder stops at a missing LZW
// end-of-information code. It reads one block at a time and keeps nothing.
// ok is false when the compression is not one it reads.
func VerifyBlocks(r io.ReaderAt, p *Page) (ok bool, issues []blockIssue, err error) {
	switch p.Compression {
	case 1, 5, 8, 32946, 32773:
	default:
		return false, nil, nil
	}
	if p.Photometric == 6 {
		return false, nil, nil // YCbCr subsampling changes the byte count; not checked here
	}
	perPlane := uint64(len(p.BlockOffsets))
	planes := uint64(1)
	if p.Planar == 2 {
		planes = p.Samples
		perPlane /= planes
	}
	noEOI := false
	for i := range p.BlockOffsets {
		off, n := int64(p.BlockOffsets[i]), int64(p.BlockCounts[i])
		plane := uint64(i) / max(perPlane, 1)
		var rowBits uint64
		if p.Planar == 2 {
			rowBits = p.BitsPerSample[min(plane, uint64(len(p.BitsPerSample)-1))]
		} else {
			for s := uint64(0); s < p.Samples; s++ {
				rowBits += p.BitsPerSample[min(s, uint64(len(p.BitsPerSample)-1))]
			}
		}
		var need uint64
		if p.Tiled {
			need = ceilDiv(p.TileWidth*rowBits, 8) * p.TileLength
		} else {
			row := uint64(i) % max(perPlane, 1) * p.RowsPerStrip
			need = ceilDiv(p.Width*rowBits, 8) * min(p.RowsPerStrip, p.Height-min(row, p.Height))
		}
		src := io.NewSectionReader(r, off, n)
		var dec io.Reader
		switch p.Compression {
		case 1:
			continue // lengths were checked by the walk
		case 5:
			var head [2]byte
			if _, err := src.ReadAt(head[:], 0); err == nil && head[0] == 0 && head[1]&1 == 1 {
				return true, []blockIssue{{"tiff.old-lzw", "old-style (LSB-first) LZW; data not decompressed", off}}, nil
			}
			dec = lzw.NewReader(src, lzw.MSB, 8)
		case 8, 32946:
			z, err := zlib.NewReader(src)
			if err != nil {
				return true, nil, blockErr(p, off, "tiff.undecodable", err)
			}
			dec = z
		case 32773:
			dec = &packBits{r: src}
		}
		got, err := io.Copy(io.Discard, io.LimitReader(dec, int64(need)))
		if c, ok := dec.(io.Closer); ok {
			c.Close()
		}
		if uint64(got) >= need {
			if errors.Is(err, io.ErrUnexpectedEOF) && p.Compression == 5 {
				noEOI = true
			}
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return true, nil, blockErr(p, off, "tiff.undecodable", err)
		}
		return true, nil, &TIFFError{Page: p.Index + 1, Offset: off, Code: "tiff.short-data",
			Err: fmt.Errorf("%w: block %d decompresses to %d bytes, its rows need %d", ErrShortData, i, got, need)}
	}
	if noEOI {
		issues = append(issues, blockIssue{"tiff.lzw-no-eoi", "LZW data ends without an end-of-information code; all rows are present", p.Offset})
	}
	return true, issues, nil
}

func blockErr(p *Page, off int64, code string, err error) error {
	return &TIFFError{Page: p.Index + 1, Offset: off, Code: code, Err: fmt.Errorf("%w: %v", ErrUndecodable, err)}
}

// packBits decodes Apple PackBits (TIFF compression 32773).
type packBits struct {
	r    io.Reader
	buf  [128]byte
	rep  byte
	nrep int
	lit  []byte
	hdr  [1]byte
}

func (d *packBits) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		switch {
		case d.nrep > 0:
			p[n] = d.rep
			d.nrep--
			n++
		case len(d.lit) > 0:
			c := copy(p[n:], d.lit)
			d.lit = d.lit[c:]
			n += c
		default:
			if _, err := io.ReadFull(d.r, d.hdr[:]); err != nil {
				if n > 0 {
					return n, nil
				}
				return 0, io.EOF
			}
			h := int8(d.hdr[0])
			switch {
			case h >= 0:
				m := int(h) + 1
				if _, err := io.ReadFull(d.r, d.buf[:m]); err != nil {
					return n, io.ErrUnexpectedEOF
				}
				d.lit = d.buf[:m]
			case h != -128:
				if _, err := io.ReadFull(d.r, d.buf[:1]); err != nil {
					return n, io.ErrUnexpectedEOF
				}
				d.rep, d.nrep = d.buf[0], 1-int(h)
			}
		}
	}
	return n, nil
}
