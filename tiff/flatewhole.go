package tiff

import (
	"encoding/binary"
	"math/bits"
	"sync"
)

// wholeFlate inflates a zlib stream held whole in memory into a buffer of
// the most it may decompress to, in one call and in pure Go: the strict
// count's inflater for a Deflate block read whole. It is about twice as
// fast as a streaming decoder (klauspost/compress) on noisy masters: it
// refills its bit buffer 56 bits at a time instead of a byte at a time,
// looks codes up in one table of 2048 entries, and writes the output once,
// with no window to copy it out of.
//
// It accepts only what compress/zlib accepts, to the same bytes: the same
// header rules, Huffman codes complete (or a single code of one bit, or
// empty and never used), no length symbol 286 or 287 nor distance symbol
// 30 or 31, no distance behind the start, every bit and the Adler-32 in
// the input. It refuses more than compress/zlib does (a preset dictionary,
// output past the buffer): a refusal only sends the block to the streaming
// decoder, which counts it as it always has. The differential and fuzz
// tests (inflate_backend_test.go) hold it to that.
type wholeFlate struct {
	lit    [1 << litMainBits]uint32
	litSub [288 << (15 - litMainBits)]uint32
	dist   [1 << distMainBits]uint32
	dSub   [32 << (15 - distMainBits)]uint32
	pre    [1 << 7]uint32
	lens   [286 + 30]uint8
}

const (
	litMainBits  = 11 // the literal/length table's index bits; longer codes go to a subtable
	distMainBits = 8
)

// A table entry: the bits the code takes (bits 0-5; 0 is no code), the
// extra bits to read after it or a subtable's index bits (8-11), a kind
// (12-14), a value (16-30: the literal, the base of a length or distance,
// the code length symbol, or where a subtable starts), and in bit 31 a
// copy of kindLit, for the literal loop's test.
const (
	kindNone  = 0 << 12 // no code: the stream is corrupt
	kindLit   = 1 << 12
	kindLen   = 2 << 12
	kindEnd   = 3 << 12
	kindDist  = 4 << 12
	kindSub   = 5 << 12
	kindMask  = 7 << 12
	litFlag   = 1 << 31
	entryBits = 63 // what a shift by the entry takes: the code's bits
	valueMask = 1<<15 - 1
)

func flateEntry(kind, value, extra uint32) uint32 {
	e := value<<16 | kind | extra<<8
	if kind == kindLit {
		e |= litFlag
	}
	return e
}

// litEntries and distEntries are the entries of each symbol, without the
// code's length: the literal/length symbols 286 and 287 and the distance
// symbols 30 and 31 have none (a fixed block may hold their codes;
// compress/flate refuses them).
var litEntries, distEntries = func() (lit [288]uint32, dist [32]uint32) {
	for s := range 256 {
		lit[s] = flateEntry(kindLit, uint32(s), 0)
	}
	lit[256] = flateEntry(kindEnd, 0, 0)
	base := uint32(3)
	for s := 257; s < 285; s++ {
		extra := uint32(0)
		if s >= 265 {
			extra = uint32(s-261) / 4
		}
		lit[s] = flateEntry(kindLen, base, extra)
		base += 1 << extra
	}
	lit[285] = flateEntry(kindLen, 258, 0)
	base = 1
	for s := range 30 {
		extra := uint32(0)
		if s >= 4 {
			extra = uint32(s-2) / 2
		}
		dist[s] = flateEntry(kindDist, base, extra)
		base += 1 << extra
	}
	return lit, dist
}()

// preEntries are the code length code's: the symbol itself.
var preEntries = func() (pre [19]uint32) {
	for s := range pre {
		pre[s] = flateEntry(kindLit, uint32(s), 0)
	}
	return pre
}()

// fixedTables are the literal/length and distance tables of a fixed
// Huffman block (RFC 1951 3.2.6).
var fixedTables = sync.OnceValue(func() *wholeFlate {
	f := new(wholeFlate)
	var lens [288]uint8
	for s := range lens {
		switch {
		case s < 144:
			lens[s] = 8
		case s < 256:
			lens[s] = 9
		case s < 280:
			lens[s] = 7
		default:
			lens[s] = 8
		}
	}
	var dl [32]uint8
	for s := range dl {
		dl[s] = 5
	}
	if !buildTable(f.lit[:], f.litSub[:], litMainBits, lens[:], litEntries[:]) ||
		!buildTable(f.dist[:], f.dSub[:], distMainBits, dl[:], distEntries[:]) {
		panic("tiff: the fixed Huffman code does not build")
	}
	return f
})

// buildTable fills main (and sub) with the canonical Huffman code of
// lens, each symbol's entry from ents, by compress/flate's rules: false
// for a code that is over- or under-subscribed, except a single code of
// one bit (the other bit pattern has no entry) and an empty code (no
// pattern has one).
func buildTable(main, sub []uint32, mainBits uint, lens []uint8, ents []uint32) bool {
	var count [16]uint32
	maxLen := uint(0)
	for _, n := range lens {
		count[n]++
		maxLen = max(maxLen, uint(n))
	}
	count[0] = 0
	var next [16]uint32
	var code uint32
	for n := 1; n < 16; n++ {
		code = (code + count[n-1]) << 1
		next[n] = code
	}
	// A complete code fills all 1<<maxLen patterns of its longest codes.
	switch {
	case maxLen == 0:
		clear(main)
		return true
	case next[maxLen]+count[maxLen] == 1<<maxLen:
	case maxLen == 1 && count[1] == 1:
		clear(main)
	default:
		return false
	}
	subBits, first := uint(0), uint32(0)
	if maxLen > mainBits {
		// The codes longer than the main table share the prefixes from
		// first on (canonical codes grow with their length): a subtable
		// of 1<<subBits entries each, in prefix order.
		subBits, first = maxLen-mainBits, next[mainBits+1]>>1
		for pre := first; pre < 1<<mainBits; pre++ {
			rev := uint32(bits.Reverse16(uint16(pre)) >> (16 - mainBits))
			main[rev] = flateEntry(kindSub, (pre-first)<<subBits, uint32(subBits))
		}
	}
	for s, n := range lens {
		if n == 0 {
			continue
		}
		c := next[n]
		next[n]++
		rev := uint32(bits.Reverse16(uint16(c)) >> (16 - n))
		e := ents[s] | uint32(n)
		if uint(n) <= mainBits {
			for i := rev; i < uint32(len(main)); i += 1 << n {
				main[i] = e
			}
			continue
		}
		start := (c>>(uint(n)-mainBits) - first) << subBits
		for i := rev >> mainBits; i < 1<<subBits; i += 1 << (uint(n) - mainBits) {
			sub[start+i] = e
		}
	}
	return true
}

// zlib inflates the zlib stream at the start of in into out, which holds
// the most it may decompress to, and returns the bytes it made and the
// bytes of in the stream took (header and checksum included). ok is false
// for anything but a complete stream whose checksum matched and whose
// output fit, and for what compress/zlib would read but this does not (a
// preset dictionary).
func (f *wholeFlate) zlib(in, out []byte) (n, used int, ok bool) {
	if len(in) < 2 {
		return 0, 0, false
	}
	cmf, flg := in[0], in[1]
	if cmf&0x0f != 8 || cmf>>4 > 7 || (uint(cmf)<<8|uint(flg))%31 != 0 || flg&0x20 != 0 {
		return 0, 0, false
	}
	n, end, ok := f.inflate(in[2:], out)
	if !ok || len(in)-2-end < 4 {
		return 0, 0, false
	}
	if binary.BigEndian.Uint32(in[2+end:]) != adler32Sum(out[:n]) {
		return 0, 0, false
	}
	return n, 2 + end + 4, true
}

// bitReader reads a Deflate stream's bits from in, least significant
// first, in refills of 56 bits.
type bitReader struct {
	in   []byte
	b    uint64 // the bits read and not taken, from bit 0; those above nb are in's next, or 0
	nb   uint   // how many
	ip   int    // the next byte of in to read into b
	over int    // bytes of zeros read past the end of in
}

// refill makes nb at least 56, reading zeros past the end of in (the bits
// taken are checked against it where the stream ends): false once it has
// read far past it.
func (r *bitReader) refill() bool {
	if r.ip+8 <= len(r.in) {
		r.b |= binary.LittleEndian.Uint64(r.in[r.ip:]) << r.nb
		r.ip += int(63-r.nb) >> 3
		r.nb |= 56
		return true
	}
	for r.nb <= 56 {
		if r.ip < len(r.in) {
			r.b |= uint64(r.in[r.ip]) << r.nb
			r.ip++
		} else {
			r.over++
		}
		r.nb += 8
	}
	return r.over <= 16
}

// take drops the next n bits.
func (r *bitReader) take(n uint) {
	r.b >>= n
	r.nb -= n
}

// inflate decompresses the Deflate stream at the start of in into out and
// returns the bytes it made and the bytes of in the stream took, to the
// byte that holds its last bit.
func (f *wholeFlate) inflate(in, out []byte) (n, end int, ok bool) {
	r := bitReader{in: in}
	o := 0
	fixed := fixedTables()
	dynamic := 0
	for final := false; !final; {
		if r.nb < 3 && !r.refill() {
			return 0, 0, false
		}
		final = r.b&1 == 1
		typ := r.b >> 1 & 3
		r.take(3)
		var t *wholeFlate
		switch typ {
		case 0:
			// Stored: to the next byte, then LEN and its complement.
			r.take(r.nb & 7)
			at := r.ip + r.over - int(r.nb/8)
			if at > len(in)-4 {
				return 0, 0, false
			}
			m := int(binary.LittleEndian.Uint16(in[at:]))
			if uint16(m) != ^binary.LittleEndian.Uint16(in[at+2:]) || m > len(in)-at-4 || m > len(out)-o {
				return 0, 0, false
			}
			o += copy(out[o:], in[at+4:at+4+m])
			r = bitReader{in: in, ip: at + 4 + m}
			continue
		case 1:
			t = fixed
		case 2:
			// A table costs about 2,500 writes: past one for each KiB
			// made (encoders make one for tens), the streaming decoder,
			// whose tables are a quarter of the size, counts the block.
			if dynamic++; dynamic > 16 && dynamic > o>>10 {
				return 0, 0, false
			}
			if !f.header(&r) {
				return 0, 0, false
			}
			t = f
		default:
			return 0, 0, false
		}
		if o, ok = t.block(&r, out, o); !ok {
			return 0, 0, false
		}
	}
	taken := (r.ip+r.over)*8 - int(r.nb)
	if taken > len(in)*8 {
		return 0, 0, false
	}
	return o, (taken + 7) / 8, true
}

// block decodes one Huffman block's symbols with t's tables into out from
// o, through its end-of-block code, and returns where its output ends.
func (t *wholeFlate) block(r *bitReader, out []byte, o int) (int, bool) {
	lit, dist := &t.lit, &t.dist
	b, nb, in, ip := r.b, r.nb, r.in, r.ip
	for {
		// Literals while they come, the noisy pixels' common case: up
		// to three a refill, in a loop of their own (its few variables
		// stay in registers).
		for {
			if nb < 48 {
				// Enough for a length and a distance with their extra
				// bits, or three literals of the main table.
				if ip+8 > len(in) {
					break
				}
				b |= binary.LittleEndian.Uint64(in[ip:]) << nb
				ip += int(63-nb) >> 3
				nb |= 56
			}
			e := lit[b&(1<<litMainBits-1)]
			if e&litFlag == 0 || o >= len(out)-2 {
				break
			}
			out[o] = byte(e >> 16)
			b >>= e & entryBits
			nb -= uint(e & entryBits)
			e = lit[b&(1<<litMainBits-1)]
			if e&litFlag == 0 {
				o++
				continue
			}
			out[o+1] = byte(e >> 16)
			b >>= e & entryBits
			nb -= uint(e & entryBits)
			e = lit[b&(1<<litMainBits-1)]
			if e&litFlag == 0 {
				o += 2
				continue
			}
			out[o+2] = byte(e >> 16)
			o += 3
			b >>= e & entryBits
			nb -= uint(e & entryBits)
		}
		if nb < 48 {
			r.b, r.nb, r.ip = b, nb, ip
			if !r.refill() {
				return 0, false
			}
			b, nb, ip = r.b, r.nb, r.ip
		}
		e := lit[b&(1<<litMainBits-1)]
		if e&kindMask == kindSub {
			e = t.litSub[e>>16&valueMask+uint32(b>>litMainBits)&(1<<(e>>8&15)-1)]
		}
		switch e & kindMask {
		case kindLen:
		case kindLit:
			if o >= len(out) {
				return 0, false
			}
			out[o] = byte(e >> 16)
			o++
			b >>= e & entryBits
			nb -= uint(e & entryBits)
			continue
		case kindEnd:
			r.b, r.nb, r.ip = b>>(e&entryBits), nb-uint(e&entryBits), ip
			return o, true
		default:
			return 0, false
		}
		cl, x := e&entryBits, e>>8&15
		length := int(e>>16&valueMask) + int(b>>cl&(1<<x-1))
		b >>= cl + x
		nb -= uint(cl + x)
		d := dist[b&(1<<distMainBits-1)]
		if d&kindMask == kindSub {
			d = t.dSub[d>>16&valueMask+uint32(b>>distMainBits)&(1<<(d>>8&15)-1)]
		}
		if d&kindMask != kindDist {
			return 0, false
		}
		cl, x = d&entryBits, d>>8&15
		back := int(d>>16&valueMask) + int(b>>cl&(1<<x-1))
		b >>= cl + x
		nb -= uint(cl + x)
		if back > o || length > len(out)-o {
			return 0, false
		}
		from, to := o-back, o+length
		for o < to {
			o += copy(out[o:to], out[from:o])
		}
	}
}

// header reads a dynamic block's code lengths (RFC 1951 3.2.7) and builds
// f's literal/length and distance tables from them.
func (f *wholeFlate) header(r *bitReader) bool {
	if r.nb < 14 && !r.refill() {
		return false
	}
	nlit := int(r.b&31) + 257
	ndist := int(r.b>>5&31) + 1
	npre := int(r.b>>10&15) + 4
	r.take(14)
	if nlit > 286 || ndist > 30 {
		return false
	}
	var preLens [19]uint8
	for i := range npre {
		if r.nb < 3 && !r.refill() {
			return false
		}
		preLens[preOrder[i]] = uint8(r.b & 7)
		r.take(3)
	}
	if !buildTable(f.pre[:], nil, 7, preLens[:], preEntries[:]) {
		return false
	}
	lens := f.lens[:nlit+ndist]
	for i := 0; i < len(lens); {
		if r.nb < 14 && !r.refill() {
			return false
		}
		e := f.pre[r.b&127]
		if e&kindMask != kindLit {
			return false
		}
		r.take(uint(e & entryBits))
		sym := e >> 16 & valueMask
		if sym < 16 {
			lens[i] = uint8(sym)
			i++
			continue
		}
		var rep int
		var v uint8
		switch sym {
		case 16:
			if i == 0 {
				return false
			}
			rep, v = 3+int(r.b&3), lens[i-1]
			r.take(2)
		case 17:
			rep = 3 + int(r.b&7)
			r.take(3)
		default:
			rep = 11 + int(r.b&127)
			r.take(7)
		}
		if rep > len(lens)-i {
			return false
		}
		for range rep {
			lens[i] = v
			i++
		}
	}
	return buildTable(f.lit[:], f.litSub[:], litMainBits, lens[:nlit], litEntries[:]) &&
		buildTable(f.dist[:], f.dSub[:], distMainBits, lens[nlit:], distEntries[:])
}

// preOrder is the order of the code length code's lengths.
var preOrder = [19]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}

// adler32Sum is hash/adler32.Checksum of p, sixteen bytes a step: what a
// step adds to each sum comes from multiplications of its bytes spread
// over 16-bit lanes, not from sixteen additions each.
func adler32Sum(p []byte) uint32 {
	const (
		mod   = 65521
		chunk = 4 << 10 // bytes between reductions: the sums stay far below 1<<64
		lanes = 0x00ff00ff00ff00ff
		ones  = 1<<48 | 1<<32 | 1<<16 | 1
		// Eight bytes add 8*s1 + 8*b0 + 7*b1 + ... + 1*b7 to s2: the
		// weights of the even bytes and of the odd ones, lane 3 first.
		even = 8<<48 | 6<<32 | 4<<16 | 2
		odd  = 7<<48 | 5<<32 | 3<<16 | 1
	)
	s1, s2 := uint64(1), uint64(0)
	for len(p) >= 16 {
		n := min(len(p), chunk) &^ 15
		for q := p[:n]; len(q) >= 16; q = q[16:] {
			a, b := binary.LittleEndian.Uint64(q), binary.LittleEndian.Uint64(q[8:])
			ae, ao, be, bo := a&lanes, a>>8&lanes, b&lanes, b>>8&lanes
			sa := ((ae + ao) * ones) >> 48
			// The first word's bytes count 8 more times each.
			s2 += s1<<4 + sa<<3 + ((ae+be)*even+(ao+bo)*odd)>>48
			s1 += sa + ((be+bo)*ones)>>48
		}
		p = p[n:]
		s1 %= mod
		s2 %= mod
	}
	for _, x := range p {
		s1 += uint64(x)
		s2 += s1
	}
	return uint32(s2%mod)<<16 | uint32(s1%mod)
}
