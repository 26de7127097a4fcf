package api_test

import (
	"testing"

	"github.com/lazaret/lazaret/api"
	"github.com/lazaret/lazaret/ingest"
)

// repairs reads lazaret_reconcile_repairs_total by repair from m.
func repairs(t *testing.T, m *api.Metrics) map[string]float64 {
	t.Helper()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "lazaret_reconcile_repairs_total" {
			continue
		}
		for _, s := range mf.GetMetric() {
			out[s.GetLabel()[0].GetValue()] = s.GetCounter().GetValue()
		}
	}
	return out
}

// TestReconcileRepairsCounted: every repair kind exists at 0 from the
// start (so an alert's increase sees the first repair), and a
// reconciliation's report moves each by the items it repaired.
func TestReconcileRepairsCounted(t *testing.T) {
	m := api.NewMetrics(nil)
	got := repairs(t, m)
	for _, k := range []string{"archived_recorded", "reenqueued", "reparked", "stale_parked", "rearchived", "missing"} {
		if v, ok := got[k]; !ok || v != 0 {
			t.Errorf("%s at start: %v (present %v), want 0", k, v, ok)
		}
	}
	m.ObserveReconcile(&ingest.ReconcileReport{ArchivedRecorded: []string{"a"}, Reenqueued: []string{"b", "c", "d"}})
	got = repairs(t, m)
	if got["archived_recorded"] != 1 || got["reenqueued"] != 3 || got["reparked"] != 0 {
		t.Errorf("after one reconciliation: %v", got)
	}
}
