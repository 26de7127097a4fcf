package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/sqlite"
	"github.com/lazaret/lazaret/validate"
)

// TestSettingErrorsPointAtTheSetting: a ledger path that names nothing is
// a bad setting (exit 2) whose message says what to do; it does not end
// with "Run 'lazaret dlq ls --help' for usage", which would not help.
func TestSettingErrorsPointAtTheSetting(t *testing.T) {
	t.Parallel()
	_, stderr, code := runCmd(t, "dlq", "ls", "--ledger", filepath.Join(t.TempDir(), "nope.db"))
	if code != 2 || !strings.Contains(stderr, "no ledger at") || strings.Contains(stderr, "--help") {
		t.Errorf("exit %d\n%s", code, stderr)
	}
	if _, stderr, code := runCmd(t, "dlq", "ls", "--nope"); code != 2 || !strings.Contains(stderr, "--help") {
		t.Errorf("an unknown flag still points at --help: exit %d\n%s", code, stderr)
	}
}

// noBroker takes every task and keeps none: a batch recorded as
// submitted, whose items no worker will settle.
type noBroker struct{}

func (noBroker) EnqueueContext(context.Context, *asynq.Task, ...asynq.Option) (*asynq.TaskInfo, error) {
	return &asynq.TaskInfo{}, nil
}

// TestEmptyListingsAndWatchJSON: an empty listing says it is empty under
// its header; batch watch --json prints the progress as JSON lines.
func TestEmptyListingsAndWatchJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, err := fixtures.WriteArchiveBatch(filepath.Join(dir, "batch"))
	if err != nil {
		t.Fatal(err)
	}
	ledger := filepath.Join(dir, "ledger.db")
	l, err := sqlite.Open(context.Background(), ledger)
	if err != nil {
		t.Fatal(err)
	}
	m, mdir, err := validate.ReadManifestFile(b.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Submit(context.Background(), l, noBroker{}, m, mdir, ingest.SubmitOptions{Policy: ingest.DefaultPolicy()}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	for _, q := range []string{"dlq", "quarantine", "hold"} {
		out, _, code := runCmd(t, q, "ls", "--ledger", ledger)
		if code != 0 || !strings.Contains(out, "(nothing in ") || strings.Count(out, "\n") != 2 {
			t.Errorf("%s ls on an empty queue: exit %d\n%s", q, code, out)
		}
	}
	out, _, code := runCmd(t, "batch", "watch", "--json", "--timeout", "300ms", "--ledger", ledger, m.BatchID)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var p ingest.Progress
	if code != 1 || len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &p) != nil || p.BatchID != m.BatchID || p.Pending != len(m.Items) ||
		p.ByDestination.Of(premis.Submitted) != len(m.Items) {
		t.Errorf("batch watch --json on a batch nobody works: exit %d\n%s", code, out)
	}
}

// TestReconcileWaitsForTheFleetsRegistry: an operator reconciles with a
// new UN/LOCODE file while a worker still validates with the old one. The
// reconciliation replays nothing, says which worker is behind, and spends
// no attempt; once the worker's file is updated it reloads it and replays
// the message itself, once. Before, the replay went to a worker that
// quarantined the message again, spending an attempt towards the poison
// cap, and the dry run said "replayed".
func TestReconcileWaitsForTheFleetsRegistry(t *testing.T) {
	url := testenv.Redis(t, 13)
	dir := t.TempDir()
	b, err := fixtures.WriteLogisticsBatch(filepath.Join(dir, "batch"))
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := validate.ReadManifestFile(b.Manifest)
	if err != nil {
		t.Fatal(err)
	}
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
	old, fixed := filepath.Join(dir, "old.csv"), filepath.Join(dir, "new.csv")
	os.WriteFile(old, []byte(",\"NL\",\"RTM\",\"Rotterdam\",,,,,,,,\n"), 0o644)
	os.WriteFile(fixed, []byte(",\"NL\",\"RTM\",\"Rotterdam\",,,,,,,,\n,\"NL\",\"VLI\",\"Vlissingen\",,,,,,,,\n"), 0o644)
	ledger := filepath.Join(dir, "ledger.db")
	if _, stderr, code := runCmd(t, "submit", "--redis", url, "--ledger", ledger, manifest); code != 0 {
		t.Fatal(stderr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	t.Setenv("LAZARET_LOG_LEVEL", "error")
	go func() {
		done <- run(ctx, []string{"worker", "--redis", url, "--ledger", ledger, "--locode", old, "--reconcile-every", "200ms"}, &bytes.Buffer{}, &bytes.Buffer{})
	}()
	defer func() {
		cancel()
		<-done
	}()
	waitFor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			out, _, _ := runCmd(t, "batch", "status", "--ledger", ledger, b.BatchID)
			if strings.Contains(out, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %q:\n%s", want, out)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFor("1 quarantine")
	l, err := sqlite.Open(context.Background(), ledger)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	count := func() int {
		evs, err := l.Events(context.Background(), premis.Filter{BatchID: b.BatchID})
		if err != nil {
			t.Fatal(err)
		}
		return len(evs)
	}
	before := count()
	out, stderr, code := runCmd(t, "quarantine", "reconcile", "--redis", url, "--ledger", ledger, "--locode", fixed, "--dry-run")
	if code != 1 || !strings.Contains(out, "would-replay") || strings.Contains(out, "\treplayed") || !strings.Contains(stderr, "1 live worker(s)") {
		t.Errorf("dry run while the worker is behind: exit %d\n%s%s", code, out, stderr)
	}
	out, stderr, code = runCmd(t, "quarantine", "reconcile", "--redis", url, "--ledger", ledger, "--locode", fixed)
	if code != 1 || !strings.Contains(stderr, "nothing was replayed") || !strings.Contains(stderr, "UN/LOCODE@") {
		t.Errorf("reconcile while the worker is behind: exit %d\n%s%s", code, out, stderr)
	}
	time.Sleep(600 * time.Millisecond) // three of the worker's ticks
	if n := count(); n != before {
		t.Fatalf("the refused reconciliation wrote %d events", n-before)
	}
	// The worker gets the new file: it reloads it and replays the message
	// itself, as attempt 2, once.
	os.WriteFile(old, []byte(",\"NL\",\"RTM\",\"Rotterdam\",,,,,,,,\n,\"NL\",\"VLI\",\"Vlissingen\",,,,,,,,\n"), 0o644)
	waitFor("2 items: 2 accepted")
	evs, _ := l.Events(context.Background(), premis.Filter{BatchID: b.BatchID})
	quarantined, maxAttempt := 0, 0
	for _, e := range evs {
		if e.Destination == premis.Quarantined {
			quarantined++
		}
		maxAttempt = max(maxAttempt, e.Attempt)
	}
	if quarantined != 1 || maxAttempt != 2 {
		t.Errorf("quarantined %d times, last attempt %d: want once, and the replay as attempt 2", quarantined, maxAttempt)
	}
	out, _, code = runCmd(t, "quarantine", "reconcile", "--redis", url, "--ledger", ledger, "--locode", old, "--dry-run")
	if code != 0 || !strings.Contains(out, "0 parked") {
		t.Errorf("after the worker caught up: exit %d\n%s", code, out)
	}
}

// TestDemoLeavesNothingBehind: without --data the demo works in a
// temporary folder and removes it at the end, saying so; its next steps
// name --keep. Before, every make demo left a folder in the temporary
// directory.
func TestDemoLeavesNothingBehind(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	out, stderr, code := runCmd(t, "demo")
	if code != 0 || !strings.Contains(out, "all 25 outcomes landed") || !strings.Contains(out, "was removed (--keep keeps it") {
		t.Fatalf("demo: exit %d\n%s%s", code, out, stderr)
	}
	left, _ := filepath.Glob(filepath.Join(tmp, "lazaret-demo-*"))
	if len(left) != 0 {
		t.Errorf("the demo left %v behind", left)
	}
	if !strings.Contains(out, "go run ./cmd/lazaret quarantine ls") && !strings.Contains(out, "quarantine ls --ledger") {
		t.Errorf("the next steps name no command to run:\n%s", out)
	}
}

// syncBuffer is a bytes.Buffer safe for the worker's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestWorkerLogsJSONWhileRedisIsDown: a worker pointed at a port where no
// Redis listens writes only JSON lines (before, go-redis's pool wrote its
// own plain-text lines, 30 of 84), few of them (the libraries' repeated
// errors are throttled), and one warning that says the broker is
// unreachable; when a Redis comes up there, one that says it is back.
func TestWorkerLogsJSONWhileRedisIsDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	var stderr syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"worker", "--redis", fmt.Sprintf("redis://127.0.0.1:%d/0", port), "--ledger", filepath.Join(t.TempDir(), "l.db"),
			"--reconcile-every", "500ms"}, io.Discard, &stderr)
	}()
	waitLog := func(want string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for !strings.Contains(stderr.String(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in the log:\n%s", want, stderr.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitLog(`"msg":"broker unreachable"`)
	time.Sleep(3 * time.Second)
	down := stderr.String()
	srv := exec.Command("redis-server", "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := srv.Start(); err != nil {
		if testenv.InCI() {
			t.Fatalf("redis-server: %v", err)
		}
		t.Skipf("redis-server: %v", err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	waitLog(`"msg":"broker back"`)
	cancel()
	<-done
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	for i, line := range lines {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Errorf("line %d is not JSON: %s", i+1, line)
		}
	}
	if n := strings.Count(down, "\n"); n > 30 {
		t.Errorf("%d lines in about 4 s with the broker down, want the repeats throttled:\n%s", n, down)
	}
	if n := strings.Count(down, `"msg":"broker unreachable"`); n != 1 {
		t.Errorf("%d broker-unreachable lines, want 1", n)
	}
}

// TestSentinelURLsAreCheckedBeforeAnythingIsRecorded: the natural but
// wrong form redis-sentinel://host:port/mymaster parsed as an empty master
// name; submit then recorded its items and failed 15 s later. It is now a
// usage error at once, naming the form that works, and a broker that
// cannot be reached records nothing either.
func TestSentinelURLsAreCheckedBeforeAnythingIsRecorded(t *testing.T) {
	t.Parallel()
	b, err := fixtures.WriteArchiveBatch(filepath.Join(t.TempDir(), "batch"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	ledger := filepath.Join(t.TempDir(), "ledger.db")
	for _, tc := range []struct {
		url  string
		code int
		want string
	}{
		{"redis-sentinel://" + dead + "/mymaster", 2, "?master=mymaster, not in the path"},
		{"redis-sentinel://:secret@" + dead, 2, "needs the master's name"},
		{"redis-sentinel://" + dead + "?master=mymaster", 1, "unreachable, nothing recorded"},
	} {
		start := time.Now()
		_, stderr, code := runCmd(t, "submit", "--redis", tc.url, "--ledger", ledger, b.Manifest)
		if code != tc.code || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "secret") {
			t.Errorf("%s: exit %d\n%s", tc.url, code, stderr)
		}
		if d := time.Since(start); d > 6*time.Second { // under 3 s on a quiet machine; a loaded one gets slack
			t.Errorf("%s: refused after %s", tc.url, d)
		}
		if _, err := os.Stat(ledger); err == nil {
			t.Fatalf("%s: a ledger was created", tc.url)
		}
	}
}

// TestUnknownFlagsSuggest: an unknown flag names the closest one.
func TestUnknownFlagsSuggest(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]string{
		"dlq ls --ledgr x":        "did you mean --ledger?",
		"submit --dryrun m.json":  "did you mean --dry-run?",
		"quarantine ls --clas x":  "did you mean --class?",
		"batch watch --jsno b":    "did you mean --json?",
		"dlq ls --zzzzzzzzzz":     "unknown flag --zzzzzzzzzz",
		"events ls --obj inv#1":   "did you mean --object?",
		"worker --metrics x:1":    "did you mean --metrics-listen?",
		"demo --kep":              "did you mean --keep?",
		"inspect --allow-hardlin": "did you mean --allow-hardlinks?",
	} {
		_, stderr, code := runCmd(t, strings.Fields(args)...)
		if code != 2 || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, want %q in\n%s", args, code, want, stderr)
		}
	}
}

// TestCompletionOffersValues: shell completion offers the values of the
// flags that take one of a known set. After --class=, the value alone:
// cobra's completion scripts take the "--class=" off the word themselves.
func TestCompletionOffersValues(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]string{
		"__complete dlq ls --code tiff.ifd-l":  "tiff.ifd-loop\t",
		"__complete quarantine ls --class=sem": "semantic\n",
		"__complete hold ls --kind ":           "edifact",
		"__complete events export --format ":   "mets",
	} {
		fields := strings.Split(args, " ")
		out, stderr, code := runCmd(t, fields...)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("%s: exit %d, want %q in\n%s%s", args, code, want, out, stderr)
		}
	}
}

// TestCompletionOffersFailureIDs: completing the ID of show, replay,
// discard, release or reject offers the open failures of that queue (the
// object ids, with their codes), from the ledger the line names; never
// another queue's, nothing after the ID, and nothing (no error) without a
// ledger.
func TestCompletionOffersFailureIDs(t *testing.T) {
	t.Parallel()
	ledger := goldenLedger(t)
	for _, tc := range []struct {
		args      string
		want, not []string
	}{
		{"__complete dlq show --ledger " + ledger + " ", []string{"scan-0002\ttiff.ifd-loop"}, []string{"scan-0004", "edi-0003", "scan-0001"}},
		{"__complete dlq replay --ledger=" + ledger + " --reason x scan", []string{"scan-0002"}, []string{"scan-0004"}},
		{"__complete hold release --ledger " + ledger + " ", []string{"scan-0004\tunknown"}, []string{"scan-0002"}},
		{"__complete quarantine discard --ledger " + ledger + " edi", []string{"edi-0003#1\tedifact.locode-unknown"}, nil},
		{"__complete dlq show --ledger " + ledger + " 00000000-0000-4000-8000-000000000002", []string{"00000000-0000-4000-8000-000000000002"}, nil},
		{"__complete dlq show --ledger " + ledger + " scan-0002 ", nil, []string{"scan-0002"}},
		{"__complete dlq ls --ledger " + ledger + " ", nil, []string{"scan-0002"}},
		{"__complete dlq show --ledger " + filepath.Join(t.TempDir(), "none.db") + " ", nil, []string{"scan"}},
	} {
		out, stderr, code := runCmd(t, strings.Split(tc.args, " ")...)
		if code != 0 {
			t.Errorf("%s: exit %d %s", tc.args, code, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: want %q in\n%s", tc.args, w, out)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(out, n) {
				t.Errorf("%s: offers %q:\n%s", tc.args, n, out)
			}
		}
	}
}
