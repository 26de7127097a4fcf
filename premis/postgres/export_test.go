package postgres

import (
	"context"
	"strings"

	"github.com/lazaret/lazaret/premis"
)

// Exec runs a statement against the ledger's database, for tests that prove
// the append-only trigger.
func Exec(ctx context.Context, l *Ledger, stmt string) error {
	_, err := l.pool.Exec(ctx, stmt)
	return err
}

// AppendTrips says how many of l's appends committed in one round trip
// (chained onto the head its previous append left) and how many in two,
// and how many one-trip tries found the head moved.
func AppendTrips(l *Ledger) (one, two, moved int64) {
	return l.oneTrip.Load(), l.twoTrips.Load(), l.moved.Load()
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

// Plan is PostgreSQL's plan for the query Events runs for f, run
// (EXPLAIN ANALYZE: the rows each step read), for tests that check what a
// page costs.
func Plan(ctx context.Context, l *Ledger, f premis.Filter) (string, error) {
	q, args := l.EventsQuery(f)
	rows, err := l.pool.Query(ctx, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) "+q, args...)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return "", err
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n"), rows.Err()
}
