// Package validate holds Lazaret's validation rules: the preservation-master
// policy over what package tiff reads, fixity and format identification, the
// EDIFACT business rules and registries, the manifest rules, and confined
// opens. It knows nothing of queues: it returns typed errors that the
// ingest classifier routes.
package validate

import (
	"fmt"
	"strings"
)

// FixityError: the file's digest or size is not what the manifest promised.
type FixityError struct {
	Field      string // "sha256" or "size"
	Want, Have string
}

func (e *FixityError) Error() string {
	return fmt.Sprintf("fixity: %s mismatch: manifest says %s, file has %s", e.Field, e.Want, e.Have)
}

// FormatError: the bytes say one format, the name or the manifest another.
type FormatError struct {
	Identified string // PUID or description of what the bytes are
	Claimed    string // what the extension or manifest claims
	Source     string // "extension" or "manifest"
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("format: content is %s but the %s says %s", e.Identified, e.Source, e.Claimed)
}

// FieldError is one manifest rule that an item breaks.
type FieldError struct {
	ObjectID string
	Field    string // JSON field name, e.g. "resolution_dpi"
	Rule     string // e.g. "required", "numeric", "min", "matches_file"
	Param    string
	Value    string
	Message  string
}

func (e *FieldError) Error() string {
	id := e.ObjectID
	if id == "" {
		id = "manifest"
	}
	return fmt.Sprintf("%s: %s: %s", id, e.Field, e.Message)
}

// Code is the stable machine code, e.g. "manifest.resolution_dpi.numeric".
func (e *FieldError) Code() string { return "manifest." + e.Field + "." + e.Rule }

// PolicyError: a well-formed file breaks a configured policy (a private tag
// where policy rejects them, an encoding policy refuses). Path is as in
// tiff.FormatError.
type PolicyError struct {
	Page   int
	Path   string
	Offset int64
	Code   string
	Reason string
}

func (e *PolicyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "policy: page %d ", e.Page)
	writePath(&b, e.Path)
	fmt.Fprintf(&b, "at byte %d: %s", e.Offset, e.Reason)
	return b.String()
}

// writePath writes "/ EXIF " after a page number, or nothing for a page's
// own IFD.
func writePath(b *strings.Builder, path string) {
	if path != "" {
		fmt.Fprintf(b, "/ %s ", path)
	}
}
