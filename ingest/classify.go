package ingest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"syscall"

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
		netErr   net.Error
	)
	switch {
	case err == nil:
		return ""
	case errors.As(err, &routing):
		return premis.Transient
	case errors.As(err, &panicErr):
		return premis.Unknown
	case errors.As(err, &poison):
		return premis.Structural
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
	)
	switch {
	case err == nil:
		return ""
	case errors.As(err, &routing):
		return "routing." + string(routing.Destination)
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

// Position extracts the byte offset and page of a failure, when it has them.
func Position(err error) (offset *int64, page *int) {
	var (
		tiffErr *validate.TIFFError
		policy  *validate.PolicyError
		limit   *validate.LimitError
	)
	switch {
	case errors.As(err, &tiffErr):
		o := tiffErr.Offset
		offset = &o
		if tiffErr.Page > 0 {
			p := tiffErr.Page
			page = &p
		}
	case errors.As(err, &policy):
		o, p := policy.Offset, policy.Page
		offset, page = &o, &p
	case errors.As(err, &limit):
		o, p := limit.Offset, limit.Page
		offset, page = &o, &p
	}
	return offset, page
}
