package postgres

import "context"

// Exec runs a statement against the ledger's database, for tests that prove
// the append-only trigger.
func Exec(ctx context.Context, l *Ledger, stmt string) error {
	_, err := l.pool.Exec(ctx, stmt)
	return err
}

// GuardSQL is what creates the guard called name, for tests that put back a
// guard an attacker dropped.
func GuardSQL(name string) string {
	for _, g := range guards {
		if g.name == name {
			return g.sql()
		}
	}
	panic("no guard " + name)
}
