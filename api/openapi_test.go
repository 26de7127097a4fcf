package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/lazaret/lazaret/api"
	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
)

// The document is checked with pb33f/libopenapi-validator: it validates a
// document against the OpenAPI 3.1 schema and responses against the
// document with JSON Schema 2020-12, as 3.1 has it. A test dependency only.

// contract is the parsed document and its validator.
type contract struct {
	v     validator.Validator
	model *libopenapi.DocumentModel[v3.Document]
	error *base.Schema
}

func loadContract(t *testing.T) *contract {
	t.Helper()
	doc, err := libopenapi.NewDocument(api.OpenAPI)
	if err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if v := doc.GetVersion(); v != "3.1.0" {
		t.Fatalf("openapi.json is OpenAPI %s, want 3.1.0", v)
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("openapi.json model: %v", err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errors.Join(errs...))
	}
	c := &contract{v: v, model: m}
	c.error = m.Model.Components.Schemas.GetOrZero("Error").Schema()
	return c
}

// operations are the document's "METHOD /path" pairs and their statuses.
func (c *contract) operations() map[string][]string {
	out := map[string][]string{}
	for path, item := range c.model.Model.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			var codes []string
			for code := range op.Responses.Codes.KeysFromOldest() {
				codes = append(codes, code)
			}
			out[strings.ToUpper(method)+" "+path] = codes
		}
	}
	return out
}

// TestOpenAPIDocument: the document is valid OpenAPI 3.1, and the server
// serves it as it is in the repository.
func TestOpenAPIDocument(t *testing.T) {
	c := loadContract(t)
	if ok, errs := c.v.ValidateDocument(); !ok {
		for _, e := range errs {
			t.Errorf("openapi.json: %s: %s (line %d)", e.Message, e.Reason, e.SpecLine)
			for _, se := range e.SchemaValidationErrors {
				t.Errorf("  %s: %s", se.FieldPath, se.Reason)
			}
		}
	}
	if c.error == nil {
		t.Fatal("openapi.json has no components/schemas/Error")
	}
	srv := httptest.NewServer((&api.Server{}).Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || !bytes.Equal(got, api.OpenAPI) {
		t.Errorf("GET /v1/openapi.json: %d %s, %d bytes; want 200 application/json, the embedded document", resp.StatusCode, resp.Header.Get("Content-Type"), len(got))
	}
	if !json.Valid(api.OpenAPI) {
		t.Error("openapi.json is not JSON")
	}
}

// conformance calls a real server and checks every response against the
// document, recording which operations and statuses were seen.
type conformance struct {
	t    *testing.T
	c    *contract
	seen map[string]map[string]bool // "METHOD /path" → status
}

// call is one request: op is the document's operation it is meant to
// reach ("GET /v1/failures"), "" for a request the document has no
// operation for (an unknown path, a wrong method), whose answer must be an
// Error.
type call struct {
	op, method, url, token string
	body                   any
	host                   string
	want                   int
}

func (cf *conformance) do(srv *httptest.Server, k call) (int, []byte) {
	t := cf.t
	t.Helper()
	var rd io.Reader
	var raw []byte
	if k.body != nil {
		switch b := k.body.(type) {
		case string:
			raw = []byte(b)
		default:
			raw, _ = json.Marshal(b)
		}
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(k.method, srv.URL+k.url, rd)
	if k.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if k.token != "" {
		req.Header.Set("Authorization", "Bearer "+k.token)
	}
	if k.host != "" {
		req.Host = k.host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	what := fmt.Sprintf("%s %s", k.method, k.url)
	if resp.StatusCode != k.want {
		t.Errorf("%s: %d, want %d: %.300s", what, resp.StatusCode, k.want, body)
	}
	if k.op == "" {
		cf.checkError(what, resp, body)
		return resp.StatusCode, body
	}
	if cf.seen[k.op] == nil {
		cf.seen[k.op] = map[string]bool{}
	}
	cf.seen[k.op][fmt.Sprint(resp.StatusCode)] = true
	// The validator reads the request to find the operation and the
	// response to check status, content type and body.
	vreq, _ := http.NewRequest(k.method, srv.URL+k.url, bytes.NewReader(raw))
	vreq.Header = req.Header.Clone()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if ok, errs := cf.c.v.ValidateHttpResponse(vreq, resp); !ok {
		for _, e := range errs {
			t.Errorf("%s → %d %s: %s: %s", what, resp.StatusCode, resp.Header.Get("Content-Type"), e.Message, e.Reason)
			for _, se := range e.SchemaValidationErrors {
				t.Errorf("  %s: %s", se.FieldPath, se.Reason)
			}
		}
		t.Logf("body: %.500s", body)
	}
	if resp.StatusCode >= 400 && k.op != "GET /readyz" {
		// Every error, whatever the operation documents, is an Error
		// (but /readyz's 503, which says which dependency is down).
		cf.checkError(what, resp, body)
	}
	return resp.StatusCode, body
}

// checkError: application/json, and the body an Error.
func (cf *conformance) checkError(what string, resp *http.Response, body []byte) {
	cf.t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		cf.t.Errorf("%s → %d: Content-Type %q, want application/json", what, resp.StatusCode, ct)
	}
	if ok, errs := schema_validation.NewSchemaValidator().ValidateSchemaBytes(cf.c.error, body); !ok {
		for _, e := range errs {
			cf.t.Errorf("%s → %d: not an Error: %s: %s (%s)", what, resp.StatusCode, e.Message, e.Reason, body)
		}
	}
}

// downBroker is a broker that cannot be reached.
type downBroker struct{ ingest.Broker }

func (downBroker) Queues() ([]string, error) { return nil, errors.New("dial tcp: connection refused") }

// brokenLedger answers no read.
type brokenLedger struct{ premis.Ledger }

var errDisk = errors.New("disk I/O error")

func (brokenLedger) Events(context.Context, premis.Filter) ([]premis.Event, error) {
	return nil, errDisk
}
func (brokenLedger) Event(context.Context, string) (premis.Event, error) {
	return premis.Event{}, errDisk
}

// notIntact is a ledger check that found a forged link.
type notIntact struct{}

func (notIntact) Check(context.Context) (*premis.Verification, error) {
	return &premis.Verification{Problems: []premis.Problem{{Kind: "link", Seq: 3, Detail: "event 3 does not link to event 2"}}}, nil
}

// TestOpenAPIConformance calls every operation of the document on a real
// server (real Redis, real SQLite ledger, the archive batch run through the
// workers) with good and bad requests, and checks every response — status,
// content type, body — against the document. Every operation must be
// reached, and every status the document names must be seen on one.
func TestOpenAPIConformance(t *testing.T) {
	const token = "s3cret"
	c := loadContract(t)
	e := setup(t, token)
	cf := &conformance{t: t, c: c, seen: map[string]map[string]bool{}}
	bad := filepath.Join(e.batch.Dir, "not-a-manifest.json")
	if err := os.WriteFile(bad, []byte(`{"batch_id": "b", "items": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	m := map[string]string{"manifest": e.batch.Manifest}
	batch := e.batch.BatchID
	for _, k := range []call{
		{op: "GET /healthz", method: "GET", url: "/healthz", want: 200},
		{op: "GET /readyz", method: "GET", url: "/readyz", want: 200},
		{op: "GET /metrics", method: "GET", url: "/metrics", want: 200},
		{op: "GET /v1/openapi.json", method: "GET", url: "/v1/openapi.json", want: 200},
		{op: "GET /v1/openapi.json", method: "GET", url: "/v1/openapi.json?format=yaml", want: 400},
		{op: "POST /v1/batches", method: "POST", url: "/v1/batches", body: m, want: 401},
		{op: "POST /v1/batches", method: "POST", url: "/v1/batches", token: token, body: "{", want: 400},
		{op: "POST /v1/batches", method: "POST", url: "/v1/batches?wait=1", token: token, body: m, want: 400},
		{op: "POST /v1/batches", method: "POST", url: "/v1/batches", token: token, body: map[string]string{"manifest": "/etc/passwd"}, want: 403},
		{op: "POST /v1/batches", method: "POST", url: "/v1/batches", token: token, body: map[string]string{"manifest": bad}, want: 422},
		{op: "POST /v1/batches", method: "POST", url: "/v1/batches", token: token, body: map[string]any{"manifest": e.batch.Manifest, "dry_run": true}, want: 200},
		{op: "POST /v1/batches", method: "POST", url: "/v1/batches", token: token, body: m, want: 202},
	} {
		cf.do(e.srv, k)
	}
	e.waitSettled()
	fs, err := ingest.Failures(context.Background(), e.ledger, ingest.FailureFilter{})
	if err != nil || len(fs) < 3 {
		t.Fatalf("failures after the batch: %d %v", len(fs), err)
	}
	// The failures arrive in whatever order the worker settled them; the
	// one to discard and the one to conflict on must not be the one that
	// is replayed.
	replayID := rid0(e)
	var others []string
	for _, f := range fs {
		if f.ID != replayID {
			others = append(others, f.ID)
		}
	}
	if len(others) < 2 {
		t.Fatalf("want two failures besides %s, have %d", replayID, len(others))
	}
	discardID, conflictID := others[0], others[1]
	long := strings.Repeat("x", 129)
	calls := []call{
		{op: "GET /v1/batches/{id}", method: "GET", url: "/v1/batches/" + batch, want: 200},
		{op: "GET /v1/batches/{id}", method: "GET", url: "/v1/batches/no-such-batch", want: 404},
		{op: "GET /v1/batches/{id}", method: "GET", url: "/v1/batches/" + batch + "?verbose=1", want: 400},
		{op: "GET /batches/{id}", method: "GET", url: "/batches/" + batch, want: 200},
		{op: "GET /batches/{id}", method: "GET", url: "/batches/no-such-batch", want: 404},
		{op: "GET /batches/{id}", method: "GET", url: "/batches/" + batch + "?x", want: 400},
		{op: "GET /v1/batches/{id}/premis", method: "GET", url: "/v1/batches/" + batch + "/premis", want: 200},
		{op: "GET /v1/batches/{id}/premis", method: "GET", url: "/v1/batches/no-such-batch/premis", want: 404},
		{op: "GET /v1/batches/{id}/premis", method: "GET", url: "/v1/batches/" + batch + "/premis?format=json", want: 400},
		{op: "GET /v1/objects/{id}/premis", method: "GET", url: "/v1/objects/master-truncated-p3/premis", want: 200},
		{op: "GET /v1/objects/{id}/premis", method: "GET", url: "/v1/objects/master-truncated-p3/premis?unverified=1&unverified=1", want: 400},
		{op: "GET /v1/objects/{id}/premis", method: "GET", url: "/v1/objects/nothing/premis", want: 404},
		{op: "GET /v1/failures", method: "GET", url: "/v1/failures", want: 200},
		{op: "GET /v1/failures", method: "GET", url: "/v1/failures?destination=quarantine&kind=tiff&class=semantic&code=manifest.color_profile.required&batch=" + batch + "&since=7d&until=2999-01-01&limit=5", want: 200},
		{op: "GET /v1/failures", method: "GET", url: "/v1/failures?limit=1", want: 200},
		{op: "GET /v1/failures", method: "GET", url: "/v1/failures?destination=bogus", want: 400},
		{op: "GET /v1/failures", method: "GET", url: "/v1/failures?destination=accept", want: 400},
		{op: "GET /v1/failures", method: "GET", url: "/v1/failures?kind=bogus", want: 400},
		{op: "GET /v1/failures", method: "GET", url: "/v1/failures?class=nonsense", want: 400},
		{op: "GET /v1/failures", method: "GET", url: "/v1/failures?code=" + long, want: 400},
		{op: "GET /v1/failures", method: "GET", url: "/v1/failures?code=", want: 400},
		{op: "GET /v1/failures", method: "GET", url: "/v1/failures?code=a%00b", want: 400},
		{op: "GET /v1/failures", method: "GET", url: "/v1/failures?batch=a/b", want: 400},
		{op: "GET /v1/failures", method: "GET", url: "/v1/failures?batch=%C3%A9", want: 400},
		{op: "GET /v1/failures", method: "GET", url: "/v1/failures?since=yesterday", want: 400},
		{op: "GET /v1/failures", method: "GET", url: "/v1/failures?since=-2h", want: 400},
		{op: "GET /v1/failures", method: "GET", url: "/v1/failures?since=99999999999d", want: 400},
		{op: "GET /v1/failures", method: "GET", url: "/v1/failures?since=2026-12-01&until=2026-11-01", want: 400},
		{op: "GET /v1/failures", method: "GET", url: "/v1/failures?limit=0", want: 400},
		{op: "GET /v1/failures", method: "GET", url: "/v1/failures?limit=1001", want: 400},
		{op: "GET /v1/failures", method: "GET", url: "/v1/failures?limit=-1", want: 400},
		{op: "GET /v1/failures", method: "GET", url: "/v1/failures?limit=99999999999999999999", want: 400},
		{op: "GET /v1/failures", method: "GET", url: "/v1/failures?cursor=garbage", want: 400},
		{op: "GET /v1/failures", method: "GET", url: "/v1/failures?cursor=%FF%FE", want: 400},
		{op: "GET /v1/failures", method: "GET", url: "/v1/failures?cursor=" + strings.Repeat("A", 10000), want: 400},
		{op: "GET /v1/failures", method: "GET", url: "/v1/failures?status=open", want: 400},
		{op: "GET /v1/failures", method: "GET", url: "/v1/failures?class=semantic&class=structural", want: 400},
		{op: "GET /v1/failures", method: "GET", url: "/v1/failures?a=%zz", want: 400},
		{op: "GET /v1/failures/{id}", method: "GET", url: "/v1/failures/" + discardID, want: 200},
		{op: "GET /v1/failures/{id}", method: "GET", url: "/v1/failures/no-such-id", want: 404},
		{op: "GET /v1/failures/{id}", method: "GET", url: "/v1/failures/" + discardID + "?history=0", want: 400},
		{op: "POST /v1/failures/{id}/replay", method: "POST", url: "/v1/failures/" + replayID + "/replay", body: map[string]string{"operator": "ana"}, want: 401},
		{op: "POST /v1/failures/{id}/replay", method: "POST", url: "/v1/failures/" + replayID + "/replay", token: token, body: map[string]string{"reason": "no operator"}, want: 400},
		{op: "POST /v1/failures/{id}/replay", method: "POST", url: "/v1/failures/" + replayID + "/replay", token: token, body: map[string]string{"operator": "ana", "file": "/etc/shadow"}, want: 403},
		{op: "POST /v1/failures/{id}/replay", method: "POST", url: "/v1/failures/no-such-id/replay", token: token, body: map[string]string{"operator": "ana"}, want: 404},
		{op: "POST /v1/failures/{id}/replay", method: "POST", url: "/v1/failures/" + replayID + "/replay", token: token, body: map[string]any{"operator": "ana", "set": map[string]string{"object_id": "x"}}, want: 422},
		{op: "POST /v1/failures/{id}/replay", method: "POST", url: "/v1/failures/" + replayID + "/replay", token: token, body: map[string]any{"operator": "ana", "dry_run": true}, want: 200},
		{op: "POST /v1/failures/{id}/replay", method: "POST", url: "/v1/failures/" + replayID + "/replay", token: token, body: map[string]string{"operator": "ana", "reason": "profile added"}, want: 202},
		{op: "POST /v1/failures/{id}/discard", method: "POST", url: "/v1/failures/" + discardID + "/discard", token: token, body: map[string]string{"operator": "ana"}, want: 400},
		{op: "POST /v1/failures/{id}/discard", method: "POST", url: "/v1/failures/" + discardID + "/discard?force=1", token: token, body: map[string]string{"operator": "ana", "reason": "x"}, want: 400},
		{op: "POST /v1/failures/{id}/discard", method: "POST", url: "/v1/failures/" + discardID + "/discard", token: token, body: map[string]string{"operator": "ana", "reason": "a test scan"}, want: 200},
		{op: "POST /v1/failures/{id}/discard", method: "POST", url: "/v1/failures/" + discardID + "/discard", token: token, body: map[string]string{"operator": "ana", "reason": "again"}, want: 409},
		{op: "GET /v1/failures/{id}", method: "GET", url: "/v1/failures/" + discardID, want: 200}, // no longer open
		{op: "POST /v1/failures/{id}/replay", method: "POST", url: "/v1/failures/" + discardID + "/replay", token: token, body: map[string]string{"operator": "ana", "reason": "discarded"}, want: 409},
		{op: "GET /v1/queues", method: "GET", url: "/v1/queues", want: 200},
		{op: "GET /v1/queues", method: "GET", url: "/v1/queues?queue=ingest", want: 400},
		{method: "GET", url: "/v1/nope", want: 404},
		{method: "GET", url: "/", want: 404},
		{method: "GET", url: "/v1/failures/" + conflictID + "/replay", want: 405},
		{method: "DELETE", url: "/v1/failures", want: 405},
		{method: "POST", url: "/healthz", want: 405},
		{method: "PUT", url: "/v1/batches", token: token, want: 405},
	}
	for _, k := range calls {
		cf.do(e.srv, k)
	}

	// The guard: a host not served (421), a read without the read token
	// (401); a broker that is down (503), a ledger that cannot be read
	// (500), a ledger that failed its check (500 on export).
	guarded := httptest.NewServer((&api.Server{Ops: e.ops, Metrics: e.metrics, Token: token, ReadToken: "r", AllowedHosts: []string{"127.0.0.1"}}).Handler())
	defer guarded.Close()
	down := *e.ops
	down.Broker = downBroker{e.ops.Broker}
	downSrv := httptest.NewServer((&api.Server{Ops: &down}).Handler())
	defer downSrv.Close()
	broken := *e.ops
	broken.Ledger = brokenLedger{e.ledger}
	brokenSrv := httptest.NewServer((&api.Server{Ops: &broken}).Handler())
	defer brokenSrv.Close()
	forged := httptest.NewServer((&api.Server{Ops: e.ops, Verifier: notIntact{}}).Handler())
	defer forged.Close()
	for _, k := range []struct {
		srv *httptest.Server
		call
	}{
		{guarded, call{op: "GET /v1/failures", method: "GET", url: "/v1/failures", token: "r", host: "attacker.example", want: 421}},
		{guarded, call{op: "GET /healthz", method: "GET", url: "/healthz", host: "attacker.example", want: 421}},
		{guarded, call{op: "GET /v1/failures", method: "GET", url: "/v1/failures", want: 401}},
		{guarded, call{op: "GET /v1/openapi.json", method: "GET", url: "/v1/openapi.json", want: 401}},
		{guarded, call{op: "GET /metrics", method: "GET", url: "/metrics", want: 401}},
		{guarded, call{op: "GET /v1/queues", method: "GET", url: "/v1/queues", token: "r", want: 200}},
		{guarded, call{method: "GET", url: "/v1/nope", want: 401}},
		{downSrv, call{op: "GET /readyz", method: "GET", url: "/readyz", want: 503}},
		{downSrv, call{op: "GET /v1/queues", method: "GET", url: "/v1/queues", want: 503}},
		{downSrv, call{op: "POST /v1/batches", method: "POST", url: "/v1/batches", token: "x", body: m, want: 403}},
		{brokenSrv, call{op: "GET /v1/failures", method: "GET", url: "/v1/failures", want: 500}},
		{brokenSrv, call{op: "GET /v1/failures/{id}", method: "GET", url: "/v1/failures/" + conflictID, want: 500}},
		{brokenSrv, call{op: "GET /v1/batches/{id}", method: "GET", url: "/v1/batches/" + batch, want: 500}},
		{brokenSrv, call{op: "GET /batches/{id}", method: "GET", url: "/batches/" + batch, want: 500}},
		{brokenSrv, call{op: "GET /v1/batches/{id}/premis", method: "GET", url: "/v1/batches/" + batch + "/premis", want: 500}},
		{brokenSrv, call{op: "GET /v1/objects/{id}/premis", method: "GET", url: "/v1/objects/master-truncated-p3/premis", want: 500}},
		{forged, call{op: "GET /v1/objects/{id}/premis", method: "GET", url: "/v1/objects/master-truncated-p3/premis", want: 500}},
		{forged, call{op: "GET /v1/objects/{id}/premis", method: "GET", url: "/v1/objects/master-truncated-p3/premis?unverified=1", want: 200}},
		{forged, call{op: "GET /v1/failures", method: "GET", url: "/v1/failures", want: 200}},
	} {
		cf.do(k.srv, k.call)
	}

	// Every operation reached; every status the document names seen.
	ops := c.operations()
	statuses := map[string]bool{}
	seenAny := map[string]bool{}
	for op, codes := range ops {
		if cf.seen[op] == nil {
			t.Errorf("%s is in openapi.json but no request of the test reached it", op)
		}
		for _, code := range codes {
			statuses[code] = true
		}
	}
	for op, codes := range cf.seen {
		if _, ok := ops[op]; !ok {
			t.Errorf("the test reached %s, which openapi.json does not have", op)
		}
		for code := range codes {
			seenAny[code] = true
		}
	}
	var unseen []string
	for code := range statuses {
		if !seenAny[code] {
			unseen = append(unseen, code)
		}
	}
	sort.Strings(unseen)
	if len(unseen) > 0 {
		t.Errorf("openapi.json names statuses no response of the test had: %v", unseen)
	}
	var missing []string
	for op, codes := range ops {
		for _, code := range codes {
			if !cf.seen[op][code] {
				missing = append(missing, op+" "+code)
			}
		}
	}
	slices.Sort(missing)
	t.Logf("documented responses not exercised on their own operation (seen on another): %d: %v", len(missing), missing)
}
