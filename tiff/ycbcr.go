package tiff

import (
	"math"
)

// Tags of YCbCr, FillOrder and JPEG pages.
const (
	tagT4Options                  = 292
	tagT6Options                  = 293
	tagJPEGTables                 = 347
	tagJPEGProc                   = 512
	tagJPEGInterchangeFormat      = 513
	tagJPEGInterchangeFormatLngth = 514
	tagJPEGRestartInterval        = 515
	tagJPEGQTables                = 519
	tagJPEGDCTables               = 520
	tagJPEGACTables               = 521
	tagYCbCrCoefficients          = 529
	tagYCbCrSubSampling           = 530
	tagReferenceBlackWhite        = 532
)

// ycbcr reads and checks the YCbCr fields of a page (TIFF 6.0 §21): the
// subsampling factors (1, 2 or 4; vertical at most horizontal; default
// 2, 2), the luma coefficients (three positive finite RATIONALs; the
// conversion to RGB divides by them) and ReferenceBlackWhite (six finite
// RATIONALs, each white above its black: the conversion divides by their
// difference). The coefficients and reference are checked on any page
// that has them; the subsampling is used for YCbCr pages only.
func (w *walker) ycbcr(p *Page, entries map[uint16]entry) error {
	p.YCbCrSubsampling = [2]uint64{1, 1}
	if p.Photometric == 6 {
		p.YCbCrSubsampling = [2]uint64{2, 2}
	}
	if e, ok := entries[tagYCbCrSubSampling]; ok {
		if e.count != 2 {
			return w.fail(e.tag, e.at+4, "tiff.bad-count", ErrBadEntry, "YCbCrSubSampling has %d values, want 2", e.count)
		}
		v, err := w.uints(e, 2)
		if err != nil {
			return err
		}
		for _, f := range v {
			if f != 1 && f != 2 && f != 4 {
				return w.fail(e.tag, e.valueAt, "tiff.bad-ycbcr-subsampling", ErrBadValue, "YCbCrSubSampling %d, %d: each must be 1, 2 or 4", v[0], v[1])
			}
		}
		if v[1] > v[0] {
			return w.fail(e.tag, e.valueAt, "tiff.bad-ycbcr-subsampling", ErrBadValue, "YCbCrSubSampling %d, %d: vertical above horizontal", v[0], v[1])
		}
		if p.Photometric == 6 {
			p.YCbCrSubsampling = [2]uint64{v[0], v[1]}
		}
	}
	p.YCbCrCoefficients = [3]float64{0.299, 0.587, 0.114}
	if e, ok := entries[tagYCbCrCoefficients]; ok {
		v, at, err := w.rationals(e, 3)
		if err != nil {
			return err
		}
		for i, c := range v {
			if !(c > 0) || math.IsInf(c, 0) {
				return w.fail(e.tag, at[i], "tiff.bad-ycbcr-coefficients", ErrBadValue,
					"YCbCrCoefficients %v: each must be a positive finite number (RGB conversion divides by them)", v)
			}
		}
		copy(p.YCbCrCoefficients[:], v)
		if s := v[0] + v[1] + v[2]; math.Abs(s-1) > 0.01 {
			w.warn("tiff.ycbcr-coefficients-sum", e.valueAt, "YCbCrCoefficients %v sum to %.4f, not 1", v, s)
		}
	}
	if e, ok := entries[tagReferenceBlackWhite]; ok {
		v, at, err := w.rationals(e, 6)
		if err != nil {
			return err
		}
		for i, c := range v {
			if math.IsInf(c, 0) || math.IsNaN(c) {
				return w.fail(e.tag, at[i], "tiff.bad-reference-black-white", ErrBadValue, "ReferenceBlackWhite value %d is not finite", i+1)
			}
		}
		for i := 0; i < 6; i += 2 {
			if v[i+1] == v[i] {
				return w.fail(e.tag, at[i], "tiff.bad-reference-black-white", ErrBadValue,
					"ReferenceBlackWhite %v: component %d has white equal to black (conversion divides by their difference)", v, i/2+1)
			}
		}
	}
	return nil
}

// rationals reads exactly n real values of e (RATIONAL, as the tags
// define them, or SHORT, LONG, SRATIONAL, FLOAT or DOUBLE, which libtiff
// also reads) and the offset of each. A zero denominator reads as +Inf
// (NaN for 0/0), left to the caller.
func (w *walker) rationals(e entry, n uint64) ([]float64, []int64, error) {
	switch e.typ {
	case typeRational, typeSRational, typeShort, typeLong, typeFloat, typeDouble:
	default:
		return nil, nil, w.fail(e.tag, e.at+2, "tiff.bad-type", ErrBadEntry, "type %d, want RATIONAL", e.typ)
	}
	if e.count != n {
		return nil, nil, w.fail(e.tag, e.at+4, "tiff.bad-count", ErrBadEntry, "%d values, want %d", e.count, n)
	}
	ts := typeSize[e.typ]
	b := make([]byte, int64(n)*ts)
	if err := w.read(b, e.valueAt, e.tag, TagName(e.tag)); err != nil {
		return nil, nil, err
	}
	v, at := make([]float64, n), make([]int64, n)
	for i := range v {
		x := b[int64(i)*ts:]
		at[i] = e.valueAt + int64(i)*ts
		switch e.typ {
		case typeRational:
			v[i] = float64(w.bo.Uint32(x)) / float64(w.bo.Uint32(x[4:]))
		case typeSRational:
			v[i] = float64(int32(w.bo.Uint32(x))) / float64(int32(w.bo.Uint32(x[4:])))
		case typeShort:
			v[i] = float64(w.bo.Uint16(x))
		case typeLong:
			v[i] = float64(w.bo.Uint32(x))
		case typeFloat:
			v[i] = float64(math.Float32frombits(w.bo.Uint32(x)))
		case typeDouble:
			v[i] = math.Float64frombits(w.bo.Uint64(x))
		}
	}
	return v, at, nil
}

// subsampled reports whether p's blocks hold YCbCr data units (TIFF 6.0
// §21): a YCbCr page, not JPEG-compressed (a JPEG stream carries its own
// sampling), with three samples.
func subsampled(p *Page) bool {
	return p.Photometric == 6 && p.Samples == 3 && p.Compression != 6 && p.Compression != 7 &&
		(p.YCbCrSubsampling[0] > 1 || p.YCbCrSubsampling[1] > 1)
}

// rawNeed is the bytes block i of p holds before compression: its rows
// inside the image for a strip, a whole tile for a tile. For subsampled
// YCbCr, TIFF 6.0 §21: a contiguous block is ceil(rows/v) rows of
// ceil(width/h) data units of h*v luma and two chroma samples; in a
// planar page the luma plane is full size and each chroma plane has
// ceil(width/h) x ceil(rows/v) samples.
func rawNeed(p *Page, i int) uint64 {
	width, rows := p.Width, uint64(0)
	if p.Tiled {
		width, rows = p.TileWidth, p.TileLength
	} else {
		perPlane := uint64(len(p.BlockOffsets))
		if p.Planar == 2 {
			perPlane /= max(p.Samples, 1)
		}
		row := uint64(i) % max(perPlane, 1) * p.RowsPerStrip
		rows = min(p.RowsPerStrip, p.Height-min(row, p.Height))
	}
	return blockBytes(p, i, width, rows)
}

// rawBound is the most bytes block i of p may decompress to: a strip's
// RowsPerStrip rows even at the bottom of the image, a whole tile.
func rawBound(p *Page, i int) uint64 {
	if p.Tiled {
		return rawNeed(p, i)
	}
	return blockBytes(p, i, p.Width, p.RowsPerStrip)
}

// blockBytes is the bytes of block i of p for width x rows pixels.
func blockBytes(p *Page, i int, width, rows uint64) uint64 {
	bps := func(s uint64) uint64 { return p.BitsPerSample[min(s, uint64(len(p.BitsPerSample)-1))] }
	plane := uint64(0)
	if p.Planar == 2 {
		perPlane := max(uint64(len(p.BlockOffsets))/max(p.Samples, 1), 1)
		plane = uint64(i) / perPlane
	}
	if subsampled(p) {
		h, v := p.YCbCrSubsampling[0], p.YCbCrSubsampling[1]
		units, unitRows := ceilDiv(width, h), ceilDiv(rows, v)
		if p.Planar == 2 {
			if plane == 0 {
				return mulSat(ceilDiv(mulSat(width, bps(0)), 8), rows)
			}
			return mulSat(ceilDiv(mulSat(units, bps(plane)), 8), unitRows)
		}
		return mulSat(ceilDiv(mulSat(mulSat(units, h*v+2), bps(0)), 8), unitRows)
	}
	var rowBits uint64
	if p.Planar == 2 {
		rowBits = bps(plane)
	} else {
		for s := uint64(0); s < p.Samples; s++ {
			rowBits += bps(s)
		}
	}
	return mulSat(ceilDiv(mulSat(width, rowBits), 8), rows)
}
