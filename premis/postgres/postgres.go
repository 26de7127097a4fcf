// Package postgres is the PREMIS ledger for multi-node deployments: any
// number of workers on any number of machines append to one PostgreSQL
// database. Append-only (triggers refuse UPDATE and DELETE) and idempotent
// on the event key, like the embedded SQLite ledger.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/ledgersql"
)

var _ premis.Ledger = (*Ledger)(nil)

// Ledger is a premis.Ledger in PostgreSQL.
type Ledger struct {
	pool *pgxpool.Pool
}

const schema = `
CREATE TABLE IF NOT EXISTS lazaret_events (
	seq            BIGSERIAL PRIMARY KEY,
	id             UUID NOT NULL UNIQUE,
	key            TEXT NOT NULL UNIQUE,
	type           TEXT NOT NULL,
	datetime       TIMESTAMPTZ NOT NULL,
	detail         TEXT NOT NULL DEFAULT '',
	outcome        TEXT NOT NULL,
	note           TEXT NOT NULL DEFAULT '',
	class          TEXT NOT NULL DEFAULT '',
	code           TEXT NOT NULL DEFAULT '',
	message        TEXT NOT NULL DEFAULT '',
	byte_offset    BIGINT,
	page           INTEGER,
	segment        INTEGER NOT NULL DEFAULT 0,
	element        INTEGER NOT NULL DEFAULT 0,
	component      INTEGER NOT NULL DEFAULT 0,
	tag            TEXT NOT NULL DEFAULT '',
	destination    TEXT NOT NULL DEFAULT '',
	object_id      TEXT NOT NULL,
	batch_id       TEXT NOT NULL DEFAULT '',
	correlation_id TEXT NOT NULL DEFAULT '',
	kind           TEXT NOT NULL DEFAULT '',
	sha256         TEXT NOT NULL DEFAULT '',
	size           BIGINT NOT NULL DEFAULT 0,
	puid           TEXT NOT NULL DEFAULT '',
	path           TEXT NOT NULL DEFAULT '',
	attempt        INTEGER NOT NULL DEFAULT 0,
	retries        INTEGER NOT NULL DEFAULT 0,
	task_id        TEXT NOT NULL DEFAULT '',
	replay_of      TEXT NOT NULL DEFAULT '',
	agent          TEXT NOT NULL DEFAULT '',
	operator       TEXT NOT NULL DEFAULT '',
	envelope       BYTEA
);
CREATE INDEX IF NOT EXISTS lazaret_events_object ON lazaret_events(object_id);
CREATE INDEX IF NOT EXISTS lazaret_events_batch ON lazaret_events(batch_id);
CREATE INDEX IF NOT EXISTS lazaret_events_correlation ON lazaret_events(correlation_id);
CREATE INDEX IF NOT EXISTS lazaret_events_task ON lazaret_events(task_id);
CREATE INDEX IF NOT EXISTS lazaret_events_failure ON lazaret_events(class, destination);
CREATE INDEX IF NOT EXISTS lazaret_events_datetime ON lazaret_events(datetime);
CREATE OR REPLACE FUNCTION lazaret_events_append_only() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN RAISE EXCEPTION 'premis ledger is append-only'; END $$;
DROP TRIGGER IF EXISTS lazaret_events_no_change ON lazaret_events;
CREATE TRIGGER lazaret_events_no_change BEFORE UPDATE OR DELETE ON lazaret_events
FOR EACH ROW EXECUTE FUNCTION lazaret_events_append_only();
`

// Open connects to the ledger at dsn (postgres://...) and creates the table
// when it is missing. Several processes may open the same database.
func Open(ctx context.Context, dsn string) (*Ledger, error) {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres ledger: %w", err)
	}
	// Serialize schema creation across processes starting together.
	if _, err := pool.Exec(ctx, `SELECT pg_advisory_lock(7271)`); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres ledger: %w", mapErr(err))
	}
	_, err = pool.Exec(ctx, schema)
	pool.Exec(ctx, `SELECT pg_advisory_unlock(7271)`)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres ledger: schema: %w", mapErr(err))
	}
	return &Ledger{pool: pool}, nil
}

const columns = ledgersql.Columns

// Append implements premis.Ledger.
func (l *Ledger) Append(ctx context.Context, events ...*premis.Event) ([]bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	if err := premis.Prepare(events...); err != nil {
		return nil, fmt.Errorf("postgres ledger: %w", err)
	}
	tx, err := l.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres ledger: begin: %w", mapErr(err))
	}
	defer tx.Rollback(ctx)
	insert := ledgersql.Insert("lazaret_events", pgPlaceholder)
	inserted := make([]bool, len(events))
	for i, e := range events {
		tag, err := tx.Exec(ctx, insert, e.ID, e.Key, string(e.Type), e.DateTime, e.Detail, string(e.Outcome), e.Note, string(e.Class), e.Code,
			e.Message, e.Offset, e.Page, e.Segment, e.Element, e.Component, e.Tag, string(e.Destination), e.ObjectID, e.BatchID,
			e.CorrelationID, e.Kind, e.SHA256, e.Size, e.PUID, e.Path, e.Attempt, e.Retries, e.TaskID, e.ReplayOf, e.Agent, e.Operator, e.Envelope)
		if err != nil {
			return nil, fmt.Errorf("postgres ledger: append %s: %w", e.Type, mapErr(err))
		}
		inserted[i] = tag.RowsAffected() == 1
		if !inserted[i] {
			stored, err := scanOne(tx.QueryRow(ctx, `SELECT `+columns+` FROM lazaret_events WHERE key = $1`, e.Key))
			if err != nil {
				return nil, fmt.Errorf("postgres ledger: read back %s: %w", e.Key, mapErr(err))
			}
			*e = stored
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("postgres ledger: commit: %w", mapErr(err))
	}
	return inserted, nil
}

func pgPlaceholder(n int) string { return fmt.Sprintf("$%d", n) }

// Events implements premis.Ledger.
func (l *Ledger) Events(ctx context.Context, f premis.Filter) ([]premis.Event, error) {
	q, args := ledgersql.Query("lazaret_events", f, pgPlaceholder, func(t time.Time) any { return t })
	rows, err := l.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres ledger: query: %w", mapErr(err))
	}
	defer rows.Close()
	var out []premis.Event
	for rows.Next() {
		e, err := scanOne(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres ledger: scan: %w", mapErr(err))
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres ledger: query: %w", mapErr(err))
	}
	return out, nil
}

// Event implements premis.Ledger.
func (l *Ledger) Event(ctx context.Context, id string) (premis.Event, error) {
	if _, err := uuid.Parse(id); err != nil {
		return premis.Event{}, fmt.Errorf("%w: %s", premis.ErrNotFound, id)
	}
	e, err := scanOne(l.pool.QueryRow(ctx, `SELECT `+columns+` FROM lazaret_events WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return premis.Event{}, fmt.Errorf("%w: %s", premis.ErrNotFound, id)
	}
	if err != nil {
		return premis.Event{}, fmt.Errorf("postgres ledger: event %s: %w", id, mapErr(err))
	}
	return e, nil
}

// Ping implements premis.Ledger.
func (l *Ledger) Ping(ctx context.Context) error {
	if err := l.pool.Ping(ctx); err != nil {
		return fmt.Errorf("postgres ledger: ping: %w", mapErr(err))
	}
	return nil
}

// Close implements premis.Ledger.
func (l *Ledger) Close() error {
	l.pool.Close()
	return nil
}

func scanOne(row pgx.Row) (premis.Event, error) {
	var e premis.Event
	var id uuid.UUID
	var typ, outcome, class, dest string
	var off *int64
	var page *int32
	var seg, el, comp, attempt, retries int32
	err := row.Scan(&id, &e.Key, &typ, &e.DateTime, &e.Detail, &outcome, &e.Note, &class, &e.Code, &e.Message, &off, &page,
		&seg, &el, &comp, &e.Tag, &dest, &e.ObjectID, &e.BatchID, &e.CorrelationID, &e.Kind, &e.SHA256, &e.Size, &e.PUID, &e.Path,
		&attempt, &retries, &e.TaskID, &e.ReplayOf, &e.Agent, &e.Operator, &e.Envelope)
	if err != nil {
		return e, err
	}
	e.ID, e.Type, e.Outcome, e.Class, e.Destination = id.String(), premis.EventType(typ), premis.Outcome(outcome), premis.Class(class), premis.Destination(dest)
	e.DateTime = e.DateTime.UTC()
	e.Offset = off
	if page != nil {
		p := int(*page)
		e.Page = &p
	}
	e.Segment, e.Element, e.Component, e.Attempt, e.Retries = int(seg), int(el), int(comp), int(attempt), int(retries)
	return e, nil
}

// mapErr turns conditions worth retrying (a connection that failed, a
// serialization failure, a deadlock, too many connections, a server
// shutting down) into premis.ErrBusy, so the classifier sees a transient
// condition.
func mapErr(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "40001", "40P01", "53300", "57P01", "57P02", "57P03", "08000", "08003", "08006":
			return fmt.Errorf("%w: %v", premis.ErrBusy, err)
		}
		return err
	}
	if pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return fmt.Errorf("%w: %v", premis.ErrBusy, err)
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return fmt.Errorf("%w: %v", premis.ErrBusy, err)
	}
	return err
}
