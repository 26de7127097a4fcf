// Package edifact reads and writes UN/EDIFACT interchanges: service string
// advice (UNA) and default separators, the release character, repetition
// (syntax 4), interchange, group and message envelopes with their control
// checks, and the byte offset of every segment, element and component. It
// streams: one segment at a time, with hard limits on lengths and counts.
// It knows nothing of queues, registries or message semantics.
package edifact

import (
	"errors"
	"fmt"
	"strings"
)

// Syntax error codes (UN/EDIFACT data element 0085), as reported in CONTRL.
const (
	CodeSyntaxVersion      = 2  // syntax version or level not supported
	CodeInvalidValue       = 12 // invalid value
	CodeMissing            = 13 // missing
	CodeNotSupportedHere   = 15 // not supported in this position
	CodeTooManyConstituent = 16 // too many constituents
	CodeUnspecified        = 18 // unspecified error
	CodeInvalidServiceChar = 20 // character invalid as service character
	CodeInvalidCharacter   = 21 // invalid character(s)
	CodeDuplicate          = 26 // duplicate detected
	CodeReferenceMismatch  = 28 // references do not match
	CodeCountMismatch      = 29 // control count does not match number of instances received
	CodeGroupsMixed        = 30 // groups and messages mixed
	CodeLowerLevelEmpty    = 32 // lower level empty
	CodeOutsideMessage     = 33 // invalid occurrence outside message, package or group
	CodeTooLong            = 39 // data element too long
	CodeCharsetUnsupported = 46 // character set not supported
)

// Causes of a SyntaxError, for errors.Is.
var (
	ErrUnterminated    = errors.New("segment has no terminator before the end of input")
	ErrSegmentTooLong  = errors.New("segment longer than the limit")
	ErrTooManyElements = errors.New("too many data elements or components")
	ErrBadTag          = errors.New("segment tag is not three upper-case letters or digits")
	ErrBadUNA          = errors.New("invalid service string advice (UNA)")
	ErrDanglingRelease = errors.New("release character at the end of a segment")
	ErrMissingUNB      = errors.New("interchange does not start with UNB")
	ErrMissingUNZ      = errors.New("interchange ends without UNZ")
	ErrMissingUNT      = errors.New("message ends without UNT")
	ErrMissingUNE      = errors.New("group ends without UNE")
	ErrMissingElement  = errors.New("mandatory data element missing")
	ErrOutsideMessage  = errors.New("segment outside a message")
	ErrAfterUNZ        = errors.New("data after UNZ")
	ErrReference       = errors.New("control reference does not match")
	ErrCount           = errors.New("control count does not match")
	ErrGroupsMixed     = errors.New("groups and messages outside groups are mixed")
	ErrEmpty           = errors.New("no messages")
	ErrTooManySegments = errors.New("more segments than the limit")
	// ErrObjectLength: a binary object (ISO 9735-8, UNO .. UNP) whose
	// declared length (0810) is not a count, runs past the end of the
	// input, or does not end where UNP begins.
	ErrObjectLength = errors.New("binary object length does not match")
	// ErrTooManyInterchanges: the input holds more interchanges, one after
	// the other, than Limits.MaxInterchanges.
	ErrTooManyInterchanges = errors.New("more interchanges than the limit")
	// ErrDuplicateMessage: a message's reference (UNH 0062) is that of an
	// earlier message of the interchange (ISO 9735: unique within it).
	ErrDuplicateMessage = errors.New("message reference used by an earlier message")
	// ErrTooManyReferences: more message references than Lazaret holds to
	// find a repeated one (maxScatteredRefs) do not count up one by one
	// (1, 2, 3 or 0001, 0002, ...).
	ErrTooManyReferences = errors.New("too many message references out of sequence")
	// ErrMessageTooLarge: the segments of one message, kept for the rules,
	// would take more memory than Limits.MaxMessageBytes.
	ErrMessageTooLarge = errors.New("message takes more memory than the limit")
)

// SyntaxError is a fault in an interchange. Offset is the 0-based byte offset
// of the offending bytes in the input. Segment is the 1-based position of the
// segment in its message counting UNH as 1 (as CONTRL's UCS reports it), or 0
// outside a message; Index is the 1-based position in the interchange
// counting UNB as 1 (UNA is not counted). Element and Component are 1-based
// positions within the segment as CONTRL's UCD counts them (the tag is
// element 0, the first data element is 1); 0 means the whole segment or
// element. Code is the 0085 syntax error code.
type SyntaxError struct {
	Offset    int64
	Segment   int
	Index     int
	Tag       string
	Element   int
	Component int
	Code      int
	Message   string // the UNH reference when inside a message
	Err       error
}

func (e *SyntaxError) Error() string {
	var b strings.Builder
	b.WriteString("edifact: ")
	switch {
	case e.Segment > 0:
		fmt.Fprintf(&b, "message %s segment %d", e.Message, e.Segment)
	case e.Index > 0:
		fmt.Fprintf(&b, "interchange segment %d", e.Index)
	default:
		b.WriteString("interchange")
	}
	if e.Tag != "" {
		fmt.Fprintf(&b, " (%s)", e.Tag)
	}
	if e.Element > 0 {
		fmt.Fprintf(&b, " element %d", e.Element)
		if e.Component > 0 {
			fmt.Fprintf(&b, ":%d", e.Component)
		}
	}
	fmt.Fprintf(&b, " at byte %d: %v", e.Offset, e.Err)
	if e.Code != 0 {
		fmt.Fprintf(&b, " [0085 code %d]", e.Code)
	}
	return b.String()
}

func (e *SyntaxError) Unwrap() error { return e.Err }

// UnsupportedError: the input is well-formed as far as Lazaret can tell but
// uses something it does not support (an unknown syntax identifier, a
// non-UN agency). It is not corruption.
type UnsupportedError struct {
	Offset int64
	What   string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("edifact: at byte %d: unsupported: %s", e.Offset, e.What)
}

var causeNames = []struct {
	err  error
	name string
}{
	{ErrUnterminated, "unterminated"}, {ErrSegmentTooLong, "segment-too-long"}, {ErrTooManyElements, "too-many-elements"},
	{ErrBadTag, "bad-tag"}, {ErrBadUNA, "bad-una"}, {ErrDanglingRelease, "dangling-release"}, {ErrMissingUNB, "unb-missing"},
	{ErrMissingUNZ, "unz-missing"}, {ErrMissingUNT, "unt-missing"}, {ErrMissingUNE, "une-missing"},
	{ErrMissingElement, "element-missing"}, {ErrOutsideMessage, "outside-message"},
	{ErrAfterUNZ, "data-after-unz"}, {ErrReference, "reference-mismatch"}, {ErrCount, "count-mismatch"},
	{ErrGroupsMixed, "groups-mixed"}, {ErrEmpty, "empty"},
	{ErrTooManySegments, "too-many-segments"}, {ErrMessageTooLarge, "message-too-large"},
	{ErrTooManyInterchanges, "too-many-interchanges"}, {ErrObjectLength, "object-length"},
	{ErrDuplicateMessage, "duplicate-message"}, {ErrTooManyReferences, "too-many-references"},
}

// Name is a stable machine code for the error's cause, e.g.
// "edifact.count-mismatch".
func (e *SyntaxError) Name() string {
	for _, c := range causeNames {
		if errors.Is(e.Err, c.err) {
			return "edifact." + c.name
		}
	}
	if e.Code == CodeSyntaxVersion {
		return "edifact.syntax-version"
	}
	return "edifact.syntax"
}
