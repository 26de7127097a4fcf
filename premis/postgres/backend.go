package postgres

import (
	"context"

	"github.com/lazaret/lazaret/premis"
)

// The PostgreSQL ledger is named by a postgres:// or postgresql:// URL
// (pgx's connection string). A read command opens it as a worker does:
// its schema work is under an advisory lock and writes nothing once done.
func init() {
	open := func(ctx context.Context, dsn string) (premis.Ledger, error) { return Open(ctx, dsn) }
	premis.RegisterBackend(premis.Backend{
		Schemes:  []string{"postgres", "postgresql"},
		Open:     open,
		OpenRead: open,
		OpenAudit: func(ctx context.Context, dsn string) (premis.AuditLedger, error) {
			return OpenAudit(ctx, dsn)
		},
	})
}
