package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/ledgertest"
	"github.com/lazaret/lazaret/premis/postgres"
)

// TestLatestOfEachAnswersAsLatestOf: the read model's rows of several
// items in one query are each item's LatestOf, an item without one is
// left out, and a group committer's handlers asking at once get their own
// items' rows.
func TestLatestOfEachAnswersAsLatestOf(t *testing.T) {
	ctx := context.Background()
	l, err := postgres.Open(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var ids []string
	for i := range 12 {
		evs := ledgertest.AcceptedItem(int64(i))
		if i%3 == 0 { // submitted only
			evs = evs[:1]
		}
		if _, err := l.Append(ctx, evs...); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, evs[0].CorrelationID)
	}
	ids = append(ids, "no-such-item")
	want := map[string]premis.Latest{}
	for _, id := range ids {
		lt, found, err := l.LatestOf(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if found {
			want[id] = lt
		}
	}
	if len(want) != 12 {
		t.Fatalf("LatestOf found %d items, want 12", len(want))
	}
	got, err := l.LatestOfEach(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("LatestOfEach:\n%v\nwant\n%v", got, want)
	}

	g := premis.NewGroupCommit(l, 0)
	defer g.Stop()
	var wg sync.WaitGroup
	for round := range 20 {
		for _, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				lt, found, err := g.LatestOf(ctx, id)
				if w, ok := want[id]; err != nil || found != ok || lt != w {
					t.Errorf("round %d, %s: %+v %v %v, want %+v %v", round, id, lt, found, err, w, ok)
				}
			}()
		}
		wg.Wait()
	}
}
