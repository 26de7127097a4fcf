package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/lazaret/lazaret/api"
	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/sqlite"
	"github.com/lazaret/lazaret/validate"
)

const redisDB = 14

type env struct {
	t       *testing.T
	srv     *httptest.Server
	ops     *ingest.Operator
	metrics *api.Metrics
	ledger  premis.Ledger
	batch   *fixtures.Batch
	alerts  chan api.Alert
}

// rid0 is the id of the open missing-profile failure.
func rid0(e *env) string {
	fs, err := ingest.Failures(context.Background(), e.ledger, ingest.FailureFilter{Code: "manifest.color_profile.required"})
	if err != nil || len(fs) != 1 {
		e.t.Fatalf("missing-profile failure: %v %v", fs, err)
	}
	return fs[0].ID
}

func setup(t *testing.T, token string) *env {
	t.Helper()
	url := testenv.Redis(t, redisDB)
	ro, _ := asynq.ParseRedisURI(url)
	dir := t.TempDir()
	l, err := sqlite.Open(context.Background(), filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	client, insp := asynq.NewClient(ro), asynq.NewInspector(ro)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	p := ingest.DefaultPolicy()
	p.RetryBase = 100 * time.Millisecond
	w := &ingest.Worker{Ledger: l, Broker: client, Policy: p, Master: validate.DefaultMasterPolicy(), EDI: validate.DefaultEDIRules(),
		Software: premis.Software{Name: "lazaret", Version: "test"}, Logger: log}
	ops := &ingest.Operator{Ledger: l, Enqueuer: client, Broker: insp, Policy: p, Software: w.Software, Logger: log, Check: w.Check}
	e := &env{t: t, ops: ops, ledger: l, metrics: api.NewMetrics(ops), alerts: make(chan api.Alert, 100)}
	hook := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if got := r.Header.Get("X-Lazaret-Signature"); got != api.Sign("hook-secret", body) {
			t.Errorf("alert signature %q does not match the body", got)
		}
		var a api.Alert
		json.Unmarshal(body, &a)
		e.alerts <- a
	}))
	alerter := &api.Alerter{URL: hook.URL, Secret: "hook-secret", Limit: 100, Logger: log, Metrics: e.metrics}
	alerter.Start(context.Background())
	// As serve wires them: processing time from the workers, outcomes and
	// alerts from the ledger.
	w.Observe = e.metrics.Observe
	e.metrics.OnFailure(alerter.ObserveEvent)
	tailCtx, stopTail := context.WithCancel(context.Background())
	go e.metrics.Tail(tailCtx, 50*time.Millisecond)
	t.Cleanup(stopTail)
	srv, mux := ingest.NewServer(ro, w, ingest.ServerConfig{Concurrency: 2, PollInterval: 50 * time.Millisecond})
	if err := srv.Start(mux); err != nil {
		t.Fatal(err)
	}
	s := &api.Server{Ops: ops, Metrics: e.metrics, Token: token, Software: w.Software, Logger: log, Roots: []string{filepath.Join(dir, "batch")}}
	ops.Roots = s.Roots
	e.srv = httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		e.srv.Close()
		srv.Shutdown()
		alerter.Stop()
		hook.Close()
		client.Close()
		insp.Close()
		l.Close()
	})
	if e.batch, err = fixtures.WriteArchiveBatch(filepath.Join(dir, "batch")); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) do(method, path, token string, body any) (int, map[string]any) {
	e.t.Helper()
	raw := ""
	if body != nil {
		b, _ := json.Marshal(body)
		raw = string(b)
	}
	return e.doRaw(method, path, token, raw)
}

func (e *env) waitSettled() {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		items, _ := ingest.BatchStatus(context.Background(), e.ledger, e.batch.BatchID)
		done := 0
		for _, it := range items {
			if it.Destination.Terminal() {
				done++
			}
		}
		if done == len(e.batch.Order) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.t.Fatal("batch did not settle")
}

// scrape returns the value of one series in /metrics.
func (e *env) scrape(series string) float64 {
	e.t.Helper()
	resp, err := http.Get(e.srv.URL + "/metrics")
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if name, v, ok := strings.Cut(sc.Text(), " "); ok && name == series {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

func TestAPI(t *testing.T) {
	const token = "s3cret"
	e := setup(t, token)
	if code, _ := e.do("GET", "/healthz", "", nil); code != 200 {
		t.Fatalf("healthz %d", code)
	}
	if code, body := e.do("GET", "/readyz", "", nil); code != 200 {
		t.Fatalf("readyz %d %v", code, body)
	}
	structural := `lazaret_failures_total{class="structural",destination="dead-letter",kind="tiff"}`
	before := e.scrape(structural)
	if code, _ := e.do("POST", "/v1/batches", "", map[string]string{"manifest": e.batch.Manifest}); code != http.StatusUnauthorized {
		t.Errorf("submit without token: %d", code)
	}
	// Outside the ingest roots nothing is read: no existence oracle, no
	// first byte in an error, no FIFO to hang on.
	for _, p := range []string{"/etc/shadow", "/dev/zero", filepath.Join(e.batch.Dir, "..", "ledger.db")} {
		if code, body := e.do("POST", "/v1/batches", token, map[string]string{"manifest": p}); code != http.StatusForbidden || !strings.Contains(body["error"].(string), "not under an ingest root") {
			t.Errorf("submit %s: %d %v, want 403", p, code, body)
		}
	}
	if code, body := e.do("POST", "/v1/batches", token, map[string]string{"manifest": e.batch.Manifest}); code != http.StatusAccepted {
		t.Fatalf("submit: %d %v", code, body)
	}
	e.waitSettled()
	if after := e.scrape(structural); after-before != 4 {
		t.Errorf("%s moved by %v, want 4", structural, after-before)
	}
	if v := e.scrape(`lazaret_queue_depth{queue="quarantine",state="pending"}`); v != 4 {
		t.Errorf("quarantine depth %v", v)
	}
	if v := e.scrape(`lazaret_events_total{outcome="suc",type="ing"}`); v != 2 {
		t.Errorf("ing events %v", v)
	}
	if v := e.scrape(`lazaret_queue_processed_total{queue="ingest"}`); v < 10 {
		t.Errorf("asynq's processed count for ingest: %v", v)
	}

	code, body := e.do("GET", "/v1/failures?class=structural&kind=tiff", "", nil)
	if code != 200 || body["count"].(float64) != 4 {
		t.Fatalf("failures: %d %v", code, body["count"])
	}
	code, body = e.do("GET", "/v1/failures?code=limit.pixels&destination=quarantine", "", nil)
	fs := body["failures"].([]any)
	if code != 200 || len(fs) != 1 {
		t.Fatalf("failures by code: %d %v", code, body)
	}
	bomb := fs[0].(map[string]any)
	id := bomb["id"].(string)
	if bomb["offset"].(float64) != 8 || bomb["page"].(float64) != 1 {
		t.Errorf("bomb position %v %v", bomb["offset"], bomb["page"])
	}
	if code, _ := e.do("GET", "/v1/failures?class=nonsense", "", nil); code != 400 {
		t.Errorf("bad class: %d", code)
	}
	code, body = e.do("GET", "/v1/failures/"+id, "", nil)
	if code != 200 || !strings.Contains(body["broker"].(string), "pending in quarantine") || len(body["history"].([]any)) != 2 { // ins, qua
		t.Errorf("failure detail: %d %v", code, body)
	}
	if code, _ := e.do("GET", "/v1/failures/no-such-id", "", nil); code != 404 {
		t.Errorf("unknown id: %d", code)
	}
	if code, _ := e.do("POST", "/v1/failures/"+id+"/discard", "wrong", map[string]string{"operator": "ana", "reason": "x"}); code != 401 {
		t.Errorf("wrong token: %d", code)
	}
	if code, _ := e.do("POST", "/v1/failures/"+id+"/discard", token, map[string]string{"operator": "ana"}); code != 400 {
		t.Errorf("discard without reason: %d", code)
	}
	if code, body := e.do("POST", "/v1/failures/"+id+"/replay", token, map[string]string{"operator": "ana", "file": "/etc/shadow"}); code != http.StatusForbidden {
		t.Errorf("replay with a file outside the roots: %d %v, want 403", code, body)
	}
	// A dry run says what would happen and changes nothing.
	evsBefore, _ := e.ledger.Events(context.Background(), premis.Filter{})
	code, body = e.do("POST", "/v1/failures/"+id+"/discard", token, map[string]any{"operator": "ana", "reason": "a test scan", "dry_run": true})
	if code != 200 || body["dry_run"] != true || len(body["steps"].([]any)) != 2 {
		t.Errorf("dry-run discard: %d %v", code, body)
	}
	code, body = e.do("POST", "/v1/failures/"+rid0(e)+"/replay", token, map[string]any{"operator": "ana", "dry_run": true})
	if code != 200 || body["dry_run"] != true || body["attempt"].(float64) != 2 {
		t.Errorf("dry-run replay: %d %v", code, body)
	}
	// Corrections are checked before anything is recorded.
	code, body = e.do("POST", "/v1/failures/"+rid0(e)+"/replay", token, map[string]any{"operator": "ana", "set": map[string]string{"object_id": "x"}})
	if code != 422 || !strings.Contains(fmt.Sprint(body["error"]), "names the item") {
		t.Errorf("replay correcting object_id: %d %v, want 422", code, body)
	}
	code, body = e.do("POST", "/v1/batches", token, map[string]any{"manifest": e.batch.Manifest, "dry_run": true})
	if code != 200 || body["dry_run"] != true || len(body["skipped"].([]any)) == 0 {
		t.Errorf("dry-run resubmit: %d %v", code, body)
	}
	evsAfter, _ := e.ledger.Events(context.Background(), premis.Filter{})
	if len(evsAfter) != len(evsBefore) {
		t.Errorf("dry runs wrote %d events", len(evsAfter)-len(evsBefore))
	}
	if q, _ := e.ops.Broker.ListPendingTasks(ingest.QueueQuarantine); len(q) != 4 {
		t.Errorf("after dry runs %d parked, want the 4 quarantined", len(q))
	}
	code, body = e.do("POST", "/v1/failures/"+id+"/discard", token, map[string]string{"operator": "ana", "reason": "a test scan, not a master"})
	if ev, _ := body["event"].(map[string]any); code != 200 || ev["type"] != "del" || ev["operator"] != "ana" {
		t.Errorf("discard: %d %v", code, body)
	}
	if code, _ := e.do("POST", "/v1/failures/"+id+"/discard", token, map[string]string{"operator": "ana", "reason": "again"}); code != 409 {
		t.Errorf("second discard: %d, want 409", code)
	}
	// Replay the missing-profile item (it fails the same way again: a new qua).
	_, body = e.do("GET", "/v1/failures?code=manifest.color_profile.required", "", nil)
	rid := body["failures"].([]any)[0].(map[string]any)["id"].(string)
	code, body = e.do("POST", "/v1/failures/"+rid+"/replay", token, map[string]string{"operator": "ana", "reason": "profile added upstream"})
	if code != 202 || body["attempt"].(float64) != 2 {
		t.Errorf("replay: %d %v", code, body)
	}
	code, body = e.do("GET", "/v1/batches/"+e.batch.BatchID, "", nil)
	if code != 200 || len(body["items"].([]any)) != 10 {
		t.Errorf("batch: %d %v", code, body)
	}
	resp, err := http.Get(e.srv.URL + "/v1/objects/master-truncated-p3/premis")
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/xml" {
		t.Fatalf("premis: %v %v", err, resp)
	}
	if code, body := e.do("GET", "/v1/batches/no-such-batch/premis", "", nil); code != http.StatusNotFound || !strings.Contains(fmt.Sprint(body["error"]), "no events") {
		t.Errorf("premis of a batch with no events: %d %v", code, body)
	}
	xmlPath := filepath.Join(t.TempDir(), "o.xml")
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	os.WriteFile(xmlPath, b, 0o644)
	testenv.ValidatePREMIS(t, xmlPath)

	// Every dead letter and quarantine arrival reached the webhook.
	got := map[string]int{}
	timeout := time.After(10 * time.Second)
	for got["dead-letter"] < 4 || got["quarantine"] < 4 {
		select {
		case a := <-e.alerts:
			got[string(a.Destination)]++
		case <-timeout:
			t.Fatalf("alerts received %v", got)
		}
	}
}

// TestSubmitRefusesLinkedManifests: a manifest path inside the ingest root
// that is a symbolic link (to /etc/passwd, to a JSON file elsewhere, to
// nothing) or a hard link is refused without reading the target: one
// status and one message for all of them and for a path that does not
// exist, and no byte of a target in the answer. Before, the JSON parse
// error quoted the target's first byte ("invalid character 'r' ...").
func TestSubmitRefusesLinkedManifests(t *testing.T) {
	const token = "s3cret"
	e := setup(t, token)
	outside := t.TempDir()
	passwd := filepath.Join(outside, "passwd")
	if err := os.WriteFile(passwd, []byte("root:x:0:0:root:/root:/bin/bash\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(outside, "manifest.json")
	if b, err := os.ReadFile(e.batch.Manifest); err != nil || os.WriteFile(elsewhere, b, 0o644) != nil {
		t.Fatal(err)
	}
	links := map[string]func(string) error{
		"to-passwd.json":   func(p string) error { return os.Symlink(passwd, p) },
		"to-manifest.json": func(p string) error { return os.Symlink(elsewhere, p) },
		"dangling.json":    func(p string) error { return os.Symlink(filepath.Join(outside, "gone"), p) },
		"hard.json":        func(p string) error { return os.Link(passwd, p) },
		"missing.json":     func(string) error { return nil },
	}
	var first string
	for name, mk := range links {
		p := filepath.Join(e.batch.Dir, name)
		if err := mk(p); err != nil {
			t.Fatal(err)
		}
		code, body := e.do("POST", "/v1/batches", token, map[string]string{"manifest": p})
		msg, _ := body["error"].(string)
		if code != http.StatusForbidden {
			t.Errorf("%s: %d %v, want 403", name, code, body)
		}
		if strings.Contains(msg, "root:") || strings.Contains(msg, "invalid character") || strings.Contains(msg, "batch_id") {
			t.Errorf("%s: the answer quotes the target: %q", name, msg)
		}
		msg = strings.ReplaceAll(msg, name, "NAME")
		if first == "" {
			first = msg
		} else if msg != first {
			t.Errorf("%s is told apart from the others:\n%s\n%s", name, msg, first)
		}
	}
	if n, err := e.ledger.Events(context.Background(), premis.Filter{}); err != nil || len(n) != 0 {
		t.Errorf("the ledger holds %d events after refused submits (%v), want 0", len(n), err)
	}
}

func TestMutationsAreOffWithoutAToken(t *testing.T) {
	e := setup(t, "")
	if code, body := e.do("POST", "/v1/batches", "anything", map[string]string{"manifest": e.batch.Manifest}); code != http.StatusForbidden {
		t.Errorf("submit with no token configured: %d %v", code, body)
	}
}

func TestAlerterNeverBlocks(t *testing.T) {
	var mu sync.Mutex
	n := 0
	hook := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		time.Sleep(50 * time.Millisecond)
		mu.Lock()
		n++
		mu.Unlock()
	}))
	defer hook.Close()
	m := api.NewMetrics(nil)
	a := &api.Alerter{URL: hook.URL, Limit: 1000, Metrics: m}
	ctx, cancel := context.WithCancel(context.Background())
	a.Start(ctx)
	start := time.Now()
	for i := 0; i < 3000; i++ {
		a.ObserveEvent(premis.Event{ID: strconv.Itoa(i), Destination: premis.DeadLetter})
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("3000 alerts took %s to hand over: the worker would block", d)
	}
	cancel() // abandon what is queued: Stop must not wait for 3000 slow posts
	a.Stop()
	mfs, _ := m.Registry.Gather()
	dropped := 0.0
	for _, mf := range mfs {
		if mf.GetName() == "lazaret_alerts_dropped_total" {
			dropped = mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	if dropped == 0 {
		t.Error("a full alert queue must count what it drops")
	}
}

// TestServedSafely: a DNS-rebinding page, an unauthenticated reader, the
// Redis INFO page and a redirecting or hanging webhook get nothing.
func TestServedSafely(t *testing.T) {
	e := setup(t, "w")
	h := &api.Server{Ops: e.ops, Metrics: e.metrics, Token: "w", ReadToken: "r", AllowedHosts: []string{"localhost", "127.0.0.1"}}
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	get := func(path, host, token string) int {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		if host != "" {
			req.Host = host
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	cases := []struct {
		path, host, token string
		want              int
	}{
		{"/v1/failures", "attacker.example:8080", "r", http.StatusMisdirectedRequest},
		{"/v1/failures", "", "", http.StatusUnauthorized},
		{"/v1/failures", "", "wrong", http.StatusUnauthorized},
		{"/v1/failures", "", "r", http.StatusOK},
		{"/v1/failures", "", "w", http.StatusOK},
		{"/healthz", "", "", http.StatusOK},
		{"/monitoring/api/redis_info", "", "r", http.StatusForbidden},
	}
	for _, tc := range cases {
		if got := get(tc.path, tc.host, tc.token); got != tc.want {
			t.Errorf("GET %s host %q token %q: %d, want %d", tc.path, tc.host, tc.token, got, tc.want)
		}
	}

	// The webhook redirects to another host: body and signature stay home.
	var leaked atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { leaked.Add(1) }))
	defer other.Close()
	redirecting := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		http.Redirect(rw, r, strings.Replace(other.URL, "127.0.0.1", "localhost", 1), http.StatusTemporaryRedirect)
	}))
	defer redirecting.Close()
	a := &api.Alerter{URL: redirecting.URL, Secret: "s", Retries: 1, Limit: 1000}
	a.Start(context.Background())
	a.ObserveEvent(premis.Event{ID: "x", Destination: premis.DeadLetter})
	a.Stop()
	if leaked.Load() != 0 {
		t.Error("the alert followed a redirect to another host")
	}

	// A hook that never answers does not hold shutdown.
	hang := make(chan struct{})
	hanging := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { <-hang }))
	defer func() { close(hang); hanging.Close() }()
	b := &api.Alerter{URL: hanging.URL, Limit: 1000, StopTimeout: 200 * time.Millisecond}
	b.Start(context.Background())
	for i := 0; i < 5; i++ {
		b.ObserveEvent(premis.Event{ID: strconv.Itoa(i), Destination: premis.DeadLetter})
	}
	start := time.Now()
	b.Stop()
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Stop took %s with a hanging hook", d)
	}
}
