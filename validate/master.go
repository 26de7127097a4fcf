package validate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/lazaret/lazaret/tiff"
)

// Stage names the step of master validation an error came from; it picks the
// PREMIS event type the failure is recorded as.
type Stage string

const (
	StageOpen      Stage = "open"      // reading the file at all
	StageFixity    Stage = "fixity"    // digest and size against the manifest
	StageFormat    Stage = "format"    // magic bytes against extension and declared format
	StageStructure Stage = "structure" // header, IFD chain, tags, strips and tiles
	StageDecode    Stage = "decode"    // pixel data of every page
	StageRules     Stage = "rules"     // manifest rules and policy
)

// StageError says at which stage validation stopped.
type StageError struct {
	Stage Stage
	Err   error
}

func (e *StageError) Error() string { return e.Err.Error() }
func (e *StageError) Unwrap() error { return e.Err }

// MasterPolicy is how strict master validation is. It is decided once, in
// configuration.
type MasterPolicy struct {
	Limits      tiff.Limits
	PixelBudget int64 // pixels per page that may be decoded
	// MemoryBudget is the bytes checking one master may hold: the strip and
	// tile arrays of all its pages, then the decoder's buffers and bands.
	// Over it, a master is refused with a *tiff.LimitError (see tiff.DecodePages).
	MemoryBudget int64
	Rules        MasterRules
	// PrivateTags is "tolerate" (a warning) or "reject" (a policy failure)
	// for tags Lazaret does not recognise.
	PrivateTags string
	// Undecodable is "warn" (pixel data the decoder cannot read is checked
	// structurally and recorded with a warning) or "reject".
	Undecodable string
	// DecodeUncompressed also runs the image decoder over uncompressed
	// pages (see DecodeOptions).
	DecodeUncompressed bool
	// RefuseSampleFormats names the sample formats (SampleFormatNames) a
	// collection does not take in its masters, say complex-float for
	// radar data: a page that holds one is a policy failure
	// (policy.sample-format), not a broken file.
	RefuseSampleFormats []string
}

// SampleFormatNames are the names of TIFF's SampleFormat values (339),
// as a policy spells them.
var SampleFormatNames = map[uint64]string{1: "uint", 2: "int", 3: "float", 4: "undefined", 5: "complex-int", 6: "complex-float"}

// sampleFormatName names SampleFormat v, or gives its number.
func sampleFormatName(v uint64) string {
	if n, ok := SampleFormatNames[v]; ok {
		return n
	}
	return strconv.FormatUint(v, 10)
}

// refusedSampleFormat names the first sample format of p that refuse
// lists, or gives "".
func refusedSampleFormat(p *tiff.Page, refuse []string) string {
	for _, v := range p.SampleFormat {
		if name := sampleFormatName(v); slices.Contains(refuse, name) {
			return name
		}
	}
	return ""
}

// sampleFormatError refuses page p for samples in format name.
func sampleFormatError(p *tiff.Page, name string) *PolicyError {
	return &PolicyError{Page: p.Index + 1, Path: p.Path, Offset: p.Offset, Code: "policy.sample-format",
		Reason: fmt.Sprintf("samples in %s format (SampleFormat %v); the policy refuses %s in masters", name, p.SampleFormat, name)}
}

// DefaultMasterPolicy: 100 megapixels a page, 300 dpi minimum, 1% resolution
// tolerance, private tags tolerated, undecodable encodings warned about.
func DefaultMasterPolicy() MasterPolicy {
	return MasterPolicy{
		Limits:       tiff.DefaultLimits,
		PixelBudget:  100_000_000,
		MemoryBudget: tiff.DefaultMemoryBudget,
		Rules:        MasterRules{MinDPI: 300, DPITolerance: 0.01},
		PrivateTags:  "tolerate",
		Undecodable:  "warn",
	}
}

// Validate checks the policy's own settings.
func (p MasterPolicy) Validate() error {
	var errs []error
	if p.PixelBudget <= 0 {
		errs = append(errs, errors.New("pixel budget must be positive"))
	}
	if p.MemoryBudget <= 0 {
		errs = append(errs, errors.New("memory budget must be positive"))
	}
	if p.PrivateTags != "tolerate" && p.PrivateTags != "reject" {
		errs = append(errs, fmt.Errorf("private tags policy %q: want tolerate or reject", p.PrivateTags))
	}
	if p.Undecodable != "warn" && p.Undecodable != "reject" {
		errs = append(errs, fmt.Errorf("undecodable policy %q: want warn or reject", p.Undecodable))
	}
	for _, f := range p.RefuseSampleFormats {
		if !slices.Contains(slices.Collect(maps.Values(SampleFormatNames)), f) {
			errs = append(errs, fmt.Errorf("refused sample format %q: want uint, int, float, undefined, complex-int or complex-float", f))
		}
	}
	if p.Limits.MaxPages <= 0 || p.Limits.MaxEntries <= 0 || p.Limits.MaxBlocksPage <= 0 || p.Limits.MaxSamples == 0 {
		errs = append(errs, errors.New("structural limits must be positive"))
	}
	return errors.Join(errs...)
}

// Report is what master validation found, filled as far as it got.
//
// Warnings lists at most 100 warnings of each code (the first met); past
// that, one more warning of the code counts the rest and names the first
// and last page they are on (it has no Offset). Info is what the
// structural walk found: its Pages holds the first page only and its
// SubImages none; PageCount and SubImageCount count them all (they are
// read again one at a time to be decoded, never held together).
type Report struct {
	Path     string    `json:"path"`
	Size     int64     `json:"size"`
	SHA256   string    `json:"sha256"`
	PUID     string    `json:"puid"`
	Format   string    `json:"format"`
	Pages    int       `json:"pages"`
	Decoded  int       `json:"decoded_pages"`
	Warnings []Warning `json:"warnings"`
	ICC      *tiff.ICCProfile
	Info     *tiff.TIFFInfo `json:"-"`

	// SubImages are the SubIFD images (reduced-resolution and child
	// images) of all pages, SubDecoded those checked to the pixel data.
	SubImages  int `json:"sub_images,omitempty"`
	SubDecoded int `json:"sub_images_decoded,omitempty"`
}

var tiffExtensions = map[string][]string{
	"fmt/353":  {".tif", ".tiff"},
	"fmt/1917": {".tif", ".tiff", ".btf", ".tf8"},
}

// refinePUID applies the PRONOM priorities that need the structure: a
// classic TIFF whose first IFD carries a GeoKeyDirectory is GeoTIFF
// (fmt/155), one with a TIFF/EPStandardID is TIFF/EP (fmt/154); both take
// priority over plain TIFF (fmt/353), as in DROID's signature file.
func refinePUID(rep *Report, info *tiff.TIFFInfo) {
	if rep.PUID != "fmt/353" || info == nil || len(info.Pages) == 0 {
		return
	}
	switch {
	case info.Pages[0].GeoKeys:
		rep.PUID, rep.Format = "fmt/155", "GeoTIFF"
	case info.Pages[0].EPStandard:
		rep.PUID, rep.Format = "fmt/154", "TIFF/EP"
	}
}

// CheckMaster validates the TIFF master at path: it computes the SHA-256
// while it walks the structure and decodes every page, identifies the
// format, and, when item is not nil, checks fixity and the manifest rules.
// The error, if any, is a *StageError around a typed cause; the report is
// filled as far as validation got (the digest is always that of the bytes
// read, so a failure event names the file it saw).
func CheckMaster(ctx context.Context, path string, item *Item, pol MasterPolicy) (*Report, error) {
	return CheckMasterSource(ctx, Source{Path: path}, item, pol)
}

// CheckMasterSource is CheckMaster for a file opened through Open: beneath
// its root, no links, no FIFOs, the size seen once at open.
func CheckMasterSource(ctx context.Context, src Source, item *Item, pol MasterPolicy) (*Report, error) {
	path := src.String()
	rep := &Report{Path: path}
	if err := ctx.Err(); err != nil {
		return rep, context.Cause(ctx)
	}
	f, size, err := Open(src)
	if err != nil {
		return rep, &StageError{StageOpen, err}
	}
	defer f.Close()
	rep.Size = size

	type hashed struct {
		sum string
		n   int64
		err error
	}
	done := make(chan hashed, 1)
	go func() {
		h := sha256.New()
		var buf []byte
		if size < smallHashRead {
			// One read for a small file, and its end seen, into a buffer of
			// its size: a pooled megabyte is made anew after the collector
			// empties the pool, which a worker's small heap does every few
			// items.
			buf = make([]byte, size+1)
		} else {
			bp := hashBufPool.Get().(*[]byte)
			defer hashBufPool.Put(bp)
			buf = *bp
		}
		var n int64
		for {
			if err := ctx.Err(); err != nil {
				done <- hashed{err: context.Cause(ctx)}
				return
			}
			m, err := f.ReadAt(buf, n)
			h.Write(buf[:m])
			n += int64(m)
			if errors.Is(err, io.EOF) || n > size {
				break // n > size: it grew while read; reported as changed below
			}
			if err != nil {
				done <- hashed{err: err}
				return
			}
		}
		done <- hashed{sum: hex.EncodeToString(h.Sum(nil)), n: n}
	}()

	rc := newReadCache(f, size)
	structErr := checkContent(ctx, rc, size, path, item, pol, rep)
	rc.release()
	hr := <-done
	if hr.err != nil {
		return rep, &StageError{StageFixity, hr.err}
	}
	if hr.n != size {
		return rep, &StageError{StageOpen, fmt.Errorf("%s changed while it was read: %d bytes at open, %d read: %w", path, size, hr.n, ErrFileChanged)}
	}
	rep.SHA256 = hr.sum
	if item != nil {
		if item.SHA256 != "" && !strings.EqualFold(item.SHA256, hr.sum) {
			return rep, &StageError{StageFixity, &FixityError{Field: "sha256", Want: item.SHA256, Have: hr.sum}}
		}
		if item.Size > 0 && item.Size != size {
			return rep, &StageError{StageFixity, &FixityError{Field: "size", Want: fmt.Sprint(item.Size), Have: fmt.Sprint(size)}}
		}
	}
	return rep, structErr
}

// ErrFileChanged: the file's size changed while it was being read (it is
// still being copied in). A transient condition.
var ErrFileChanged = errors.New("file changed during validation")

func checkContent(ctx context.Context, r io.ReaderAt, size int64, path string, item *Item, pol MasterPolicy, rep *Report) error {
	var head [16]byte
	n, err := r.ReadAt(head[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return &StageError{StageOpen, err}
	}
	rep.PUID, rep.Format = tiff.Identify(head[:n])
	if rep.PUID != "" {
		if _, isTIFF := tiffExtensions[rep.PUID]; !isTIFF {
			return &StageError{StageFormat, &FormatError{Identified: rep.Format + " (" + rep.PUID + ")", Claimed: "TIFF", Source: "item kind"}}
		}
		ext := strings.ToLower(filepath.Ext(path))
		switch {
		case ext == "":
			rep.Warnings = append(rep.Warnings, Warning{Code: "format.no-extension", Message: "file name has no extension"})
		case !containsStr(tiffExtensions[rep.PUID], ext):
			return &StageError{StageFormat, &FormatError{Identified: rep.Format + " (" + rep.PUID + ")", Claimed: ext, Source: "extension"}}
		}
		if item != nil && item.Format != "" && !declaredMatches(item.Format, rep.PUID) {
			return &StageError{StageFormat, &FormatError{Identified: rep.Format + " (" + rep.PUID + ")", Claimed: item.Format, Source: "manifest"}}
		}
	}

	lim := pol.Limits
	lim.MemoryBudget = pol.MemoryBudget
	// The walk keeps the first page (the format, the ICC profile and the
	// manifest rules read it) and what the report needs of the others:
	// their unrecognised tags. Decoding then reads the pages again, one at
	// a time, so a file of 65,535 tiny pages costs what one page does, and
	// every structural error still comes before any decoding.
	type unknownTags struct {
		page   int // 1-based
		offset int64
		tags   []uint16
	}
	var unknown []unknownTags
	unknownCap := tiff.WarnCap{Max: tiff.MaxWarningsPerCode} // the pages with unknown tags listed, the rest counted
	var refused *PolicyError                                 // the first page in a sample format the policy refuses
	info, err := tiff.WalkFirst(r, size, lim, func(p *tiff.Page) {
		if name := refusedSampleFormat(p, pol.RefuseSampleFormats); name != "" && refused == nil {
			refused = sampleFormatError(p, name)
		}
		if len(p.UnknownTags) > 0 && unknownCap.Listed("tiff.unknown-tags", p.Index+1) {
			unknown = append(unknown, unknownTags{p.Index + 1, p.Offset, p.UnknownTags})
		}
	})
	rep.Info = info
	if info != nil {
		rep.Pages = info.PageCount
		rep.Warnings = append(rep.Warnings, info.Warnings...)
	}
	if err != nil {
		return &StageError{StageStructure, err}
	}
	refinePUID(rep, info)
	if pol.PrivateTags == "reject" {
		if len(unknown) > 0 {
			u := unknown[0]
			return &StageError{StageRules, &PolicyError{Page: u.page, Offset: u.offset, Code: "policy.private-tag",
				Reason: fmt.Sprintf("unrecognised tags %v; policy rejects private and unknown tags", u.tags)}}
		}
	} else {
		for _, u := range unknown {
			pg, off := u.page, u.offset
			rep.Warnings = append(rep.Warnings, Warning{Code: "tiff.unknown-tags", Page: &pg, Offset: &off,
				Message: fmt.Sprintf("unrecognised tags %v tolerated by policy", u.tags)})
		}
		if more, first, last := unknownCap.Elided("tiff.unknown-tags"); more > 0 {
			rep.Warnings = append(rep.Warnings, Warning{Code: "tiff.unknown-tags", Page: &first,
				Message: fmt.Sprintf("%d more pages with unrecognised tags not listed (the first %d are), pages %d to %d", more, unknownCap.Max, first, last)})
		}
	}
	if refused != nil {
		return &StageError{StageRules, refused}
	}
	if p := info.Pages[0]; p.ICCOffset >= 0 {
		icc, err := tiff.ReadICC(r, p.ICCOffset, p.ICCLength)
		if err != nil {
			pg, off := 1, p.ICCOffset
			rep.Warnings = append(rep.Warnings, Warning{Code: "tiff.bad-icc", Page: &pg, Offset: &off, Message: err.Error()})
		} else {
			rep.ICC = icc
		}
	}
	walked := len(info.Warnings)
	dec := tiff.NewDecoder(r, info, lim, tiff.DecodeOptions{PixelBudget: pol.PixelBudget, MemoryBudget: pol.MemoryBudget, DecodeUncompressed: pol.DecodeUncompressed,
		Cancelled: func() error {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return nil
		}})
	// SubIFD images are met only while decoding: the policy on sample
	// formats holds for them too.
	err = dec.Decode(func(p *tiff.Page) error {
		if name := refusedSampleFormat(p, pol.RefuseSampleFormats); name != "" {
			return sampleFormatError(p, name)
		}
		return nil
	})
	if pe := (*PolicyError)(nil); errors.As(err, &pe) {
		return &StageError{StageRules, pe}
	}
	skipped := dec.Skipped()
	rep.Decoded = info.PageCount - mainSkipped(skipped)
	rep.SubImages, rep.SubDecoded = info.SubImageCount, info.SubImageCount-(len(skipped)-mainSkipped(skipped))
	rep.Warnings = append(rep.Warnings, info.Warnings[walked:]...) // what decoding found
	if err != nil {
		return &StageError{StageDecode, err}
	}
	notDecoded := tiff.WarnCap{Max: tiff.MaxWarningsPerCode}
	for _, u := range skipped {
		if pol.Undecodable == "reject" {
			return &StageError{StageRules, &PolicyError{Page: u.Page, Path: u.Path, Offset: u.Offset, Code: "policy.undecodable", Reason: u.Reason}}
		}
		if notDecoded.Listed("tiff.not-decoded", u.Page) {
			pg, off := u.Page, u.Offset
			rep.Warnings = append(rep.Warnings, Warning{Code: "tiff.not-decoded", Page: &pg, Path: u.Path, Offset: &off, Message: u.Error()})
		}
	}
	rep.Warnings = notDecoded.Summarise(rep.Warnings)
	if item != nil {
		if err := CheckItemRules(*item, info, rep.ICC, pol.Rules); err != nil {
			return &StageError{StageRules, err}
		}
	}
	return nil
}

func declaredMatches(declared, puid string) bool {
	d := strings.ToLower(strings.TrimSpace(declared))
	switch d {
	case puid, "tiff", "tif", "image/tiff", "image/tif":
		return true
	case "fmt/155", "geotiff", "fmt/154", "tiff/ep":
		return puid == "fmt/353" // refined from the structure after the walk
	case "bigtiff", "fmt/1917":
		return puid == "fmt/1917"
	}
	return false
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// mainSkipped counts the pages of the main chain (not SubIFD images) among
// skipped.
func mainSkipped(skipped []*tiff.UnsupportedError) int {
	n := 0
	for _, u := range skipped {
		if u.Path == "" {
			n++
		}
	}
	return n
}
