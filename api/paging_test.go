package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/lazaret/lazaret/api"
	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/ledgertest"
	"github.com/lazaret/lazaret/premis/sqlite"
)

// TestFailuresPageByCursor: 10,000 failures, appended straight to a real
// SQLite ledger in batches, listed by cursor: every failure appears once,
// in ledger order, total is right on every page, and a cursor of another
// filter is refused.
func TestFailuresPageByCursor(t *testing.T) {
	t.Parallel()
	const n, quarantined = 10000, 2500
	ctx := context.Background()
	l, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 0; i < n; i += 500 {
		var evs []*premis.Event
		for j := i; j < i+500; j++ {
			e := ledgertest.Event(fmt.Sprintf("obj-%05d", j), premis.Validation, 1)
			if j%4 == 0 {
				e.Destination = premis.Quarantined
			}
			evs = append(evs, e)
		}
		if _, err := l.Append(ctx, evs...); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer((&api.Server{Ops: &ingest.Operator{Ledger: l}}).Handler())
	defer srv.Close()
	get := func(q url.Values) (int, api.FailurePage) {
		t.Helper()
		resp, err := http.Get(srv.URL + "/v1/failures?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var p api.FailurePage
		json.NewDecoder(resp.Body).Decode(&p)
		return resp.StatusCode, p
	}
	list := func(q url.Values, want int) string {
		t.Helper()
		seen, pages, last, cursor := map[string]bool{}, 0, int64(0), ""
		for {
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			code, p := get(q)
			if code != 200 || p.Total != want || p.Count != len(p.Failures) {
				t.Fatalf("page %d of %v: %d, total %d, count %d of %d; want 200, total %d", pages, q, code, p.Total, p.Count, len(p.Failures), want)
			}
			for _, f := range p.Failures {
				if seen[f.ObjectID] || f.Seq <= last {
					t.Fatalf("page %d: %s (seq %d after %d) again or out of order", pages, f.ObjectID, f.Seq, last)
				}
				seen[f.ObjectID], last = true, f.Seq
			}
			pages++
			if p.NextCursor == "" {
				break
			}
			cursor = p.NextCursor
		}
		if len(seen) != want {
			t.Errorf("%v: %d failures listed in %d pages, want %d", q, len(seen), pages, want)
		}
		return cursor
	}
	list(url.Values{"limit": {"1000"}}, n)
	last := list(url.Values{"destination": {"quarantine"}, "limit": {"333"}}, quarantined)
	// A cursor belongs to its listing.
	if code, _ := get(url.Values{"destination": {"dead-letter"}, "cursor": {last}}); code != 400 {
		t.Errorf("a quarantine cursor on the dead-letter listing: %d, want 400", code)
	}
	// The default page.
	if code, p := get(url.Values{}); code != 200 || p.Count != api.DefaultLimit || p.Limit != api.DefaultLimit || p.NextCursor == "" || p.Total != n {
		t.Errorf("default page: %d count %d limit %d total %d cursor %q", code, p.Count, p.Limit, p.Total, p.NextCursor)
	}
}
