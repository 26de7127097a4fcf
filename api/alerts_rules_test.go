package api_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/api"
	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/premis/sqlite"
)

// TestAlertRules runs promtool's unit tests of deploy/prometheus: the
// first dead letter after a restart fires, a series born at 1 fires too,
// and the backlog, workers-down and no-metrics rules fire when they must
// and not otherwise.
func TestAlertRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if testenv.InCI() {
			t.Fatalf("promtool is required in CI: %v", err)
		}
		t.Skipf("promtool not installed (apt-get install prometheus): %v", err)
	}
	dir := filepath.Join(testenv.RepoRoot(t), "deploy", "prometheus")
	for _, args := range [][]string{{"check", "rules", "lazaret-alerts.yml"}, {"test", "rules", "lazaret-alerts.test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestFailureSeriesStartAtZero: every class, destination and kind has its
// failure series from the start, at 0, so that the first arrival is an
// increase Prometheus can see.
func TestFailureSeriesStartAtZero(t *testing.T) {
	l, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	m := api.NewMetrics(&ingest.Operator{Ledger: l})
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n, structural := 0, false
	for _, mf := range mfs {
		if mf.GetName() != "lazaret_failures_total" {
			continue
		}
		for _, s := range mf.GetMetric() {
			n++
			if v := s.GetCounter().GetValue(); v != 0 {
				t.Errorf("%v at %v before any failure", s.GetLabel(), v)
			}
			labels := map[string]string{}
			for _, l := range s.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			structural = structural || labels["class"] == "structural" && labels["destination"] == "dead-letter" && labels["kind"] == "tiff"
		}
	}
	if want := 5 * 4 * 3; n != want || !structural { // classes × failure destinations × kinds
		t.Errorf("%d failure series before any failure (structural tiff dead-letter among them: %v), want %d", n, structural, want)
	}
}
