package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/internal/testenv"
)

// TestShippedDeploymentAlertsOnADeadLetter runs the deployment
// deploy/systemd ships — serve --no-worker, and a worker apart — and
// dead-letters items. serve's /metrics, the target deploy/prometheus's
// scrape config names, moves its failure series (counted from the ledger;
// before, only the process that routed counted, and serve's stayed at 0),
// and promtool, given the series as scraped before and after, fires the
// shipped LazaretDeadLetterArrivals on them. The worker's own target
// serves its ledger appends.
func TestShippedDeploymentAlertsOnADeadLetter(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if testenv.InCI() {
			t.Fatalf("promtool is required in CI: %v", err)
		}
		t.Skipf("promtool not installed: %v", err)
	}
	url := testenv.Redis(t, 14)
	dir := t.TempDir()
	b, err := fixtures.WriteArchiveBatch(filepath.Join(dir, "batch"))
	if err != nil {
		t.Fatal(err)
	}
	ledger := filepath.Join(dir, "ledger.db")
	common := []string{"--redis", url, "--ledger", ledger}
	if _, stderr, code := runCmd(t, append([]string{"submit", "--dry-run"}, append(common, b.Manifest)...)...); code != 0 {
		t.Fatal(stderr) // creates nothing; the worker below creates the ledger
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t.Setenv("LAZARET_LOG_LEVEL", "info")
	// The worker, with its own metrics target.
	workerLog := &syncBuffer{}
	wdone := make(chan error, 1)
	go func() {
		wdone <- run(ctx, append([]string{"worker", "--metrics-listen", "127.0.0.1:0", "--reconcile-every", "1s"}, common...), io.Discard, workerLog)
	}()
	defer func() { cancel(); <-wdone }()
	workerAddr := waitFor(t, workerLog, regexp.MustCompile(`"msg":"worker metrics","listen":"([^"]+)"`))
	// serve without workers, as lazaret-serve.service runs it.
	pr, pw := io.Pipe()
	sdone := make(chan error, 1)
	go func() {
		sdone <- run(ctx, append([]string{"serve", "--no-worker", "--listen", "127.0.0.1:0"}, common...), pw, io.Discard)
		pw.Close()
	}()
	defer func() { cancel(); <-sdone }()
	sc := bufio.NewScanner(pr)
	var serveAddr string
	for sc.Scan() {
		if m := regexp.MustCompile(`serving on http://(\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			serveAddr = m[1]
			break
		}
	}
	go io.Copy(io.Discard, pr)
	if serveAddr == "" {
		t.Fatal("serve did not say where it listens")
	}
	series := `lazaret_failures_total{class="structural",destination="dead-letter",kind="tiff"}`
	before := scrapeValue(t, "http://"+serveAddr+"/metrics", series)
	if _, stderr, code := runCmd(t, append([]string{"submit", "--wait", "--wait-timeout", "60s"}, append(common, b.Manifest)...)...); code != 1 {
		t.Fatalf("submit --wait: exit %d (want 1: items failed)\n%s", code, stderr)
	}
	var after float64
	deadline := time.Now().Add(20 * time.Second)
	for after = scrapeValue(t, "http://"+serveAddr+"/metrics", series); after-before < 4 && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		after = scrapeValue(t, "http://"+serveAddr+"/metrics", series)
	}
	if after-before != 4 {
		t.Fatalf("serve's %s moved by %v, want 4 (the batch's structural dead letters)", series, after-before)
	}
	if ok := scrapeValue(t, "http://"+workerAddr+"/metrics", `lazaret_ledger_appends_total{result="ok"}`); ok < 10 {
		t.Errorf("the worker's target counts %v ledger appends, want one a decision at least", ok)
	}
	// promtool on the series as scraped: the shipped rule fires.
	rules, err := filepath.Abs(filepath.Join(testenv.RepoRoot(t), "deploy", "prometheus", "lazaret-alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	n := after - before
	test := fmt.Sprintf(`rule_files: [%q]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: '%s'
        values: '%s %s %s %s %s'
      - series: 'lazaret_broker_up'
        values: '1x10'
    alert_rule_test:
      - eval_time: 1m
        alertname: LazaretDeadLetterArrivals
        exp_alerts: []
      - eval_time: 3m
        alertname: LazaretDeadLetterArrivals
        exp_alerts:
          - exp_labels: {severity: warning, kind: tiff, class: structural}
            exp_annotations:
              summary: "%s tiff item(s) dead-lettered (structural) in 15 min"
              description: "See `+"`lazaret dlq ls --kind tiff --class structural`"+`."
`, rules, series, f(before), f(before), f(after), f(after), f(after), f(n))
	path := filepath.Join(t.TempDir(), "scraped.test.yml")
	if err := os.WriteFile(path, []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "test", "rules", path).CombinedOutput(); err != nil {
		t.Errorf("promtool test rules on the scraped series: %v\n%s\n%s", err, out, test)
	}
	// The shipped scrape config names these targets and loads the rules.
	if out, err := exec.Command(promtool, "check", "config", filepath.Join(testenv.RepoRoot(t), "deploy", "prometheus", "prometheus.yml")).CombinedOutput(); err != nil {
		t.Errorf("promtool check config: %v\n%s", err, out)
	}
}

func f(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// waitFor waits for re in the log and returns its first group.
func waitFor(t *testing.T, log *syncBuffer, re *regexp.Regexp) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(log.String()); m != nil {
			return m[1]
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no %s in:\n%s", re, log.String())
	return ""
}

// scrapeValue reads one series' value from a /metrics page (0 when absent).
func scrapeValue(t *testing.T, url, series string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, _ := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v
		}
	}
	return 0
}
