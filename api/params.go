package api

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
)

// Paging of GET /v1/failures.
const (
	// DefaultLimit is the page size when the request names none.
	DefaultLimit = 100
	// MaxLimit is the largest page a request may ask for.
	MaxLimit = 1000
	// maxValueLen bounds a free-text filter value (code, batch).
	maxValueLen = 128
)

// failureDestinations are the destination filter's values: where an open
// failure is.
var failureDestinations = []premis.Destination{premis.DeadLetter, premis.Quarantined, premis.AuditHold}

// The kind filter's values are ingest.ItemKinds(): the registered item
// kinds and "task", the kind of a delivery that never decoded into an
// item. They are asked for when a request needs them, not at init, when a
// kind whose package this one does not import may not be registered yet.

// failureParams are the query parameters of GET /v1/failures.
var failureParams = []string{"destination", "kind", "class", "code", "batch", "since", "until", "limit", "cursor"}

// paramError is a query parameter the request got wrong: a 400 naming it
// and, when the values are few, the allowed ones.
type paramError struct {
	Param   string
	Allowed []string
	Err     error
}

func (e *paramError) Error() string {
	if len(e.Allowed) > 0 {
		return fmt.Sprintf("query parameter %s: %v (allowed: %s)", e.Param, e.Err, strings.Join(e.Allowed, ", "))
	}
	return fmt.Sprintf("query parameter %s: %v", e.Param, e.Err)
}

func (e *paramError) Unwrap() error { return e.Err }

// query reads the request's query, refusing a malformed one, a parameter
// not in known, and a parameter given twice. The error is a *paramError.
func query(r *http.Request, known ...string) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, &paramError{Param: "(query)", Err: fmt.Errorf("malformed query: %v", err)}
	}
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !slices.Contains(known, name) {
			allowed := known
			if len(allowed) == 0 {
				allowed = []string{"(none)"}
			}
			return nil, &paramError{Param: printableParam(name), Allowed: allowed, Err: errors.New("unknown parameter")}
		}
		if len(q[name]) > 1 {
			return nil, &paramError{Param: name, Err: fmt.Errorf("given %d times; give it once", len(q[name]))}
		}
	}
	return q, nil
}

// printableParam is a hostile parameter name fit to quote: printable,
// bounded.
func printableParam(s string) string {
	if len(s) > maxValueLen {
		s = s[:maxValueLen] + "…"
	}
	return strconv.Quote(strings.ToValidUTF8(s, "\uFFFD"))
}

// oneOf checks v against the allowed values.
func oneOf[T ~string](param, v string, allowed []T) (T, error) {
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
		if string(a) == v {
			return a, nil
		}
	}
	return "", &paramError{Param: param, Allowed: names, Err: fmt.Errorf("%s is not one of them", printableParam(v))}
}

// text checks a free-text filter value: printable UTF-8, at most
// maxValueLen bytes.
func text(param, v string) (string, error) {
	switch {
	case len(v) > maxValueLen:
		return "", &paramError{Param: param, Err: fmt.Errorf("%d bytes: at most %d", len(v), maxValueLen)}
	case !utf8.ValidString(v) || premis.Printable(v) != v || strings.ContainsAny(v, "\n\t"):
		return "", &paramError{Param: param, Err: errors.New("not printable text")}
	}
	return v, nil
}

// failureRequest is a parsed GET /v1/failures: the filter with its page
// (Limit, AfterSeq) and the key a cursor is bound to.
type failureRequest struct {
	filter ingest.FailureFilter
	key    string
}

// parseFailures reads GET /v1/failures's query. Every value is checked;
// the error is a *paramError.
func parseFailures(r *http.Request, now time.Time) (failureRequest, error) {
	var fr failureRequest
	q, err := query(r, failureParams...)
	if err != nil {
		return fr, err
	}
	f := &fr.filter
	if v := q.Get("destination"); q.Has("destination") {
		if f.Destination, err = oneOf("destination", v, failureDestinations); err != nil {
			return fr, err
		}
	}
	if v := q.Get("kind"); q.Has("kind") {
		if f.Kind, err = oneOf("kind", v, ingest.ItemKinds()); err != nil {
			return fr, err
		}
	}
	if v := q.Get("class"); q.Has("class") {
		if f.Class, err = oneOf("class", v, premis.Classes()); err != nil {
			return fr, err
		}
	}
	if v := q.Get("code"); q.Has("code") {
		if f.Code, err = text("code", v); err == nil && v == "" {
			err = &paramError{Param: "code", Err: errors.New("empty")}
		}
		if err != nil {
			return fr, err
		}
	}
	if v := q.Get("batch"); q.Has("batch") {
		// A batch id as a manifest may carry it (validate.Manifest).
		if f.BatchID, err = text("batch", v); err == nil && (v == "" || strings.ContainsAny(v, `/\`) || strings.IndexFunc(v, func(r rune) bool { return r < 0x20 || r > 0x7e }) >= 0) {
			err = &paramError{Param: "batch", Err: errors.New("want a batch id: 1 to 128 printable ASCII characters, no / or \\")}
		}
		if err != nil {
			return fr, err
		}
	}
	for name, dst := range map[string]*time.Time{"since": &f.Since, "until": &f.Until} {
		if v := q.Get(name); q.Has(name) {
			if len(v) > maxValueLen {
				return fr, &paramError{Param: name, Err: fmt.Errorf("%d bytes: at most %d", len(v), maxValueLen)}
			}
			t, err := ParseTime(v, now)
			if err != nil {
				return fr, &paramError{Param: name, Err: err}
			}
			*dst = t
		}
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && f.Until.Before(f.Since) {
		return fr, &paramError{Param: "until", Err: errors.New("before since")}
	}
	f.Limit = DefaultLimit
	if v := q.Get("limit"); q.Has("limit") {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxLimit {
			return fr, &paramError{Param: "limit", Err: fmt.Errorf("%s: want a whole number from 1 to %d", printableParam(v), MaxLimit)}
		}
		f.Limit = n
	}
	// The cursor is bound to the filter as the request wrote it: a cursor
	// of another listing is refused, not silently applied.
	for _, name := range []string{"destination", "kind", "class", "code", "batch", "since", "until"} {
		fr.key += name + "=" + q.Get(name) + "\x00"
	}
	if v := q.Get("cursor"); q.Has("cursor") {
		if f.AfterSeq, err = decodeCursor(v, fr.key); err != nil {
			return fr, &paramError{Param: "cursor", Err: err}
		}
	}
	return fr, nil
}

// A cursor is the base64url of a version byte, the ledger seq of the last
// failure of the page before (8 bytes, big-endian) and the first 8 bytes of
// SHA-256 over both and the filter: opaque to clients, and a garbage,
// truncated or edited cursor, or one of another filter, is refused.
const (
	cursorVersion = 1
	cursorLen     = 1 + 8 + 8
)

func cursorSum(seq []byte, key string) []byte {
	h := sha256.New()
	h.Write([]byte{cursorVersion})
	h.Write(seq)
	h.Write([]byte(key))
	return h.Sum(nil)[:8]
}

func encodeCursor(seq int64, key string) string {
	b := make([]byte, 1, cursorLen)
	b[0] = cursorVersion
	b = binary.BigEndian.AppendUint64(b, uint64(seq))
	b = append(b, cursorSum(b[1:9], key)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

var errCursor = errors.New("not a cursor of this listing: pass next_cursor of the page before, with the same filters")

func decodeCursor(s, key string) (int64, error) {
	if len(s) > 2*cursorLen {
		return 0, errCursor
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != cursorLen || b[0] != cursorVersion {
		return 0, errCursor
	}
	if string(cursorSum(b[1:9], key)) != string(b[9:]) {
		return 0, errCursor
	}
	seq := binary.BigEndian.Uint64(b[1:9])
	if seq == 0 || seq > 1<<62 {
		return 0, errCursor
	}
	return int64(seq), nil
}
