package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hibiken/asynq"
	"github.com/spf13/cobra"

	"github.com/lazaret/lazaret/api"
	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/sqlite"
	"github.com/lazaret/lazaret/tiff"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, or with -update writes it.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/lazaret -run %s -update)", err, t.Name())
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got), rerun with -update if the change is meant:\n%s", path, diff)
	}
}

// commandPaths walks the tree: every command's words after "lazaret".
func commandPaths(c *cobra.Command, prefix []string, out *[][]string) {
	for _, sub := range c.Commands() {
		if sub.Hidden || sub.Name() == "help" {
			continue
		}
		p := append(append([]string{}, prefix...), sub.Name())
		*out = append(*out, p)
		commandPaths(sub, p, out)
	}
}

// TestHelpGolden: every command's --help, byte for byte, exit 0 on
// standard output; and lazaret help CMD prints the same.
func TestHelpGolden(t *testing.T) {
	t.Setenv("TMPDIR", "/tmp") // bench's --dir default
	t.Setenv("LAZARET_LEDGER", "/home/someone/ledger.db")
	t.Setenv("LAZARET_API_TOKEN", "secret-token") // help must show neither
	paths := [][]string{{}}
	commandPaths(newRoot(), nil, &paths)
	if len(paths) < 30 {
		t.Fatalf("%d commands in the tree", len(paths))
	}
	for _, p := range paths {
		out, stderr, code := runCmd(t, append(append([]string{}, p...), "--help")...)
		if code != 0 || stderr != "" {
			t.Errorf("%v --help: exit %d, stderr %q", p, code, stderr)
		}
		if strings.Contains(out, "secret-token") || strings.Contains(out, "/home/someone") {
			t.Errorf("%v --help shows the environment:\n%s", p, out)
		}
		name := strings.Join(append([]string{"lazaret"}, p...), "_")
		golden(t, filepath.Join("help", name+".golden"), out)
		if len(p) > 0 {
			if viaHelp, _, code := runCmd(t, append([]string{"help"}, p...)...); code != 0 || viaHelp != out {
				t.Errorf("lazaret help %v: exit %d, not the same as --help", p, code)
			}
		}
	}
}

// TestUsageErrors: exit 2, a pointer to the right --help, suggestions.
func TestUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"sbumit"}, []string{`unknown command "sbumit"`, "Did you mean this?\n\tsubmit", "lazaret --help"}},
		{[]string{"dlq", "lss"}, []string{`unknown command "lss" for "lazaret dlq"`, "\tls", "lazaret dlq --help"}},
		{[]string{"dlq", "discard", "--bogus"}, []string{"unknown flag --bogus", "lazaret dlq discard --help"}},
		{[]string{"dlq", "discard", "x", "--ledger", "/nonexistent/l.db"}, []string{"--reason is required"}},
		{[]string{"batch", "status"}, []string{"want exactly one batch ID", "lazaret batch status --help"}},
		{[]string{}, []string{"Usage:"}},
		{[]string{"dlq"}, []string{"Usage:\n  lazaret dlq COMMAND"}},
		{[]string{"help", "dlq", "lss"}, []string{`unknown command "lss" for "lazaret dlq"`, "\tls"}},
		{[]string{"help", "bogus"}, []string{`unknown command "bogus" for "lazaret"`}},
	} {
		out, stderr, code := runCmd(t, c.args...)
		if code != 2 || out != "" {
			t.Errorf("%v: exit %d, stdout %q", c.args, code, out)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", c.args, w, stderr)
			}
		}
	}
	if out, _, code := runCmd(t, "--version"); code != 0 || out != "lazaret "+version+"\n" {
		t.Errorf("--version: exit %d %q", code, out)
	}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		if out, _, code := runCmd(t, "completion", shell); code != 0 || !strings.Contains(out, "lazaret") {
			t.Errorf("completion %s: exit %d", shell, code)
		}
	}
	// Flag names complete.
	if out, _, _ := runCmd(t, "__complete", "dlq", "ls", "--cl"); !strings.Contains(out, "--class") {
		t.Errorf("completion of dlq ls --cl:\n%s", out)
	}
}

// goldenLedger writes a ledger with fixed ids and times: one accepted
// item, and one failure in each of dlq, quarantine and audit-hold (the
// dead letter's message spans two lines).
func goldenLedger(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	off := func(n int64) *int64 { return &n }
	page := func(n int) *int { return &n }
	base := func(i int, obj string) premis.Event {
		return premis.Event{ID: "00000000-0000-4000-8000-00000000000" + string(rune('1'+i)), Key: "key-" + obj + "-" + string(rune('a'+i)),
			DateTime: at.Add(time.Duration(i) * time.Minute), ObjectID: obj, BatchID: "golden-17", CorrelationID: "corr-" + obj,
			Kind: "tiff", SHA256: strings.Repeat("ab", 32), Size: 4096, Path: "/srv/ingest/golden-17/" + obj + ".tif", Attempt: 1,
			Agent: "lazaret/test", TaskID: "task-" + obj}
	}
	ok := base(0, "scan-0001")
	ok.Type, ok.Outcome, ok.Destination, ok.Detail, ok.PUID = premis.Ingestion, premis.Success, premis.Accepted, "validated (TIFF rules v1)", "fmt/353"
	dead := base(1, "scan-0002")
	dead.Type, dead.Outcome, dead.Destination, dead.Detail = premis.Validation, premis.Failure, premis.DeadLetter, "TIFF walk"
	dead.Class, dead.Code, dead.Message = premis.Structural, "tiff.ifd-loop", "tiff: page 3: IFD at byte 1234 points back to page 1\nthe file is corrupt <not retried>"
	dead.Position = premis.Position{Offset: off(1234), Page: page(3), Tag: "NextIFD"}
	qua := base(2, "edi-0003#1")
	qua.Kind, qua.Path, qua.Type, qua.Outcome, qua.Destination = "edifact", "/srv/ingest/golden-17/edi-0003.edi", premis.Validation, premis.Failure, premis.Quarantined
	qua.Class, qua.Code, qua.Message, qua.Detail = premis.Regulatory, "edifact.locode-unknown", "LOC+9+XXVLI: UN/LOCODE XXVLI not in registry 2024-2", "EDIFACT rules"
	qua.Position = premis.Position{Offset: off(311), Segment: 7, Element: 2, Component: 1, Tag: "LOC"}
	hold := base(3, "scan-0004")
	hold.Type, hold.Outcome, hold.Destination, hold.Detail, hold.Attempt = premis.Validation, premis.Failure, premis.AuditHold, "TIFF walk", 5
	hold.Class, hold.Code, hold.Message = premis.Unknown, "unknown", "the decoder stopped: unexpected EOF"
	hold.Position = premis.Position{Offset: off(8)}
	if _, err := l.Append(context.Background(), &ok, &dead, &qua, &hold); err != nil {
		t.Fatal(err)
	}
	return path
}

// scrub replaces what differs between runs (the temporary folder) and
// between builds (the inflate backend of lazaret version).
func scrub(s string, dirs ...string) string {
	for _, d := range dirs {
		s = strings.ReplaceAll(s, d, "$TMP")
	}
	return strings.ReplaceAll(s, `"inflate":"`+tiff.InflateBackend()+`"`, `"inflate":"$INFLATE"`)
}

// TestReadCommandsGolden: the JSON (and the tables) of every read command.
func TestReadCommandsGolden(t *testing.T) {
	url := testenv.Redis(t, 13)
	ledger := goldenLedger(t)
	dir := filepath.Dir(ledger)
	for _, c := range []struct {
		name string
		args []string
		code int
	}{
		{"events_ls.json", []string{"events", "ls", "--json"}, 0},
		{"events_ls.txt", []string{"events", "ls"}, 0},
		{"events_ls_since.json", []string{"events", "ls", "--json", "--since", "2026-11-30T09:02:00Z"}, 0},
		{"dlq_ls.json", []string{"dlq", "ls", "--json"}, 0},
		{"dlq_ls.txt", []string{"dlq", "ls"}, 0},
		{"quarantine_ls.json", []string{"quarantine", "ls", "--json"}, 0},
		{"hold_ls.json", []string{"hold", "ls", "--json"}, 0},
		{"dlq_ls_since.json", []string{"dlq", "ls", "--json", "--since", "2026-12-01"}, 0},
		{"dlq_show.json", []string{"dlq", "show", "--json", "--redis", url, "scan-0002"}, 0},
		{"dlq_show.txt", []string{"dlq", "show", "--redis", url, "00000000-0000-4000-8000-000000000002"}, 0},
		{"quarantine_show.json", []string{"quarantine", "show", "--json", "--redis", url, "corr-edi-0003#1"}, 0},
		{"hold_show.json", []string{"hold", "show", "--json", "--redis", url, "scan-0004"}, 0},
		{"batch_status.json", []string{"batch", "status", "--json", "golden-17"}, 0},
		{"batch_status.txt", []string{"batch", "status", "golden-17"}, 0},
		{"ledger_verify.json", []string{"ledger", "verify", "--json"}, 0},
		{"stats.json", []string{"stats", "--json", "--redis", url}, 0},
		{"version.json", []string{"version", "--json"}, 0},
	} {
		args := c.args
		if c.args[0] != "stats" && c.args[0] != "version" {
			args = append(args, "--ledger", ledger)
		}
		out, stderr, code := runCmd(t, args...)
		if code != c.code {
			t.Errorf("%v: exit %d, want %d: %s", c.args, code, c.code, stderr)
		}
		golden(t, filepath.Join("read", c.name), scrub(out, dir))
	}
	// An action names where the failure is: dlq does not discard a
	// quarantined item, it says which command does.
	if _, stderr, code := runCmd(t, "dlq", "discard", "--redis", url, "--ledger", ledger, "--dry-run", "--reason", "r", "edi-0003#1"); code != 1 ||
		!strings.Contains(stderr, "is in quarantine, not dead-letter: use lazaret quarantine discard") {
		t.Errorf("dlq discard of a quarantined item: exit %d %s", code, stderr)
	}
	if out, stderr, code := runCmd(t, "quarantine", "discard", "--redis", url, "--ledger", ledger, "--dry-run", "--reason", "r", "corr-edi-0003#1"); code != 0 ||
		!strings.Contains(out, "dry run: discard of edi-0003#1") {
		t.Errorf("quarantine discard --dry-run by correlation id: exit %d %s%s", code, out, stderr)
	}
	// Unknown ids: an error naming the forms an id may take, not an empty answer.
	if _, stderr, code := runCmd(t, "dlq", "show", "--redis", url, "--ledger", ledger, "nope"); code != 1 || !strings.Contains(stderr, "no event, object or correlation") {
		t.Errorf("show nope: exit %d %s", code, stderr)
	}
}

// TestFileCommandsGolden: inspect, contrl and submit --dry-run on the
// generated fixtures.
func TestFileCommandsGolden(t *testing.T) {
	url := testenv.Redis(t, 14)
	dir := t.TempDir()
	logistics, err := fixtures.WriteLogisticsBatch(filepath.Join(dir, "logistics"))
	if err != nil {
		t.Fatal(err)
	}
	edi, _ := filepath.Glob(filepath.Join(logistics.Dir, "*.edi"))
	if len(edi) == 0 {
		t.Fatal("no interchange among the fixtures")
	}
	unb := regexp.MustCompile(`\d{6}:\d{4}\+[0-9A-F]{12,14}|UNZ\+1\+[0-9A-F]{12,14}|"reference":"[0-9A-F]{12,14}"`) // CONTRL's own date and reference
	for _, c := range []struct {
		name string
		args []string
	}{
		{"inspect_logistics.json", []string{"inspect", "--json", "--batch", logistics.Manifest}},
		{"contrl.json", []string{"contrl", "--json", edi[0]}},
		{"submit_dry_run.json", []string{"submit", "--json", "--dry-run", "--redis", url, "--ledger", filepath.Join(dir, "l.db"), logistics.Manifest}},
	} {
		out, stderr, code := runCmd(t, c.args...)
		if code == 2 {
			t.Errorf("%v: exit 2: %s", c.args, stderr)
		}
		golden(t, filepath.Join("read", c.name), unb.ReplaceAllString(scrub(out, dir), "DATE"))
	}
}

// TestFailureJSONSameInAPIAndCLI: one failure, the same bytes from
// GET /v1/failures (inside its envelope) and dlq ls --json; the same
// document from GET /v1/failures/{id} and dlq show --json, and from
// GET /v1/batches/{id} and batch status --json.
func TestFailureJSONSameInAPIAndCLI(t *testing.T) {
	url := testenv.Redis(t, 13)
	path := goldenLedger(t)
	l, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	opt, _ := asynq.ParseRedisURI(url)
	insp := asynq.NewInspector(opt)
	defer insp.Close()
	srv := httptest.NewServer((&api.Server{Ops: &ingest.Operator{Ledger: l, Broker: insp}}).Handler())
	defer srv.Close()
	get := func(p string) []byte {
		t.Helper()
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", p, resp.StatusCode, b.String())
		}
		return b.Bytes()
	}
	var list struct {
		Failures []json.RawMessage `json:"failures"`
	}
	if err := json.Unmarshal(get("/v1/failures?destination=dead-letter&since=2026-11-30"), &list); err != nil || len(list.Failures) != 1 {
		t.Fatalf("GET /v1/failures: %v, %d failures", err, len(list.Failures))
	}
	cli, _, _ := runCmd(t, "dlq", "ls", "--json", "--since", "2026-11-30T00:00:00Z", "--ledger", path)
	if got, want := []byte(strings.TrimSuffix(cli, "\n")), []byte(list.Failures[0]); !bytes.Equal(got, want) {
		t.Errorf("one failure, two encodings:\nAPI %s\nCLI %s", want, got)
	}
	for _, c := range []struct{ api, cli []string }{
		{[]string{"/v1/failures/scan-0002"}, []string{"dlq", "show", "--json", "--redis", url, "scan-0002"}},
		{[]string{"/v1/failures/corr-scan-0002"}, []string{"dlq", "show", "--json", "--redis", url, "corr-scan-0002"}},
		{[]string{"/v1/batches/golden-17"}, []string{"batch", "status", "--json", "golden-17"}},
	} {
		out, _, _ := runCmd(t, append(c.cli, "--ledger", path)...)
		if want := string(get(c.api[0])); out != want {
			t.Errorf("%s and %v differ:\nAPI %s\nCLI %s", c.api[0], c.cli, want, out)
		}
	}
}
