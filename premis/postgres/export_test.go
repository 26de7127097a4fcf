package postgres

import "context"

// Exec runs a statement against the ledger's database, for tests that prove
// the append-only trigger.
func Exec(ctx context.Context, l *Ledger, stmt string) error {
	_, err := l.pool.Exec(ctx, stmt)
	return err
}
