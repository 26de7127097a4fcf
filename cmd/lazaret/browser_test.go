package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/premis/sqlite"
	"github.com/lazaret/lazaret/validate"
)

// artifacts is where tests leave files for a person to look at:
// LAZARET_ARTIFACTS, or artifacts/ at the repository root.
func artifacts(t *testing.T) string {
	dir := os.Getenv("LAZARET_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(testenv.RepoRoot(t), "artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

var tags = regexp.MustCompile(`<[^>]*>`)

// TestMonitoringInABrowser drives asynqmon, as mounted by lazaret serve, in
// headless Chromium: the queue page shows ingest, quarantine and audit-hold
// with their counts, and an archived task's page shows its class and offset.
func TestMonitoringInABrowser(t *testing.T) {
	testenv.Chromium(t)
	url := testenv.Redis(t, 15)
	ro, _ := asynq.ParseRedisURI(url)
	dir := t.TempDir()
	ledger, err := sqlite.Open(context.Background(), filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer ledger.Close()
	cfg := defaultConfig()
	cfg.RetryBase = 100 * time.Millisecond
	cfg.IngestRoots = []string{dir} // the API reads manifests only beneath an ingest root
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h, stop, err := newServer(ctx, &cfg, ro, ledger, log, serveOptions{worker: true, reconcileEvery: time.Minute, token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	srv := httptest.NewServer(h)
	defer srv.Close()

	batch, err := fixtures.WriteArchiveBatch(filepath.Join(dir, "batch"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]string{"manifest": batch.Manifest})
	req, _ := http.NewRequest("POST", srv.URL+"/v1/batches", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer t")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("submit: %v %v", err, resp)
	}
	// One item at the poison cap, for audit-hold.
	m, mdir, _ := validate.ReadManifestFile(batch.Manifest)
	it := m.Items[len(m.Items)-2] // dpi "abc": semantic
	path, _ := validate.ResolvePath(mdir, it.Path)
	env := &ingest.Envelope{V: ingest.EnvelopeVersion, BatchID: "held", ObjectID: "tired-master", Kind: "tiff", Path: path, SHA256: it.SHA256, Item: it, Attempt: 5}
	env.CorrelationID = ingest.CorrelationID(env.BatchID, env.ObjectID, env.SHA256)
	client := asynq.NewClient(ro)
	defer client.Close()
	if _, err := ingest.Enqueue(ctx, client, env, ingest.SubmitOptions{Policy: cfg.policy()}); err != nil {
		t.Fatal(err)
	}
	insp := asynq.NewInspector(ro)
	defer insp.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		q, _ := insp.GetQueueInfo(ingest.QueueQuarantine)
		a, _ := insp.GetQueueInfo(ingest.QueueIngest)
		h, _ := insp.GetQueueInfo(ingest.QueueAuditHold)
		if q != nil && a != nil && h != nil && q.Pending == 4 && a.Archived == 4 && h.Pending == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queues did not settle: %+v %+v %+v", q, a, h)
		}
		time.Sleep(100 * time.Millisecond)
	}

	art := artifacts(t)
	// The batch's own page: the bar submit --wait draws, and its summary.
	bp := srv.URL + "/batches/" + batch.BatchID
	dom := string(testenv.Headless(t, bp, 4*time.Second, "--dump-dom"))
	os.WriteFile(filepath.Join(art, "batch-progress.html"), []byte(dom), 0o644)
	if !regexp.MustCompile(`<progress id="progress" value="10" max="10"`).MatchString(dom) {
		t.Errorf("the batch page has no finished bar (10 of 10):\n%s", dom)
	}
	for _, want := range []string{"10/10 done (2 accepted, 4 dead-lettered, 4 quarantined)", "8 of 10 items failed"} {
		if !strings.Contains(tags.ReplaceAllString(dom, ""), want) {
			t.Errorf("the batch page does not say %q", want)
		}
	}
	testenv.Headless(t, bp, 4*time.Second, "--screenshot="+filepath.Join(art, "batch-progress.png"))

	dom = string(testenv.Headless(t, srv.URL+"/monitoring/", 8*time.Second, "--dump-dom"))
	os.WriteFile(filepath.Join(art, "monitoring-queues.html"), []byte(dom), 0o644)
	text := tags.ReplaceAllString(dom, " ")
	for _, q := range []string{"ingest", "quarantine", "audit-hold"} {
		if !strings.Contains(text, q) {
			t.Errorf("the queues page does not show %s", q)
		}
	}
	// The queue table: name, state, size.
	sizes := map[string]string{}
	for _, m := range regexp.MustCompile(`(ingest|quarantine|audit-hold)\s+run\s+(\d+)\s`).FindAllStringSubmatch(text, -1) {
		sizes[m[1]] = m[2]
	}
	if sizes["quarantine"] != "4" || sizes["audit-hold"] != "1" || sizes["ingest"] == "" || sizes["ingest"] == "0" {
		t.Errorf("queue sizes on the page: %v, want quarantine 4, audit-hold 1, ingest > 0", sizes)
	}
	testenv.Headless(t, srv.URL+"/monitoring/", 8*time.Second, "--screenshot="+filepath.Join(art, "monitoring-queues.png"))

	archived, err := insp.ListArchivedTasks(ingest.QueueIngest)
	if err != nil || len(archived) == 0 {
		t.Fatalf("archived: %v", err)
	}
	var loop string
	for _, a := range archived {
		if strings.Contains(a.LastErr, "tiff.ifd-loop") {
			loop = a.ID
		}
	}
	page := srv.URL + "/monitoring/queues/ingest/tasks/" + loop
	dom = string(testenv.Headless(t, page, 8*time.Second, "--dump-dom"))
	os.WriteFile(filepath.Join(art, "monitoring-archived-task.html"), []byte(dom), 0o644)
	text = tags.ReplaceAllString(dom, "")
	for _, want := range []string{"archived", "class: structural", "code: tiff.ifd-loop", "offset: 996", "page: 3"} {
		if !strings.Contains(text, want) {
			t.Errorf("the archived task's page does not show %q", want)
		}
	}
	testenv.Headless(t, page, 8*time.Second, "--screenshot="+filepath.Join(art, "monitoring-archived-task.png"))
	if st, err := os.Stat(filepath.Join(art, "monitoring-archived-task.png")); err != nil || st.Size() < 10000 {
		t.Errorf("screenshot: %v", err)
	}
	t.Logf("screenshots in %s", art)
}
