package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/lazaret/lazaret/api"
	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/sqlite"
)

// BenchmarkFailuresPage: GET /v1/failures?limit=10 behind the group
// committer serve opens, on ledgers of 2,000 and 20,000 open failures. A
// page reads its ten rows by keyset and counts the total in the database,
// so its cost must not follow the open failures (issue 42: it once fell
// back to reading every one, 11 → 80 ms at 200 → 2,000). The figures and
// their ratio: docs/performance.md.
func BenchmarkFailuresPage(b *testing.B) {
	for _, open := range []int{2000, 20000} {
		b.Run(fmt.Sprintf("open=%d", open), func(b *testing.B) {
			ctx := context.Background()
			l, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "ledger.db"))
			if err != nil {
				b.Fatal(err)
			}
			g := premis.NewGroupCommit(l, 0)
			defer g.Close()
			const batch = 500
			for i := 0; i < open; i += batch {
				evs := make([]*premis.Event, 0, batch)
				for j := i; j < min(i+batch, open); j++ {
					id := fmt.Sprintf("scan-%06d", j)
					evs = append(evs, &premis.Event{Key: premis.EventKey(id, "", premis.Quarantine, 1), Type: premis.Quarantine,
						Outcome: premis.Failure, ObjectID: id, BatchID: "b1", CorrelationID: id, Kind: "tiff", Class: premis.Semantic,
						Code: "manifest.color_profile.required", Destination: premis.Quarantined, Attempt: 1, Message: "no colour profile"})
				}
				if _, err := l.Append(ctx, evs...); err != nil {
					b.Fatal(err)
				}
			}
			s := &api.Server{Ops: &ingest.Operator{Ledger: g}}
			h := s.Handler()
			req := httptest.NewRequest(http.MethodGet, "/v1/failures?limit=10", nil)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}
