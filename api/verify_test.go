package api_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/api"
	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/ledgertest"
	"github.com/lazaret/lazaret/premis/sqlite"
)

// TestExportStandsOnAVerifiedLedger: with a Verifier, the API exports an
// intact ledger; once an event is rewritten after the last check it
// refuses the export with JSON naming the event, exports it marked with
// ?unverified=1, and marks its other reads.
func TestExportStandsOnAVerifiedLedger(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ledgertest.Seed(t, l)
	ops := &ingest.Operator{Ledger: l}
	s := &api.Server{Ops: ops, Metrics: api.NewMetrics(ops), Software: premis.Software{Name: "lazaret", Version: "test"},
		Verifier: &premis.Verifier{Auditor: l}}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	get := func(path string) (*http.Response, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	if resp, body := get("/v1/batches/batch-1/premis"); resp.StatusCode != http.StatusOK || strings.Contains(body, "UNVERIFIED") {
		t.Fatalf("intact ledger: %d %.200s", resp.StatusCode, body)
	}

	// An event appended and then rewritten, its guard put back: the
	// Verifier reads it as new.
	if _, err := l.Append(ctx, ledgertest.Event("m5", premis.Validation, 1)); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	var guard string
	if err := db.QueryRow(`SELECT sql FROM sqlite_master WHERE name = 'events_no_update'`).Scan(&guard); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{"DROP TRIGGER events_no_update", "UPDATE events SET message = 'all fine' WHERE seq = 5", guard} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	resp, body := get("/v1/objects/m5/premis")
	var got struct {
		Error   string `json:"error"`
		Problem string `json:"ledger_problem"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil || resp.StatusCode != http.StatusInternalServerError ||
		!strings.Contains(got.Problem, "link: seq 5") || !strings.Contains(got.Error, "not intact") {
		t.Fatalf("rewritten ledger: %d %s", resp.StatusCode, body)
	}
	resp, body = get("/v1/objects/m5/premis?unverified=1")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "<!-- UNVERIFIED EXPORT") || !strings.Contains(body, `verified="false"`) {
		t.Fatalf("?unverified=1: %d %.300s", resp.StatusCode, body)
	}
	resp, _ = get("/v1/failures")
	if h := resp.Header.Get(api.LedgerHeader); resp.StatusCode != http.StatusOK || !strings.Contains(h, "link: seq 5") {
		t.Errorf("failures on a rewritten ledger: %d, %s: %q", resp.StatusCode, api.LedgerHeader, h)
	}
}
