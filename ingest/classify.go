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
	"github.com/lazaret/lazaret/tiff"
	"github.com/lazaret/lazaret/validate"
)

// PanicError is a recovered panic inside a handler. Unknown: surfaced in
// quarantine, never retried blindly, never a crashed worker.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// RoutingError: a decision could not be read, recorded or handed to its
// destination (Redis down, ledger busy). Transient: the task is retried
// and nothing is acknowledged, so nothing is lost. It spends the routing
// budget, not the item's retry budget; Try counts from 1.
type RoutingError struct {
	Destination premis.Destination
	Try         int
	Err         error
}

func (e *RoutingError) Error() string {
	if e.Destination == "" {
		return fmt.Sprintf("routing try %d failed: %v", e.Try, e.Err)
	}
	return fmt.Sprintf("routing to %s failed (try %d): %v", e.Destination, e.Try, e.Err)
}
func (e *RoutingError) Unwrap() error { return e.Err }

// Classify maps an error to its failure class. It is a pure function: one
// ordered switch over error types; anything it does not recognise is Unknown
// (quarantined, so it is seen), never "retry forever".
func Classify(err error) premis.Class {
	c, _ := classify(err)
	return c
}

// Code is the stable machine code recorded with a failure.
func Code(err error) string {
	_, code := classify(err)
	return code
}

// classify is the one ordered switch behind Classify and Code, so a class
// and its code can never disagree. A nil error returns before the targets
// of errors.As are declared: they escape, and every message of an
// interchange is decided with a nil error.
func classify(err error) (premis.Class, string) {
	if err == nil {
		return "", ""
	}
	var (
		poison   *PoisonError
		panicErr *PanicError
		routing  *RoutingError
		tiffErr  *tiff.FormatError
		fixity   *validate.FixityError
		format   *validate.FormatError
		field    *validate.FieldError
		policy   *validate.PolicyError
		limit    *tiff.LimitError
		openErr  *validate.OpenError
		rule     *validate.RuleError
		syntax   *edifact.SyntaxError
		unsupp   *edifact.UnsupportedError
		netErr   net.Error
	)
	switch {
	case errors.As(err, &routing):
		return premis.Transient, "routing." + string(routing.Destination)
	case errors.As(err, &panicErr):
		return premis.Unknown, "panic"
	case errors.As(err, &poison):
		return premis.Structural, "task.undecodable"
	case errors.As(err, &openErr):
		// Outside its root, through a link, a FIFO or a device: nothing
		// was read, and retrying would not make it a file.
		return premis.Structural, openErr.Code
	case errors.As(err, &syntax):
		return premis.Structural, syntax.Name()
	case errors.As(err, &rule):
		switch rule.Tier {
		case validate.TierStructural:
			return premis.Structural, rule.Code
		case validate.TierRegulatory:
			return premis.Regulatory, rule.Code
		}
		return premis.Semantic, rule.Code
	case errors.As(err, &unsupp):
		return premis.Semantic, "edifact.unsupported"
	case errors.As(err, &fixity):
		return premis.Structural, "fixity." + fixity.Field + "-mismatch"
	case errors.As(err, &tiffErr):
		return premis.Structural, tiffErr.Code
	case errors.As(err, &format):
		return premis.Semantic, "format.conflict-" + format.Source
	case errors.As(err, &field):
		return premis.Semantic, field.Code()
	case errors.As(err, &policy):
		return premis.Semantic, policy.Code
	case errors.As(err, &limit):
		return premis.Semantic, "limit." + limit.What
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return premis.Transient, "timeout"
	case errors.Is(err, context.Canceled):
		return premis.Transient, "canceled"
	case errors.Is(err, premis.ErrBusy):
		return premis.Transient, "ledger.busy"
	case errors.Is(err, validate.ErrFileChanged):
		return premis.Transient, "io.file-changed"
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		// This process (EMFILE) or the system (ENFILE) ran out of file
		// descriptors: a resource of the worker's, never a fault of the
		// file. Retried with backoff once descriptors are free again.
		return premis.Transient, "io.descriptors"
	case errors.Is(err, fs.ErrNotExist):
		// The storage is not there yet (a mount, a copy in progress):
		// bounded retries, then the DLQ.
		return premis.Transient, "io.not-found"
	case errors.Is(err, fs.ErrPermission):
		return premis.Transient, "io.permission"
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EIO),
		errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.ESTALE), errors.Is(err, syscall.ETIMEDOUT):
		return premis.Transient, "io.unavailable"
	case errors.As(err, &netErr) && netErr.Timeout():
		return premis.Transient, "io.unavailable"
	}
	return premis.Unknown, "unclassified"
}

// Location is where in the payload a failure is, and for an interchange
// which message.
type Location struct {
	premis.Position
	Message string // EDIFACT message reference
}

// Locate extracts the position of a failure, when it has one.
func Locate(err error) Location {
	var (
		l       Location
		tiffErr *tiff.FormatError
		policy  *validate.PolicyError
		limit   *tiff.LimitError
		rule    *validate.RuleError
		syntax  *edifact.SyntaxError
	)
	ptr64 := func(v int64) *int64 { return &v }
	ptr := func(v int) *int { return &v }
	switch {
	case errors.As(err, &syntax):
		l = Location{premis.Position{Offset: ptr64(syntax.Offset), Segment: syntax.Segment, Element: syntax.Element, Component: syntax.Component, Tag: syntax.Tag}, syntax.Message}
	case errors.As(err, &rule):
		l = Location{premis.Position{Offset: ptr64(rule.Offset), Segment: rule.Segment, Element: rule.Element, Component: rule.Component, Tag: rule.Tag}, rule.Message}
	case errors.As(err, &tiffErr):
		l.Offset = ptr64(tiffErr.Offset)
		if tiffErr.Page > 0 {
			l.Page = ptr(tiffErr.Page)
		}
		if tiffErr.Tag != 0 {
			l.Tag = tiff.TagName(tiffErr.Tag)
		}
	case errors.As(err, &policy):
		l.Offset, l.Page = ptr64(policy.Offset), ptr(policy.Page)
	case errors.As(err, &limit):
		l.Offset, l.Page = ptr64(limit.Offset), ptr(limit.Page)
		if limit.Tag != 0 {
			l.Tag = tiff.TagName(limit.Tag)
		}
	}
	return l
}

// positionOf is the position of a failure as an event records it.
func positionOf(err error) premis.Position { return Locate(err).Position }
