package pipebench

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/postgres"
)

// PostgresLedger opens a fresh PostgreSQL ledger for one measurement, in a
// schema of its own that it creates in the database at dsn (a postgres://
// URL). drop, after the ledger is closed, drops that schema and nothing
// else.
func PostgresLedger(ctx context.Context, dsn string) (l premis.Ledger, drop func() error, err error) {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, nil, errors.New("the PostgreSQL ledger of a measurement is a URL: postgres://user@host/db")
	}
	schema := pgx.Identifier{fmt.Sprintf("lazaret_bench_%d_%d", os.Getpid(), time.Now().UnixNano())}.Sanitize()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("PostgreSQL %s: %w", u.Redacted(), err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return nil, nil, fmt.Errorf("a schema for the measurement: %w", err)
	}
	drop = func() error {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		c, err := pgx.Connect(dctx, dsn)
		if err == nil {
			defer c.Close(dctx)
			_, err = c.Exec(dctx, "DROP SCHEMA "+schema+" CASCADE")
		}
		if err != nil {
			return fmt.Errorf("the measurement's schema %s is left in %s: %w", schema, u.Redacted(), err)
		}
		return nil
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	if l, err = postgres.Open(ctx, u.String()); err != nil {
		return nil, nil, errors.Join(err, drop())
	}
	return l, drop, nil
}
