// Package sqlite is the embedded PREMIS ledger: one SQLite file in WAL mode,
// append-only (triggers refuse UPDATE and DELETE), idempotent on the event key.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/ledgersql"
)

var _ premis.Ledger = (*Ledger)(nil)

// Ledger is a premis.Ledger in an SQLite file.
type Ledger struct {
	db *sql.DB
}

const schema = `
CREATE TABLE IF NOT EXISTS events (
	seq            INTEGER PRIMARY KEY AUTOINCREMENT,
	id             TEXT NOT NULL UNIQUE,
	key            TEXT NOT NULL UNIQUE,
	type           TEXT NOT NULL,
	datetime       TEXT NOT NULL,
	detail         TEXT NOT NULL DEFAULT '',
	outcome        TEXT NOT NULL,
	note           TEXT NOT NULL DEFAULT '',
	class          TEXT NOT NULL DEFAULT '',
	code           TEXT NOT NULL DEFAULT '',
	message        TEXT NOT NULL DEFAULT '',
	byte_offset    INTEGER,
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
	size           INTEGER NOT NULL DEFAULT 0,
	puid           TEXT NOT NULL DEFAULT '',
	path           TEXT NOT NULL DEFAULT '',
	attempt        INTEGER NOT NULL DEFAULT 0,
	retries        INTEGER NOT NULL DEFAULT 0,
	task_id        TEXT NOT NULL DEFAULT '',
	replay_of      TEXT NOT NULL DEFAULT '',
	agent          TEXT NOT NULL DEFAULT '',
	operator       TEXT NOT NULL DEFAULT '',
	envelope       BLOB
);
CREATE INDEX IF NOT EXISTS events_object ON events(object_id);
CREATE INDEX IF NOT EXISTS events_batch ON events(batch_id);
CREATE INDEX IF NOT EXISTS events_correlation ON events(correlation_id);
CREATE INDEX IF NOT EXISTS events_task ON events(task_id);
CREATE INDEX IF NOT EXISTS events_failure ON events(class, destination);
CREATE INDEX IF NOT EXISTS events_datetime ON events(datetime);
CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'premis ledger is append-only'); END;
CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'premis ledger is append-only'); END;
`

// Open opens (creating if needed) the ledger at path. The folder is created
// too. The file is in WAL mode with synchronous=FULL: an appended event
// survives a power cut.
func Open(ctx context.Context, path string) (*Ledger, error) {
	if path == "" {
		return nil, errors.New("sqlite ledger: empty path")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("sqlite ledger: %w", err)
	}
	q := url.Values{}
	// busy_timeout first: switching to WAL takes a lock, and another process
	// may be opening the same ledger.
	for _, p := range []string{"busy_timeout(10000)", "journal_mode(WAL)", "synchronous(FULL)", "foreign_keys(ON)"} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite ledger: open %s: %w", path, err)
	}
	// Another process creating the schema at the same moment holds the
	// write lock for a moment: wait for it rather than fail.
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, err := db.ExecContext(ctx, schema)
		if err == nil {
			break
		}
		err = mapErr(err)
		if !errors.Is(err, premis.ErrBusy) || time.Now().After(deadline) || ctx.Err() != nil {
			db.Close()
			return nil, fmt.Errorf("sqlite ledger: schema %s: %w", path, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return &Ledger{db: db}, nil
}

const columns = ledgersql.Columns

// Append implements premis.Ledger.
func (l *Ledger) Append(ctx context.Context, events ...*premis.Event) ([]bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	if err := premis.Prepare(events...); err != nil {
		return nil, fmt.Errorf("sqlite ledger: %w", err)
	}
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("sqlite ledger: begin: %w", mapErr(err))
	}
	defer tx.Rollback()
	insert := ledgersql.Insert("events", sqlitePlaceholder)
	inserted := make([]bool, len(events))
	for i, e := range events {
		res, err := tx.ExecContext(ctx, insert, e.ID, e.Key, e.Type, e.DateTime.Format(time.RFC3339Nano), e.Detail, e.Outcome,
			e.Note, e.Class, e.Code, e.Message, e.Offset, e.Page, e.Segment, e.Element, e.Component, e.Tag, e.Destination,
			e.ObjectID, e.BatchID, e.CorrelationID, e.Kind, e.SHA256, e.Size, e.PUID, e.Path, e.Attempt, e.Retries,
			e.TaskID, e.ReplayOf, e.Agent, e.Operator, e.Envelope)
		if err != nil {
			return nil, fmt.Errorf("sqlite ledger: append %s: %w", e.Type, mapErr(err))
		}
		n, _ := res.RowsAffected()
		inserted[i] = n == 1
		if n == 0 {
			stored, err := scanOne(tx.QueryRowContext(ctx, `SELECT `+columns+` FROM events WHERE key = ?`, e.Key))
			if err != nil {
				return nil, fmt.Errorf("sqlite ledger: read back %s: %w", e.Key, mapErr(err))
			}
			*e = stored
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("sqlite ledger: commit: %w", mapErr(err))
	}
	return inserted, nil
}

func sqlitePlaceholder(int) string { return "?" }

// Events implements premis.Ledger.
func (l *Ledger) Events(ctx context.Context, f premis.Filter) ([]premis.Event, error) {
	q, args := ledgersql.Query("events", f, sqlitePlaceholder, func(t time.Time) any { return t.Format(time.RFC3339Nano) })
	rows, err := l.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite ledger: query: %w", mapErr(err))
	}
	defer rows.Close()
	var out []premis.Event
	for rows.Next() {
		e, err := scanOne(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite ledger: scan: %w", mapErr(err))
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite ledger: query: %w", mapErr(err))
	}
	return out, nil
}

// Event implements premis.Ledger.
func (l *Ledger) Event(ctx context.Context, id string) (premis.Event, error) {
	e, err := scanOne(l.db.QueryRowContext(ctx, `SELECT `+columns+` FROM events WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return premis.Event{}, fmt.Errorf("%w: %s", premis.ErrNotFound, id)
	}
	if err != nil {
		return premis.Event{}, fmt.Errorf("sqlite ledger: event %s: %w", id, mapErr(err))
	}
	return e, nil
}

// Ping implements premis.Ledger.
func (l *Ledger) Ping(ctx context.Context) error {
	var n int
	if err := l.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master`).Scan(&n); err != nil {
		return fmt.Errorf("sqlite ledger: ping: %w", mapErr(err))
	}
	return nil
}

// Close implements premis.Ledger.
func (l *Ledger) Close() error { return l.db.Close() }

type scanner interface{ Scan(...any) error }

func scanOne(s scanner) (premis.Event, error) {
	var e premis.Event
	var dt string
	var off, page sql.NullInt64
	err := s.Scan(&e.ID, &e.Key, &e.Type, &dt, &e.Detail, &e.Outcome, &e.Note, &e.Class, &e.Code, &e.Message, &off, &page,
		&e.Segment, &e.Element, &e.Component, &e.Tag, &e.Destination, &e.ObjectID, &e.BatchID, &e.CorrelationID, &e.Kind,
		&e.SHA256, &e.Size, &e.PUID, &e.Path, &e.Attempt, &e.Retries, &e.TaskID, &e.ReplayOf, &e.Agent, &e.Operator, &e.Envelope)
	if err != nil {
		return e, err
	}
	if e.DateTime, err = time.Parse(time.RFC3339Nano, dt); err != nil {
		return e, fmt.Errorf("bad datetime %q: %w", dt, err)
	}
	if off.Valid {
		v := off.Int64
		e.Offset = &v
	}
	if page.Valid {
		v := int(page.Int64)
		e.Page = &v
	}
	return e, nil
}

// mapErr turns SQLite's busy and locked codes into premis.ErrBusy, so the
// classifier sees a transient condition.
func mapErr(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return fmt.Errorf("%w: %v", premis.ErrBusy, err)
		}
	}
	return err
}
