package tiff

import "errors"

// errPackBitsCount: packBitsCount met data that ends inside a run. The
// block goes back to the PackBits reader, whose error is the one reported.
var errPackBitsCount = errors.New("packbits count: truncated run")

// packBitsCount counts what PackBits data decompresses to without
// producing it, capped at limit as an io.LimitedReader would cap it: a
// header n in 0..127 is n+1 literal bytes, -127..-1 one byte repeated 1-n
// times, -128 nothing; the data may end only between runs. It accepts
// exactly what packBits (and golang.org/x/image/tiff's unpackBits) read
// without error and counts the bytes they yield.
func packBitsCount(src []byte, limit uint64) (got uint64, err error) {
	for pos := 0; pos < len(src); {
		h := int8(src[pos])
		pos++
		switch {
		case h >= 0:
			n := int(h) + 1
			if len(src)-pos < n {
				return got, errPackBitsCount
			}
			pos += n
			got += uint64(n)
		case h != -128:
			if pos >= len(src) {
				return got, errPackBitsCount
			}
			pos++
			got += uint64(1 - int(h))
		}
		if got >= limit {
			return limit, nil
		}
	}
	return got, nil
}
