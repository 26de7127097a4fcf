package sqlite

import "context"

// Exec runs a statement against the ledger's database, for tests that prove
// the append-only triggers.
func Exec(ctx context.Context, l *Ledger, stmt string) error {
	_, err := l.db.ExecContext(ctx, stmt)
	return err
}
