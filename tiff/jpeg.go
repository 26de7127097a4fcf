package tiff

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"image/jpeg"
	"io"
)

// jpegFrame is what a JPEG stream's frame header (SOFn) says.
type jpegFrame struct {
	marker        byte // 0xc0 baseline ... 0xcf
	precision     int
	width, height uint64
	components    int
	maxH, maxV    int // largest sampling factors
}

func (f jpegFrame) progressive() bool {
	return f.marker == 0xc2 || f.marker == 0xc6 || f.marker == 0xca || f.marker == 0xce
}

// errJPEGStream: a JPEG stream's markers are not what they must be.
var errJPEGStream = errors.New("JPEG stream")

// scanFrame reads markers from a JPEG stream up to its frame header and
// returns it. It reads segment lengths, never allocates by them. It must
// find the frame header image/jpeg will decode by, or refuse the stream:
// where that decoder reads on, this reads the same bytes the same way.
func scanFrame(r io.Reader) (jpegFrame, error) {
	br := bufio.NewReaderSize(r, 4096)
	var f jpegFrame
	var h [2]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		return f, fmt.Errorf("%w: does not start with SOI: %w", errJPEGStream, err)
	} else if h[0] != 0xff || h[1] != 0xd8 {
		return f, fmt.Errorf("%w: does not start with SOI", errJPEGStream)
	}
	for {
		c, err := br.ReadByte()
		if err != nil {
			return f, fmt.Errorf("%w: ends before its frame header: %w", errJPEGStream, err)
		}
		if c != 0xff {
			return f, fmt.Errorf("%w: 0x%02x where a marker must be", errJPEGStream, c)
		}
		m, err := br.ReadByte()
		for err == nil && m == 0xff { // fill bytes
			m, err = br.ReadByte()
		}
		if err != nil {
			return f, fmt.Errorf("%w: ends before its frame header: %w", errJPEGStream, err)
		}
		switch {
		case m == 0x00:
			// image/jpeg takes "\xff\x00" for extraneous data and reads on
			// (then skips to the next 0xff, which this refuses above). Read as
			// a marker segment, its "length" could hide from this scan the
			// frame header image/jpeg decodes by.
			continue
		case m == 0xd8 || m == 0x01 || (m >= 0xd0 && m <= 0xd7):
			continue // no length
		case m == 0xd9 || m == 0xda:
			return f, fmt.Errorf("%w: marker 0x%02x before any frame header", errJPEGStream, m)
		}
		if _, err := io.ReadFull(br, h[:]); err != nil {
			return f, fmt.Errorf("%w: ends in a marker segment: %w", errJPEGStream, err)
		}
		n := int(h[0])<<8 | int(h[1])
		if n < 2 {
			return f, fmt.Errorf("%w: marker segment length %d", errJPEGStream, n)
		}
		if m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc {
			var b [6]byte
			if n < 8 {
				return f, fmt.Errorf("%w: frame header of %d bytes", errJPEGStream, n)
			}
			if _, err := io.ReadFull(br, b[:]); err != nil {
				return f, fmt.Errorf("%w: ends in its frame header: %w", errJPEGStream, err)
			}
			f = jpegFrame{marker: m, precision: int(b[0]), height: uint64(b[1])<<8 | uint64(b[2]),
				width: uint64(b[3])<<8 | uint64(b[4]), components: int(b[5]), maxH: 1, maxV: 1}
			for i := 0; i < f.components; i++ {
				var c [3]byte
				if _, err := io.ReadFull(br, c[:]); err != nil {
					return f, fmt.Errorf("%w: ends in its frame header: %w", errJPEGStream, err)
				}
				f.maxH, f.maxV = max(f.maxH, int(c[1]>>4)), max(f.maxV, int(c[1]&15))
			}
			return f, nil
		}
		if _, err := br.Discard(n - 2); err != nil {
			return f, fmt.Errorf("%w: ends in a marker segment: %w", errJPEGStream, err)
		}
	}
}

// jpegCost is the most image/jpeg holds to decode frame f: the image, each
// component at most at full resolution and padded to whole MCUs, and for a
// progressive stream its coefficients (4 bytes a sample) as well.
func jpegCost(f jpegFrame) int64 {
	mcuW, mcuH := uint64(8*f.maxH), uint64(8*f.maxV)
	px := mulSat(ceilDiv(f.width, mcuW)*mcuW, ceilDiv(f.height, mcuH)*mcuH)
	per := uint64(1)
	if f.progressive() {
		per += 4
	}
	return int64(min(addSat(mulSat(mulSat(px, uint64(f.components)), per), 64<<10), 1<<62))
}

// jpegTables reads a page's JPEGTables (347): an abbreviated JPEG stream
// of tables, SOI ... EOI. It returns what goes before each block's data:
// the tables without their EOI.
func jpegTables(r io.ReaderAt, p *Page, avail int64) ([]byte, error) {
	if p.JPEGTablesOffset < 0 {
		return nil, nil
	}
	if p.JPEGTablesLength > avail {
		return nil, &LimitError{Page: p.Index + 1, Path: p.Path, Tag: tagJPEGTables, Offset: p.JPEGTablesOffset, What: "jpeg", Have: p.JPEGTablesLength, Limit: avail}
	}
	t := make([]byte, p.JPEGTablesLength)
	if n, err := r.ReadAt(t, p.JPEGTablesOffset); n < len(t) {
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		return nil, &FormatError{Page: p.Index + 1, Path: p.Path, Tag: tagJPEGTables, Offset: p.JPEGTablesOffset, Code: "tiff.truncated", Err: ErrTruncated}
	}
	if len(t) < 4 || t[0] != 0xff || t[1] != 0xd8 {
		return nil, &FormatError{Page: p.Index + 1, Path: p.Path, Tag: tagJPEGTables, Offset: p.JPEGTablesOffset, Code: "tiff.bad-jpeg-tables",
			Err: fmt.Errorf("%w: JPEGTables do not start with SOI", ErrUndecodable)}
	}
	if t[len(t)-2] == 0xff && t[len(t)-1] == 0xd9 {
		t = t[:len(t)-2]
	}
	return t, nil
}

// decodeJPEGPage decodes every strip or tile of a JPEG page (compression
// 7, TIFF Technical Note 2) with image/jpeg: each block is a JPEG stream,
// abbreviated when the page has JPEGTables, which are put in front of it.
// Before a block is decoded its frame header is read: a frame larger than
// the block (or smaller than its rows) is refused, as libtiff refuses it,
// and one that would need more memory than avail is refused with a
// *LimitError before anything is allocated for it.
func decodeJPEGPage(r io.ReaderAt, info *TIFFInfo, p *Page, avail int64, skipped *[]*UnsupportedError) error {
	tables, err := jpegTables(r, p, avail)
	if err != nil {
		return err
	}
	avail -= int64(len(tables))
	planes := 1
	if p.Planar == 2 {
		planes = int(p.Samples)
	}
	perPlane := len(p.BlockOffsets) / max(planes, 1)
	wantComps := int(p.Samples)
	if p.Planar == 2 {
		wantComps = 1
	}
	for i := range p.BlockOffsets {
		off := int64(p.BlockOffsets[i])
		fail := func(code string, cause error, format string, args ...any) error {
			return &FormatError{Page: p.Index + 1, Path: p.Path, Tag: blockTag(p), Offset: off, Code: code,
				Err: fmt.Errorf("%w: JPEG %s %d: %s", cause, blockWord(p), i, fmt.Sprintf(format, args...))}
		}
		stream := func() (io.Reader, error) {
			src := io.NewSectionReader(storageReader{r}, off, int64(p.BlockCounts[i]))
			if tables == nil {
				return src, nil
			}
			var soi [2]byte
			if _, err := io.ReadFull(src, soi[:]); err != nil || soi != [2]byte{0xff, 0xd8} {
				var re *readErr
				if errors.As(err, &re) {
					return nil, re.err
				}
				return nil, fail("tiff.undecodable", ErrUndecodable, "does not start with SOI")
			}
			return io.MultiReader(bytes.NewReader(tables), src), nil
		}
		s, err := stream()
		if err != nil {
			return err
		}
		f, err := scanFrame(s)
		var re *readErr
		if errors.As(err, &re) {
			return re.err
		}
		if err != nil {
			return fail("tiff.undecodable", ErrUndecodable, "%v", err)
		}
		width, rows := p.Width, p.RowsPerStrip
		last := false
		if p.Tiled {
			width, rows = p.TileWidth, p.TileLength
		} else {
			row := uint64(i%max(perPlane, 1)) * p.RowsPerStrip
			last = row+rows >= p.Height
			rows = min(rows, p.Height-min(row, p.Height))
		}
		if p.Planar == 2 && i >= perPlane && subsampledJPEGPlanes(p) {
			width, rows = ceilDiv(width, p.YCbCrSubsampling[0]), ceilDiv(rows, p.YCbCrSubsampling[1])
		}
		switch {
		case f.precision != 8:
			*skipped = append(*skipped, &UnsupportedError{Page: p.Index + 1, Path: p.Path, Offset: off,
				Reason: fmt.Sprintf("%d-bit JPEG (image/jpeg decodes 8-bit only)", f.precision)})
			return nil
		case f.components != wantComps:
			return fail("tiff.jpeg-components", ErrBadValue, "%d components, the page has %d samples", f.components, wantComps)
		case f.width > width || (f.height > rows && !(last && f.width == width && f.height <= p.RowsPerStrip)):
			return fail("tiff.jpeg-size", ErrBadValue, "frame is %dx%d, the %s is %dx%d", f.width, f.height, blockWord(p), width, rows)
		case f.width < width || f.height < rows:
			return fail("tiff.short-data", ErrShortData, "frame is %dx%d, the %s needs %dx%d", f.width, f.height, blockWord(p), width, rows)
		}
		if cost := jpegCost(f); cost > avail {
			return &LimitError{Page: p.Index + 1, Path: p.Path, Tag: blockTag(p), Offset: off, What: "jpeg", Have: cost, Limit: avail}
		}
		if s, err = stream(); err != nil {
			return err
		}
		if err := decodeJPEG(s); err != nil {
			if errors.As(err, &re) {
				return re.err
			}
			var ue jpeg.UnsupportedError
			if errors.As(err, &ue) {
				*skipped = append(*skipped, &UnsupportedError{Page: p.Index + 1, Path: p.Path, Offset: off, Reason: "image/jpeg: " + string(ue)})
				return nil
			}
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
				return fail("tiff.truncated-data", fmt.Errorf("%w: %w", ErrUndecodable, ErrTruncated), "%v", err)
			}
			return fail("tiff.undecodable", ErrUndecodable, "%v", err)
		}
	}
	return nil
}

// subsampledJPEGPlanes reports whether the chroma planes of a planar JPEG
// page are subsampled: a YCbCr page, each plane its own stream.
func subsampledJPEGPlanes(p *Page) bool {
	return p.Photometric == 6 && (p.YCbCrSubsampling[0] > 1 || p.YCbCrSubsampling[1] > 1)
}

// decodeJPEG runs image/jpeg over one stream; a panic in it (a decoder
// bug on hostile data) is an error, not a crash.
func decodeJPEG(s io.Reader) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: %v", ErrDecoderPanic, v)
		}
	}()
	_, err = jpeg.Decode(s)
	return err
}

func blockWord(p *Page) string {
	if p.Tiled {
		return "tile"
	}
	return "strip"
}

// decodeOldJPEG decodes an old-style JPEG page (compression 6, TIFF 6.0
// §22, withdrawn by TIFF Technical Note 2) where its JPEG stream can be
// put together without guessing: JPEGInterchangeFormat (513) holds the
// stream's headers and the strips, the first opening with SOS, are the
// pieces of its one scan (or the interchange stream is the whole image).
// The frame must be the page's size. Anything else, and a stream
// image/jpeg cannot decode, leaves the page checked structurally (its
// strips inside the file) and reported as not decoded: libtiff's reader
// of this format guesses at far more than this, so a failure here is not
// taken as corruption.
func decodeOldJPEG(r io.ReaderAt, info *TIFFInfo, p *Page, avail int64, skipped *[]*UnsupportedError) error {
	notDecoded := func(why string) error {
		*skipped = append(*skipped, &UnsupportedError{Page: p.Index + 1, Path: p.Path, Offset: p.Offset,
			Reason: "old-style JPEG (compression 6, withdrawn by TIFF Technical Note 2): structure checked, pixels not decoded: " + why})
		return nil
	}
	if p.JPEGInterchangeOffset < 0 {
		return oldJPEGFromTables(r, p, avail, notDecoded)
	}
	hdrLen := p.JPEGInterchangeLength
	var tail [2]byte
	if _, err := r.ReadAt(tail[:], p.JPEGInterchangeOffset+hdrLen-2); err == nil && tail == [2]byte{0xff, 0xd9} {
		hdrLen -= 2
	}
	var head [2]byte
	scanInStrips := false
	if len(p.BlockOffsets) > 0 {
		if _, err := r.ReadAt(head[:], int64(p.BlockOffsets[0])); err == nil && head == [2]byte{0xff, 0xda} {
			scanInStrips = true
		}
	}
	// Strips after the first end where a restart would be: the writer
	// restarted its coder at each strip and dropped the RST markers, which
	// go back in (as libtiff's reader puts them back), with a DRI segment
	// that says how many MCUs a strip holds.
	var dri []byte
	stream := func() io.Reader {
		if !scanInStrips {
			return io.NewSectionReader(storageReader{r}, p.JPEGInterchangeOffset, p.JPEGInterchangeLength)
		}
		parts := []io.Reader{io.NewSectionReader(storageReader{r}, p.JPEGInterchangeOffset, hdrLen), bytes.NewReader(dri)}
		for i := range p.BlockOffsets {
			if i > 0 && dri != nil {
				parts = append(parts, bytes.NewReader([]byte{0xff, byte(0xd0 + (i-1)%8)}))
			}
			parts = append(parts, io.NewSectionReader(storageReader{r}, int64(p.BlockOffsets[i]), int64(p.BlockCounts[i])))
		}
		return io.MultiReader(parts...)
	}
	f, err := scanFrame(stream())
	if err == nil && scanInStrips && len(p.BlockOffsets) > 1 && !p.Tiled {
		mcuW, mcuH := uint64(8*f.maxH), uint64(8*f.maxV)
		if n := ceilDiv(p.Width, mcuW) * (p.RowsPerStrip / mcuH); p.RowsPerStrip%mcuH == 0 && n > 0 && n < 1<<16 {
			dri = []byte{0xff, 0xdd, 0, 4, byte(n >> 8), byte(n)}
		}
	}
	var re *readErr
	if errors.As(err, &re) {
		return re.err
	}
	if err != nil {
		return notDecoded(err.Error())
	}
	if f.width != p.Width || f.height != p.Height || f.components != int(p.Samples) || f.precision != 8 {
		return notDecoded(fmt.Sprintf("the stream's frame is %dx%d, %d components of %d bits", f.width, f.height, f.components, f.precision))
	}
	if cost := jpegCost(f); cost > avail {
		return &LimitError{Page: p.Index + 1, Path: p.Path, Tag: tagJPEGInterchangeFormat, Offset: p.JPEGInterchangeOffset, What: "jpeg", Have: cost, Limit: avail}
	}
	if err := decodeJPEG(stream()); err != nil {
		if errors.As(err, &re) {
			return re.err
		}
		return notDecoded("image/jpeg: " + err.Error())
	}
	return nil
}

// oldJPEGFromTables decodes an old-style JPEG page that has no
// JPEGInterchangeFormat stream but its tables in tags: each strip or tile
// is then entropy-coded data alone, and the stream in front of it is
// built from TIFF 6.0 §22's fields — DQT and DHT segments from the
// tables (in file order: zig-zag quantisation values, Huffman counts then
// values), a frame of the block's size with the page's YCbCr
// subsampling on the first component (extended sequential, so that
// each component may have tables of its own), DRI for
// JPEGRestartInterval, and a
// scan of every component.
func oldJPEGFromTables(r io.ReaderAt, p *Page, avail int64, notDecoded func(string) error) error {
	t := p.OldJPEG
	n := int(p.Samples)
	if t == nil || t.Proc != 1 || len(t.Q) < n || len(t.DC) < n || len(t.AC) < n || p.Planar != 1 || n > 4 {
		return notDecoded("no JPEGInterchangeFormat stream, and no baseline tables for every component to build one from")
	}
	var hdr []byte
	for i := 0; i < n; i++ {
		q := make([]byte, 64)
		if _, err := r.ReadAt(q, int64(t.Q[i])); err != nil {
			return notDecoded(fmt.Sprintf("quantisation table %d at %d: %v", i+1, t.Q[i], err))
		}
		hdr = append(hdr, 0xff, 0xdb, 0, 67, byte(i))
		hdr = append(hdr, q...)
	}
	for class, offs := range [][]uint64{t.DC, t.AC} {
		for i := 0; i < n; i++ {
			var counts [16]byte
			if _, err := r.ReadAt(counts[:], int64(offs[i])); err != nil {
				return notDecoded(fmt.Sprintf("Huffman table at %d: %v", offs[i], err))
			}
			total := 0
			for _, c := range counts {
				total += int(c)
			}
			if total > 256 {
				return notDecoded(fmt.Sprintf("Huffman table at %d has %d codes", offs[i], total))
			}
			vals := make([]byte, total)
			if _, err := r.ReadAt(vals, int64(offs[i])+16); err != nil {
				return notDecoded(fmt.Sprintf("Huffman table at %d: %v", offs[i], err))
			}
			l := 2 + 1 + 16 + total
			hdr = append(hdr, 0xff, 0xc4, byte(l>>8), byte(l), byte(class<<4|i))
			hdr = append(append(hdr, counts[:]...), vals...)
		}
	}
	if t.RestartInterval > 0 && t.RestartInterval < 1<<16 {
		hdr = append(hdr, 0xff, 0xdd, 0, 4, byte(t.RestartInterval>>8), byte(t.RestartInterval))
	}
	sampling := byte(0x11)
	if p.Photometric == 6 && n == 3 {
		sampling = byte(p.YCbCrSubsampling[0]<<4 | p.YCbCrSubsampling[1])
	}
	for i := range p.BlockOffsets {
		width, rows := blockSize(p, i)
		if width > 0xffff || rows > 0xffff {
			return notDecoded(fmt.Sprintf("%s of %dx%d is larger than a JPEG frame", blockWord(p), width, rows))
		}
		frame := []byte{0xff, 0xd8}
		frame = append(frame, hdr...)
		// Extended sequential (SOF1): baseline allows two Huffman tables
		// of a kind, these pages give each component its own.
		frame = append(frame, 0xff, 0xc1, 0, byte(8+3*n), 8, byte(rows>>8), byte(rows), byte(width>>8), byte(width), byte(n))
		for c := 0; c < n; c++ {
			s := byte(0x11)
			if c == 0 {
				s = sampling
			}
			frame = append(frame, byte(c+1), s, byte(c))
		}
		frame = append(frame, 0xff, 0xda, 0, byte(6+2*n), byte(n))
		for c := 0; c < n; c++ {
			frame = append(frame, byte(c+1), byte(c<<4|c))
		}
		frame = append(frame, 0, 63, 0)
		stream := func() io.Reader {
			return io.MultiReader(bytes.NewReader(frame),
				io.NewSectionReader(storageReader{r}, int64(p.BlockOffsets[i]), int64(p.BlockCounts[i])),
				bytes.NewReader([]byte{0xff, 0xd9}))
		}
		f, err := scanFrame(stream())
		if err != nil {
			return notDecoded(err.Error())
		}
		if cost := jpegCost(f); cost > avail {
			return &LimitError{Page: p.Index + 1, Path: p.Path, Tag: blockTag(p), Offset: int64(p.BlockOffsets[i]), What: "jpeg", Have: cost, Limit: avail}
		}
		if err := decodeJPEG(stream()); err != nil {
			var re *readErr
			if errors.As(err, &re) {
				return re.err
			}
			return notDecoded(fmt.Sprintf("%s %d, stream built from the tables: image/jpeg: %v", blockWord(p), i, err))
		}
	}
	return nil
}
