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
	a, b := twoProcesses(t)
	trips := func(l *postgres.Ledger, one, two, moved int64) {
		t.Helper()
		if o, w, m := postgres.AppendTrips(l); o != one || w != two || m != moved {
			t.Fatalf("appends in one round trip %d, in two %d, one-trip tries that found the head moved %d; want %d, %d and %d", o, w, m, one, two, moved)
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
	trips(a, 4, 1, 0) // the first append had no head to chain onto
	appendOne(b, ledgertest.AcceptedItem(100)...)
	trips(b, 0, 1, 0)
	appendOne(a, ledgertest.AcceptedItem(5)...) // b moved the head
	trips(a, 4, 2, 1)
	appendOne(a, ledgertest.AcceptedItem(6)...) // one append the two-trip way at once
	trips(a, 4, 3, 1)
	appendOne(a, ledgertest.AcceptedItem(7)...)
	trips(a, 5, 3, 1)

	// A redelivery: the key is stored, so the one-trip insert fails whole
	// and the two-trip append returns the stored events beside a new one.
	again := ledgertest.AcceptedItem(7)
	fresh := ledgertest.Event("fresh", premis.Validation, 1)
	ins := appendOne(a, append(again, fresh)...)
	if want := []bool{false, true}; len(ins) != 2 || ins[0] || !ins[1] {
		t.Fatalf("inserted %v, want %v", ins, want)
	}
	if again[0].Seq == 0 || again[0].Hash == "" {
		t.Fatalf("the stored event was not read back: %+v", again[0])
	}
	trips(a, 5, 4, 1) // a stored key is no moved head: no backoff
	appendOne(a, ledgertest.Event("fresh", premis.Validation, 2))
	trips(a, 6, 4, 1)

	// Two processes taking turns: every one-trip try would find the head
	// moved, so after each such find a waits twice as many appends before
	// trying again, and pays 5 failed tries in 20 appends, not 20.
	for i := range 20 {
		appendOne(b, ledgertest.AcceptedItem(int64(200+i))...)
		appendOne(a, ledgertest.AcceptedItem(int64(300+i))...)
	}
	if _, _, m := postgres.AppendTrips(a); m-1 > 5 {
		t.Errorf("%d one-trip tries found the head moved in 20 appends taking turns with another process, want at most 5", m-1)
	}

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
	const rows = 9 + 2 + 40 + 8*25 // one row a master (its record), the redelivered one once
	if n, err := a.CountEvents(ctx, premis.Filter{}); err != nil {
		t.Fatal(err)
	} else if v.Events != rows {
		t.Fatalf("%d events on the chain (%d read), want %d rows", v.Events, n, rows)
	}
	ao, aw, am := postgres.AppendTrips(a)
	bo, bw, bm := postgres.AppendTrips(b)
	t.Logf("appends in one round trip: %d of %d; one-trip tries that found the head moved: %d", ao+bo, ao+aw+bo+bw, am+bm)
}

// twoProcesses opens the same fresh ledger twice, as two processes
// appending side by side would.
func twoProcesses(t *testing.T) (a, b *postgres.Ledger) {
	t.Helper()
	dsn := testenv.Postgres(t)
	open := func() *postgres.Ledger {
		l, err := postgres.Open(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	return open(), open()
}
