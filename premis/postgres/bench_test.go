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

// The cost of the chain: one event per transaction, as a worker appends,
// on the ledger before the chain (v0: INSERT and commit) and on the chained
// ledger (row lock on the head, hash, INSERT, head UPDATE and its trigger),
// by one writer and by four at once. Compare appends/s within one run.
//
//	go test -run '^$' -bench Append -benchtime 2000x ./premis/postgres/

func BenchmarkAppendV0(b *testing.B)              { ledgertest.BenchAppend(b, 1, v0Appender(b)) }
func BenchmarkAppendChained(b *testing.B)         { ledgertest.BenchAppend(b, 1, chainedAppender(b)) }
func BenchmarkAppendV0Writers4(b *testing.B)      { ledgertest.BenchAppend(b, 4, v0Appender(b)) }
func BenchmarkAppendChainedWriters4(b *testing.B) { ledgertest.BenchAppend(b, 4, chainedAppender(b)) }

// Group commit: the same four (and sixteen) writers through one committer.
func BenchmarkAppendGroupWriters4(b *testing.B)  { ledgertest.BenchAppend(b, 4, groupAppender(b)) }
func BenchmarkAppendGroupWriters16(b *testing.B) { ledgertest.BenchAppend(b, 16, groupAppender(b)) }

// The cost of checking a ledger of 20,000 events: a full walk, and the
// incremental check a listing or API read runs (premis.Verifier) when
// nothing and when 100 events were appended since the last.
//
//	go test -run '^$' -bench Verif ./premis/postgres/

func BenchmarkVerifyFull(b *testing.B) { ledgertest.BenchVerify(b, chainedLedger(b), 20000, 0, true) }
func BenchmarkVerifierIdle(b *testing.B) {
	ledgertest.BenchVerify(b, chainedLedger(b), 20000, 0, false)
}
func BenchmarkVerifierFresh100(b *testing.B) {
	ledgertest.BenchVerify(b, chainedLedger(b), 20000, 100, false)
}

func groupAppender(b *testing.B) ledgertest.AppendFunc {
	inner := chainedLedger(b)
	g := premis.NewGroupCommit(inner, 0)
	b.Cleanup(g.Stop)
	return func(ctx context.Context, e *premis.Event) error {
		_, err := g.Append(ctx, e)
		return err
	}
}

func chainedLedger(b *testing.B) premis.Ledger {
	l, err := postgres.Open(context.Background(), testenv.Postgres(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	return l
}

func chainedAppender(b *testing.B) ledgertest.AppendFunc {
	l := chainedLedger(b)
	return func(ctx context.Context, e *premis.Event) error {
		_, err := l.Append(ctx, e)
		return err
	}
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
func BenchmarkAcceptedItemsWriters2(b *testing.B) { benchAcceptedItems(b, 2) }
func BenchmarkAcceptedItemsWriters8(b *testing.B) { benchAcceptedItems(b, 8) }

func benchAcceptedItems(b *testing.B, writers int) {
	g := premis.NewGroupCommit(chainedLedger(b), 0)
	defer g.Stop()
	ledgertest.BenchAcceptedItems(b, writers, g)
}
