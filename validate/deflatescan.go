package validate

import (
	"encoding/binary"
	"math/bits"
	"sync"
)

// strictDeflate reports whether Go's Deflate decoders (compress/flate and
// klauspost/compress/flate, which agree on what they accept) read the
// Deflate stream at the start of src to its final block without an error
// and decompress it to exactly out, the bytes a faster but more lenient
// decoder made of it. libdeflate, in particular, decodes the unused
// codewords of an incomplete code, literal/length symbols 286 and 287,
// distance symbols 30 and 31, and headers declaring more of them (see its
// deflate_decompress.c), where Go's decoders report corrupt input: a
// stream that uses any of them decompresses there and its checksum, taken
// over that output, matches.
//
// strictDeflate parses the stream by Go's rules and uses out only to go
// faster: a literal is taken when the next bits are the codeword of the
// byte out holds there, which is then what Go's decoder reads; anything
// else is decoded from the tables. So the parse never leans on out, and
// when every literal matched, every copy reached back into what came
// before and copied what out holds, every stored byte is out's, and the
// stream ended with out, Go's decoder makes out of src too: the same
// bytes, so the same checksum. ok false says only "not
// proven here", and the caller asks Go's decoder.
//
// end is the bytes of src the stream took, to the byte boundary after its
// final block. It reads nothing past len(src) and allocates nothing.
func strictDeflate(s *deflateScan, src, out []byte) (end int, ok bool) {
	s.src, s.pos, s.bitbuf, s.nbits, s.over = src, 0, 0, 0, 0
	defer func() { s.src = nil }()
	n := 0 // bytes of out accounted for
	for {
		if !s.need(3) {
			return 0, false
		}
		final := s.bitbuf&1 == 1
		typ := (s.bitbuf >> 1) & 3
		s.drop(3)
		switch typ {
		case 0:
			// Stored: to the byte boundary, LEN and its complement, LEN bytes.
			s.drop(s.nbits & 7)
			if !s.need(32) {
				return 0, false
			}
			ln, nln := uint16(s.bitbuf), uint16(s.bitbuf>>16)
			s.drop(32)
			if ln != ^nln {
				return 0, false
			}
			// The bytes still in the bit buffer come first; all must be
			// the bytes out has there.
			if len(out)-n < int(ln) {
				return 0, false
			}
			want := out[n : n+int(ln)]
			for len(want) > 0 && s.nbits >= 8 {
				if byte(s.bitbuf) != want[0] {
					return 0, false
				}
				s.drop(8)
				want = want[1:]
			}
			if len(want) > 0 {
				if len(src)-s.pos < len(want) || string(src[s.pos:s.pos+len(want)]) != string(want) {
					return 0, false
				}
				s.pos += len(want)
				s.bitbuf = 0 // held nothing but bytes now skipped over
			}
			n += int(ln)
		case 1:
			fixedOnce.Do(buildFixed)
			var ok bool
			if n, ok = s.block(&fixedLit, &fixedDist, &fixedLitCodes, out, n); !ok {
				return 0, false
			}
		case 2:
			if !s.dynamic() {
				return 0, false
			}
			var ok bool
			if n, ok = s.block(&s.lit, &s.dist, &s.litCodes, out, n); !ok {
				return 0, false
			}
		default:
			return 0, false
		}
		if n > len(out) {
			return 0, false
		}
		if final {
			if n != len(out) || !s.overread() {
				return 0, false
			}
			return s.pos + int(s.over) - int(s.nbits/8), true
		}
	}
}

// deflateScan is strictDeflate's state: the bit reader and the two codes
// of the current block, reused from block to block and stream to stream.
type deflateScan struct {
	src    []byte
	pos    int    // next byte of src to load into bitbuf
	bitbuf uint64 // low bits first
	nbits  uint   // valid bits in bitbuf
	over   uint   // zero bytes loaded past the end of src
	lit    huffCode
	dist   huffCode
	pre    huffCode
	lens   [maxLitSyms + maxDistSyms]uint8
	// litCodes is, for each byte, its codeword in lit (bit-reversed, as it
	// is read) in the low 16 bits and the mask of its length above;
	// noCodeword when it has none.
	litCodes [256]uint32
}

// noCodeword is the litCodes entry of a byte without a codeword: no bits
// match it.
const noCodeword = 0xffff

const (
	maxLitSyms  = 286 // literal/length symbols Go's decoders accept (0..285)
	maxDistSyms = 30  // distance symbols Go's decoders accept (0..29)
	huffFast    = 10  // bits of the direct lookup table
)

// huffCode is a canonical Huffman code: a direct table for the codewords
// of up to huffFast bits, and the counts and sorted symbols that decode
// the longer ones (and refuse the unused codewords of an incomplete code).
type huffCode struct {
	fast  [1 << huffFast]uint16 // sym<<4 | length; 0: longer, or unused
	count [16]uint16            // codewords of each length
	syms  [maxLitSyms + 2]uint16
}

// init builds the code for lens, as Go's decoders accept it: complete,
// empty, or a single codeword of one bit. An unused codeword decodes to
// nothing (see decode). When codes is not nil, it gets the codeword of
// each of the first 256 symbols (see deflateScan.litCodes).
func (h *huffCode) init(lens []uint8, codes *[256]uint32) bool {
	h.count = [16]uint16{}
	for _, l := range lens {
		h.count[l]++
	}
	h.count[0] = 0
	used, code := 0, 0
	for l := 1; l < 16; l++ {
		code = code<<1 + int(h.count[l])
		used += int(h.count[l])
	}
	// code is now the codewords used, in units of 2^-15 of the codespace.
	switch {
	case used == 0:
	case code == 1<<15:
	case used == 1 && h.count[1] == 1:
	default:
		return false
	}
	var offs [16]uint16
	for l := 1; l < 15; l++ {
		offs[l+1] = offs[l] + h.count[l]
	}
	for sym, l := range lens {
		if l != 0 {
			h.syms[offs[l]] = uint16(sym)
			offs[l]++
		}
	}
	h.fast = [1 << huffFast]uint16{}
	if codes != nil {
		for i := range codes {
			codes[i] = noCodeword
		}
	}
	next := 0
	i := 0
	for l := 1; l < 16; l++ {
		for k := 0; k < int(h.count[l]); k++ {
			rev := int(bits.Reverse16(uint16(next)) >> (16 - l))
			sym := h.syms[i]
			if codes != nil && sym < 256 {
				codes[sym] = uint32(rev) | (1<<l-1)<<16
			}
			if l <= huffFast {
				e := sym<<4 | uint16(l)
				for j := rev; j < 1<<huffFast; j += 1 << l {
					h.fast[j] = e
				}
			}
			next++
			i++
		}
		next <<= 1
	}
	return true
}

// decode reads one symbol of h; ok is false for an unused codeword. The
// bit buffer holds at least 15 bits (need).
func (s *deflateScan) decode(h *huffCode) (sym int, ok bool) {
	if e := h.fast[s.bitbuf&(1<<huffFast-1)]; e != 0 {
		s.drop(uint(e & 15))
		return int(e >> 4), true
	}
	// Canonical decoding, one bit at a time (as zlib's puff does).
	b := s.bitbuf
	code, first, index := 0, 0, 0
	for l := 1; l < 16; l++ {
		code |= int(b & 1)
		b >>= 1
		c := int(h.count[l])
		if code-c < first {
			s.drop(uint(l))
			return int(h.syms[index+code-first]), true
		}
		index += c
		first = (first + c) << 1
		code <<= 1
	}
	return 0, false
}

// The codes of fixed Huffman blocks (RFC 1951 3.2.6), symbols 286, 287
// and distances 30, 31 included: block refuses those.
var (
	fixedOnce           sync.Once
	fixedLit, fixedDist huffCode
	fixedLitCodes       [256]uint32
)

func buildFixed() {
	var l [288]uint8
	for i := range l {
		switch {
		case i < 144:
			l[i] = 8
		case i < 256:
			l[i] = 9
		case i < 280:
			l[i] = 7
		default:
			l[i] = 8
		}
	}
	fixedLit.init(l[:], &fixedLitCodes)
	var d [32]uint8
	for i := range d {
		d[i] = 5
	}
	fixedDist.init(d[:], nil)
}

var (
	lengthBase  = [29]uint16{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	lengthExtra = [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	distBase    = [30]uint16{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
	distExtra   = [30]uint8{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}
)

// block reads the symbols of one Huffman block to its end of block and
// returns the bytes they stand for.
// block parses the symbols of one Huffman block to its end of block, from
// byte n of out, and returns where in out the block ends. The bit reader
// lives in locals here, the one loop that runs once a symbol.
func (s *deflateScan) block(lit, dist *huffCode, codes *[256]uint32, out []byte, n int) (int, bool) {
	src := s.src
	bitbuf, nbits, pos := s.bitbuf, s.nbits, s.pos
	for {
		if nbits < 48 {
			if pos+8 <= len(src) {
				bitbuf |= binary.LittleEndian.Uint64(src[pos:]) << nbits
				pos += int(63-nbits) >> 3
				nbits |= 56
			} else {
				s.bitbuf, s.nbits, s.pos = bitbuf, nbits, pos
				if !s.need(48) {
					return 0, false
				}
				bitbuf, nbits, pos = s.bitbuf, s.nbits, s.pos
			}
		}
		// Literals, while the next bits are the codeword of the byte out
		// has next (three fit in the 48 bits: codewords have 15 at most).
		if len(out)-n >= 3 {
			c := codes[out[n]]
			if uint32(bitbuf)&(c>>16) == c&0xffff {
				l := uint(bits.Len32(c>>16)) & 15
				bitbuf >>= l
				nbits -= l
				n++
				c = codes[out[n]]
				if uint32(bitbuf)&(c>>16) == c&0xffff {
					l := uint(bits.Len32(c>>16)) & 15
					bitbuf >>= l
					nbits -= l
					n++
					c = codes[out[n]]
					if uint32(bitbuf)&(c>>16) == c&0xffff {
						l := uint(bits.Len32(c>>16)) & 15
						bitbuf >>= l
						nbits -= l
						n++
						continue
					}
				}
			}
		} else if n < len(out) {
			if c := codes[out[n]]; uint32(bitbuf)&(c>>16) == c&0xffff {
				l := uint(bits.Len32(c>>16)) & 15
				bitbuf >>= l
				nbits -= l
				n++
				continue
			}
		}
		// Anything else: a length, the end of the block, or not Go's
		// reading. A symbol, its extra bits, a distance and its extra
		// bits take 48 bits at most.
		if nbits < 48 {
			if pos+8 <= len(src) {
				bitbuf |= binary.LittleEndian.Uint64(src[pos:]) << nbits
				pos += int(63-nbits) >> 3
				nbits |= 56
			} else {
				s.bitbuf, s.nbits, s.pos = bitbuf, nbits, pos
				if !s.need(48) {
					return 0, false
				}
				bitbuf, nbits, pos = s.bitbuf, s.nbits, s.pos
			}
		}
		var sym int
		if e := lit.fast[bitbuf&(1<<huffFast-1)]; e != 0 {
			bitbuf >>= e & 15
			nbits -= uint(e & 15)
			sym = int(e >> 4)
		} else {
			var ok bool
			s.bitbuf, s.nbits = bitbuf, nbits
			if sym, ok = s.decode(lit); !ok {
				return 0, false
			}
			bitbuf, nbits = s.bitbuf, s.nbits
		}
		switch {
		case sym < 256:
			return 0, false // a literal out does not have: not Go's reading
		case sym == 256:
			s.bitbuf, s.nbits, s.pos = bitbuf, nbits, pos
			return n, true
		case sym > 285:
			return 0, false
		}
		sym -= 257
		length := int(lengthBase[sym]) + int(bitbuf&(1<<(lengthExtra[sym]&7)-1))
		bitbuf >>= lengthExtra[sym] & 7
		nbits -= uint(lengthExtra[sym] & 7)
		var d int
		if e := dist.fast[bitbuf&(1<<huffFast-1)]; e != 0 {
			bitbuf >>= e & 15
			nbits -= uint(e & 15)
			d = int(e >> 4)
		} else {
			var ok bool
			s.bitbuf, s.nbits = bitbuf, nbits
			if d, ok = s.decode(dist); !ok {
				return 0, false
			}
			bitbuf, nbits = s.bitbuf, s.nbits
		}
		if d >= maxDistSyms {
			return 0, false
		}
		back := int(distBase[d]) + int(bitbuf&(1<<(distExtra[d]&15)-1))
		bitbuf >>= distExtra[d] & 15
		nbits -= uint(distExtra[d] & 15)
		// The copy is what out holds, overlapping or not: each byte the
		// one back before it.
		if back > n || length > len(out)-n || string(out[n:n+length]) != string(out[n-back:n-back+length]) {
			return 0, false
		}
		n += length
	}
}

var codeOrder = [19]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}

// dynamic reads the header of a dynamic Huffman block into s.lit and
// s.dist, refusing what Go's decoders refuse.
func (s *deflateScan) dynamic() bool {
	if !s.need(14) {
		return false
	}
	nlit := int(s.bitbuf&31) + 257
	ndist := int(s.bitbuf>>5&31) + 1
	nclen := int(s.bitbuf>>10&15) + 4
	s.drop(14)
	if nlit > maxLitSyms || ndist > maxDistSyms {
		return false
	}
	var pl [19]uint8
	for i := 0; i < nclen; i++ {
		if !s.need(3) {
			return false
		}
		pl[codeOrder[i]] = uint8(s.bitbuf & 7)
		s.drop(3)
	}
	if !s.pre.init(pl[:], nil) {
		return false
	}
	lens := s.lens[:nlit+ndist]
	for i := 0; i < len(lens); {
		if !s.need(15 + 7) {
			return false
		}
		x, ok := s.decode(&s.pre)
		if !ok {
			return false
		}
		if x < 16 {
			lens[i] = uint8(x)
			i++
			continue
		}
		var rep int
		var v uint8
		switch x {
		case 16:
			if i == 0 {
				return false
			}
			rep, v = 3+int(s.bitbuf&3), lens[i-1]
			s.drop(2)
		case 17:
			rep = 3 + int(s.bitbuf&7)
			s.drop(3)
		default:
			rep = 11 + int(s.bitbuf&127)
			s.drop(7)
		}
		if i+rep > len(lens) {
			return false
		}
		for j := 0; j < rep; j++ {
			lens[i] = v
			i++
		}
	}
	return s.lit.init(lens[:nlit], &s.litCodes) && s.dist.init(lens[nlit:], nil)
}

// need makes the bit buffer hold at least k bits (k <= 56), loading zero
// bytes past the end of src, which overread then refuses if they were
// used; false when even those would not do (a stream that runs on).
func (s *deflateScan) need(k uint) bool {
	if s.nbits >= k {
		return true
	}
	if s.pos+8 <= len(s.src) {
		s.bitbuf |= binary.LittleEndian.Uint64(s.src[s.pos:]) << s.nbits
		s.pos += int(63-s.nbits) >> 3
		s.nbits |= 56
		return true
	}
	for s.nbits < k {
		if s.pos < len(s.src) {
			s.bitbuf |= uint64(s.src[s.pos]) << s.nbits
			s.pos++
		} else {
			s.over++
			if s.over > 8 {
				return false
			}
		}
		s.nbits += 8
	}
	return true
}

func (s *deflateScan) drop(k uint) {
	s.bitbuf >>= k
	s.nbits -= k
}

// overread reports whether the stream ended inside src: the zero bytes
// need loaded past its end are still unread in the bit buffer.
func (s *deflateScan) overread() bool { return s.nbits >= 8*s.over }
