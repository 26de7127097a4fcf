package tiff

import "errors"

// errLZWCount: lzwCount met something other than a clean end. The block
// goes back to golang.org/x/image/tiff/lzw, whose error is the one reported.
var errLZWCount = errors.New("lzw count: not a clean stream")

// lzwTable is lzwCount's state: the length of each code's expansion.
type lzwTable [4096]uint16

// lzwCount counts what TIFF LZW data (MSB first, 8-bit literals, codes
// widened one code early) decompresses to without producing it: it keeps
// the length of each table entry instead of its bytes. It follows
// golang.org/x/image/tiff/lzw code for code — the same table, widths,
// clear and end codes, the same codes refused — and returns the same
// count, capped at limit as an io.LimitedReader would cap it. err is nil
// at an end-of-information code or at the limit; any other end (an
// invalid code, data that stops before its end code) is errLZWCount, with
// no promise about got: the caller then asks the real decoder.
func lzwCount(t *lzwTable, src []byte, limit uint64) (got uint64, err error) {
	const (
		clearCode, eoi = 256, 257
		invalid        = 0xffff
		maxWidth       = 12
		maxCode        = 1 << maxWidth
	)
	for c := range 256 {
		t[c] = 1
	}
	clear(t[256:]) // 256 and 257 stay 0: never expanded
	width := uint(9)
	hi, overflow, last := uint16(eoi), uint16(1<<9), uint16(invalid)
	var bits uint64 // pending bits, most significant first
	nBits := uint(0)
	pos := 0
	for {
		if nBits < width {
			for nBits <= 56 && pos < len(src) {
				bits |= uint64(src[pos]) << (56 - nBits)
				pos++
				nBits += 8
			}
			if nBits < width {
				return got, errLZWCount
			}
		}
		code := uint16(bits>>(64-width)) & (maxCode - 1)
		bits <<= width
		nBits -= width
		n := t[code]
		if n == 0 || code >= hi {
			// The rare codes: clear, end, the code being defined, invalid.
			switch {
			case code == clearCode:
				width, hi, overflow, last = 9, eoi, 1<<9, invalid
				continue
			case code == eoi:
				return got, nil
			case code == hi && last != invalid:
				n = t[last&(maxCode-1)] + 1
			case code > hi || n == 0:
				return got, errLZWCount // invalid, or an entry never made
			}
		}
		if last != invalid {
			t[hi&(maxCode-1)] = t[last&(maxCode-1)] + 1
		}
		got += uint64(n)
		if got >= limit {
			return limit, nil
		}
		last, hi = code, hi+1
		if hi+1 >= overflow {
			if width == maxWidth {
				last = invalid
				hi--
			} else {
				width++
				overflow <<= 1
			}
		}
	}
}
