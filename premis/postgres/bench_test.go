package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/ledgertest"
	"github.com/lazaret/lazaret/premis/postgres"
)

// The ledger benchmarks every backend runs (see ledgertest.Benches): the
// cost of the chain and of group commit in appends/s, and of checking a
// ledger. Compare within one run.
//
//	go test -run '^$' -bench 'Ledger/Append' -benchtime 2000x ./premis/postgres/
//	go test -run '^$' -bench 'Ledger/Verif' ./premis/postgres/
func BenchmarkLedger(b *testing.B) {
	ledgertest.Benches{Ledger: chainedLedger, V0: v0Appender}.Run(b)
}

func chainedLedger(b *testing.B) premis.Ledger {
	l, err := postgres.Open(context.Background(), testenv.Postgres(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	return l
}

// v0Appender appends as the version before the chain did: Prepare, then
// INSERT ... ON CONFLICT DO NOTHING in a transaction of its own.
func v0Appender(b *testing.B) ledgertest.AppendFunc {
	dsn := testenv.Postgres(b)
	writeV0(b, dsn, 0)
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	return func(ctx context.Context, e *premis.Event) error {
		if err := premis.Prepare(e); err != nil {
			return err
		}
		tx, err := pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, v0Insert, v0Args(e)...); err != nil {
			return err
		}
		return tx.Commit(ctx)
	}
}

// What a worker's commit costs: an accepted master's four events an
// Append, through the group committer, from two and eight handlers.
//
//	go test -run '^$' -bench AcceptedItems -benchtime 3000x ./premis/postgres/
func BenchmarkAcceptedItemsWriters2(b *testing.B) {
	ledgertest.Benches{Ledger: chainedLedger}.AcceptedItems(b, 2)
}
func BenchmarkAcceptedItemsWriters8(b *testing.B) {
	ledgertest.Benches{Ledger: chainedLedger}.AcceptedItems(b, 8)
}
