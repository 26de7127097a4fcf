package tiff

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
)

// TIFFInfo is what the structural walk learned about a TIFF file.
type TIFFInfo struct {
	BigTIFF   bool
	ByteOrder binary.ByteOrder
	Size      int64
	Pages     []Page
	// PageCount is the number of pages in the main chain: len(Pages) from
	// WalkTIFF. WalkFirst keeps the first page only (see
	// walker.firstOnly) and streams the rest.
	PageCount int
	// SubImageCount is the number of SubIFD images: len(SubImages) from
	// WalkTIFF. WalkFirst keeps none in SubImages, only where
	// each is (subRefs), and reads them again one at a time.
	SubImageCount int
	subRefs       []imageRef
	// decodeCap, when set, caps the warnings decoding adds (see warn).
	decodeCap *WarnCap
	// warned counts the warnings decoding raised, listed or only counted
	// (a page that raised one is not a model for pages sharing its data).
	warned int
	// SubImages are the images of SubIFDs (tag 330: reduced-resolution
	// and child images), in walk order; each has the Index of its page and
	// a Path. They are checked and decoded as pages are.
	SubImages []Page
	// Directories are the EXIF, GPS and Interoperability IFDs walked.
	Directories []Directory
	Warnings    []Warning
	// Held is what the walk keeps in memory for Pages: blockCost a strip or
	// tile and pageCost a page, in bytes. It is charged against
	// Limits.MemoryBudget as the walk goes, and decoding gets what is left.
	Held int64
}

// Page is one image file directory (IFD) in the main chain, or a SubIFD
// image (then Path names it, e.g. "SubIFD 1", and Index is its page's).
type Page struct {
	Index          int
	Path           string
	Offset         int64 // byte offset of the IFD
	Width, Height  uint64
	BitsPerSample  []uint64
	SampleFormat   []uint64 // per sample (1 uint, 2 int, 3 IEEE float, 4 undefined, 5 complex int, 6 complex float); [1] when absent
	Samples        uint64
	Compression    uint64
	Photometric    uint64 // math.MaxUint64 when absent
	Planar         uint64
	RowsPerStrip   uint64
	Tiled          bool
	TileWidth      uint64
	TileLength     uint64
	BlockOffsets   []uint64
	BlockCounts    []uint64
	XResolution    float64 // 0 when absent
	YResolution    float64
	ResolutionUnit uint64 // 1 none, 2 inch (default), 3 centimetre
	ICCOffset      int64  // -1 when there is no embedded ICC profile
	ICCLength      int64
	UnknownTags    []uint16 // tags Lazaret does not recognise
	DateTime       string
	GeoKeys        bool   // a GeoKeyDirectory (34735): GeoTIFF
	EPStandard     bool   // a TIFF/EPStandardID (37398): TIFF/EP
	FillOrder      uint64 // 1 (default): most significant bit first; 2: least
	T4Options      uint64 // CCITT Group 3 options (292): bit 0 2-D, bit 1 uncompressed mode, bit 2 EOL fill
	T6Options      uint64 // CCITT Group 4 options (293): bit 1 uncompressed mode
	Predictor      uint64 // 1 (default) none, 2 horizontal, 3 floating point
	// YCbCrSubsampling is the horizontal and vertical chroma subsampling of
	// a YCbCr page (default 2, 2), 1, 1 for other pages; YCbCrCoefficients
	// the luma coefficients (default 0.299, 0.587, 0.114).
	YCbCrSubsampling  [2]uint64
	YCbCrCoefficients [3]float64
	// JPEGTables is the offset and length of the JPEG tables (347) of a
	// JPEG page (compression 7), -1 when absent; JPEGInterchange the
	// offset and length of an old-style JPEG page's JPEG stream (513, 514).
	JPEGTablesOffset, JPEGTablesLength           int64
	JPEGInterchangeOffset, JPEGInterchangeLength int64
	// OldJPEG are an old-style JPEG page's table pointers and coding
	// fields (TIFF 6.0 §22), for putting a stream together.
	OldJPEG *OldJPEGTables

	overrun blockOverrun // blocks that decompress past their rows, within blockLimit
}

// blockOverrun is the first (lowest) block of a page whose data runs on
// past its rows, by how much, and whether others do too: recorded by the
// counts of DecodePages, reported once as a tiff.block-overrun warning.
type blockOverrun struct {
	seen       bool
	block      int
	got, bound uint64
	more       bool
}

// noteOverrun records that block i of p decompressed to got bytes, more
// than the bound its rows hold. The same block counted twice (a band
// counted, then verified) is one overrun.
func (p *Page) noteOverrun(i int, got, bound uint64) {
	o := &p.overrun
	switch {
	case !o.seen:
		*o = blockOverrun{seen: true, block: i, got: got, bound: bound}
	case i < o.block:
		*o = blockOverrun{seen: true, block: i, got: got, bound: bound, more: true}
	case i > o.block:
		o.more = true
	}
}

// OldJPEGTables are the fields of TIFF 6.0 §22 an old-style JPEG page
// codes with: JPEGProc (512), JPEGRestartInterval (515), and per
// component the offsets of its quantisation table (519: 64 bytes) and its
// DC and AC Huffman tables (520, 521: 16 counts, then the values).
type OldJPEGTables struct {
	Proc, RestartInterval uint64
	Q, DC, AC             []uint64
}

// maxBitsPerSample is the widest sample the walk accepts: a complex IEEE
// double (SampleFormat 6, two float64).
const maxBitsPerSample = 128

// Limits bound the work a structural walk may do.
type Limits struct {
	MaxPages      int // IFDs: the main chain and all EXIF, GPS, Interoperability and SubIFD directories
	MaxEntries    int // entries in one IFD
	MaxSamples    uint64
	MaxBlocksPage int // strips or tiles in one page
	// MemoryBudget is the bytes the walk may keep for the pages it returns,
	// summed over pages (see TIFFInfo.Held); 0 means DefaultMemoryBudget.
	// validate.CheckMaster sets it to MasterPolicy.MemoryBudget, the budget of the
	// whole check.
	MemoryBudget int64
}

// DefaultLimits are generous for real masters and small enough to stop a
// hostile file before it costs anything.
var DefaultLimits = Limits{MaxPages: 65536, MaxEntries: 4096, MaxSamples: 64, MaxBlocksPage: 16 << 20, MemoryBudget: DefaultMemoryBudget}

type entry struct {
	tag      uint16
	typ      uint16
	count    uint64
	at       int64 // offset of the entry itself
	valueAt  int64 // offset of the value bytes (inline or pointed to)
	valueLen int64
}

type walker struct {
	r     io.ReaderAt
	size  int64
	bo    binary.ByteOrder
	big   bool
	lim   Limits
	info  *TIFFInfo
	buf   [16]byte
	page  int    // index of the main-chain page being walked
	path  string // the child directory inside it, "" for the page's IFD
	ifds  int    // IFDs walked so far, main chain and children
	seen  map[uint64]ifdRef
	ioErr error
	// firstOnly keeps only the first page in info.Pages; every page is
	// still checked, counted (info.PageCount) and handed to onPage. It
	// holds the walk's memory to what it reports (warnings, the loop
	// check, SubIFD images), not to what every page's tags were.
	firstOnly bool
	onPage    func(p *Page) // when not nil, called with each main-chain page
	// caps lists at most MaxWarningsPerCode warnings of a code when
	// firstOnly (see WarnCap), so a file of 65,535 pages that each lack a
	// tag does not make a report of 65,535 warnings.
	caps WarnCap
}

// WarnCap lists at most Max warnings of each code (all when Max is 0) and
// counts the rest, by code and page, for one summary warning a code: the
// reader's cap, and the one a policy applies to its own warnings.
type WarnCap struct {
	Max    int
	warned map[string]*elided
	capped []string // the codes over max, in the order they went over
}

// elided counts the warnings of one code: listed, then not listed (more),
// with the first and last page of those not listed.
type elided struct {
	listed, more, first, last int
}

// MaxWarningsPerCode is the most warnings of one code a Decoder lists.
const MaxWarningsPerCode = 100

// listed reports whether a warning of code on page (1-based) is to be
// listed; one that is not is counted.
func (c *WarnCap) Listed(code string, page int) bool {
	if c.Max <= 0 {
		return true
	}
	if c.warned == nil {
		c.warned = map[string]*elided{}
	}
	el := c.warned[code]
	if el == nil {
		el = &elided{}
		c.warned[code] = el
	}
	if el.listed++; el.listed <= c.Max {
		return true
	}
	if el.more == 0 {
		el.first = page
		c.capped = append(c.capped, code)
	}
	el.more, el.last = el.more+1, page
	return false
}

// summarise appends to ws, for each code with warnings not listed, one
// warning that says how many and on which pages, in the order the codes
// met their cap.
func (c *WarnCap) Summarise(ws []Warning) []Warning {
	for _, code := range c.capped {
		el := c.warned[code]
		first := el.first
		ws = append(ws, Warning{Code: code, Page: &first,
			Message: fmt.Sprintf("%d more %s warnings not listed (the first %d are), on pages %d to %d", el.more, code, c.Max, el.first, el.last)})
	}
	return ws
}

// Elided says how many warnings of code were counted and not listed, and
// on which pages the first and last of them were, for a summary worded
// otherwise than Summarise's.
func (c *WarnCap) Elided(code string) (more, first, last int) {
	if el := c.warned[code]; el != nil {
		return el.more, el.first, el.last
	}
	return 0, 0, 0
}

// warn records wr, unless info's decodeCap says it is only counted.
func (info *TIFFInfo) warn(wr Warning) {
	page := 0
	if wr.Page != nil {
		page = *wr.Page
	}
	info.warned++
	if info.decodeCap == nil || info.decodeCap.Listed(wr.Code, page) {
		info.Warnings = append(info.Warnings, wr)
	}
}

// imageRef is where a SubIFD image is: its page index, path and IFD.
type imageRef struct {
	index  int
	path   string
	offset int64
}

// ifdRef is where an IFD offset was first met, for the loop check: the
// page and the child directory's path ("" for the page's own IFD). It is
// formatted only when a loop is found.
type ifdRef struct {
	page int
	path string
}

// WalkTIFF checks the structure of a classic TIFF or BigTIFF: header, the IFD
// chain (loops, page cap), every entry's type and count, required tags, and
// that every strip or tile lies inside the file and is long enough for its
// rows when uncompressed. It never allocates more than the file could hold,
// and charges what it keeps to lim.MemoryBudget before it reads it. Errors
// are *FormatError, a *LimitError ("strip-array") when the pages' block
// arrays would overrun the budget, or an I/O error from r unchanged.
func WalkTIFF(r io.ReaderAt, size int64, lim Limits) (*TIFFInfo, error) {
	return walkTIFF(r, size, lim, false, nil)
}

// walkTIFF is WalkTIFF, keeping only the first page in Pages and at most
// MaxWarningsPerCode warnings of each code (then a count) when firstOnly,
// and handing every main-chain page to onPage when not nil.
func walkTIFF(r io.ReaderAt, size int64, lim Limits, firstOnly bool, onPage func(p *Page)) (*TIFFInfo, error) {
	if lim.MemoryBudget <= 0 {
		lim.MemoryBudget = DefaultMemoryBudget
	}
	w := &walker{r: r, size: size, lim: lim, info: &TIFFInfo{Size: size}, page: -1, firstOnly: firstOnly, onPage: onPage}
	if firstOnly {
		w.caps.Max = MaxWarningsPerCode
	}
	info, err := w.walk()
	w.info.Warnings = w.caps.Summarise(w.info.Warnings)
	if err != nil && w.ioErr != nil {
		return info, w.ioErr
	}
	return info, err
}

// eachPage reads the main chain of a TIFF that walkTIFF accepted (info is
// what it returned) again, a page at a time, and calls fn with each page
// as the walk built it, in order: page by page, so that no more than one
// page's tags and block arrays are held at once. The chain is not checked
// again (loops, the IFD cap, child directories: the walk did that), and
// the warnings of the walk are not repeated. An error is fn's, an I/O
// error from r, or a *FormatError if the file no longer reads as it did.
func eachPage(r io.ReaderAt, info *TIFFInfo, lim Limits, fn func(p *Page) error) error {
	w, scratch := rereader(r, info, lim)
	var next uint64
	if w.big {
		if err := w.read(w.buf[:16], 0, 0, "BigTIFF header"); err != nil {
			return w.err(err)
		}
		next = w.bo.Uint64(w.buf[8:16])
	} else {
		if err := w.read(w.buf[:8], 0, 0, "header"); err != nil {
			return w.err(err)
		}
		next = uint64(w.bo.Uint32(w.buf[4:8]))
	}
	for w.page = 0; w.page < info.PageCount; w.page++ {
		// What a page holds is charged as the walk charged it; only one
		// page's is held at a time here, so each starts from nothing.
		scratch.Warnings, scratch.Held = scratch.Warnings[:0], 0
		entries, n2, _, err := w.ifd(int64(next))
		if err != nil {
			return w.err(err)
		}
		p, err := w.page_(int64(next), entries)
		if err != nil {
			return w.err(err)
		}
		if err := fn(p); err != nil {
			return err
		}
		next = n2
	}
	return nil
}

// eachSubImage is eachPage for the SubIFD images walkTIFF found (in
// subRefs, when it kept only the first page): each is read again from its
// IFD, in walk order.
func eachSubImage(r io.ReaderAt, info *TIFFInfo, lim Limits, fn func(p *Page) error) error {
	w, scratch := rereader(r, info, lim)
	for _, ref := range info.subRefs {
		scratch.Warnings, scratch.Held = scratch.Warnings[:0], 0
		w.page, w.path = ref.index, ref.path
		entries, _, _, err := w.ifd(ref.offset)
		if err != nil {
			return w.err(err)
		}
		p, err := w.page_(ref.offset, entries)
		if err != nil {
			return w.err(err)
		}
		p.Path = ref.path
		if err := fn(p); err != nil {
			return err
		}
	}
	return nil
}

// rereader is a walker for reading again what walkTIFF accepted into
// info, with a scratch TIFFInfo for what the walk would record.
func rereader(r io.ReaderAt, info *TIFFInfo, lim Limits) (*walker, *TIFFInfo) {
	if lim.MemoryBudget <= 0 {
		lim.MemoryBudget = DefaultMemoryBudget
	}
	scratch := &TIFFInfo{Size: info.Size}
	return &walker{r: r, size: info.Size, lim: lim, info: scratch, bo: info.ByteOrder, big: info.BigTIFF}, scratch
}

// err is err, or the I/O error behind it.
func (w *walker) err(err error) error {
	if w.ioErr != nil {
		return w.ioErr
	}
	return err
}

func (w *walker) fail(tag uint16, off int64, code string, err error, format string, args ...any) *FormatError {
	if format != "" {
		err = fmt.Errorf("%w: %s", err, fmt.Sprintf(format, args...))
	}
	return &FormatError{Page: w.page + 1, Path: w.path, Tag: tag, Offset: off, Code: code, Err: err}
}

func (w *walker) warn(code string, off int64, format string, args ...any) {
	page, o := w.page+1, off
	if !w.caps.Listed(code, page) {
		return // counted, not written out
	}
	wr := Warning{Code: code, Message: fmt.Sprintf(format, args...), Offset: &o, Path: w.path}
	if page >= 1 {
		wr.Page = &page
	}
	w.info.Warnings = append(w.info.Warnings, wr)
}

// read reads exactly len(p) bytes at off, or reports truncation.
func (w *walker) read(p []byte, off int64, tag uint16, what string) error {
	if off < 0 || off > w.size || int64(len(p)) > w.size-off {
		return w.fail(tag, off, "tiff.truncated", ErrTruncated, "%s needs %d bytes at %d, file has %d", what, len(p), off, w.size)
	}
	n, err := w.r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err != nil && !errors.Is(err, io.EOF) {
		w.ioErr = err
		return err
	}
	return w.fail(tag, off, "tiff.truncated", ErrTruncated, "%s: short read", what)
}

func (w *walker) walk() (*TIFFInfo, error) {
	hdr := w.buf[:8]
	if w.size < 8 {
		return w.info, w.fail(0, 0, "tiff.truncated", ErrTruncated, "file is %d bytes, a header needs 8", w.size)
	}
	if err := w.read(hdr, 0, 0, "header"); err != nil {
		return w.info, err
	}
	switch string(hdr[:2]) {
	case "II":
		w.bo = binary.LittleEndian
	case "MM":
		w.bo = binary.BigEndian
	default:
		return w.info, w.fail(0, 0, "tiff.not-tiff", ErrNotTIFF, "byte order mark %q", hdr[:2])
	}
	w.info.ByteOrder = w.bo
	var first uint64
	switch w.bo.Uint16(hdr[2:4]) {
	case 42:
		first = uint64(w.bo.Uint32(hdr[4:8]))
	case 43:
		w.big = true
		w.info.BigTIFF = true
		b := w.buf[:16]
		if err := w.read(b, 0, 0, "BigTIFF header"); err != nil {
			return w.info, err
		}
		if w.bo.Uint16(b[4:6]) != 8 || w.bo.Uint16(b[6:8]) != 0 {
			return w.info, w.fail(0, 4, "tiff.bad-header", ErrBadValue, "BigTIFF offset size %d, want 8", w.bo.Uint16(b[4:6]))
		}
		first = w.bo.Uint64(b[8:16])
	default:
		return w.info, w.fail(0, 2, "tiff.not-tiff", ErrNotTIFF, "magic number %d, want 42 or 43", w.bo.Uint16(hdr[2:4]))
	}
	if first == 0 {
		return w.info, w.fail(0, 4, "tiff.no-ifd", ErrMissingTag, "no IFD in file")
	}
	w.seen = map[uint64]ifdRef{}
	next, nextAt := first, int64(4)
	if w.big {
		nextAt = 8
	}
	for next != 0 {
		w.page, w.path = w.info.PageCount, ""
		if err := w.visit(next, nextAt, "next IFD pointer"); err != nil {
			return w.info, err
		}
		entries, n2, n2At, err := w.ifd(int64(next))
		if err != nil {
			return w.info, err
		}
		p, err := w.page_(int64(next), entries)
		if err != nil {
			return w.info, err
		}
		if !w.firstOnly || w.info.PageCount == 0 {
			w.info.Pages = append(w.info.Pages, *p)
		}
		w.info.PageCount++
		if w.onPage != nil {
			w.onPage(p)
		}
		if err := w.children(entries, 1); err != nil {
			return w.info, err
		}
		w.path = ""
		next, nextAt = n2, n2At
	}
	return w.info, nil
}

// visit checks an IFD offset before it is read: inside the file, not seen
// before anywhere (main chain or child directories: a second visit is a
// loop), and within the cap on IFDs, which counts every directory walked.
// at is the offset of the pointer; what names it in messages.
func (w *walker) visit(off uint64, at int64, what string) error {
	if prev, ok := w.seen[off]; ok {
		return w.fail(0, at, "tiff.ifd-loop", ErrIFDLoop, "%s %d goes back to %s", what, off, where(prev.page, prev.path))
	}
	if w.ifds >= w.lim.MaxPages {
		return w.fail(0, at, "tiff.too-many-pages", ErrTooManyPages, "more than %d IFDs", w.lim.MaxPages)
	}
	hdrLen := uint64(8)
	if w.big {
		hdrLen = 16
	}
	if off < hdrLen || off >= uint64(w.size) {
		return w.fail(0, at, "tiff.ifd-outside-file", ErrOutsideFile, "IFD offset %d, file has %d bytes", off, w.size)
	}
	w.ifds++
	w.seen[off] = ifdRef{w.page, w.path}
	if off%2 != 0 {
		w.warn("tiff.ifd-unaligned", at, "IFD offset %d is not on a word boundary", off)
	}
	return nil
}

// where names a directory, as in messages: "page 2" or "page 2 / EXIF"
// for page index 1 and path "" or "EXIF".
func where(page int, path string) string {
	if path == "" {
		return fmt.Sprintf("page %d", page+1)
	}
	return fmt.Sprintf("page %d / %s", page+1, path)
}

// ifd reads and checks one IFD's entries and returns them with the next
// IFD offset and where that pointer is.
func (w *walker) ifd(off int64) (map[uint16]entry, uint64, int64, error) {
	countLen, entLen := int64(2), int64(12)
	if w.big {
		countLen, entLen = 8, 20
	}
	cb := w.buf[:countLen]
	if err := w.read(cb, off, 0, "IFD entry count"); err != nil {
		return nil, 0, 0, err
	}
	var n uint64
	if w.big {
		n = w.bo.Uint64(cb)
	} else {
		n = uint64(w.bo.Uint16(cb))
	}
	if n == 0 {
		return nil, 0, 0, w.fail(0, off, "tiff.empty-ifd", ErrBadEntry, "IFD has no entries")
	}
	if n > uint64(w.lim.MaxEntries) {
		return nil, 0, 0, w.fail(0, off, "tiff.too-many-entries", ErrBadEntry, "IFD declares %d entries, cap is %d", n, w.lim.MaxEntries)
	}
	nextLen := int64(4)
	if w.big {
		nextLen = 8
	}
	block := make([]byte, int64(n)*entLen+nextLen)
	if err := w.read(block, off+countLen, 0, "IFD entries and next pointer"); err != nil {
		return nil, 0, 0, err
	}
	entries := make(map[uint16]entry, n)
	prev := -1
	for i := uint64(0); i < n; i++ {
		b := block[int64(i)*entLen:]
		at := off + countLen + int64(i)*entLen
		e := entry{tag: w.bo.Uint16(b[0:2]), typ: w.bo.Uint16(b[2:4]), at: at}
		var inline int64
		if w.big {
			e.count = w.bo.Uint64(b[4:12])
			inline = 8
		} else {
			e.count = uint64(w.bo.Uint32(b[4:8]))
			inline = 4
		}
		if int(e.tag) <= prev {
			w.warn("tiff.tags-unsorted", at, "tag %s out of ascending order", TagName(e.tag))
		}
		prev = int(e.tag)
		if e.typ == 0 || int(e.typ) >= len(typeSize) || typeSize[e.typ] == 0 || (!w.big && e.typ >= typeLong8) {
			return nil, 0, 0, w.fail(e.tag, at+2, "tiff.bad-type", ErrBadEntry, "unknown field type %d", e.typ)
		}
		ts := typeSize[e.typ]
		if e.count > uint64(math.MaxInt64/ts) {
			return nil, 0, 0, w.fail(e.tag, at+4, "tiff.bad-count", ErrBadEntry, "count %d overflows", e.count)
		}
		e.valueLen = int64(e.count) * ts
		if e.valueLen <= inline {
			e.valueAt = at + 4 + inline
			if w.big {
				e.valueAt = at + 12
			}
		} else {
			var p uint64
			if w.big {
				p = w.bo.Uint64(b[12:20])
			} else {
				p = uint64(w.bo.Uint32(b[8:12]))
			}
			if p > uint64(w.size) || e.valueLen > w.size-int64(p) {
				return nil, 0, 0, w.fail(e.tag, at+4+inline, "tiff.value-outside-file", ErrOutsideFile,
					"%d values of %d bytes at %d run past the end of the %d-byte file", e.count, ts, p, w.size)
			}
			e.valueAt = int64(p)
		}
		if _, dup := entries[e.tag]; dup {
			w.warn("tiff.duplicate-tag", at, "tag %s appears twice; the first is used", TagName(e.tag))
			continue
		}
		entries[e.tag] = e
	}
	tail := block[int64(n)*entLen:]
	nextAt := off + countLen + int64(n)*entLen
	var next uint64
	if w.big {
		next = w.bo.Uint64(tail)
	} else {
		next = uint64(w.bo.Uint32(tail))
	}
	return entries, next, nextAt, nil
}

// uints reads an integer-valued entry (BYTE, SHORT, LONG, LONG8, IFD types),
// with at most max values.
func (w *walker) uints(e entry, max uint64) ([]uint64, error) {
	if err := w.checkUints(e, max); err != nil {
		return nil, err
	}
	return w.readUints(e, e.count)
}

// checkUints checks that e holds at most max unsigned integers.
func (w *walker) checkUints(e entry, max uint64) error {
	switch e.typ {
	case typeByte, typeShort, typeLong, typeLong8, typeIFD, typeIFD8:
	default:
		return w.fail(e.tag, e.at+2, "tiff.bad-type", ErrBadEntry, "type %d where an unsigned integer is required", e.typ)
	}
	if e.count > max {
		return w.fail(e.tag, e.at+4, "tiff.bad-count", ErrBadEntry, "count %d, at most %d allowed", e.count, max)
	}
	return nil
}

// uintChunk is the most bytes of an entry's values read at once.
const uintChunk = 64 << 10

// readUints reads the first n values of an entry checkUints accepted, in
// chunks: it allocates the n values and one chunk, nothing per value.
func (w *walker) readUints(e entry, n uint64) ([]uint64, error) {
	ts := typeSize[e.typ]
	out := make([]uint64, min(n, e.count))
	var raw []byte
	if need := int64(len(out)) * ts; need <= int64(len(w.buf)) {
		raw = w.buf[:need] // a page's single values: no allocation
	} else {
		raw = make([]byte, min(need, uintChunk))
	}
	for done := 0; done < len(out); {
		b := raw[:min(int64(len(out)-done)*ts, int64(len(raw)))]
		if err := w.readValues(b, e.valueAt+int64(done)*ts, e.tag); err != nil {
			return nil, err
		}
		for ; len(b) > 0; b = b[ts:] {
			switch ts {
			case 1:
				out[done] = uint64(b[0])
			case 2:
				out[done] = uint64(w.bo.Uint16(b))
			case 4:
				out[done] = uint64(w.bo.Uint32(b))
			case 8:
				out[done] = w.bo.Uint64(b)
			}
			done++
		}
	}
	return out, nil
}

// readValues is read for the values of tag, naming the tag only when the
// read fails: a page reads a dozen values, and the name is a Sprintf.
func (w *walker) readValues(p []byte, off int64, tag uint16) error {
	if off < 0 || off > w.size || int64(len(p)) > w.size-off {
		return w.read(p, off, tag, TagName(tag)) // refused before reading
	}
	n, err := w.r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err != nil && !errors.Is(err, io.EOF) {
		w.ioErr = err
		return err
	}
	return w.fail(tag, off, "tiff.truncated", ErrTruncated, "%s: short read", TagName(tag))
}

// one reads a single-valued integer tag; def is returned when it is absent.
func (w *walker) one(entries map[uint16]entry, tag uint16, def uint64) (uint64, bool, error) {
	e, ok := entries[tag]
	if !ok {
		return def, false, nil
	}
	if e.count != 1 {
		return 0, true, w.fail(tag, e.at+4, "tiff.bad-count", ErrBadEntry, "count %d, want 1", e.count)
	}
	v, err := w.uints(e, 1)
	if err != nil {
		return 0, true, err
	}
	return v[0], true, nil
}

func (w *walker) rational(entries map[uint16]entry, tag uint16) (float64, error) {
	e, ok := entries[tag]
	if !ok {
		return 0, nil
	}
	if e.typ != typeRational || e.count != 1 {
		return 0, w.fail(tag, e.at+2, "tiff.bad-type", ErrBadEntry, "type %d count %d, want one RATIONAL", e.typ, e.count)
	}
	var b [8]byte
	if err := w.read(b[:], e.valueAt, tag, TagName(tag)); err != nil {
		return 0, err
	}
	num, den := w.bo.Uint32(b[:4]), w.bo.Uint32(b[4:])
	if den == 0 {
		return 0, w.fail(tag, e.valueAt, "tiff.bad-value", ErrBadValue, "denominator is zero")
	}
	return float64(num) / float64(den), nil
}

func (w *walker) page_(off int64, entries map[uint16]entry) (*Page, error) {
	p := &Page{Index: w.page, Offset: off, ICCOffset: -1}
	var err error
	var ok bool
	if p.Width, ok, err = w.one(entries, tagImageWidth, 0); err != nil {
		return nil, err
	} else if !ok {
		return nil, w.fail(tagImageWidth, off, "tiff.missing-tag", ErrMissingTag, "ImageWidth")
	}
	if p.Height, ok, err = w.one(entries, tagImageLength, 0); err != nil {
		return nil, err
	} else if !ok {
		return nil, w.fail(tagImageLength, off, "tiff.missing-tag", ErrMissingTag, "ImageLength")
	}
	if p.Width > math.MaxUint32 || p.Height > math.MaxUint32 {
		return nil, w.fail(tagImageWidth, entries[tagImageWidth].at, "tiff.bad-value", ErrBadValue, "%dx%d is beyond any decoder", p.Width, p.Height)
	}
	if p.Width == 0 || p.Height == 0 {
		return nil, w.fail(tagImageWidth, entries[tagImageWidth].at, "tiff.zero-size", ErrZeroSize, "%dx%d", p.Width, p.Height)
	}
	if p.Samples, _, err = w.one(entries, tagSamplesPerPixel, 1); err != nil {
		return nil, err
	}
	if p.Samples == 0 || p.Samples > w.lim.MaxSamples {
		return nil, w.fail(tagSamplesPerPixel, entries[tagSamplesPerPixel].at+8, "tiff.bad-value", ErrBadValue, "SamplesPerPixel %d", p.Samples)
	}
	p.BitsPerSample = []uint64{1}
	if e, ok := entries[tagBitsPerSample]; ok {
		if p.BitsPerSample, err = w.uints(e, w.lim.MaxSamples); err != nil {
			return nil, err
		}
		if len(p.BitsPerSample) == 0 {
			return nil, w.fail(tagBitsPerSample, e.at+4, "tiff.bad-count", ErrBadEntry, "no values")
		}
		if uint64(len(p.BitsPerSample)) != p.Samples {
			w.warn("tiff.bps-count", e.at+4, "BitsPerSample has %d values for %d samples", len(p.BitsPerSample), p.Samples)
		}
		for _, b := range p.BitsPerSample {
			// 128 bits is the widest sample any SampleFormat gives meaning:
			// a complex IEEE double (two float64). libtiff reads wider ones
			// as plain bytes; Lazaret refuses them, since what a block may
			// decompress to (and so the work of counting it) grows with the
			// width.
			if b == 0 || b > maxBitsPerSample {
				return nil, w.fail(tagBitsPerSample, e.valueAt, "tiff.bad-value", ErrBadValue, "BitsPerSample %d (at most %d: a complex IEEE double)", b, maxBitsPerSample)
			}
		}
	}
	p.SampleFormat = []uint64{1}
	if e, ok := entries[tagSampleFormat]; ok {
		if p.SampleFormat, err = w.uints(e, w.lim.MaxSamples); err != nil {
			return nil, err
		}
		if e.count == 0 {
			return nil, w.fail(tagSampleFormat, e.at+4, "tiff.bad-count", ErrBadEntry, "SampleFormat has no values")
		}
	}
	if p.Compression, _, err = w.one(entries, tagCompression, 1); err != nil {
		return nil, err
	}
	if _, ok := entries[tagCompression]; !ok {
		w.warn("tiff.no-compression-tag", off, "Compression tag absent; 1 (none) assumed")
	}
	if p.Photometric, ok, err = w.one(entries, tagPhotometricInterpretation, math.MaxUint64); err != nil {
		return nil, err
	} else if !ok {
		w.warn("tiff.no-photometric", off, "PhotometricInterpretation absent")
	}
	if p.Planar, _, err = w.one(entries, tagPlanarConfiguration, 1); err != nil {
		return nil, err
	}
	if p.Planar != 1 && p.Planar != 2 {
		return nil, w.fail(tagPlanarConfiguration, entries[tagPlanarConfiguration].at+8, "tiff.bad-value", ErrBadValue, "PlanarConfiguration %d", p.Planar)
	}
	if p.ResolutionUnit, _, err = w.one(entries, tagResolutionUnit, 2); err != nil {
		return nil, err
	}
	if p.XResolution, err = w.rational(entries, tagXResolution); err != nil {
		return nil, err
	}
	if p.YResolution, err = w.rational(entries, tagYResolution); err != nil {
		return nil, err
	}
	if e, ok := entries[tagICCProfile]; ok {
		if e.typ != typeUndefined && e.typ != typeByte {
			return nil, w.fail(tagICCProfile, e.at+2, "tiff.bad-type", ErrBadEntry, "ICC profile type %d", e.typ)
		}
		p.ICCOffset, p.ICCLength = e.valueAt, e.valueLen
	}
	if e, ok := entries[tagColorMap]; ok && p.Photometric == 3 {
		bps := p.BitsPerSample[0]
		if bps > 16 || e.count != 3<<bps {
			return nil, w.fail(tagColorMap, e.at+4, "tiff.bad-count", ErrBadEntry, "ColorMap has %d values, %d-bit palette needs %d", e.count, bps, 3*(uint64(1)<<min(bps, 32)))
		}
	}
	if e, ok := entries[tagDateTime]; ok {
		if err := w.dateTime(e, p); err != nil {
			return nil, err
		}
	}
	if err := w.codecFields(p, entries); err != nil {
		return nil, err
	}
	if err := w.ycbcr(p, entries); err != nil {
		return nil, err
	}
	if err := w.blocks(p, entries); err != nil {
		return nil, err
	}
	_, p.GeoKeys = entries[tagGeoKeyDirectory]
	_, p.EPStandard = entries[tagTIFFEPStandardID]
	for tag := range entries {
		if !knownTag(tag) {
			p.UnknownTags = append(p.UnknownTags, tag)
		}
	}
	sort.Slice(p.UnknownTags, func(i, j int) bool { return p.UnknownTags[i] < p.UnknownTags[j] })
	return p, nil
}

// dateTime checks the TIFF DateTime "YYYY:MM:DD HH:MM:SS" (TIFF 6.0 §8).
func (w *walker) dateTime(e entry, p *Page) error {
	if e.typ != typeASCII {
		return w.fail(tagDateTime, e.at+2, "tiff.bad-type", ErrBadEntry, "DateTime type %d, want ASCII", e.typ)
	}
	if e.count > 64 {
		return w.fail(tagDateTime, e.at+4, "tiff.bad-datetime", ErrBadValue, "DateTime is %d bytes, want 20", e.count)
	}
	b := make([]byte, e.count)
	if err := w.read(b, e.valueAt, tagDateTime, "DateTime"); err != nil {
		return err
	}
	for len(b) > 0 && b[len(b)-1] == 0 {
		b = b[:len(b)-1]
	}
	s := string(b)
	p.DateTime = s
	var y, mo, d, h, mi, sec int
	if len(s) != 19 || s[4] != ':' || s[7] != ':' || s[10] != ' ' || s[13] != ':' || s[16] != ':' {
		w.warn("tiff.datetime-format", e.valueAt, "DateTime %q is not YYYY:MM:DD HH:MM:SS", s)
		return nil
	}
	if _, err := fmt.Sscanf(s, "%4d:%2d:%2d %2d:%2d:%2d", &y, &mo, &d, &h, &mi, &sec); err != nil {
		w.warn("tiff.datetime-format", e.valueAt, "DateTime %q is not YYYY:MM:DD HH:MM:SS", s)
		return nil
	}
	if y == 0 && mo == 0 && d == 0 {
		return nil // "0000:00:00 00:00:00" is the conventional unknown date
	}
	if mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 59 {
		w.warn("tiff.bad-datetime", e.valueAt, "DateTime %q has a field out of range", s)
	}
	return nil
}

// blocks checks strips or tiles: presence, counts, every block inside the
// file, and — for uncompressed data — long enough for its rows.
func (w *walker) blocks(p *Page, entries map[uint16]entry) error {
	so, hasSO := entries[tagStripOffsets]
	sc, hasSC := entries[tagStripByteCounts]
	to, hasTO := entries[tagTileOffsets]
	tc, hasTC := entries[tagTileByteCounts]
	_, hasTW := entries[tagTileWidth]
	var offE, cntE entry
	switch {
	case (hasSO || hasSC) && (hasTO || hasTC):
		return w.fail(tagTileOffsets, to.at, "tiff.strips-and-tiles", ErrBadEntry, "both strips and tiles are defined")
	case hasTO || hasTC || hasTW:
		if !hasTO || !hasTC {
			return w.fail(tagTileOffsets, p.Offset, "tiff.missing-tag", ErrMissingTag, "TileOffsets and TileByteCounts are both required")
		}
		p.Tiled = true
		offE, cntE = to, tc
	case hasSO && hasSC:
		offE, cntE = so, sc
	case hasSO:
		return w.fail(tagStripByteCounts, p.Offset, "tiff.missing-tag", ErrMissingTag, "StripByteCounts")
	default:
		return w.fail(tagStripOffsets, p.Offset, "tiff.missing-tag", ErrMissingTag, "neither strips nor tiles are defined")
	}
	planes := uint64(1)
	if p.Planar == 2 {
		planes = p.Samples
	}
	var want uint64
	if p.Tiled {
		var err error
		var ok bool
		if p.TileWidth, ok, err = w.one(entries, tagTileWidth, 0); err != nil {
			return err
		} else if !ok || p.TileWidth == 0 {
			return w.fail(tagTileWidth, p.Offset, "tiff.missing-tag", ErrMissingTag, "TileWidth missing or zero")
		}
		if p.TileLength, ok, err = w.one(entries, tagTileLength, 0); err != nil {
			return err
		} else if !ok || p.TileLength == 0 {
			return w.fail(tagTileLength, p.Offset, "tiff.missing-tag", ErrMissingTag, "TileLength missing or zero")
		}
		if p.TileWidth > math.MaxUint32 || p.TileLength > math.MaxUint32 {
			return w.fail(tagTileWidth, p.Offset, "tiff.bad-value", ErrBadValue, "tile %dx%d", p.TileWidth, p.TileLength)
		}
		want = mulSat(mulSat(ceilDiv(p.Width, p.TileWidth), ceilDiv(p.Height, p.TileLength)), planes)
	} else {
		rps, ok, err := w.one(entries, tagRowsPerStrip, math.MaxUint32)
		if err != nil {
			return err
		}
		if ok && rps == 0 {
			return w.fail(tagRowsPerStrip, entries[tagRowsPerStrip].at+8, "tiff.bad-value", ErrBadValue, "RowsPerStrip is 0")
		}
		if rps > p.Height {
			rps = p.Height
		}
		p.RowsPerStrip = rps
		want = mulSat(ceilDiv(p.Height, rps), planes)
	}
	if want > uint64(w.lim.MaxBlocksPage) {
		return w.fail(offE.tag, offE.at, "tiff.too-many-blocks", ErrBadValue, "%d strips or tiles, cap is %d", want, w.lim.MaxBlocksPage)
	}
	if offE.count != cntE.count {
		return w.fail(cntE.tag, cntE.at+4, "tiff.block-count-mismatch", ErrBadEntry, "%d offsets but %d byte counts", offE.count, cntE.count)
	}
	if offE.count < want {
		return w.fail(offE.tag, offE.at+4, "tiff.too-few-blocks", ErrBadEntry, "%d strips or tiles, the image needs %d", offE.count, want)
	}
	if offE.count > want {
		w.warn("tiff.extra-blocks", offE.at+4, "%d strips or tiles, the image needs %d; the rest are ignored", offE.count, want)
	}
	if err := w.checkUints(offE, uint64(w.lim.MaxBlocksPage)); err != nil {
		return err
	}
	if err := w.checkUints(cntE, uint64(w.lim.MaxBlocksPage)); err != nil {
		return err
	}
	// The arrays are charged before they are read: only the want blocks the
	// image uses are kept, and what all pages keep must fit the budget.
	if held := w.info.Held + int64(want)*blockCost + pageCost; held > w.lim.MemoryBudget {
		return &LimitError{Page: w.page + 1, Tag: offE.tag, Offset: offE.at, What: "strip-array", Have: held, Limit: w.lim.MemoryBudget}
	}
	w.info.Held += int64(want)*blockCost + pageCost
	var err error
	if p.BlockOffsets, err = w.readUints(offE, want); err != nil {
		return err
	}
	if p.BlockCounts, err = w.readUints(cntE, want); err != nil {
		return err
	}
	ts := typeSize[offE.typ]
	uncompressed := p.Compression == 1
	for i := range p.BlockOffsets {
		o, n := p.BlockOffsets[i], p.BlockCounts[i]
		if n == 0 {
			return w.fail(cntE.tag, cntE.valueAt+int64(i)*typeSize[cntE.typ], "tiff.empty-block", ErrShortData, "strip or tile %d has byte count 0", i)
		}
		if o > uint64(w.size) || n > uint64(w.size)-o {
			return w.fail(offE.tag, offE.valueAt+int64(i)*ts, "tiff.block-outside-file", ErrOutsideFile,
				"strip or tile %d: %d bytes at %d run past the end of the %d-byte file", i, n, o, w.size)
		}
		if uncompressed {
			if need := rawNeed(p, i); n < need {
				return w.fail(cntE.tag, cntE.valueAt+int64(i)*typeSize[cntE.typ], "tiff.short-block", ErrShortData,
					"uncompressed strip or tile %d holds %d bytes, its rows need %d", i, n, need)
			}
		}
	}
	return nil
}

func ceilDiv(a, b uint64) uint64 {
	if b == 0 {
		return 0
	}
	return a/b + min(a%b, 1)
}

// mulSat multiplies, saturating at math.MaxUint64 instead of wrapping.
func mulSat(a, b uint64) uint64 {
	if a != 0 && b > math.MaxUint64/a {
		return math.MaxUint64
	}
	return a * b
}
