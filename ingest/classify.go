package ingest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"syscall"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/validate"
)

// PanicError is a recovered panic inside a handler. Unknown: surfaced in
// quarantine, never retried blindly, never a crashed worker.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// RoutingError: the failure was recorded but could not be handed to its
// destination (Redis down, ledger busy). Transient: the task is retried and
// nothing is acknowledged, so nothing is lost. It does not consume the retry
// budget.
type RoutingError struct {
	Destination premis.Destination
	Err         error
}

func (e *RoutingError) Error() string {
	return fmt.Sprintf("routing to %s failed: %v", e.Destination, e.Err)
}
func (e *RoutingError) Unwrap() error { return e.Err }

// Classify maps an error to its failure class. It is a pure function: one
// ordered switch over error types; anything it does not recognise is Unknown
// (quarantined, so it is seen), never "retry forever".
func Classify(err error) premis.Class {
	var (
		poison   *PoisonError
		panicErr *PanicError
		routing  *RoutingError
		tiffErr  *validate.TIFFError
		fixity   *validate.FixityError
		format   *validate.FormatError
		field    *validate.FieldError
		policy   *validate.PolicyError
		limit    *validate.LimitError
		rule     *validate.RuleError
		syntax   *edifact.SyntaxError
		unsupp   *edifact.UnsupportedError
		netErr   net.Error
	)
	switch {
	case err == nil:
		return ""
	case errors.As(err, &routing):
		return premis.Transient
	case errors.As(err, &panicErr):
		return premis.Unknown
	case errors.As(err, &poison), errors.As(err, &syntax):
		return premis.Structural
	case errors.As(err, &rule):
		switch rule.Tier {
		case validate.TierStructural:
			return premis.Structural
		case validate.TierRegulatory:
			return premis.Regulatory
		}
		return premis.Semantic
	case errors.As(err, &unsupp):
		return premis.Semantic
	case errors.As(err, &fixity), errors.As(err, &tiffErr):
		return premis.Structural
	case errors.As(err, &format), errors.As(err, &field), errors.As(err, &policy), errors.As(err, &limit):
		return premis.Semantic
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return premis.Transient
	case errors.Is(err, premis.ErrBusy), errors.Is(err, validate.ErrFileChanged):
		return premis.Transient
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission), errors.Is(err, os.ErrDeadlineExceeded):
		// The storage is not there yet (mount, copy in progress) or not
		// readable yet: bounded retries, then the DLQ.
		return premis.Transient
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EIO),
		errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.ESTALE), errors.Is(err, syscall.ETIMEDOUT):
		return premis.Transient
	case errors.As(err, &netErr) && netErr.Timeout():
		return premis.Transient
	}
	return premis.Unknown
}

// Code is the stable machine code recorded with a failure.
func Code(err error) string {
	var (
		poison   *PoisonError
		panicErr *PanicError
		routing  *RoutingError
		tiffErr  *validate.TIFFError
		fixity   *validate.FixityError
		format   *validate.FormatError
		field    *validate.FieldError
		policy   *validate.PolicyError
		limit    *validate.LimitError
		rule     *validate.RuleError
		syntax   *edifact.SyntaxError
		unsupp   *edifact.UnsupportedError
	)
	switch {
	case err == nil:
		return ""
	case errors.As(err, &routing):
		return "routing." + string(routing.Destination)
	case errors.As(err, &syntax):
		return syntax.Name()
	case errors.As(err, &rule):
		return rule.Code
	case errors.As(err, &unsupp):
		return "edifact.unsupported"
	case errors.As(err, &panicErr):
		return "panic"
	case errors.As(err, &poison):
		return "task.undecodable"
	case errors.As(err, &fixity):
		return "fixity." + fixity.Field + "-mismatch"
	case errors.As(err, &tiffErr):
		return tiffErr.Code
	case errors.As(err, &format):
		return "format.conflict-" + format.Source
	case errors.As(err, &field):
		return field.Code()
	case errors.As(err, &policy):
		return policy.Code
	case errors.As(err, &limit):
		return "limit." + limit.What
	case errors.Is(err, fs.ErrNotExist):
		return "io.not-found"
	case errors.Is(err, fs.ErrPermission):
		return "io.permission"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, premis.ErrBusy):
		return "ledger.busy"
	case errors.Is(err, validate.ErrFileChanged):
		return "io.file-changed"
	}
	if c := Classify(err); c == premis.Transient {
		return "io.unavailable"
	}
	return "unclassified"
}

// Location is where in the payload a failure is.
type Location struct {
	Offset    *int64 // byte, 0-based
	Page      *int   // TIFF page, 1-based
	Segment   int    // EDIFACT segment in its message, UNH = 1
	Element   int
	Component int
	Tag       string // TIFF tag name or EDIFACT segment tag
	Message   string // EDIFACT message reference
}

// Locate extracts the position of a failure, when it has one.
func Locate(err error) Location {
	var (
		l       Location
		tiffErr *validate.TIFFError
		policy  *validate.PolicyError
		limit   *validate.LimitError
		rule    *validate.RuleError
		syntax  *edifact.SyntaxError
	)
	ptr64 := func(v int64) *int64 { return &v }
	ptr := func(v int) *int { return &v }
	switch {
	case errors.As(err, &syntax):
		l = Location{Offset: ptr64(syntax.Offset), Segment: syntax.Segment, Element: syntax.Element, Component: syntax.Component, Tag: syntax.Tag, Message: syntax.Message}
	case errors.As(err, &rule):
		l = Location{Offset: ptr64(rule.Offset), Segment: rule.Segment, Element: rule.Element, Component: rule.Component, Tag: rule.Tag, Message: rule.Message}
	case errors.As(err, &tiffErr):
		l.Offset = ptr64(tiffErr.Offset)
		if tiffErr.Page > 0 {
			l.Page = ptr(tiffErr.Page)
		}
		if tiffErr.Tag != 0 {
			l.Tag = validate.TagName(tiffErr.Tag)
		}
	case errors.As(err, &policy):
		l.Offset, l.Page = ptr64(policy.Offset), ptr(policy.Page)
	case errors.As(err, &limit):
		l.Offset, l.Page = ptr64(limit.Offset), ptr(limit.Page)
	}
	return l
}

// Position is the byte offset and page of a failure, when it has them.
func Position(err error) (offset *int64, page *int) {
	l := Locate(err)
	return l.Offset, l.Page
}
