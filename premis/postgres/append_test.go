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

// TestAppendsChainOntoTheHeadTheyLeft: an append chains onto the head its
// ledger's previous append left, in one round trip, and falls back to
// reading the head and the stored keys when that head has moved (another
// process appended) or a key is stored already. Whichever way an append
// went, the chain verifies, a repeated key returns the stored event, and
// every append's events are there once.
func TestAppendsChainOntoTheHeadTheyLeft(t *testing.T) {
	ctx := context.Background()
	dsn := testenv.Postgres(t)
	open := func() *postgres.Ledger {
		l, err := postgres.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	a, b := open(), open()
	trips := func(l *postgres.Ledger, one, two int64) {
		t.Helper()
		if o, w := postgres.AppendTrips(l); o != one || w != two {
			t.Fatalf("appends in one round trip %d, in two %d; want %d and %d", o, w, one, two)
		}
	}
	appendOne := func(l *postgres.Ledger, events ...*premis.Event) []bool {
		t.Helper()
		ins, err := l.Append(ctx, events...)
		if err != nil {
			t.Fatal(err)
		}
		return ins
	}

	for i := range 5 {
		appendOne(a, ledgertest.AcceptedItem(int64(i))...)
	}
	trips(a, 4, 1) // the first append had no head to chain onto
	appendOne(b, ledgertest.AcceptedItem(100)...)
	trips(b, 0, 1)
	appendOne(a, ledgertest.AcceptedItem(5)...) // b moved the head
	trips(a, 4, 2)
	appendOne(a, ledgertest.AcceptedItem(6)...)
	trips(a, 5, 2)

	// A redelivery: the key is stored, so the one-trip insert fails whole
	// and the two-trip append returns the stored events beside a new one.
	again := ledgertest.AcceptedItem(6)
	fresh := ledgertest.Event("fresh", premis.Validation, 1)
	ins := appendOne(a, append(again, fresh)...)
	if want := []bool{false, true}; len(ins) != 2 || ins[0] || !ins[1] {
		t.Fatalf("inserted %v, want %v", ins, want)
	}
	if again[0].Seq == 0 || again[0].Hash == "" {
		t.Fatalf("the stored event was not read back: %+v", again[0])
	}
	trips(a, 5, 3)
	appendOne(a, ledgertest.Event("fresh", premis.Validation, 2))
	trips(a, 6, 3)

	// Two processes, four writers each, each append one of them alone.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		l := a
		if w%2 == 1 {
			l = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				if _, err := l.Append(ctx, ledgertest.AcceptedItem(int64(1000+w*100+i))...); err != nil {
					errs <- fmt.Errorf("writer %d: %w", w, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	v, err := premis.Verify(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Intact() {
		t.Fatalf("chain: %v", v)
	}
	const rows = 8 + 2 + 8*25 // one row a master (its record), the redelivered one once
	if n, err := a.CountEvents(ctx, premis.Filter{}); err != nil {
		t.Fatal(err)
	} else if v.Events != rows {
		t.Fatalf("%d events on the chain (%d read), want %d rows", v.Events, n, rows)
	}
	ao, aw := postgres.AppendTrips(a)
	bo, bw := postgres.AppendTrips(b)
	t.Logf("appends in one round trip: %d of %d", ao+bo, ao+aw+bo+bw)
}
