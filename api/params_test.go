package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/api"
	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis/sqlite"
)

// TestFailuresRefuseBadValues: a 400 names the parameter and lists what it
// may be, and an unknown parameter is refused with the known ones.
func TestFailuresRefuseBadValues(t *testing.T) {
	t.Parallel()
	l, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	srv := httptest.NewServer((&api.Server{Ops: &ingest.Operator{Ledger: l}}).Handler())
	defer srv.Close()
	for _, tc := range []struct {
		query, param, allowed string
	}{
		{"destination=bogus", "destination", "quarantine"},
		{"kind=bogus", "kind", "edifact"},
		{"class=bogus", "class", "structural"},
		{"bogus=1", `"bogus"`, "cursor"},
		{"limit=abc", "limit", ""},
		{"cursor=AAAA", "cursor", ""},
	} {
		resp, err := http.Get(srv.URL + "/v1/failures?" + tc.query)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Error     string   `json:"error"`
			Parameter string   `json:"parameter"`
			Allowed   []string `json:"allowed"`
		}
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != 400 || body.Parameter != tc.param || !strings.Contains(body.Error, tc.param) ||
			(tc.allowed != "" && !slices.Contains(body.Allowed, tc.allowed)) {
			t.Errorf("?%s: %d %+v, want 400 naming %s allowing %q", tc.query, resp.StatusCode, body, tc.param, tc.allowed)
		}
	}
}
