package tiff

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// The two small run-length codecs of early scanners and workstations,
// which libtiff decodes (tif_thunder.c, tif_next.c) and x/image/tiff does
// not. Lazaret walks their rows the way libtiff's decoders consume them,
// without keeping pixels: a block whose data ends before its rows are
// complete is short, as libtiff reports "Not enough data".
const (
	// compThunderScan: ThunderScan 4-bit grey (compression 32809).
	compThunderScan = 32809
	// compNeXT: NeXT 2-bit grey run-length (compression 32766).
	compNeXT = 32766
)

// smallRLE reports whether p is in one of the codecs of this file.
func smallRLE(p *Page) bool { return p.Compression == compThunderScan || p.Compression == compNeXT }

// decodeSmallRLE checks every block of a ThunderScan or NeXT page. A page
// outside what the codec is defined for (ThunderScan: one 4-bit sample in
// strips; NeXT: one 2-bit sample) is not decoded and says why.
func decodeSmallRLE(r io.ReaderAt, p *Page) (*UnsupportedError, error) {
	bps := uint64(1)
	if len(p.BitsPerSample) > 0 {
		bps = p.BitsPerSample[0]
	}
	switch {
	case p.Samples != 1:
		return p.notDecoded(fmt.Sprintf("%s with %d samples per pixel (the codec has one)", codecName(p), p.Samples)), nil
	case p.Compression == compThunderScan && bps != 4:
		return p.notDecoded(fmt.Sprintf("ThunderScan with %d bits per sample (the codec has 4)", bps)), nil
	case p.Compression == compThunderScan && p.Tiled:
		return p.notDecoded("ThunderScan in tiles (the codec is defined for strips)"), nil
	case p.Compression == compNeXT && bps != 2:
		return p.notDecoded(fmt.Sprintf("NeXT with %d bits per sample (the codec has 2)", bps)), nil
	}
	for i := range p.BlockOffsets {
		br := bufio.NewReaderSize(blockSource(r, p, i), 4<<10)
		width, rows := blockSize(p, i)
		var err error
		if p.Compression == compThunderScan {
			err = thunderRows(br, width, rows)
		} else {
			err = nextRows(br, width, rows)
		}
		if err == nil {
			continue
		}
		var re *readErr
		if errors.As(err, &re) {
			return nil, re.err
		}
		var bad *rleError
		if !errors.As(err, &bad) {
			return nil, err
		}
		code, cause := "tiff.short-data", ErrShortData
		if !bad.short {
			code, cause = "tiff.undecodable", ErrUndecodable
		}
		return nil, &FormatError{Page: p.Index + 1, Path: p.Path, Tag: blockTag(p), Offset: int64(p.BlockOffsets[i]), Code: code,
			Err: fmt.Errorf("%w: %s %s %d row %d of %d: %s", cause, codecName(p), blockWord(p), i, bad.row+1, rows, bad.what)}
	}
	return nil, nil
}

// notDecoded is the UnsupportedError of p for reason.
func (p *Page) notDecoded(reason string) *UnsupportedError {
	return &UnsupportedError{Page: p.Index + 1, Path: p.Path, Offset: p.Offset, Reason: reason}
}

func codecName(p *Page) string {
	if p.Compression == compThunderScan {
		return "ThunderScan"
	}
	return "NeXT"
}

// rleError is where a block's rows go wrong: row (0-based in the block)
// ends early (short: the data ran out) or holds what the codec cannot.
type rleError struct {
	row   uint64
	short bool
	what  string
}

func (e *rleError) Error() string { return e.what }

// readByte is the next byte of a block, an *rleError at row when the
// block has no more, or the storage's error.
func readByte(br *bufio.Reader, row uint64, what string) (byte, error) {
	b, err := br.ReadByte()
	if err == nil {
		return b, nil
	}
	var re *readErr
	if errors.As(err, &re) {
		return 0, err
	}
	return 0, &rleError{row: row, short: true, what: "not enough data: " + what}
}

// thunderRows walks rows rows of width pixels of ThunderScan data. Each
// row is coded on its own; each byte's top two bits say what it holds:
//
//	00nnnnnn  the last pixel repeated n times
//	01aabbcc  up to three pixels, each the last plus a 2-bit delta
//	          (0, +1, skip, -1)
//	10aaabbb  up to two pixels, each the last plus a 3-bit delta
//	          (0, +1, +2, +3, skip, -3, -2, -1)
//	11xxvvvv  one pixel of value v
//
// Deltas past the row's end are dropped; a run past it is an error
// ("Too much data" in libtiff), as is a row the data does not complete.
func thunderRows(br *bufio.Reader, width, rows uint64) error {
	for row := uint64(0); row < rows; row++ {
		var n uint64 // pixels of the row
		for n < width {
			b, err := readByte(br, row, fmt.Sprintf("%d of %d pixels", n, width))
			if err != nil {
				return err
			}
			switch b >> 6 {
			case 0:
				if n += uint64(b & 0x3f); n > width {
					return &rleError{row: row, what: fmt.Sprintf("too much data: a run ends at pixel %d of %d", n, width)}
				}
			case 1:
				for _, d := range [3]byte{b >> 4 & 3, b >> 2 & 3, b & 3} {
					if d != 2 {
						n = min(n+1, width)
					}
				}
			case 2:
				for _, d := range [2]byte{b >> 3 & 7, b & 7} {
					if d != 4 {
						n = min(n+1, width)
					}
				}
			case 3:
				n++
			}
		}
	}
	return nil
}

// nextRows walks rows rows of width 2-bit pixels of NeXT data. A row
// starts with a byte that says how it is coded:
//
//	0x00             the whole row as it is stored (ceil(width/4) bytes)
//	0x40 off n data  n stored bytes at byte off of the row (two bytes
//	                 each, big-endian); the rest of the row is white
//	anything else    runs: each byte (this one first) is a grey level in
//	                 its top two bits and a count in the low six, until
//	                 the row's width is reached
//
// A span outside the row is an error; so is a row the data does not
// complete, also at a row's start (libtiff leaves such rows white and
// reports nothing: a master's rows missing are its data cut short).
func nextRows(br *bufio.Reader, width, rows uint64) error {
	scanline := (width*2 + 7) / 8
	for row := uint64(0); row < rows; row++ {
		b, err := readByte(br, row, "the row's first byte")
		if err != nil {
			return err
		}
		switch b {
		case 0x00:
			if _, err := discard(br, scanline, row, "a stored row"); err != nil {
				return err
			}
		case 0x40:
			var h [4]byte
			for k := range h {
				if h[k], err = readByte(br, row, "a span's offset and length"); err != nil {
					return err
				}
			}
			off, n := uint64(h[0])<<8|uint64(h[1]), uint64(h[2])<<8|uint64(h[3])
			if off+n > scanline {
				return &rleError{row: row, what: fmt.Sprintf("a span of %d bytes at byte %d of a %d-byte row", n, off, scanline)}
			}
			if _, err := discard(br, n, row, "a span"); err != nil {
				return err
			}
		default:
			for n := uint64(b & 0x3f); ; {
				if n >= width {
					break
				}
				c, err := readByte(br, row, fmt.Sprintf("%d of %d pixels", n, width))
				if err != nil {
					return err
				}
				n += uint64(c & 0x3f)
			}
		}
	}
	return nil
}

// discard skips n bytes of a block, an *rleError at row when it holds
// fewer.
func discard(br *bufio.Reader, n, row uint64, what string) (int, error) {
	got, err := br.Discard(int(min(n, 1<<30)))
	if err == nil && uint64(got) == n {
		return got, nil
	}
	var re *readErr
	if errors.As(err, &re) {
		return got, err
	}
	return got, &rleError{row: row, short: true, what: fmt.Sprintf("not enough data: %s of %d bytes has %d", what, n, got)}
}
