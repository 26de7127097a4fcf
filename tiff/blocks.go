package tiff

import (
	"errors"
	"fmt"
	"io"
)

// blockIssue is a tolerated irregularity found while checking block data.
type blockIssue struct {
	code, msg string
	offset    int64
}

// verifyBlocks decompresses every strip or tile of p that uses a lossless
// compression Lazaret can read (none, LZW, Deflate, PackBits) and checks that
// it yields at least the bytes its rows need and no more than it may hold
// (blockBound): a block that inflates further is refused with a *LimitError
// after bound+1 bytes. It is the pixel-data check for pages the image
// decoder cannot render (planar layouts, CMYK, 12-bit, floating point) or
// that it could not decode within the memory budget, and the arbiter when
// the decoder stops at a missing LZW end-of-information code. It reads one
// block at a time and keeps nothing. ok is false when the compression is
// not one it reads. strict also refuses a block whose data goes
// wrong after its rows are complete (a bad checksum, a truncated stream,
// corrupt trailing codes), as the image decoder does: it stands in for the
// decoder on pages too large to decode within the memory budget. An LZW
// block without an end code is tolerated either way, as DecodePages does.
func verifyBlocks(r io.ReaderAt, p *Page, strict bool) (ok bool, issues []blockIssue, err error) {
	switch p.Compression {
	case 1, 5, 8, 32946, 32773:
	default:
		return false, nil, nil
	}
	if p.Photometric == 6 {
		return false, nil, nil // YCbCr subsampling changes the byte count; not checked here
	}
	if p.Compression == 1 {
		return true, nil, nil // lengths were checked by the walk
	}
	in := newInflater(r)
	noEOI := false
	for i := range p.BlockOffsets {
		off := int64(p.BlockOffsets[i])
		need, bound := blockNeed(p, i), blockBound(p, i)
		if p.Compression == 5 {
			var head [2]byte
			if _, err := r.ReadAt(head[:], off); err == nil && head[0] == 0 && head[1]&1 == 1 {
				return true, []blockIssue{{"tiff.old-lzw", "old-style (LSB-first) LZW; data not decompressed", off}}, nil
			}
		}
		got, _, err := in.count(p, i, blockLimit(bound)+1)
		if in.ioErr != nil {
			return true, nil, in.ioErr
		}
		if err := overran(p, i, got, bound); err != nil {
			return true, nil, err
		}
		if got >= need {
			switch {
			case errors.Is(err, io.ErrUnexpectedEOF) && p.Compression == 5:
				noEOI = true
			case strict && errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, errZlibHeader):
				return true, nil, &FormatError{Page: p.Index + 1, Offset: off, Code: "tiff.truncated-data", Err: fmt.Errorf("%w: %w", ErrUndecodable, ErrTruncated)}
			case strict && err != nil:
				return true, nil, blockErr(p, off, "tiff.undecodable", err)
			}
			continue
		}
		if err != nil && (!errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, errZlibHeader)) {
			return true, nil, blockErr(p, off, "tiff.undecodable", err)
		}
		return true, nil, shortData(p, i, got, need)
	}
	if noEOI {
		issues = append(issues, blockIssue{"tiff.lzw-no-eoi", "LZW data ends without an end-of-information code; all rows are present", p.Offset})
	}
	return true, issues, nil
}

func blockErr(p *Page, off int64, code string, err error) error {
	return &FormatError{Page: p.Index + 1, Offset: off, Code: code, Err: fmt.Errorf("%w: %v", ErrUndecodable, err)}
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
			run := p[n:min(len(p), n+d.nrep)]
			for i := range run {
				run[i] = d.rep
			}
			d.nrep -= len(run)
			n += len(run)
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
