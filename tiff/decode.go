package tiff

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"sync/atomic"

	xtiff "golang.org/x/image/tiff"
)

// pageReader presents page N of a classic TIFF as if it were the first and
// only page, so that golang.org/x/image/tiff (which decodes the first IFD
// only) decodes any page without a copy of the file. It serves the file
// unchanged except for two things: bytes 4..7, the first-IFD pointer, point
// at a copy of page N's IFD placed just past the end of the file; and that
// copy has its entries sorted by tag and its next-IFD pointer zeroed. Value
// offsets inside the entries still point into the real file. (The decoder
// refuses unsorted tags outright; the structural walk reports them as a
// warning, and the pixel data still deserves a decode.)
type pageReader struct {
	r       io.ReaderAt
	size    int64 // real file size
	hdr     [8]byte
	ifd     []byte // the rewritten IFD, served at ifdAt
	ifdAt   int64
	pos     int64
	lastOff atomic.Int64 // offset of the last read of real data: where decoding was
	ioErr   error        // first read error that was not EOF: the storage, not the data
}

// band selects a run of whole strips, or of whole rows of tiles, of a page:
// the view then describes an image of just those rows, so a huge page
// decodes a band at a time.
type band struct {
	first, n int    // blocks: strips, or tiles (whole rows of them)
	rows     uint64 // image rows they hold
}

func newPageReader(r io.ReaderAt, info *TIFFInfo, p *Page, bd *band) (*pageReader, error) {
	bo := info.ByteOrder
	pr := &pageReader{r: r, size: info.Size, ifdAt: info.Size + info.Size%2}
	var cb [2]byte
	if _, err := r.ReadAt(cb[:], p.Offset); err != nil {
		return nil, err
	}
	n := int(bo.Uint16(cb[:]))
	raw := make([]byte, 2+12*n+4)
	if _, err := r.ReadAt(raw[:2+12*n], p.Offset); err != nil {
		return nil, err
	}
	ents := make([][]byte, n)
	for i := range ents {
		ents[i] = raw[2+12*i : 2+12*i+12]
	}
	sort.SliceStable(ents, func(i, j int) bool { return bo.Uint16(ents[i]) < bo.Uint16(ents[j]) })
	pr.ifd = make([]byte, 0, len(raw))
	pr.ifd = append(pr.ifd, raw[:2]...)
	var last uint16
	kept := 0
	for i, e := range ents {
		if i > 0 && bo.Uint16(e) == last {
			continue // duplicate tag: the walk used the first, so does the decoder
		}
		last = bo.Uint16(e)
		pr.ifd = append(pr.ifd, e...)
		kept++
	}
	bo.PutUint16(pr.ifd[:2], uint16(kept))
	pr.ifd = append(pr.ifd, 0, 0, 0, 0)
	if bd != nil {
		// Rewrite ImageLength and the block offsets and byte counts for the
		// band; arrays go after the IFD copy, in the view's virtual tail.
		extraAt := uint32(pr.ifdAt) + uint32(len(pr.ifd))
		var extra []byte
		put := func(e []byte, count int, vals func(i int) uint64) {
			bo.PutUint16(e[2:], typeLong)
			bo.PutUint32(e[4:], uint32(count))
			if count == 1 {
				bo.PutUint32(e[8:], uint32(vals(0)))
				return
			}
			bo.PutUint32(e[8:], extraAt+uint32(len(extra)))
			for i := 0; i < count; i++ {
				extra = bo.(binary.AppendByteOrder).AppendUint32(extra, uint32(vals(i)))
			}
		}
		for i := 0; i < kept; i++ {
			e := pr.ifd[2+12*i : 2+12*i+12]
			switch bo.Uint16(e) {
			case tagImageLength:
				put(e, 1, func(int) uint64 { return bd.rows })
			case tagStripOffsets, tagTileOffsets:
				put(e, bd.n, func(j int) uint64 { return p.BlockOffsets[bd.first+j] })
			case tagStripByteCounts, tagTileByteCounts:
				put(e, bd.n, func(j int) uint64 { return p.BlockCounts[bd.first+j] })
			}
		}
		pr.ifd = append(pr.ifd, extra...)
	}
	if bo == binary.LittleEndian {
		copy(pr.hdr[:4], "II*\x00")
	} else {
		copy(pr.hdr[:4], "MM\x00*")
	}
	if pr.total() > math.MaxUint32 {
		return nil, errors.New("tiff: page view past 32-bit offsets") // viewless pages never get here
	}
	bo.PutUint32(pr.hdr[4:8], uint32(pr.ifdAt))
	pr.lastOff.Store(p.Offset)
	return pr, nil
}

// maxViewSize is the largest classic TIFF a pageReader can present: the
// view serves a copy of the page's IFD, and a band's block arrays, just
// past the end of the file, and points at them with 32-bit offsets. Past
// it those offsets would wrap into the file itself, and the decoder would
// read whatever lies there as the page's IFD: a damaged page could pass
// as the small good image an attacker put at that offset. The room left
// holds an IFD copy (4096 entries: 48 KiB) and a band's arrays (16 Mi
// blocks: 128 MiB).
const maxViewSize = math.MaxUint32 - 256<<20

// viewless reports whether info's pages cannot be read by the image
// decoder through a pageReader: BigTIFF (the decoder reads classic TIFF
// only) or a classic TIFF larger than maxViewSize (trailing data past its
// last 32-bit offset). Such pages are decoded by Lazaret's own lossless
// decoder or counted.
func viewless(info *TIFFInfo) bool { return info.BigTIFF || info.Size > maxViewSize }

// viewlessReason says why viewless(info).
func viewlessReason(info *TIFFInfo) string {
	if info.BigTIFF {
		return "the image decoder reads classic TIFF only (BigTIFF)"
	}
	return fmt.Sprintf("the image decoder cannot address a classic TIFF of %d bytes", info.Size)
}

// total is the size of the view: the file, padding, then the IFD copy.
func (pr *pageReader) total() int64 { return pr.ifdAt + int64(len(pr.ifd)) }

func (pr *pageReader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	n := 0
	for len(p) > 0 {
		switch {
		case off < 8:
			c := copy(p, pr.hdr[off:])
			p, off, n = p[c:], off+int64(c), n+c
		case off < pr.size:
			pr.lastOff.Store(off)
			want := p
			if int64(len(want)) > pr.size-off {
				want = want[:pr.size-off]
			}
			m, err := pr.r.ReadAt(want, off)
			n += m
			if err != nil && !errors.Is(err, io.EOF) {
				if pr.ioErr == nil {
					pr.ioErr = err
				}
				return n, err
			}
			if m < len(want) {
				return n, io.EOF
			}
			p, off = p[m:], off+int64(m)
		case off < pr.ifdAt:
			p[0] = 0
			p, off, n = p[1:], off+1, n+1
		case off < pr.total():
			c := copy(p, pr.ifd[off-pr.ifdAt:])
			p, off, n = p[c:], off+int64(c), n+c
		default:
			return n, io.EOF
		}
	}
	return n, nil
}

func (pr *pageReader) Read(p []byte) (int, error) {
	n, err := pr.ReadAt(p, pr.pos)
	pr.pos += int64(n)
	return n, err
}

// DecodeOptions tune DecodePages.
type DecodeOptions struct {
	PixelBudget int64 // pixels per page that may be decoded
	// MemoryBudget is the bytes the whole check may hold (0 means
	// DefaultMemoryBudget); decoding gets what the walk left of it
	// (TIFFInfo.Held). Every block is counted before it is decoded (see
	// checkInflate); a page whose band does not fit is counted, not
	// decoded.
	MemoryBudget int64
	// DecodeUncompressed runs the image decoder on uncompressed pages too,
	// and on the compressed pages where a strict count of every block
	// otherwise stands in for it (see fastcheck.go). Off by default: for
	// uncompressed data the structural walk has already proven every strip
	// holds the bytes its rows need and every palette has an entry for
	// every index, so the decoder would only copy bytes into an image — at
	// a third of the speed of reading the file (see the benchmarks).
	DecodeUncompressed bool
	// Cancelled is polled between pages; nil means never.
	Cancelled func() error
	// FilePixelBudget bounds the pixels decoded for all pages of a file
	// together (see fileWork); 0 means the default: four pixel budgets,
	// or FilePixelsPerByte pixels a byte of the file, whichever is more.
	FilePixelBudget int64
}

// DecodePages checks the pixel data of every page: through
// golang.org/x/image/tiff where it supports the encoding, after checking each
// page's dimensions with DecodeConfig against the pixel budget (so a tiny
// file claiming a huge image allocates nothing) and counting every block's
// decompressed size against what its rows hold (so a decompression bomb
// stops at that bound), band by band within the memory budget; and by
// decompressing and counting the blocks where the decoder cannot render the
// page or its band would not fit. Pages that could not be checked beyond
// their structure (BigTIFF, JPEG, YCbCr, unusual encodings) come back as
// *UnsupportedError; corrupt data is a *FormatError; a budget overrun a
// *LimitError; a read error from r is returned unchanged.
func DecodePages(r io.ReaderAt, info *TIFFInfo, opt DecodeOptions) (skipped []*UnsupportedError, err error) {
	d := newPageDecoder(r, info, opt)
	for _, p := range info.images() {
		if err := d.decode(p); err != nil {
			return d.skipped, err
		}
	}
	return d.skipped, nil
}

// pageDecoder is DecodePages one image at a time, for a caller that
// streams the pages (see checkContent): what is left of the memory budget
// is fixed when it starts, and what could not be decoded collects in
// skipped.
type pageDecoder struct {
	r         io.ReaderAt
	info      *TIFFInfo
	opt       DecodeOptions
	avail     int64
	cancelled func() error
	skipped   []*UnsupportedError
	work      fileWork // what decoding the file's pages costs together
}

func newPageDecoder(r io.ReaderAt, info *TIFFInfo, opt DecodeOptions) *pageDecoder {
	memory := opt.MemoryBudget
	if memory <= 0 {
		memory = DefaultMemoryBudget
	}
	d := &pageDecoder{r: r, info: info, opt: opt, avail: max(memory-info.Held, 0), cancelled: opt.Cancelled,
		work: newFileWork(info, opt)}
	if d.cancelled == nil {
		d.cancelled = func() error { return nil }
	}
	return d
}

// decode checks the pixel data of one image, as DecodePages does each,
// and records a tiff.block-overrun warning when a block of it ran on past
// its rows.
func (d *pageDecoder) decode(p *Page) error {
	sig, same := d.work.sameAs(p)
	if same {
		return nil // its data, read the same way, was checked once already
	}
	if err := d.work.charge(p); err != nil {
		return err
	}
	d.work.reclaim(p)
	p.overrun = blockOverrun{}
	skipped, warned := len(d.skipped), d.info.warned
	if err := d.decodePixels(p); err != nil {
		return err
	}
	overrunWarning(d.info, p)
	if len(d.skipped) == skipped && d.info.warned == warned {
		d.work.decoded(sig) // clean: pages like it need not be decoded again
	}
	return nil
}

// overrunWarning records a tiff.block-overrun warning for page p if a
// block of it decompressed past its rows (within blockLimit): read as
// libtiff reads it, to its rows, the rest ignored.
func overrunWarning(info *TIFFInfo, p *Page) {
	o := p.overrun
	if !o.seen {
		return
	}
	kind := "strip"
	if p.Tiled {
		kind = "tile"
	}
	msg := fmt.Sprintf("%s %d decompresses to %d bytes, %d more than its rows hold; read to its rows, the rest ignored", kind, o.block, o.got, o.got-o.bound)
	if o.more {
		msg += fmt.Sprintf(" (other %ss of the page run on too)", kind)
	}
	off, pg := int64(p.BlockOffsets[o.block]), p.Index+1
	info.warn(Warning{Code: "tiff.block-overrun", Message: msg, Page: &pg, Path: p.Path, Offset: &off})
}

func (d *pageDecoder) decodePixels(p *Page) (err error) {
	r, info, opt, avail, skipped := d.r, d.info, d.opt, d.avail, &d.skipped
	pixelBudget := opt.PixelBudget
	defer func() { err = atPath(err, p) }()
	if err := d.cancelled(); err != nil {
		return err
	}
	// Width and Height are each below 2^32: their product fits a uint64,
	// not always an int64.
	if px := min(p.Width*p.Height, math.MaxInt64); int64(px) > pixelBudget {
		return &LimitError{Page: p.Index + 1, Offset: p.Offset, What: "pixels", Have: int64(px), Limit: pixelBudget}
	}
	if handled, err := decodeOwn(r, info, p, avail, skipped); handled {
		return err
	}
	if p.Compression == 1 && (!opt.DecodeUncompressed || tilesRefused(p)) && !viewless(info) && p.Photometric <= 3 {
		// Proven by the walk: every strip holds its rows. (The decoder
		// would refuse tiles of a size it does not take; see tilesRefused.)
		return nil
	}
	reason := unsupported(p)
	if viewless(info) {
		reason = viewlessReason(info)
	} else if reason == "" && p.Compression == 5 && oldLZW(r, p) {
		reason = "old-style (LSB-first) LZW"
	}
	if reason != "" {
		return verify(r, info, p, reason, skipped)
	}
	if !opt.DecodeUncompressed && fastEligible(r, info, p) {
		if done, err := fastCount(r, p, avail); done {
			return err // every block counted strictly: see fastcheck.go
		}
	}
	u, err := decodePage(r, info, p, pixelBudget, avail)
	var te *FormatError
	if errors.As(err, &te) && te.Code == "tiff.truncated-data" && p.Compression == 5 {
		// The decoder stops at a missing LZW end code; count the rows instead.
		u, err = &UnsupportedError{Page: p.Index + 1, Offset: p.Offset, Reason: "decoder stopped early"}, nil
	}
	if errors.Is(err, errOverBudget) {
		err = countInstead(r, info, p, avail)
	}
	if err != nil {
		return err
	}
	if u != nil {
		return verify(r, info, p, u.Reason, skipped)
	}
	return nil
}

// verify runs verifyBlocks on a page the decoder did not render and records
// what was and was not checked.
func verify(r io.ReaderAt, info *TIFFInfo, p *Page, reason string, skipped *[]*UnsupportedError) error {
	ok, err := countBlocks(r, info, p, false)
	if err != nil {
		return err
	}
	if !ok {
		u := &UnsupportedError{Page: p.Index + 1, Path: p.Path, Offset: p.Offset, Reason: reason}
		if !knownCompression(p.Compression) {
			u.Compression = p.Compression
		}
		*skipped = append(*skipped, u)
	}
	return nil
}

// knownCompression reports whether some decoder of Lazaret's (its own or
// x/image/tiff) reads compression c: none, CCITT 2-4, LZW, old and new
// JPEG, Deflate, PackBits, ThunderScan, NeXT, LogLuv, WebP.
func knownCompression(c uint64) bool {
	switch c {
	case 1, 2, 3, 4, 5, 6, 7, 8, 32946, 32773, compThunderScan, compNeXT, 34676, 34677, 50001:
		return true
	}
	return false
}

// countBlocks runs verifyBlocks over p (strict: as strictly as the decoder,
// see verifyBlocks) and records its warnings; ok is false when p's blocks
// could not be counted.
func countBlocks(r io.ReaderAt, info *TIFFInfo, p *Page, strict bool) (ok bool, err error) {
	ok, issues, err := verifyBlocks(r, p, strict)
	if err != nil {
		return false, err
	}
	for _, is := range issues {
		off, pg := is.offset, p.Index+1
		info.warn(Warning{Code: is.code, Message: is.msg, Page: &pg, Offset: &off})
		if is.code == "tiff.old-lzw" {
			ok = false
		}
	}
	return ok, nil
}

// errOverBudget: not even one band of the page fits the memory left.
var errOverBudget = errors.New("band over memory budget")

// countInstead checks a page that the decoder could render but not within
// the memory budget by counting its blocks, which holds nothing: for the
// lossless encodings that proves every block holds its rows. A page whose
// blocks cannot be counted (CCITT) is refused with a *LimitError.
func countInstead(r io.ReaderAt, info *TIFFInfo, p *Page, avail int64) error {
	ok, err := countBlocks(r, info, p, true)
	if err != nil || ok {
		return err
	}
	g := bandsOf(p)
	return &LimitError{Page: p.Index + 1, Tag: blockTag(p), Offset: int64(p.BlockOffsets[0]), What: "memory",
		Have: decodeCost(p, g, 1, largestBlock(p)), Limit: avail}
}

// unsupported names what x/image/tiff cannot decode in p, before trying:
// trying would only produce a misleading error.
func unsupported(p *Page) string {
	switch p.Compression {
	case 1, 2, 3, 4, 5, 8, 32946, 32773:
	case 6:
		return "old-style JPEG (compression 6, deprecated by TIFF Technical Note 2)"
	case 7:
		return "JPEG compression"
	default:
		return fmt.Sprintf("compression %d", p.Compression)
	}
	if p.Planar == 2 && p.Samples > 1 {
		return "planar (separate) sample layout"
	}
	switch p.Photometric {
	case 0, 1, 2, 3:
	case 5:
		return "CMYK (separated) colour"
	case 6:
		return "YCbCr colour"
	case 8, 9, 10:
		return "CIE L*a*b* colour"
	case 32844, 32845:
		return "LogLuv colour"
	default:
		return fmt.Sprintf("photometric interpretation %d", p.Photometric)
	}
	return ""
}

// decoderLimits are x/image/tiff errors that describe what the decoder will
// not do, not what is wrong with the file: the structural walk already passed.
var decoderLimits = []string{
	"wrong number of samples",
	"horizontal predictor",
}

// ccittLimits are golang.org/x/image/ccitt errors on fax data that libtiff
// decodes: Group 3 without End-of-Line codes, 2-D modes, and one run-length
// check that rejects libtiff's own Group 4 test image. They are recorded as
// "not decoded" warnings; invalid codes, offsets and incomplete codes remain
// corruption.
var ccittLimits = []string{
	"missing End-of-Line",
	"run length overflows width",
	"unsupported mode",
	"unsupported sub-format",
	"unsupported width",
}

// oldLZW reports whether the page's first block starts like pre-TIFF-6
// LZW, which writes codes least significant bit first: the opening Clear code
// (256) reads as 0x00 then a set low bit, where TIFF 6 LZW starts 0x80.
func oldLZW(r io.ReaderAt, p *Page) bool {
	if len(p.BlockOffsets) == 0 {
		return false
	}
	var head [2]byte
	if _, err := r.ReadAt(head[:], int64(p.BlockOffsets[0])); err != nil {
		return false
	}
	return head[0] == 0 && head[1]&1 == 1
}

// bandPixels is the most pixels decoded at once: a large page is decoded a
// band of strips or of rows of tiles at a time, so memory follows the band,
// not the page (planBands may make the band smaller still, to fit the
// memory budget).
const bandPixels = 4 << 20

func decodePage(r io.ReaderAt, info *TIFFInfo, p *Page, pixelBudget, avail int64) (u *UnsupportedError, err error) {
	pr, err := newPageReader(r, info, p, nil)
	if err != nil {
		return nil, err
	}
	defer func() {
		if v := recover(); v != nil {
			u, err = nil, &FormatError{Page: p.Index + 1, Offset: pr.lastOff.Load(), Code: "tiff.decoder-panic",
				Err: fmt.Errorf("%w: %v", ErrDecoderPanic, v)}
		}
	}()
	cfg, err := xtiff.DecodeConfig(pr)
	pr.lastOff.Store(p.Offset)
	if err == nil {
		if px := int64(cfg.Width) * int64(cfg.Height); px > pixelBudget || px < 0 {
			return nil, &LimitError{Page: p.Index + 1, Offset: p.Offset, What: "pixels", Have: px, Limit: pixelBudget}
		}
		err = decodeBands(r, info, p, &pr, avail)
	}
	if err == nil {
		return nil, nil
	}
	if pr.ioErr != nil {
		return nil, pr.ioErr
	}
	if le, te := (*LimitError)(nil), (*FormatError)(nil); errors.Is(err, errOverBudget) || errors.As(err, &le) || errors.As(err, &te) {
		return nil, err // ours (the counts of decodeBands), not the decoder's
	}
	var ue xtiff.UnsupportedError
	if errors.As(err, &ue) {
		return &UnsupportedError{Page: p.Index + 1, Offset: p.Offset, Reason: "decoder: " + string(ue)}, nil
	}
	msg := err.Error()
	if p.Compression == 2 || p.Compression == 3 || p.Compression == 4 {
		for _, lim := range ccittLimits {
			if strings.Contains(msg, lim) {
				return decodeFax(r, p, avail, "CCITT decoder: "+msg)
			}
		}
	}
	for _, lim := range decoderLimits {
		if strings.Contains(msg, lim) {
			return &UnsupportedError{Page: p.Index + 1, Offset: p.Offset, Reason: "decoder: " + msg}, nil
		}
	}
	code := "tiff.undecodable"
	cause := fmt.Errorf("%w: %v", ErrUndecodable, err)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		code = "tiff.truncated-data"
		cause = fmt.Errorf("%w: %w", ErrUndecodable, ErrTruncated)
	}
	return nil, &FormatError{Page: p.Index + 1, Offset: pr.lastOff.Load(), Code: code, Err: cause}
}

// decodeBands decodes a page whole or, when it is larger than bandPixels
// or the memory left (avail) would not hold it, band by band: runs of
// strips, or of rows of tiles. Each band's blocks are counted first
// (checkInflate), so the decoder never decompresses more than their rows
// hold. *cur is the view in use, for error positions. When not even one
// strip or row of tiles fits, it returns errOverBudget.
func decodeBands(r io.ReaderAt, info *TIFFInfo, p *Page, cur **pageReader, avail int64) error {
	g, ok := planBands(p, avail)
	if !ok {
		return errOverBudget
	}
	in := newInflater(r)
	in.fast = true
	counted := func(first, n int) error {
		err := checkInflate(in, p, first, n)
		if in.ioErr != nil {
			(*cur).ioErr = in.ioErr // the storage failed, not the data
		}
		return err
	}
	if g.perBand >= g.units {
		if err := counted(0, len(p.BlockOffsets)); err != nil {
			return err
		}
		(*cur).pos = 0
		_, err := xtiff.Decode(*cur)
		return err
	}
	for first := 0; first < g.units; first += g.perBand {
		start, n := first, min(g.perBand, g.units-first)
		rows := min(uint64(n)*g.rowsPerUnit, p.Height-uint64(start)*g.rowsPerUnit)
		if p.Tiled && start > 0 && p.TileLength > 1024 && rows+16 < p.TileLength {
			// x/image/tiff refuses a tile more than 16 rows taller than an
			// image when it is over 1024 rows: start the last band a row of
			// tiles early (planBands allowed for it).
			start, n, rows = start-1, n+1, rows+p.TileLength
		}
		bd := &band{first: start * g.blocksPerUnit, n: n * g.blocksPerUnit, rows: rows}
		if err := counted(bd.first, bd.n); err != nil {
			return err
		}
		pr, err := newPageReader(r, info, p, bd)
		if err != nil {
			return err
		}
		*cur = pr
		if _, err := xtiff.Decode(pr); err != nil {
			return err
		}
	}
	return nil
}

// Identify names the format of a file from its first bytes: a PRONOM PUID
// and a short name. Unknown content gives an empty PUID.
func Identify(head []byte) (puid, name string) {
	switch {
	case bytes.HasPrefix(head, []byte("II*\x00")), bytes.HasPrefix(head, []byte("MM\x00*")):
		return "fmt/353", "TIFF"
	case bytes.HasPrefix(head, []byte("II+\x00")), bytes.HasPrefix(head, []byte("MM\x00+")):
		return "fmt/1917", "BigTIFF"
	case bytes.HasPrefix(head, []byte("\xff\xd8\xff")):
		return "fmt/43", "JPEG"
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return "fmt/11", "PNG"
	case bytes.HasPrefix(head, []byte("%PDF-")):
		return "fmt/276", "PDF"
	case bytes.HasPrefix(head, []byte("GIF8")):
		return "fmt/4", "GIF"
	case bytes.HasPrefix(head, []byte("\x00\x00\x00\x0cjP  ")):
		return "x-fmt/392", "JPEG 2000"
	}
	return "", ""
}
