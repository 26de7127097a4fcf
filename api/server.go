package api

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/validate"
)

// Server is the HTTP API.
type Server struct {
	Ops      *ingest.Operator
	Metrics  *Metrics
	Token    string // bearer token for mutating calls; empty disables them
	Software premis.Software
	Logger   *slog.Logger
	// Monitoring, when set, is mounted at /monitoring/ (asynqmon).
	Monitoring http.Handler
	// Roots are the ingest roots: the API reads a manifest or a corrected
	// file only beneath one of them, and nothing at all without one.
	Roots []string
	// ReadToken, when set, is required (or Token) for every read but
	// /healthz and /readyz.
	ReadToken string
	// AllowedHosts, when set, are the host names a request's Host header
	// may carry: a page on another site that rebinds its DNS name to this
	// address is refused (421).
	AllowedHosts []string
	// Verifier, when set, checks the ledger as it grows (premis.Verifier:
	// each check reads the events appended since the last). Exports are
	// refused from a ledger that fails it (?unverified=1 exports it,
	// marked), and every other /v1/ read says so in LedgerHeader.
	Verifier LedgerChecker
}

// LedgerChecker checks the ledger the API reads: premis.Verifier.
type LedgerChecker interface {
	Check(ctx context.Context) (*premis.Verification, error)
}

// LedgerHeader is set on a /v1/ read when the ledger failed its check:
// the first problem.
const LedgerHeader = "Lazaret-Ledger-Not-Intact"

// ledgerProblem is the first problem of the ledger's check, "" when it is
// intact or not checked.
func (s *Server) ledgerProblem(ctx context.Context) (string, error) {
	if s.Verifier == nil {
		return "", nil
	}
	v, err := s.Verifier.Check(ctx)
	if err != nil || v.Intact() {
		return "", err
	}
	return v.Problems[0].String(), nil
}

// checked marks a read of a ledger that failed its check (LedgerHeader).
func (s *Server) checked(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		problem, err := s.ledgerProblem(r.Context())
		if err != nil {
			s.fail(w, r, http.StatusInternalServerError, fmt.Errorf("ledger check: %w", err))
			return
		}
		if problem != "" {
			w.Header().Set(LedgerHeader, headerText(problem))
		}
		h(w, r)
	}
}

// headerText is s on one line of printable text.
func headerText(s string) string {
	return strings.Join(strings.Fields(premis.Printable(s)), " ")
}

// Handler returns the routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", s.ready)
	mux.HandleFunc("GET /v1/openapi.json", s.noParams(serveOpenAPI))
	if s.Metrics != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(s.Metrics.Registry, promhttp.HandlerOpts{}))
	}
	if s.Monitoring != nil {
		mux.Handle("/monitoring/", s.Monitoring)
	}
	mux.HandleFunc("POST /v1/batches", s.mutating(s.noParams(s.submit)))
	mux.HandleFunc("GET /v1/batches/{id}", s.noParams(s.checked(s.batch)))
	mux.HandleFunc("GET /batches/{id}", s.noParams(s.checked(s.batchHTML)))
	mux.HandleFunc("GET /v1/batches/{id}/premis", s.premisXML("batch"))
	mux.HandleFunc("GET /v1/objects/{id}/premis", s.premisXML("object"))
	mux.HandleFunc("GET /v1/failures", s.checked(s.failures))
	mux.HandleFunc("GET /v1/failures/{id}", s.noParams(s.checked(s.failure)))
	mux.HandleFunc("POST /v1/failures/{id}/replay", s.mutating(s.noParams(s.replay)))
	mux.HandleFunc("POST /v1/failures/{id}/discard", s.mutating(s.noParams(s.discard)))
	mux.HandleFunc("GET /v1/queues", s.noParams(s.queues))
	// asynqmon's Redis INFO page shows the server's configuration and
	// clients to anyone who can reach it: not served.
	mux.HandleFunc("/monitoring/api/redis_info", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusForbidden, errors.New("the Redis INFO page is not served by lazaret"))
	})
	return s.guard(s.jsonErrors(mux))
}

// guard checks the Host header against AllowedHosts and, with a ReadToken,
// asks every request but the health checks for a token.
func (s *Server) guard(next http.Handler) http.Handler {
	allowed := map[string]bool{}
	for _, h := range s.AllowedHosts {
		allowed[strings.ToLower(h)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(allowed) > 0 {
			host := r.Host
			if h, _, err := net.SplitHostPort(host); err == nil {
				host = h
			}
			if !allowed[strings.ToLower(strings.Trim(host, "[]"))] {
				s.fail(w, r, http.StatusMisdirectedRequest, fmt.Errorf("host %q is not served here (allowed: %s)", r.Host, strings.Join(s.AllowedHosts, ", ")))
				return
			}
		}
		if s.ReadToken != "" && r.URL.Path != "/healthz" && r.URL.Path != "/readyz" {
			got, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if subtle.ConstantTimeCompare([]byte(got), []byte(s.ReadToken)) != 1 && (s.Token == "" || subtle.ConstantTimeCompare([]byte(got), []byte(s.Token)) != 1) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="lazaret"`)
				s.fail(w, r, http.StatusUnauthorized, errors.New("reads need the read token"))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// apiError is the body of every error response of the API, whatever the
// status (components/schemas/Error in openapi.json).
type apiError struct {
	Error string `json:"error"`
	// Parameter and Allowed: for a 400 about a query parameter, its name
	// and, when they are few, the values (or for an unknown parameter the
	// names) it may take.
	Parameter string   `json:"parameter,omitempty"`
	Allowed   []string `json:"allowed,omitempty"`
	// LedgerProblem: for an export refused from a ledger that failed its
	// check, the first problem.
	LedgerProblem string `json:"ledger_problem,omitempty"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	EncodeJSON(w, v)
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, code int, err error) {
	if code >= 500 && s.Logger != nil {
		s.Logger.Error("api error", slog.String("path", r.URL.Path), slog.String("error", err.Error()))
	}
	body := apiError{Error: err.Error()}
	if pe := (*paramError)(nil); errors.As(err, &pe) {
		body.Parameter, body.Allowed = pe.Param, pe.Allowed
	}
	writeJSON(w, code, body)
}

// params refuses, with a 400, a request whose query is malformed, names a
// parameter not in known, or names one twice; ok says whether to go on.
func (s *Server) params(w http.ResponseWriter, r *http.Request, known ...string) (url.Values, bool) {
	q, err := query(r, known...)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err)
		return nil, false
	}
	return q, true
}

// noParams is h refusing every query parameter.
func (s *Server) noParams(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, ok := s.params(w, r); ok {
			h(w, r)
		}
	}
}

// jsonErrors answers what mux does not route — an unknown path (404), a
// method the path does not take (405, with Allow) — in the API's error
// shape rather than the ServeMux's text/plain.
func (s *Server) jsonErrors(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		rec := &headerRecorder{header: http.Header{}, code: http.StatusOK}
		h.ServeHTTP(rec, r)
		path := printableParam(r.URL.Path)
		switch allow := rec.header.Get("Allow"); {
		case rec.code == http.StatusMethodNotAllowed:
			w.Header().Set("Allow", allow)
			s.fail(w, r, rec.code, fmt.Errorf("method %s is not allowed on %s (allowed: %s)", printableParam(r.Method), path, allow))
		case rec.code == http.StatusNotFound:
			s.fail(w, r, rec.code, fmt.Errorf("no such path: %s (the API is described at /v1/openapi.json)", path))
		default:
			s.fail(w, r, rec.code, fmt.Errorf("%s %s: %s", printableParam(r.Method), path, http.StatusText(rec.code)))
		}
	})
}

// headerRecorder keeps the header and status an unrouted request's
// handler sets, and drops its text body.
type headerRecorder struct {
	header http.Header
	code   int
}

func (h *headerRecorder) Header() http.Header         { return h.header }
func (h *headerRecorder) Write(p []byte) (int, error) { return len(p), nil }
func (h *headerRecorder) WriteHeader(code int)        { h.code = code }

// mutating requires the configured bearer token.
func (s *Server) mutating(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.Token == "" {
			s.fail(w, r, http.StatusForbidden, errors.New("mutating calls are disabled: configure api_token"))
			return
		}
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(s.Token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="lazaret"`)
			s.fail(w, r, http.StatusUnauthorized, errors.New("missing or wrong bearer token"))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
		h(w, r)
	}
}

func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	status := map[string]string{"broker": "ok", "ledger": "ok"}
	code := http.StatusOK
	if err := s.Ops.Ping(); err != nil {
		status["broker"], code = err.Error(), http.StatusServiceUnavailable
	}
	if err := s.Ops.Ledger.Ping(ctx); err != nil {
		status["ledger"], code = err.Error(), http.StatusServiceUnavailable
	}
	writeJSON(w, code, status)
}

func (s *Server) submit(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Manifest string `json:"manifest"`
		DryRun   bool   `json:"dry_run"`
	}
	if err := decodeBody(r.Body, &req); err != nil {
		s.fail(w, r, http.StatusBadRequest, fmt.Errorf(`%v: want {"manifest": "/path/to/manifest.json", "dry_run": false} (the manifest and its files are read where the server runs)`, err))
		return
	}
	if req.Manifest == "" {
		s.fail(w, r, http.StatusBadRequest, errors.New(`want {"manifest": "/path/to/manifest.json"} (the manifest and its files are read where the server runs)`))
		return
	}
	src, err := validate.Within(s.Roots, req.Manifest)
	if err != nil {
		s.fail(w, r, http.StatusForbidden, err)
		return
	}
	res, err := s.Ops.SubmitManifest(r.Context(), src, req.DryRun)
	if errors.Is(err, validate.ErrManifestUnreadable) {
		// Missing, a link, a hard link, a FIFO or not permitted: one
		// answer for all, quoting nothing of the file, so the API is no
		// oracle on what exists. The log says which.
		if s.Logger != nil {
			s.Logger.Warn("manifest refused", slog.String("path", r.URL.Path), slog.String("manifest", req.Manifest), slog.String("error", err.Error()))
		}
		s.fail(w, r, http.StatusForbidden, fmt.Errorf("manifest %s refused: nothing was read (it must be a regular file with one link beneath an ingest root, reached through no symbolic link; the server's log says why)", req.Manifest))
		return
	}
	if err != nil {
		s.fail(w, r, http.StatusUnprocessableEntity, err)
		return
	}
	status := http.StatusAccepted
	if req.DryRun {
		status = http.StatusOK
	}
	writeJSON(w, status, res)
}

func (s *Server) batch(w http.ResponseWriter, r *http.Request) {
	id, progress, items, ok := s.batchState(w, r)
	if !ok {
		return
	}
	b := NewBatchStatus(id, items)
	b.Progress = progress
	writeJSON(w, http.StatusOK, b)
}

// batchState reads the batch the request names: its progress and every
// item's latest outcome; 404 when the ledger knows nothing of it.
func (s *Server) batchState(w http.ResponseWriter, r *http.Request) (string, *ingest.Progress, []ingest.ItemStatus, bool) {
	id := r.PathValue("id")
	items, progress, err := ingest.BatchReport(r.Context(), s.Ops.Ledger, id)
	if errors.Is(err, ingest.ErrUnknownBatch) {
		s.fail(w, r, http.StatusNotFound, err)
		return id, nil, nil, false
	}
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return id, nil, nil, false
	}
	return id, progress, items, true
}

func (s *Server) premisXML(by string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q, ok := s.params(w, r, "unverified")
		if !ok {
			return
		}
		f := premis.Filter{ObjectID: r.PathValue("id")}
		if by == "batch" {
			f = premis.Filter{BatchID: r.PathValue("id")}
		}
		// What leaves Lazaret stands on a verified ledger.
		problem, err := s.ledgerProblem(r.Context())
		if err != nil {
			s.fail(w, r, http.StatusInternalServerError, fmt.Errorf("ledger check: %w", err))
			return
		}
		var opt premis.ExportOptions
		if problem != "" {
			if q.Get("unverified") == "" {
				writeJSON(w, http.StatusInternalServerError, apiError{
					Error:         "the ledger is not intact: nothing exported (lazaret ledger verify; ?unverified=1 exports it, marked)",
					LedgerProblem: problem})
				return
			}
			w.Header().Set(LedgerHeader, headerText(problem))
			opt.Unverified = problem
		}
		// Nothing is written before the first read of the events ends, so
		// a failure there is still an error response.
		out := &lazyHeader{w: w, contentType: "application/xml"}
		_, err = premis.ExportLedger(r.Context(), out, s.Ops.Ledger, f, s.Software, opt)
		switch {
		case errors.Is(err, premis.ErrNothingToExport):
			s.fail(w, r, http.StatusNotFound, fmt.Errorf("%s %s: no events", by, r.PathValue("id")))
		case err != nil && !out.wrote:
			s.fail(w, r, http.StatusInternalServerError, err)
		case err != nil:
			if s.Logger != nil {
				s.Logger.Error("premis export", slog.String("path", r.URL.Path), slog.String("error", err.Error()))
			}
			// The document is cut short: abort the response, so the client
			// reads an unexpected end, not a 200 that looks whole.
			panic(http.ErrAbortHandler)
		}
	}
}

// lazyHeader sets the Content-Type of a response on its first write.
type lazyHeader struct {
	w           http.ResponseWriter
	contentType string
	wrote       bool
}

func (l *lazyHeader) Write(p []byte) (int, error) {
	if !l.wrote {
		l.w.Header().Set("Content-Type", l.contentType)
		l.wrote = true
	}
	return l.w.Write(p)
}

// failures is GET /v1/failures: one page of the open failures the filters
// select, oldest first, with the total and the cursor of the next page.
func (s *Server) failures(w http.ResponseWriter, r *http.Request) {
	fr, err := parseFailures(r, time.Now())
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err)
		return
	}
	// One more than the page says whether another follows.
	f := fr.filter
	f.Limit++
	list, err := ingest.Failures(r.Context(), s.Ops.Ledger, f)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	total, err := ingest.CountFailures(r.Context(), s.Ops.Ledger, fr.filter)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	page := FailurePage{Failures: list, Limit: fr.filter.Limit, Total: total}
	if len(list) > fr.filter.Limit {
		page.Failures = list[:fr.filter.Limit]
		page.NextCursor = encodeCursor(page.Failures[len(page.Failures)-1].Seq, fr.key)
	}
	if page.Failures == nil {
		page.Failures = []ingest.Failure{}
	}
	page.Count = len(page.Failures)
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) failure(w http.ResponseWriter, r *http.Request) {
	f, history, err := FindFailure(r.Context(), s.Ops.Ledger, r.PathValue("id"))
	if history == nil {
		code := http.StatusInternalServerError
		if errors.Is(err, premis.ErrNotFound) || errors.Is(err, ErrNoSuchFailure) {
			code = http.StatusNotFound
		}
		s.fail(w, r, code, err)
		return
	}
	writeJSON(w, http.StatusOK, Detail(s.Ops, f, history, err))
}

type actionRequest struct {
	Operator string `json:"operator"`
	Reason   string `json:"reason"`
	File     string `json:"file,omitempty"`
	// Set corrects manifest fields on replay (json name → value).
	Set    map[string]string `json:"set,omitempty"`
	DryRun bool              `json:"dry_run"`
}

func (s *Server) action(w http.ResponseWriter, r *http.Request) (actionRequest, bool) {
	var req actionRequest
	if err := decodeBody(r.Body, &req); err != nil {
		s.fail(w, r, http.StatusBadRequest, fmt.Errorf(`%v: want {"operator": "...", "reason": "..."}`, err))
		return req, false
	}
	if req.Operator == "" {
		s.fail(w, r, http.StatusBadRequest, errors.New("operator is required: every action is a PREMIS event naming who did it"))
		return req, false
	}
	return req, true
}

func (s *Server) actionErr(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, premis.ErrNotFound):
		s.fail(w, r, http.StatusNotFound, err)
	case errors.Is(err, ingest.ErrNotOpen), errors.Is(err, ingest.ErrConflict):
		s.fail(w, r, http.StatusConflict, err)
	default:
		s.fail(w, r, http.StatusUnprocessableEntity, err)
	}
}

func (s *Server) replay(w http.ResponseWriter, r *http.Request) {
	req, ok := s.action(w, r)
	if !ok {
		return
	}
	if req.File != "" {
		if _, err := validate.Within(s.Roots, req.File); err != nil {
			s.fail(w, r, http.StatusForbidden, err)
			return
		}
	}
	res, err := s.Ops.Replay(r.Context(), r.PathValue("id"), ingest.ReplayOptions{Operator: req.Operator, Reason: req.Reason, File: req.File, Set: req.Set, DryRun: req.DryRun})
	if err != nil {
		s.actionErr(w, r, err)
		return
	}
	status := http.StatusAccepted
	if req.DryRun {
		status = http.StatusOK
	}
	writeJSON(w, status, NewAction(res))
}

func (s *Server) discard(w http.ResponseWriter, r *http.Request) {
	req, ok := s.action(w, r)
	if !ok {
		return
	}
	if req.Reason == "" {
		s.fail(w, r, http.StatusBadRequest, errors.New("reason is required"))
		return
	}
	res, err := s.Ops.Discard(r.Context(), r.PathValue("id"), req.Operator, req.Reason, req.DryRun)
	if err != nil {
		s.actionErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, NewAction(res))
}

func (s *Server) queues(w http.ResponseWriter, r *http.Request) {
	stats, err := s.Ops.Stats()
	if err != nil {
		s.fail(w, r, http.StatusServiceUnavailable, err)
		return
	}
	if stats == nil {
		stats = []ingest.QueueStats{} // a list, never null
	}
	writeJSON(w, http.StatusOK, stats)
}
