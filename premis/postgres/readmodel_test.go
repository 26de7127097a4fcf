package postgres_test

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/ledgertest"
	"github.com/lazaret/lazaret/premis/postgres"
)

// TestReadModelPages: pages of open failures through the read model (one
// bounded range per destination) answer as the whole listing does, and a
// fresh ledger's read model passes verify.
func TestReadModelPages(t *testing.T) {
	ctx := context.Background()
	l, err := postgres.Open(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ledgertest.Seed(t, l)
	open := []premis.Destination{premis.DeadLetter, premis.Quarantined, premis.AuditHold}
	all, err := l.Events(ctx, premis.Filter{Latest: true, Destinations: open})
	if err != nil || len(all) == 0 {
		t.Fatalf("open failures: %d %v", len(all), err)
	}
	var paged []premis.Event
	for after := int64(0); ; {
		page, err := l.Events(ctx, premis.Filter{Latest: true, Destinations: open, Limit: 1, AfterSeq: after})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		paged = append(paged, page...)
		after = page[len(page)-1].Seq
	}
	if len(paged) != len(all) {
		t.Fatalf("%d open failures page by page, %d at once", len(paged), len(all))
	}
	for i := range all {
		if paged[i].Key != all[i].Key {
			t.Errorf("page %d: %s, want %s", i, paged[i].Key, all[i].Key)
		}
	}
	if v, err := premis.Verify(ctx, l); err != nil || !v.Intact() {
		t.Errorf("verify: %+v %v", v, err)
	}
}

// TestBatchPagesReadTheirPage: a page of one batch's events (events ls
// --batch, a batch's export), with more of the batch after it than the
// page holds, reads its page and sorts nothing. With the batch index on
// batch_id alone (a ledger of before, made here), PostgreSQL gathered the
// rest of the batch and sorted it, or walked the whole ledger from the
// page's start, so that each page cost the rest of the batch or of the
// ledger.
func TestBatchPagesReadTheirPage(t *testing.T) {
	ctx := context.Background()
	l, err := postgres.Open(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const items, each, every = 4000, 50, 20 // the batch is every 20th item
	for i := int64(0); i < items; i += each {
		var evs []*premis.Event
		for n := i; n < i+each; n++ {
			item := ledgertest.AcceptedItem(n)
			for _, e := range item {
				if n%every != 0 {
					e.BatchID = "batch-other"
				}
			}
			evs = append(evs, item...)
		}
		if _, err := l.Append(ctx, evs...); err != nil {
			t.Fatal(err)
		}
	}
	const limit = 100
	f := premis.Filter{BatchID: "batch-bench", AfterSeq: items / 4, Limit: limit} // three quarters of the batch after it
	page := func(ddl string) string {
		t.Helper()
		if err := postgres.Exec(ctx, l, ddl+"; ANALYZE lazaret_events"); err != nil {
			t.Fatal(err)
		}
		plan, err := postgres.Plan(ctx, l, f)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := l.Events(ctx, f)
		// Each row an accepted master's record: four events.
		if err != nil || len(evs) != 4*limit {
			t.Fatalf("page: %d events, %v", len(evs), err)
		}
		for i, e := range evs {
			if e.BatchID != "batch-bench" || e.Seq <= items/4 || i > 0 && e.Seq < evs[i-1].Seq {
				t.Fatalf("event %d of the page: batch %s, seq %d", i, e.BatchID, e.Seq)
			}
		}
		return plan
	}
	if plan := page("SELECT 1"); readsPast(plan, limit) {
		t.Errorf("a batch's page reads past the page:\n%s", plan)
	}
	if plan := page("DROP INDEX lazaret_events_batch_seq; CREATE INDEX lazaret_events_batch ON lazaret_events(batch_id)"); !readsPast(plan, limit) {
		t.Errorf("the index of before read a page as cheaply; the test shows nothing:\n%s", plan)
	}
}

// readsPast says whether an EXPLAIN ANALYZE plan sorted rows, or removed
// more than limit rows by a filter: read past its page.
func readsPast(plan string, limit int) bool {
	if strings.Contains(plan, "Sort") {
		return true
	}
	for _, m := range regexp.MustCompile(`Rows Removed by (?:Filter|Index Recheck): (\d+)`).FindAllStringSubmatch(plan, -1) {
		if n, _ := strconv.Atoi(m[1]); n > limit {
			return true
		}
	}
	return false
}
