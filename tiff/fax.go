package tiff

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strings"
)

// This file decodes CCITT fax data (TIFF compressions 2, 3 and 4: ITU-T
// T.4 Modified Huffman and Modified READ, T.6 Modified Modified READ) for
// the pages golang.org/x/image/ccitt declines: Group 3 with EOL codes
// padded to byte boundaries (T4Options bit 2) or without EOL codes at
// all, Group 3 2-D, and runs that reach past the row's end (cut at the
// row, as libtiff cuts them). It decodes every row to its changing
// elements, two rows at a time, and keeps no image.

// The code tables of ITU-T T.4 (tables 2 and 3, and the extended make-up
// codes of T.4 annex / T.6): each string is a code word, its index in the
// list (or the make-up value) the run length.
var (
	faxWhiteTerm = strings.Fields(`00110101 000111 0111 1000 1011 1100 1110 1111 10011 10100 00111 01000
		001000 000011 110100 110101 101010 101011 0100111 0001100 0001000 0010111 0000011 0000100
		0101000 0101011 0010011 0100100 0011000 00000010 00000011 00011010 00011011 00010010
		00010011 00010100 00010101 00010110 00010111 00101000 00101001 00101010 00101011 00101100
		00101101 00000100 00000101 00001010 00001011 01010010 01010011 01010100 01010101 00100100
		00100101 01011000 01011001 01011010 01011011 01001010 01001011 00110010 00110011 00110100`)
	faxWhiteMakeup = strings.Fields(`11011 10010 010111 0110111 00110110 00110111 01100100 01100101
		01101000 01100111 011001100 011001101 011010010 011010011 011010100 011010101 011010110
		011010111 011011000 011011001 011011010 011011011 010011000 010011001 010011010 011000
		010011011`)
	faxBlackTerm = strings.Fields(`0000110111 010 11 10 011 0011 0010 00011 000101 000100 0000100
		0000101 0000111 00000100 00000111 000011000 0000010111 0000011000 0000001000 00001100111
		00001101000 00001101100 00000110111 00000101000 00000010111 00000011000 000011001010
		000011001011 000011001100 000011001101 000001101000 000001101001 000001101010 000001101011
		000011010010 000011010011 000011010100 000011010101 000011010110 000011010111 000001101100
		000001101101 000011011010 000011011011 000001010100 000001010101 000001010110 000001010111
		000001100100 000001100101 000001010010 000001010011 000000100100 000000110111 000000111000
		000000100111 000000101000 000001011000 000001011001 000000101011 000000101100 000001011010
		000001100110 000001100111`)
	faxBlackMakeup = strings.Fields(`0000001111 000011001000 000011001001 000001011011 000000110011
		000000110100 000000110101 0000001101100 0000001101101 0000001001010 0000001001011
		0000001001100 0000001001101 0000001110010 0000001110011 0000001110100 0000001110101
		0000001110110 0000001110111 0000001010010 0000001010011 0000001010100 0000001010101
		0000001011010 0000001011011 0000001100100 0000001100101`)
	// Extended make-up codes, 1792 to 2560, for both colours.
	faxExtMakeup = strings.Fields(`00000001000 00000001100 00000001101 000000010010 000000010011
		000000010100 000000010101 000000010110 000000010111 000000011100 000000011101 000000011110
		000000011111`)
)

// 2-D mode codes (T.4 table 4).
const (
	modePass = iota
	modeHorizontal
	modeV0
	modeVR1
	modeVR2
	modeVR3
	modeVL1
	modeVL2
	modeVL3
)

var faxModes = map[string]int{"0001": modePass, "001": modeHorizontal, "1": modeV0, "011": modeVR1,
	"000011": modeVR2, "0000011": modeVR3, "010": modeVL1, "000010": modeVL2, "0000010": modeVL3}

// faxTable decodes one kind of code: lut[n][code] is the value+1 of the
// n-bit code word code, 0 when there is none.
type faxTable struct {
	lut    [14][]int32
	minLen uint
	maxLen uint
}

func newFaxTable(codes map[string]int) *faxTable {
	t := &faxTable{minLen: 14}
	for c, v := range codes {
		n := uint(len(c))
		if t.lut[n] == nil {
			t.lut[n] = make([]int32, 1<<n)
		}
		var code uint32
		for _, b := range c {
			code = code<<1 | uint32(b-'0')
		}
		t.lut[n][code] = int32(v) + 1
		t.minLen, t.maxLen = min(t.minLen, n), max(t.maxLen, n)
	}
	return t
}

func runCodes(term, makeup []string) map[string]int {
	m := map[string]int{}
	for i, c := range term {
		m[c] = i
	}
	for i, c := range makeup {
		m[c] = 64 * (i + 1)
	}
	for i, c := range faxExtMakeup {
		m[c] = 1792 + 64*i
	}
	return m
}

var (
	faxWhite = newFaxTable(runCodes(faxWhiteTerm, faxWhiteMakeup))
	faxBlack = newFaxTable(runCodes(faxBlackTerm, faxBlackMakeup))
	faxMode  = newFaxTable(faxModes)
)

// faxBits reads a block's bits, first bit first: the most significant bit
// of each byte first, or the least with FillOrder 2.
type faxBits struct {
	r    *bufio.Reader
	lsb  bool
	acc  uint64 // the next bits, from the top
	n    uint   // bits in acc
	read int64  // bytes taken from r
	eof  bool
	err  error // a read error of the storage
}

func (f *faxBits) fill() {
	for f.n <= 56 && !f.eof {
		c, err := f.r.ReadByte()
		if err != nil {
			f.eof = true
			var re *readErr
			if errors.As(err, &re) {
				f.err = re.err
			}
			return
		}
		if f.lsb {
			c = bits.Reverse8(c)
		}
		f.acc |= uint64(c) << (56 - f.n)
		f.n += 8
		f.read++
	}
}

// peek returns the next k (1..32) bits; ok is false when fewer remain.
func (f *faxBits) peek(k uint) (uint32, bool) {
	if f.n < k {
		f.fill()
	}
	return uint32(f.acc >> (64 - k)), f.n >= k
}

func (f *faxBits) skip(k uint) { f.acc <<= k; f.n -= k }

// align drops the rest of the current byte.
func (f *faxBits) align() { f.skip(f.n % 8) }

// at is the offset, in the block, of the byte holding the next bit.
func (f *faxBits) at() int64 { return f.read - int64((f.n+7)/8) }

// code reads one code word of table t; -1 when none matches.
func (f *faxBits) code(t *faxTable) int {
	for n := t.minLen; n <= t.maxLen; n++ {
		if t.lut[n] == nil {
			continue
		}
		v, ok := f.peek(n)
		if !ok {
			return -1
		}
		if x := t.lut[n][v]; x != 0 {
			f.skip(n)
			return int(x - 1)
		}
	}
	return -1
}

var (
	errFaxCode = errors.New("invalid CCITT code")
	errFaxEnd  = errors.New("CCITT data ends before the row does")
	// errFaxUncompressed: the code that enters uncompressed mode (T.4
	// annex A), which this decoder does not decode, as libtiff does not.
	errFaxUncompressed = errors.New("CCITT uncompressed mode")
)

// extension reports whether an extension code is next, where a run's
// code (000000001xxx) or a mode code (0000001xxx) should be, and reads
// nothing: its err is errFaxUncompressed for xxx = 111 and errFaxCode for
// the others, which T.4 reserves.
func (f *faxBits) extension(twoD bool) (found bool, err error) {
	n, prefix := uint(12), uint32(1) // 000000001 xxx
	if twoD {
		n = 10 // 0000001 xxx
	}
	v, ok := f.peek(n)
	switch {
	case !ok || v>>3 != prefix:
		return false, nil
	case v&7 == 7:
		return true, errFaxUncompressed
	}
	return true, errFaxCode
}

// run reads one run length: make-up codes, then a terminating code.
func (f *faxBits) run(black bool) (int, error) {
	t := faxWhite
	if black {
		t = faxBlack
	}
	total := 0
	for {
		v := f.code(t)
		if v < 0 {
			if found, err := f.extension(false); found {
				return 0, err
			}
			if _, ok := f.peek(t.maxLen); !ok {
				return 0, errFaxEnd
			}
			return 0, errFaxCode
		}
		total += v
		if v < 64 {
			return total, nil
		}
		if total > 1<<24 {
			return 0, errFaxCode
		}
	}
}

// eol consumes an EOL code (eleven or more zero bits, fill bits
// included, then a one) if one is next, and reports whether it did;
// nothing is consumed when it is not.
func (f *faxBits) eol() bool {
	zeros := uint(0)
	for {
		f.fill()
		if f.n == 0 {
			return false
		}
		z := min(uint(bits.LeadingZeros64(f.acc)), f.n)
		if z < f.n {
			if zeros+z >= 11 {
				f.skip(z + 1)
				return true
			}
			return false // zeros is 0 here: only all-zero windows are consumed
		}
		// Every bit held is zero: fill, or zeros to the end of the data.
		zeros += f.n
		f.skip(f.n)
		if f.eof {
			return false
		}
	}
}

// faxLine decodes rows of one block, keeping the reference row's changing
// elements.
type faxLine struct {
	width int
	limit int   // most changing elements a row may hold: its width, or what the memory budget leaves
	ref   []int // changing elements of the row above, then width, width
	cur   []int
}

func (l *faxLine) reset() {
	l.ref = append(l.ref[:0], l.width, l.width)
}

// oneD decodes a row of alternating white and black runs (Modified
// Huffman).
func (l *faxLine) oneD(f *faxBits) error {
	l.cur = l.cur[:0]
	a0, black := 0, false
	for a0 < l.width {
		r, err := f.run(black)
		if err != nil {
			return err
		}
		a0 = min(a0+r, l.width)
		l.cur = append(l.cur, a0)
		black = !black
		if l.full() {
			return errFaxCode
		}
	}
	l.next()
	return nil
}

// twoD decodes a row coded against the row above (Modified READ).
func (l *faxLine) twoD(f *faxBits) error {
	l.cur = l.cur[:0]
	a0, black := -1, false
	p := 0 // first reference element right of a0
	for a0 < l.width {
		if l.full() {
			return errFaxCode
		}
		for p < len(l.ref)-2 && l.ref[p] <= a0 {
			p++
		}
		k := p
		if (k%2 == 1) != black {
			k++
		}
		b1, b2 := l.width, l.width
		if k < len(l.ref) {
			b1 = l.ref[k]
		}
		if k+1 < len(l.ref) {
			b2 = l.ref[k+1]
		}
		if found, err := f.extension(true); found {
			return err
		}
		m := f.code(faxMode)
		switch {
		case m < 0:
			if _, ok := f.peek(faxMode.maxLen); !ok {
				return errFaxEnd
			}
			return errFaxCode
		case m == modePass:
			a0 = b2
		case m == modeHorizontal:
			r1, err := f.run(black)
			if err != nil {
				return err
			}
			r2, err := f.run(!black)
			if err != nil {
				return err
			}
			a1 := min(max(a0, 0)+r1, l.width)
			a2 := min(a1+r2, l.width)
			l.cur = append(l.cur, a1, a2)
			a0 = a2
		default:
			d := [...]int{modeV0: 0, modeVR1: 1, modeVR2: 2, modeVR3: 3, modeVL1: -1, modeVL2: -2, modeVL3: -3}[m]
			a1 := min(b1+d, l.width)
			if a1 < 0 || a1 < a0 {
				return errFaxCode
			}
			l.cur = append(l.cur, a1)
			a0 = a1
			black = !black
		}
	}
	l.next()
	return nil
}

// full reports whether the row holds more changing elements than a row
// of its width can: zero-length runs repeated without end.
func (l *faxLine) full() bool { return len(l.cur) > l.limit }

func (l *faxLine) next() {
	l.ref, l.cur = l.cur, l.ref
	l.ref = append(l.ref, l.width, l.width)
}

// decodeFax decodes every strip or tile of a CCITT page; what golang.org
// x/image/ccitt could not (reason) is retried here. A row that does not
// decode is refused at its byte; one in uncompressed mode, which this
// decoder does not read, leaves the page not decoded where T4Options or
// T6Options allow that mode (bit 1), and is refused as an invalid code
// where they do not.
func decodeFax(r io.ReaderAt, p *Page, avail int64, reason string) (*UnsupportedError, error) {
	return faxRows(r, p, avail, reason, nil)
}

// faxRows is decodeFax; row, if not nil, is handed each row's changing
// elements (the columns where white turns black, black white, ...,
// ending at the width).
func faxRows(r io.ReaderAt, p *Page, avail int64, reason string, row func(block int, y uint64, changes []int)) (*UnsupportedError, error) {
	uncompressed := (p.Compression == 3 && p.T4Options&2 != 0) || (p.Compression == 4 && p.T6Options&2 != 0)
	for i := range p.BlockOffsets {
		off := int64(p.BlockOffsets[i])
		f := &faxBits{r: bufio.NewReaderSize(io.NewSectionReader(storageReader{r}, off, int64(p.BlockCounts[i])), 16<<10), lsb: p.FillOrder == 2}
		width, rows := blockSize(p, i)
		// Two rows of changing elements, 8 bytes each, are held: a row
		// with more than the budget allows is refused before it is grown.
		l := &faxLine{width: int(width), limit: int(min(2*int64(width)+8, avail/16))}
		l.reset()
		for y := uint64(0); y < rows; y++ {
			var err error
			switch p.Compression {
			case 2:
				f.align()
				err = l.oneD(f)
			case 3:
				f.eol()
				if p.T4Options&1 != 0 {
					tag, ok := f.peek(1)
					if !ok {
						err = errFaxEnd
						break
					}
					f.skip(1)
					if tag == 0 {
						err = l.twoD(f)
						break
					}
				}
				err = l.oneD(f)
			case 4:
				err = l.twoD(f)
			}
			if f.err != nil {
				return nil, f.err
			}
			if err == nil && row != nil {
				row(i, y, l.ref[:len(l.ref)-2])
			}
			if errors.Is(err, errFaxCode) && l.full() && l.limit < 2*l.width+8 {
				return nil, &LimitError{Page: p.Index + 1, Path: p.Path, Tag: blockTag(p), Offset: off + f.at(), What: "memory",
					Have: int64(len(l.cur)) * 16, Limit: avail}
			}
			if errors.Is(err, errFaxUncompressed) && uncompressed {
				return &UnsupportedError{Page: p.Index + 1, Path: p.Path, Offset: off + f.at(),
					Reason: fmt.Sprintf("%s; %s %d row %d is in CCITT uncompressed mode, which is not decoded", reason, blockWord(p), i, y+1)}, nil
			}
			if errors.Is(err, errFaxUncompressed) {
				err = fmt.Errorf("%w: uncompressed mode, which %s does not allow", errFaxCode, optionsTag(p))
			}
			if err != nil {
				cause, code := error(ErrUndecodable), "tiff.undecodable"
				if errors.Is(err, errFaxEnd) {
					cause, code = ErrShortData, "tiff.short-data"
				}
				return nil, &FormatError{Page: p.Index + 1, Path: p.Path, Tag: blockTag(p), Offset: off + f.at(), Code: code,
					Err: fmt.Errorf("%w: CCITT %s %d row %d of %d: %v", cause, blockWord(p), i, y+1, rows, err)}
			}
		}
	}
	return nil, nil
}

// faxOwn names why CCITT page p is decoded here from the start instead of
// first through golang.org/x/image/tiff; "" when it is not. That decoder
// reads classic TIFF only, declines compression 2, and ignores T4Options:
// its Group 3 reader takes every row for a one-dimensional one, so in
// two-dimensional data (T4Options bit 0) it reads the tag bit after each
// EOL as the first bit of a run's code, and refuses the page as "invalid
// code" or, where the misread bits happen to form codes, renders other
// pixels than coded.
func faxOwn(info *TIFFInfo, p *Page) string {
	switch {
	case p.Compression != 2 && p.Compression != 3 && p.Compression != 4:
		return ""
	case viewless(info):
		return viewlessReason(info)
	case p.Compression == 2:
		return "the image decoder does not read compression 2 (Modified Huffman)"
	case p.Compression == 3 && p.T4Options&1 != 0:
		return "the image decoder reads Group 3 one-dimensional coding only (T4Options bit 0 is set)"
	case p.Compression == 3 && p.T4Options&2 != 0, p.Compression == 4 && p.T6Options&2 != 0:
		// Uncompressed mode is allowed: that decoder calls its entry code
		// an invalid code, where this one tells it apart.
		return "the image decoder does not read uncompressed mode (" + optionsTag(p) + " bit 1 is set)"
	}
	return ""
}

// optionsTag names the options tag of CCITT page p.
func optionsTag(p *Page) string {
	if p.Compression == 4 {
		return "T6Options"
	}
	return "T4Options"
}
