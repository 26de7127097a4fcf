package postgres_test

import (
	"context"
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
