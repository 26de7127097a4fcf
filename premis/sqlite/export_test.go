package sqlite

import (
	"context"
	"database/sql"
)

// Exec runs a statement against the ledger's database, for tests that prove
// the append-only triggers.
func Exec(ctx context.Context, l *Ledger, stmt string) error {
	_, err := l.db.ExecContext(ctx, stmt)
	return err
}

// GuardSQL is the statement that creates the guard called name, for tests
// that put back a guard an attacker dropped.
func GuardSQL(name string) string {
	for _, g := range guards {
		if g.name == name {
			return g.sql
		}
	}
	panic("no guard " + name)
}

// Dialect is the ledger's spelling of the shared SQL, for query plans: a
// new ledger's, in the packed format.
var Dialect = packedDialect

// Stats is the statistics of the ledger's connection pool, for tests of how
// it reuses connections.
func Stats(l *Ledger) sql.DBStats { return l.db.Stats() }

// OpenText is Open, creating a new ledger in the text format every
// ledger had before the packed one: the format such a ledger keeps, read
// and appended to by every build since.
func OpenText(ctx context.Context, path string) (*Ledger, error) { return openFormat(ctx, path, false) }
