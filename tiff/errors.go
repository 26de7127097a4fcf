// Package tiff reads the structure and pixel data of TIFF and BigTIFF files,
// as golang.org/x/image/tiff does, within budgets: it walks the IFD chains,
// decodes or counts every strip and tile, and reports what is wrong with a
// position (page, directory path, tag, byte offset). A FormatError is corrupt
// input; an UnsupportedError is valid input the decoder does not handle; a
// LimitError is input over a configured budget. What a file must be to be
// accepted is not decided here: package validate holds that policy.
package tiff

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// Causes of a FormatError. Each is a documented sentinel for errors.Is.
var (
	// ErrNotTIFF: the first bytes are not a TIFF or BigTIFF header.
	ErrNotTIFF = errors.New("not a TIFF header")
	// ErrTruncated: the file ends before a structure it declares; it wraps
	// io.ErrUnexpectedEOF.
	ErrTruncated = fmt.Errorf("truncated: %w", io.ErrUnexpectedEOF)
	// ErrIFDLoop: the chain of image file directories points back at itself.
	ErrIFDLoop = errors.New("IFD chain loops")
	// ErrTooManyPages: more IFDs than the configured page cap.
	ErrTooManyPages = errors.New("too many pages")
	// ErrBadEntry: an IFD entry has a type or count that does not fit its tag.
	ErrBadEntry = errors.New("bad IFD entry")
	// ErrMissingTag: a required tag is absent.
	ErrMissingTag = errors.New("required tag missing")
	// ErrOutsideFile: an offset points outside the file.
	ErrOutsideFile = errors.New("offset outside file")
	// ErrZeroSize: width or height is zero.
	ErrZeroSize = errors.New("zero-size image")
	// ErrBadValue: a tag's value is out of range.
	ErrBadValue = errors.New("value out of range")
	// ErrShortData: a strip or tile holds fewer bytes than its rows need.
	ErrShortData = errors.New("strip or tile shorter than its rows need")
	// ErrUndecodable: the pixel data does not decode.
	ErrUndecodable = errors.New("pixel data does not decode")
	// ErrDecoderPanic: the decoder panicked on this input (a decoder bug
	// triggered by malformed data); the input is treated as corrupt.
	ErrDecoderPanic = errors.New("decoder panicked")
	// ErrIFDDepth: EXIF, GPS, Interoperability or SubIFD directories nest
	// deeper than Lazaret follows (maxIFDDepth).
	ErrIFDDepth = errors.New("IFDs nested too deep")
)

// FormatError is a structural fault in a TIFF file. Page is the 1-based page
// number (IFD index + 1; 0 for the header), Offset the 0-based byte offset of
// the offending bytes in the file, Tag the tag number (0 when none applies).
// Every page number in this package is 1-based, as a person counts pages.
// Path names the directory inside the page when it is not the page's own
// IFD: "EXIF", "GPS", "EXIF / Interoperability", "SubIFD 2" (the second
// SubIFDs value), "SubIFD 2.3" (the third IFD of that SubIFD's chain),
// "SubIFD 1 / EXIF"; "" for the page's IFD. Counts in a path are 1-based.
type FormatError struct {
	Page   int
	Path   string
	Tag    uint16
	Offset int64
	Code   string // stable machine code, e.g. "tiff.ifd-loop"
	Err    error
}

func (e *FormatError) Error() string {
	var b strings.Builder
	b.WriteString("tiff: ")
	if e.Page > 0 {
		fmt.Fprintf(&b, "page %d ", e.Page)
		writePath(&b, e.Path)
	} else {
		b.WriteString("header ")
	}
	if e.Tag != 0 {
		fmt.Fprintf(&b, "tag %s ", TagName(e.Tag))
	}
	fmt.Fprintf(&b, "at byte %d: %v", e.Offset, e.Err)
	return b.String()
}

func (e *FormatError) Unwrap() error { return e.Err }

// writePath writes "/ EXIF " after a page number, or nothing for a page's
// own IFD.
func writePath(b *strings.Builder, path string) {
	if path != "" {
		fmt.Fprintf(b, "/ %s ", path)
	}
}

// UnsupportedError: the input is valid as far as Lazaret can tell but uses
// something the pixel decoder does not support (an encoding, a colour model).
// It is a warning, not a failure, unless policy says otherwise.
// Path is as in FormatError ("" for a page's own image, "SubIFD 1" for a
// child image).
type UnsupportedError struct {
	Page   int
	Path   string
	Offset int64
	Reason string
	// Compression is the page's compression when no decoder Lazaret has
	// knows it (52479, a vendor's private codec), 0 when the page was not
	// decoded for another reason: the hook for a policy that refuses
	// pixel data nobody can read, where today's accepts it with a
	// tiff.not-decoded warning.
	Compression uint64
}

func (e *UnsupportedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tiff: page %d ", e.Page)
	writePath(&b, e.Path)
	fmt.Fprintf(&b, "at byte %d: pixel data not decoded: %s", e.Offset, e.Reason)
	return b.String()
}

// LimitError: the input is larger than a configured budget. It is not corrupt;
// an operator may raise the limit and replay. Page is 1-based, Offset the
// 0-based byte of what was refused (an IFD, an IFD entry, a strip or tile),
// Tag the tag whose values are over budget (0 when none applies), Path as
// in FormatError.
type LimitError struct {
	Page   int
	Path   string
	Tag    uint16
	Offset int64
	// What is over budget, and the code's suffix ("limit.<What>"):
	//   - "pixels": a page's width x height, against the pixel budget;
	//   - "inflate": a strip or tile decompresses to more bytes than its
	//     rows hold and any honest encoder's overrun (Limit is blockLimit;
	//     Have is Limit+1: decompression stops there);
	//   - "strip-array": the strip or tile offset and byte-count arrays of
	//     the pages so far, against the memory budget;
	//   - "memory": decoding a page would hold more than what the memory
	//     budget leaves, and its blocks cannot be counted instead;
	//   - "jpeg": decoding one JPEG strip or tile would hold more than what
	//     the memory budget leaves (refused before anything is allocated);
	//   - "file-pixels": the pixels of the pages decoded so far and this
	//     page's, against the budget of the whole file (see
	//     DecodeOptions.FilePixelBudget): pages sharing data, read in
	//     different ways.
	What  string
	Have  int64
	Limit int64
}

func (e *LimitError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tiff: page %d ", e.Page)
	writePath(&b, e.Path)
	if e.Tag != 0 {
		fmt.Fprintf(&b, "tag %s ", TagName(e.Tag))
	}
	fmt.Fprintf(&b, "at byte %d: ", e.Offset)
	switch e.What {
	case "inflate":
		fmt.Fprintf(&b, "block decompresses to more than %d bytes, far past what its rows hold", e.Limit)
	case "strip-array":
		fmt.Fprintf(&b, "strip and tile arrays need %d bytes, more than the memory budget leaves (%d)", e.Have, e.Limit)
	case "memory":
		fmt.Fprintf(&b, "decoding needs %d bytes, more than the memory budget leaves (%d)", e.Have, e.Limit)
	case "jpeg":
		fmt.Fprintf(&b, "decoding the JPEG data needs %d bytes, more than the memory budget leaves (%d)", e.Have, e.Limit)
	case "file-pixels":
		fmt.Fprintf(&b, "the pages decoded so far and this one hold %d pixels, more than the file's budget of %d (pages sharing their data, or far more pixels than the file's size explains)", e.Have, e.Limit)
	default:
		fmt.Fprintf(&b, "%d %s exceeds the budget of %d", e.Have, e.What, e.Limit)
	}
	return b.String()
}

// Warning is something worth a look that does not fail the item.
// Path is as in FormatError.
type Warning struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Page    *int   `json:"page,omitempty"`
	Path    string `json:"path,omitempty"`
	Offset  *int64 `json:"offset,omitempty"`
}
