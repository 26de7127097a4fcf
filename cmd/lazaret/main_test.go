package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/sqlite"
	"github.com/lazaret/lazaret/validate"
)

const redisDB = 12

func runCmd(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), args, &out, &errb)
	code := 0
	if err != nil {
		code = 1
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		if ee == nil || ee.err != nil {
			errb.WriteString(err.Error())
		}
	}
	return out.String(), errb.String(), code
}

func jsonLines(t *testing.T, s string) []inspectResult {
	t.Helper()
	var rs []inspectResult
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r inspectResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("not JSON: %s: %v", sc.Text(), err)
		}
		rs = append(rs, r)
	}
	return rs
}

func TestInspectBatch(t *testing.T) {
	t.Parallel()
	b, err := fixtures.WriteArchiveBatch(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runCmd(t, "inspect", "--json", "--batch", b.Manifest)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (some items fail): %s", code, stderr)
	}
	rs := jsonLines(t, out)
	if len(rs) != len(b.Order) {
		t.Fatalf("%d lines for %d items", len(rs), len(b.Order))
	}
	for _, r := range rs {
		want := b.Expect[r.ObjectID]
		if r.Verdict != want.Destination || r.Class != want.Class || r.Code != want.Code {
			t.Errorf("%s: %s/%s/%s, want %s/%s/%s", r.ObjectID, r.Verdict, r.Class, r.Code, want.Destination, want.Class, want.Code)
		}
		if want.Page != 0 && (r.Page == nil || *r.Page != want.Page || r.Offset == nil) {
			t.Errorf("%s: page %v offset %v, want page %d with an offset", r.ObjectID, r.Page, r.Offset, want.Page)
		}
		if len(r.SHA256) != 64 {
			t.Errorf("%s: sha256 %q", r.ObjectID, r.SHA256)
		}
	}
}

func TestInspectExitCodes(t *testing.T) {
	t.Parallel()
	b, err := fixtures.WriteArchiveBatch(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(b.Dir, "good-single.tif")
	if out, _, code := runCmd(t, "inspect", good); code != 0 || !strings.Contains(out, "accept") {
		t.Errorf("good file: exit %d\n%s", code, out)
	}
	if _, _, code := runCmd(t, "inspect", good, filepath.Join(b.Dir, "ifd-loop.tif")); code != 1 {
		t.Errorf("one bad file: exit %d, want 1", code)
	}
	for _, args := range [][]string{{"inspect"}, {"inspect", "--nope", good}, {"inspect", "--pixel-budget", "0", good}, {"frobnicate"}} {
		if _, _, code := runCmd(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	out, _, code := runCmd(t, "inspect", "--json", filepath.Join(b.Dir, "nope.tif"), b.Dir)
	rs := jsonLines(t, out)
	if code != 1 || len(rs) != 2 || rs[0].Verdict != "retry" || rs[1].Verdict != "dead-letter" {
		t.Errorf("missing file and a folder: exit %d %+v", code, rs)
	}
}

// TestInspectCorpusNeverCrashes runs the CLI over every third-party TIFF:
// one JSON line each, good accepted, bad dead-lettered with an offset.
func TestInspectCorpusNeverCrashes(t *testing.T) {
	t.Parallel()
	root := testenv.Corpus(t, "tiff")
	for _, sub := range []string{"good", "edge", "bad"} {
		files, _ := filepath.Glob(filepath.Join(root, sub, "*"))
		args := append([]string{"inspect", "--json"}, files...)
		out, stderr, code := runCmd(t, args...)
		rs := jsonLines(t, out)
		if len(rs) != len(files) {
			t.Fatalf("%s: %d lines for %d files (stderr %s)", sub, len(rs), len(files), stderr)
		}
		for _, r := range rs {
			switch sub {
			case "good":
				if r.Verdict != "accept" {
					t.Errorf("%s: %s %s", r.File, r.Verdict, r.Message)
				}
			case "bad":
				if r.Verdict != "dead-letter" || r.Offset == nil || r.Class != "structural" {
					t.Errorf("%s: %s %s offset %v", r.File, r.Verdict, r.Class, r.Offset)
				}
			}
		}
		if sub == "good" && code != 0 {
			t.Errorf("good: exit %d", code)
		}
	}
}

func TestDemoAndExport(t *testing.T) {
	data := t.TempDir()
	out, stderr, code := runCmd(t, "demo", "--data", data)
	if code != 0 {
		t.Fatalf("demo exit %d\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(out, "all 25 outcomes landed where they should") {
		t.Fatalf("demo output:\n%s", out)
	}
	testenv.ValidatePREMIS(t, filepath.Join(data, "premis.xml"))
	ledger := filepath.Join(data, "ledger.db")
	xmlPath := filepath.Join(t.TempDir(), "object.xml")
	if _, stderr, code := runCmd(t, "events", "export", "--ledger", ledger, "--format", "premis-xml", "--object", "master-truncated-p3", "-o", xmlPath); code != 0 {
		t.Fatalf("export: exit %d %s", code, stderr)
	}
	testenv.ValidatePREMIS(t, xmlPath)
	b, _ := os.ReadFile(xmlPath)
	if !strings.Contains(string(b), `code="tiff.ifd-outside-file"`) || strings.Contains(string(b), "master-good-single") {
		t.Errorf("object export has the wrong content:\n%s", b)
	}
	// The export names the ledger's chain head; verify accepts it as an anchor.
	head := regexp.MustCompile(`ledger chain head: (\d+) events, last hash ([0-9a-f]{64})`).FindStringSubmatch(string(b))
	if head == nil {
		t.Fatalf("the export carries no chain head:\n%s", b)
	}
	if out, _, code := runCmd(t, "ledger", "verify", "--ledger", ledger, "--anchor", head[1]+":"+head[2]); code != 0 || !strings.Contains(out, "chain intact") {
		t.Errorf("verify against the exported head: exit %d %s", code, out)
	}
	if _, _, code := runCmd(t, "events", "export", "--ledger", ledger, "--format", "premis-xml", "--object", "no-such-object"); code == 0 {
		t.Error("an export that matches nothing must fail")
	}
	// Wrapped in METS for Archivematica, the demo's whole ledger passes
	// Archivematica's METS schematron; its PREMIS for Archivematica stays
	// valid PREMIS.
	metsPath := filepath.Join(t.TempDir(), "demo.mets.xml")
	if _, stderr, code := runCmd(t, "events", "export", "--ledger", ledger, "--format", "mets", "-o", metsPath); code != 2 || !strings.Contains(stderr, "--organisation") {
		t.Errorf("--format mets without --organisation: exit %d %s", code, stderr)
	}
	if _, stderr, code := runCmd(t, "events", "export", "--ledger", ledger, "--format", "mets", "--organisation", "Demo Archive", "-o", metsPath); code != 0 {
		t.Fatalf("export --format mets: exit %d %s", code, stderr)
	}
	testenv.ValidateMETS(t, metsPath)
	if fails := testenv.ArchivematicaSchematron(t, metsPath); len(fails) > 0 {
		t.Errorf("the demo's METS fails %d asserts of Archivematica's schematron:\n%s", len(fails), strings.Join(fails, "\n"))
	}
	amPath := filepath.Join(t.TempDir(), "demo.premis.xml")
	if _, stderr, code := runCmd(t, "events", "export", "--ledger", ledger, "--archivematica", "--organisation", "Demo Archive", "-o", amPath); code != 0 {
		t.Fatalf("export --archivematica: exit %d %s", code, stderr)
	}
	testenv.ValidatePREMIS(t, amPath)
	archivematicaImportsDemo(t, data, ledger, amPath)
	// A message accepted with its chunk: the chunk's events, named as it.
	out, _, code = runCmd(t, "events", "ls", "--ledger", ledger, "--object", "edi-mixed#3")
	if code != 0 || strings.Count(out, "edi-mixed#3 (member)") != 2 || !strings.Contains(out, "accept (members)") || !strings.Contains(out, " 560 ") {
		t.Errorf("events ls --object edi-mixed#3: exit %d\n%s", code, out)
	}
	out, _, code = runCmd(t, "events", "ls", "--ledger", ledger, "--batch", fixtures.ArchiveBatchID, "--json")
	if code != 0 || strings.Count(out, "\n") < 10 {
		t.Errorf("events ls: exit %d, %d lines", code, strings.Count(out, "\n"))
	}
}

func ledgerCount(t *testing.T, l premis.Ledger) int {
	t.Helper()
	evs, err := l.Events(context.Background(), premis.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return len(evs)
}

// brokerSnapshot lists every task of Lazaret's queues with its state.
func brokerSnapshot(t *testing.T, url string) string {
	t.Helper()
	opt, err := asynq.ParseRedisURI(url)
	if err != nil {
		t.Fatal(err)
	}
	insp := asynq.NewInspector(opt)
	defer insp.Close()
	var lines []string
	for _, q := range []string{ingest.QueueIngest, ingest.QueueQuarantine, ingest.QueueAuditHold} {
		for state, list := range map[string]func(string, ...asynq.ListOption) ([]*asynq.TaskInfo, error){
			"pending": insp.ListPendingTasks, "archived": insp.ListArchivedTasks, "retry": insp.ListRetryTasks,
			"scheduled": insp.ListScheduledTasks, "completed": insp.ListCompletedTasks,
		} {
			tasks, _ := list(q, asynq.PageSize(10000))
			for _, ti := range tasks {
				lines = append(lines, q+" "+state+" "+ti.ID)
			}
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestSubmitAndWorker drives the real commands against a real Redis.
func TestSubmitAndWorker(t *testing.T) {
	url := testenv.Redis(t, redisDB)
	dir := t.TempDir()
	b, err := fixtures.WriteArchiveBatch(filepath.Join(dir, "batch"))
	if err != nil {
		t.Fatal(err)
	}
	ledger := filepath.Join(dir, "ledger.db")
	if out, _, code := runCmd(t, "submit", "--redis", url, "--ledger", ledger, "--dry-run", b.Manifest); code != 0 || !strings.Contains(out, "10 would be enqueued") {
		t.Fatalf("submit --dry-run: exit %d %s", code, out)
	}
	if out, stderr, code := runCmd(t, "submit", "--redis", url, "--ledger", ledger, b.Manifest); code != 0 || !strings.Contains(out, "10 enqueued") {
		t.Fatalf("submit: exit %d %s %s (a dry run must enqueue nothing)", code, out, stderr)
	}
	if out, _, _ := runCmd(t, "submit", "--redis", url, "--ledger", ledger, b.Manifest); !strings.Contains(out, "0 enqueued, 0 replayed with changed entries, 10 already") {
		t.Errorf("resubmit: %s", out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	t.Setenv("LAZARET_LOG_LEVEL", "error")
	go func() {
		done <- run(ctx, []string{"worker", "--redis", url, "--ledger", ledger, "--retry-base", "100ms"}, &bytes.Buffer{}, &bytes.Buffer{})
	}()
	l, err := sqlite.Open(context.Background(), ledger)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		evs, err := l.Events(context.Background(), premis.Filter{BatchID: b.BatchID})
		if err != nil {
			t.Fatal(err)
		}
		settled := map[string]premis.Destination{}
		for _, e := range evs {
			if e.Destination.Terminal() {
				settled[e.ObjectID] = e.Destination
			}
		}
		if len(settled) == len(b.Order) {
			for id, d := range settled {
				if string(d) != b.Expect[id].Destination {
					t.Errorf("%s: %s, want %s", id, d, b.Expect[id].Destination)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d settled", len(settled), len(b.Order))
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The operator's view of the same batch.
	out, _, code := runCmd(t, "dlq", "ls", "--redis", url, "--ledger", ledger, "--json")
	var dead []ingest.Failure
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var f ingest.Failure
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatalf("dlq ls: %q: %v", line, err)
		}
		dead = append(dead, f)
	}
	if code != 0 || len(dead) != 4 {
		t.Fatalf("dlq ls: exit %d, %d dead letters, want 4", code, len(dead))
	}
	out, _, _ = runCmd(t, "quarantine", "ls", "--redis", url, "--ledger", ledger, "--code", "limit.pixels")
	if !strings.Contains(out, "master-dimension-bomb") || strings.Count(out, "\n") != 2 {
		t.Errorf("quarantine ls --code:\n%s", out)
	}
	out, _, code = runCmd(t, "dlq", "show", "--redis", url, "--ledger", ledger, dead[0].ID)
	if code != 0 || !strings.Contains(out, "archived in ingest") || !strings.Contains(out, "history:") {
		t.Errorf("dlq show: exit %d\n%s", code, out)
	}
	if _, stderr, code := runCmd(t, "dlq", "discard", "--redis", url, "--ledger", ledger, dead[0].ID); code != 2 || !strings.Contains(stderr, "--reason") {
		t.Errorf("discard without reason: exit %d %s", code, stderr)
	}
	// Every mutating command honours --dry-run: it prints what would happen
	// and leaves the ledger and Redis as they were.
	quar, _ := ingest.Failures(context.Background(), l, ingest.FailureFilter{Destination: premis.Quarantined})
	if len(quar) == 0 {
		t.Fatal("no quarantined item to try dry runs on")
	}
	beforeEvents, beforeBroker := ledgerCount(t, l), brokerSnapshot(t, url)
	// hold acts on audit-hold only, and names the command that fits.
	for verb, want := range map[string]string{"release": "quarantine replay", "reject": "quarantine discard"} {
		args := []string{"hold", verb, "--redis", url, "--ledger", ledger, "--dry-run", "--reason", "x", quar[0].ID}
		if _, stderr, code := runCmd(t, args...); code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("%v on a quarantined item: exit %d, want 1 naming %q: %s", args, code, want, stderr)
		}
	}
	for _, args := range [][]string{
		{"dlq", "discard", "--reason", "x", dead[0].ID},
		{"dlq", "replay", dead[0].ID},
		{"dlq", "redrive", "--force"},
		{"quarantine", "replay", quar[0].ID},
		{"quarantine", "discard", "--reason", "x", quar[0].ID},
		{"quarantine", "reconcile"},
		{"reconcile-broker"},
		{"submit", b.Manifest},
	} {
		full := append([]string{args[0]}, append([]string{"--redis", url, "--ledger", ledger, "--dry-run"}, args[1:]...)...)
		if len(args) > 1 && args[0] != "submit" && args[0] != "reconcile-broker" {
			full = append([]string{args[0], args[1], "--redis", url, "--ledger", ledger, "--dry-run"}, args[2:]...)
		}
		out, stderr, code := runCmd(t, full...)
		if code != 0 || !strings.Contains(strings.ToLower(out), "dry run") {
			t.Errorf("%v: exit %d, output does not say dry run:\n%s%s", full, code, out, stderr)
		}
		if n := ledgerCount(t, l); n != beforeEvents {
			t.Errorf("%v --dry-run wrote %d ledger events", args, n-beforeEvents)
		}
		if got := brokerSnapshot(t, url); got != beforeBroker {
			t.Errorf("%v --dry-run changed Redis:\n%s\nwas\n%s", args, got, beforeBroker)
		}
	}
	// At the default level a single action prints its human line and no
	// JSON log line beside it (the worker above read its level already).
	os.Unsetenv("LAZARET_LOG_LEVEL")
	out, stderr, code := runCmd(t, "dlq", "discard", "--redis", url, "--ledger", ledger, "--operator", "ana", "--reason", "rescanned", dead[0].ID)
	if code != 0 || !strings.Contains(out, "operator ana") || strings.Contains(stderr, `"level"`) {
		t.Errorf("dlq discard: exit %d %s\nstderr: %s", code, out, stderr)
	}
	out, _, code = runCmd(t, "batch", "status", "--ledger", ledger, b.BatchID)
	if code != 0 || !strings.Contains(out, "10 items: 2 accepted") || !strings.Contains(out, "1 discarded") {
		t.Errorf("batch status: exit %d\n%s", code, out)
	}
	// A resubmission revives nothing the ledger has settled.
	out, _, code = runCmd(t, "submit", "--redis", url, "--ledger", ledger, b.Manifest)
	if code != 0 || !strings.Contains(out, "0 enqueued") || !strings.Contains(out, "10 already settled") ||
		!strings.Contains(out, dead[0].ObjectID+"\tnot resubmitted: discarded by ana") {
		t.Errorf("resubmit after discard: exit %d\n%s", code, out)
	}
	out, _, code = runCmd(t, "reconcile-broker", "--redis", url, "--ledger", ledger)
	if code != 0 || !strings.Contains(out, "0 archived task(s) recorded") {
		t.Errorf("reconcile-broker: exit %d %s", code, out)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("worker: %v", err)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("worker did not stop on cancel")
	}
}

func TestConfigFileAndEnv(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "lazaret.json")
	os.WriteFile(cfgPath, []byte(`{"min_dpi": 600, "retry_base": "5s", "private_tags": "reject"}`), 0o644)
	b, _ := fixtures.WriteArchiveBatch(filepath.Join(dir, "b"))
	out, _, _ := runCmd(t, "inspect", "--json", "--config", cfgPath, "--batch", b.Manifest)
	for _, r := range jsonLines(t, out) {
		if r.ObjectID == "master-good-single" && r.Code != "manifest.resolution_dpi.min" {
			t.Errorf("config min_dpi 600 not applied: %s %s", r.Verdict, r.Code)
		}
	}
	os.WriteFile(cfgPath, []byte(`{"min_dpi": "x", "bogus": 1}`), 0o644)
	if _, stderr, code := runCmd(t, "inspect", "--config", cfgPath, "x.tif"); code != 2 || !strings.Contains(stderr, "bogus") || !strings.Contains(stderr, "min_dpi") {
		t.Errorf("bad config: exit %d, %s", code, stderr)
	}
	t.Setenv("LAZARET_REDIS_URL", "http://nope")
	if _, stderr, code := runCmd(t, "submit", b.Manifest); code != 2 || !strings.Contains(stderr, "redis") {
		t.Errorf("bad LAZARET_REDIS_URL: exit %d %s", code, stderr)
	}
}

// TestInspectEDICorpus: one line per message, plus one for a failed
// envelope, and the verdicts agree with the corpus README's envelope column
// — except two files whose envelopes are sound and whose messages their
// release's directory refuses (bad on purpose: numbers that are not
// numbers in invoic_d97b_bad, an unescaped ':' in example_order_error).
func TestInspectEDICorpus(t *testing.T) {
	t.Parallel()
	dir := testenv.Corpus(t, "edifact")
	broken := map[string]bool{"d00b_iftsta.edi": true, "d95b_coprar.edi": true, "example_multiline.edi": true, "orders-with-group.edi": true,
		"order.edi": true, "aperak.edi": true, "VIFTSAI0000001.txt": true, "VIFTSAI0000002.txt": true, "VIFTSAI0000003.txt": true,
		"simple.edi": true, "edifact-sample.edi": true,
		"invoic_d97b_bad.edi": true, "example_order_error.edi": true}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	out, stderr, _ := runCmd(t, append([]string{"inspect", "--json", "--kind", "edifact"}, files...)...)
	rs := jsonLines(t, out)
	seen := map[string]bool{}
	for _, r := range rs {
		name := filepath.Base(r.File)
		seen[name] = true
		dead := r.Verdict == "dead-letter"
		if broken[name] != dead {
			t.Errorf("%s: verdict %s (%s), README says broken=%v", name, r.Verdict, r.Code, broken[name])
		}
		if dead && (r.Offset == nil || r.Code == "" || r.Class != "structural") {
			t.Errorf("%s: dead-letter without offset/code: %+v", name, r)
		}
		if r.Kind != "edifact" {
			t.Errorf("%s: kind %s", name, r.Kind)
		}
	}
	if len(seen) != len(files) {
		t.Errorf("%d of %d files reported (stderr %s)", len(seen), len(files), stderr)
	}
}

func TestInspectLogisticsFixtures(t *testing.T) {
	t.Parallel()
	b, err := fixtures.WriteLogisticsBatch(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out, _, code := runCmd(t, "inspect", "--json", "--batch", b.Manifest)
	if code != 1 {
		t.Errorf("exit %d", code)
	}
	got := map[string]inspectResult{}
	for _, r := range jsonLines(t, out) {
		key := r.ObjectID
		if r.MessageRef != "" && r.Verdict != "dead-letter" {
			key += "#" + r.MessageRef
		}
		got[key] = r
	}
	for key, want := range b.Expect {
		r, ok := got[key]
		if !ok {
			t.Errorf("%s: no line", key)
			continue
		}
		if r.Verdict != want.Destination || r.Code != want.Code {
			t.Errorf("%s: %s %s, want %s %s", key, r.Verdict, r.Code, want.Destination, want.Code)
		}
	}
	contrl, _, code := runCmd(t, "contrl", filepath.Join(b.Dir, "unt-count.edi"))
	if code != 0 || !strings.Contains(contrl, "UCM+1+IFTMIN:D:99B:UN+4+29+UNT+1'") {
		t.Errorf("contrl: exit %d\n%s", code, contrl)
	}
}

// TestWorkerOnPostgres runs submit and worker with the PostgreSQL ledger,
// as a multi-node deployment would, then exports PREMIS from it.
func TestWorkerOnPostgres(t *testing.T) {
	url := testenv.Redis(t, 13)
	dsn := testenv.Postgres(t)
	b, err := fixtures.WriteArchiveBatch(filepath.Join(t.TempDir(), "batch"))
	if err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCmd(t, "submit", "--redis", url, "--ledger", dsn, b.Manifest); code != 0 {
		t.Fatalf("submit: %s", stderr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	t.Setenv("LAZARET_LOG_LEVEL", "error")
	go func() {
		done <- run(ctx, []string{"worker", "--redis", url, "--ledger", dsn, "--retry-base", "100ms"}, &bytes.Buffer{}, &bytes.Buffer{})
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _, code := runCmd(t, "batch", "status", "--ledger", dsn, b.BatchID)
		if code == 0 && strings.Contains(out, "10 items: 2 accepted, 0 retrying, 4 dead-letter, 4 quarantine") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch status on PostgreSQL:\n%s", out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	xmlPath := filepath.Join(t.TempDir(), "batch.xml")
	if _, stderr, code := runCmd(t, "events", "export", "--ledger", dsn, "--batch", b.BatchID, "-o", xmlPath); code != 0 {
		t.Fatalf("export: %s", stderr)
	}
	testenv.ValidatePREMIS(t, xmlPath)
}

func TestBenchCommand(t *testing.T) {
	t.Parallel()
	args := []string{"bench", "--dir", t.TempDir(), "--width", "400", "--height", "300", "--edi-mb", "1", "--rounds", "1",
		"--pipeline-items", "40", "--ledger-items", "1000", "--bench-redis", testenv.Redis(t, 14)}
	rows := []string{"inflate: ", "noisy Deflate", "EDIFACT parse", "50 open failures"}
	// The pipeline's rows, each by its whole name.
	pipeline := []string{"small masters accepted, SQLite ledger", "small masters dead-lettered, SQLite ledger",
		"small masters accepted, SQLite ledger not written (ceiling)", "small masters dead-lettered, SQLite ledger not written (ceiling)",
		"bare asynq, one synced 1 KB write a task"}
	// The PostgreSQL rows where PostgreSQL answers (always under CI).
	c, err := pgx.Connect(context.Background(), testenv.PostgresDSN())
	switch {
	case err == nil:
		defer c.Close(context.Background())
		args = append(args, "--pipeline-postgres", testenv.PostgresDSN())
		pipeline = append(pipeline, "small masters accepted, PostgreSQL ledger", "small masters dead-lettered, PostgreSQL ledger")
	case testenv.InCI():
		t.Fatalf("PostgreSQL (%s) is required in CI: %v", testenv.PostgresDSN(), err)
	}
	out, stderr, code := runCmd(t, args...)
	if code != 0 {
		t.Fatalf("bench: exit %d\n%s\n%s", code, out, stderr)
	}
	for _, row := range rows {
		if !strings.Contains(out, row) {
			t.Errorf("bench printed no %q row:\n%s", row, out)
		}
	}
	for _, row := range pipeline {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(row) + `\s{2,}\d+\s`).MatchString(out) {
			t.Errorf("bench printed no %q row:\n%s", row, out)
		}
	}
	// The ledger alone, from 2 and 8 writers, with its ratio to bare asynq
	// and how many masters a commit held (at least one; the pipeline rows
	// end with it too).
	ledgers := []string{"SQLite"}
	if c != nil {
		ledgers = append(ledgers, "PostgreSQL")
	}
	for _, lg := range ledgers {
		for _, w := range []string{"2", "8"} {
			m := regexp.MustCompile(`(?m)^` + lg + `\s+` + w + `\s+\d+\s+\d+\s+\d+\.\d{3}\s+\d+\s+(\d+\.\d\d)$`).FindStringSubmatch(out)
			if m == nil {
				t.Errorf("bench printed no ledger-alone row for %s from %s writers:\n%s", lg, w, out)
			} else if per, _ := strconv.ParseFloat(m[1], 64); per < 1 {
				t.Errorf("%s from %s writers: %s masters a commit", lg, w, m[1])
			}
		}
	}
	// Only the real ledgers, two rows each: not the ceiling, which writes
	// nothing.
	_, alone, _ := strings.Cut(out, "LEDGER ALONE")
	alone, _, _ = strings.Cut(alone, "\n\n")
	if n, want := len(regexp.MustCompile(`(?m)^\S+\s+[28]\s+\d`).FindAllString(alone, -1)), 2*len(ledgers); n != want {
		t.Errorf("%d ledger-alone rows, want %d:\n%s", n, want, out)
	}
	// The SQLite rows end with the items a commit held and the ledger's
	// bytes on disk an item.
	if m := regexp.MustCompile(`(?m)^small masters accepted, SQLite ledger\s.*\s\d+\.\d\d\s+(\d+)$`).FindStringSubmatch(out); m == nil {
		t.Errorf("the pipeline rows say nothing of their commits or their ledger's size:\n%s", out)
	} else if b, _ := strconv.Atoi(m[1]); b < 500 {
		t.Errorf("the SQLite ledger holds %d bytes an accepted master: its submission and its record take more", b)
	}
	if c == nil {
		return
	}
	// Each PostgreSQL run's schema is dropped once it is measured.
	var left int
	if err := c.QueryRow(context.Background(), `SELECT count(*) FROM pg_namespace WHERE nspname LIKE $1`,
		fmt.Sprintf("lazaret\\_bench\\_%d\\_%%", os.Getpid())).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left > 0 {
		t.Errorf("bench left %d schemas behind", left)
	}
}

// TestQuarantineClearsItselfWhenTheRegistryChanges: a worker watching its
// UN/LOCODE file replays the parked message once the file gains the code.
func TestQuarantineClearsItselfWhenTheRegistryChanges(t *testing.T) {
	url := testenv.Redis(t, 12)
	dir := t.TempDir()
	b, err := fixtures.WriteLogisticsBatch(filepath.Join(dir, "batch"))
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := validate.ReadManifestFile(b.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	// Submit only the interchange with the unknown LOCODE.
	var only []validate.Item
	for _, it := range m.Items {
		if it.ObjectID == "edi-unknown-locode" {
			only = append(only, it)
		}
	}
	m.Items = only
	js, _ := json.Marshal(m)
	manifest := filepath.Join(b.Dir, "one.json")
	os.WriteFile(manifest, js, 0o644)
	locode := filepath.Join(dir, "locode.csv")
	os.WriteFile(locode, []byte(",\"NL\",\"RTM\",\"Rotterdam\",,,,,,,,\n"), 0o644)
	ledger := filepath.Join(dir, "ledger.db")
	if _, stderr, code := runCmd(t, "submit", "--redis", url, "--ledger", ledger, manifest); code != 0 {
		t.Fatal(stderr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	t.Setenv("LAZARET_LOG_LEVEL", "error")
	go func() {
		done <- run(ctx, []string{"worker", "--redis", url, "--ledger", ledger, "--locode", locode, "--reconcile-every", "200ms"}, &bytes.Buffer{}, &bytes.Buffer{})
	}()
	defer func() {
		cancel()
		<-done
	}()
	status := func() string {
		out, _, _ := runCmd(t, "batch", "status", "--ledger", ledger, b.BatchID)
		return out
	}
	waitFor := func(want string) {
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(status(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %q:\n%s", want, status())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFor("1 quarantine")
	os.WriteFile(locode, []byte(",\"NL\",\"RTM\",\"Rotterdam\",,,,,,,,\n,\"NL\",\"VLI\",\"Vlissingen\",,,,,,,,\n"), 0o644)
	waitFor("2 items: 2 accepted") // the interchange and its one message
	out, _, _ := runCmd(t, "events", "ls", "--ledger", ledger, "--object", "edi-unknown-locode#1")
	for _, want := range []string{"qua", "unq", "ing"} {
		if !strings.Contains(out, " "+want+" ") {
			t.Errorf("history lacks %s:\n%s", want, out)
		}
	}
}

// TestServeRefusesAnOpenListenWithoutAToken: failures, paths and digests
// must not be public by accident.
func TestServeRefusesAnOpenListenWithoutAToken(t *testing.T) {
	_, stderr, code := runCmd(t, "serve", "--listen", "0.0.0.0:0", "--ledger", filepath.Join(t.TempDir(), "l.db"))
	if code != 2 || !strings.Contains(stderr, "--read-token") {
		t.Errorf("open listen without a read token: exit %d %s", code, stderr)
	}
	_, stderr, code = runCmd(t, "serve", "--monitoring-writable", "--ledger", filepath.Join(t.TempDir(), "l.db"))
	if code != 2 || !strings.Contains(stderr, "refused") {
		t.Errorf("--monitoring-writable: exit %d %s", code, stderr)
	}
}

// TestFlagsAnywhereAndNoFalseAllClear: flags after the argument work as
// operators type them, and a listing without a ledger is an error, not an
// empty dead-letter queue with exit 0.
func TestFlagsAnywhereAndNoFalseAllClear(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-ledger.db")
	_, stderr, code := runCmd(t, "dlq", "ls", "--ledger", missing)
	if code != 2 || !strings.Contains(stderr, "no-such-ledger.db") {
		t.Errorf("dlq ls on a missing ledger: exit %d %s", code, stderr)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("dlq ls created the ledger it was pointed at")
	}
	// The ID before --reason: parsed, then refused for the right reason.
	_, stderr, code = runCmd(t, "dlq", "discard", "some-id", "--ledger", missing, "--reason", "r")
	if code != 2 || strings.Contains(stderr, "want exactly one ID") || !strings.Contains(stderr, "no-such-ledger.db") {
		t.Errorf("flags after the ID: exit %d %s", code, stderr)
	}
	// Everything after -- is an argument.
	out, _, code := runCmd(t, "inspect", "--", "--json")
	if code != 1 || !strings.HasPrefix(out, "FILE") || !strings.Contains(out, "--json ") {
		t.Errorf("inspect -- --json: exit %d, want a table with the file --json:\n%s", code, out)
	}
}

// TestSubmitRefusesLinkedManifests: `lazaret submit` opens its manifest
// as a worker opens an item, beneath the ingest root or in its own folder:
// a manifest that is a link is refused before a byte of its target is
// read, the same way whether or not the target exists, and nothing is
// recorded.
func TestSubmitRefusesLinkedManifests(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	outside := t.TempDir()
	passwd := filepath.Join(outside, "passwd")
	if err := os.WriteFile(passwd, []byte("root:x:0:0:root:/root:/bin/bash\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	exists, dangling := filepath.Join(root, "exists.json"), filepath.Join(root, "dangling.json")
	if os.Symlink(passwd, exists) != nil || os.Symlink(passwd+".gone", dangling) != nil {
		t.Fatal("symlink")
	}
	ledger := filepath.Join(t.TempDir(), "ledger.db")
	for _, withRoot := range []bool{true, false} {
		var said []string
		for _, p := range []string{exists, dangling} {
			args := []string{"submit", "--ledger", ledger, "--redis", "redis://127.0.0.1:1/0"}
			if withRoot {
				args = append(args, "--ingest-root", root)
			}
			_, stderr, code := runCmd(t, append(args, p)...)
			if code != 1 || !strings.Contains(stderr, "symbolic link") || strings.Contains(stderr, "root:x") || strings.Contains(stderr, "invalid character") {
				t.Errorf("root %v, %s: exit %d\n%s", withRoot, filepath.Base(p), code, stderr)
			}
			said = append(said, strings.ReplaceAll(stderr, filepath.Base(p), "NAME"))
		}
		if said[0] != said[1] {
			t.Errorf("root %v: a link to a file that exists and one to nothing are told apart:\n%s\n%s", withRoot, said[0], said[1])
		}
	}
	if _, err := os.Stat(ledger); err == nil {
		t.Error("a ledger was created: something was recorded")
	}
}

// TestSubmitDryRunRunsTheContentRules: a dry run runs every check that
// needs no broker, as inspect --batch does, and says which items would be
// quarantined and why. Before, it said "3 would be enqueued" and the
// workers then quarantined all three for the missing resolution_dpi.
func TestSubmitDryRunRunsTheContentRules(t *testing.T) {
	url := testenv.Redis(t, redisDB)
	dir := t.TempDir()
	b, err := fixtures.WriteArchiveBatch(filepath.Join(dir, "batch"))
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := validate.ReadManifestFile(b.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	var items []validate.Item
	for _, it := range m.Items {
		if it.ObjectID == "master-good-single" || it.ObjectID == "master-good-multipage" {
			it.ResolutionDPI = ""
			items = append(items, it)
		}
	}
	raw, _ := json.Marshal(map[string]any{"batch_id": "no-dpi", "submitter": "t", "items": items})
	manifest := filepath.Join(b.Dir, "no-dpi.json")
	if err := os.WriteFile(manifest, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	ledger := filepath.Join(dir, "ledger.db")
	out, stderr, code := runCmd(t, "submit", "--dry-run", "--redis", url, "--ledger", ledger, manifest)
	if code != 0 || !strings.Contains(out, "2 would be enqueued") || !strings.Contains(out, "items 2 quarantine") ||
		strings.Count(out, "would be quarantine\tmanifest.resolution_dpi.required") != 2 {
		t.Errorf("submit --dry-run: exit %d\n%s%s", code, out, stderr)
	}
	out, _, _ = runCmd(t, "submit", "--dry-run", "--json", "--redis", url, "--ledger", ledger, manifest)
	var res struct {
		Enqueued []string        `json:"enqueued"`
		Would    []inspectResult `json:"would"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Would) != 2 || res.Would[0].Code != "manifest.resolution_dpi.required" {
		t.Errorf("submit --dry-run --json: %v\n%s", err, out)
	}
	if l, err := sqlite.Open(context.Background(), ledger); err == nil {
		evs, _ := l.Events(context.Background(), premis.Filter{})
		l.Close()
		if len(evs) != 0 {
			t.Errorf("a dry run recorded %d events", len(evs))
		}
	}
}

// TestSettingsPrecedence: defaults < config file < environment < a flag
// given on the command line, wherever it stands among the arguments.
func TestSettingsPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "lazaret.json")
	if err := os.WriteFile(file, []byte(`{"ledger": "`+filepath.Join(dir, "file.db")+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		env  string // LAZARET_LEDGER
		args []string
		want string
	}{
		{"", []string{"dlq", "ls", "--config", file}, "file.db"},
		{filepath.Join(dir, "env.db"), []string{"dlq", "ls", "--config", file}, "env.db"},
		{filepath.Join(dir, "env.db"), []string{"dlq", "ls", "--config", file, "--ledger", filepath.Join(dir, "flag.db")}, "flag.db"},
		{filepath.Join(dir, "env.db"), []string{"dlq", "show", "ID", "--ledger=" + filepath.Join(dir, "flag.db")}, "flag.db"},
	} {
		t.Setenv("LAZARET_LEDGER", tc.env)
		_, stderr, code := runCmd(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, "no ledger at "+filepath.Join(dir, tc.want)) {
			t.Errorf("LAZARET_LEDGER=%q %q: exit %d, want no ledger at %s:\n%s", tc.env, tc.args, code, tc.want, stderr)
		}
	}
}

// archivematicaImportsDemo: Archivematica's own import job (not a
// re-implementation of its checks: one passed while the job crashed on
// every export) imports the demo's export over a transfer of the demo's
// files, and --transfer exports exactly what a transfer of the accepted
// files holds, naming what it left out and why: a file the transfer lacks
// and a file whose bytes are not those Lazaret read.
func archivematicaImportsDemo(t *testing.T, data, ledger, amPath string) {
	t.Helper()
	transfer := func(pick func(name string) bool) string {
		dir := t.TempDir()
		for _, batch := range []string{"archive", "logistics"} {
			entries, err := os.ReadDir(filepath.Join(data, batch))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if e.Name() == "manifest.json" || !pick(e.Name()) {
					continue
				}
				b, err := os.ReadFile(filepath.Join(data, batch, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(filepath.Join(dir, "objects"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "objects", e.Name()), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		return dir
	}
	all := transfer(func(string) bool { return true })
	if ok, out := testenv.ArchivematicaImport(t, amPath, filepath.Join(all, "objects"), 60); !ok {
		t.Errorf("Archivematica's import of the demo's --archivematica export fails:\n%s", out)
	} else {
		t.Logf("the whole demo: %s", out)
	}
	// The transfer of the accepted files only, one of them not the bytes
	// Lazaret read.
	accepted := map[string]bool{"good-single.tif": true, "good-multipage.tif": true, "vermas-good.edi": true, "iftmin-good.edi": true, "coprar-good.edi": true}
	some := transfer(func(name string) bool { return accepted[name] })
	partial := filepath.Join(t.TempDir(), "transfer.premis.xml")
	_, stderr, code := runCmd(t, "events", "export", "--ledger", ledger, "--transfer", some, "--organisation", "Demo Archive", "-o", partial)
	if code != 0 {
		t.Fatalf("export --transfer: exit %d %s", code, stderr)
	}
	for _, want := range []string{"master-no-profile (2 events): objects/no-profile.tif is not in the transfer", "edi-mixed (6 events): objects/mixed.edi is not in the transfer"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("export --transfer does not say %q:\n%s", want, stderr)
		}
	}
	testenv.ValidatePREMIS(t, partial)
	ok, out := testenv.ArchivematicaImport(t, partial, filepath.Join(some, "objects"), 20)
	if !ok {
		t.Errorf("Archivematica's import of the --transfer export fails:\n%s", out)
	}
	t.Logf("the accepted files: %s", out)
	b, _ := os.ReadFile(partial)
	if strings.Contains(string(b), "no-profile.tif") || !strings.Contains(string(b), "objects/good-single.tif") {
		t.Errorf("the --transfer export holds files the transfer does not, or lacks one it does")
	}
	if err := os.WriteFile(filepath.Join(some, "objects", "good-single.tif"), []byte("another file at the same path"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runCmd(t, "events", "export", "--ledger", ledger, "--transfer", some, "-o", partial)
	if code != 0 || !strings.Contains(stderr, "objects/good-single.tif in the transfer is not the file Lazaret read") {
		t.Errorf("export --transfer over a changed file: exit %d %s", code, stderr)
	}
	if ok, out := testenv.ArchivematicaImport(t, partial, filepath.Join(some, "objects"), 1); !ok {
		t.Errorf("Archivematica's import without the changed file fails:\n%s", out)
	}
	if _, stderr, code := runCmd(t, "events", "export", "--ledger", ledger, "--transfer", t.TempDir()); code == 0 || !strings.Contains(stderr, "no objects/ folder") {
		t.Errorf("export --transfer of a folder without objects/: exit %d %s", code, stderr)
	}
}
