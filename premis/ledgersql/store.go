package ledgersql

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lazaret/lazaret/premis"
)

// Row is one row a backend's query returns (database/sql's *sql.Row and
// pgx.Row both are).
type Row interface{ Scan(dest ...any) error }

// Rows are the rows of a query, as a backend hands them over.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Backend is what one database gives the shared ledger: how to run a query,
// how its rows decode, and how its errors read. Everything else — the SQL of
// the reads, the walk, the head and read-model checks, the chaining of an
// append — is Store's and Chain's, the same for every database.
type Backend struct {
	// Name opens every message ("sqlite ledger"); Where names the ledger
	// in messages about it (its path, or user@host/db).
	Name, Where string
	// Events, Latest and Head are the tables of the events, the read
	// model and the head record.
	Events, Latest, Head string
	// Query and QueryRow run a read.
	Query    func(ctx context.Context, q string, args ...any) (Rows, error)
	QueryRow func(ctx context.Context, q string, args ...any) Row
	// Scan decodes one row of Select. An error for which Damaged is true
	// is a row whose columns hold what the ledger never writes: Walk hands
	// it on with what did decode, where every other read fails.
	Scan    func(Row) (premis.Event, error)
	Damaged func(error) bool
	// NoRows is the database's "no row" error; MapErr turns its errors
	// into premis's (premis.ErrBusy for what is worth retrying).
	NoRows error
	MapErr func(error) error
}

// Store is the ledger's reads over a Backend.
type Store struct {
	B Backend
	// Syntax is how the ledger's SQL is spelled, and whether the members
	// column exists (an audit open of an older ledger adds none).
	Syntax Dialect
	// ReadModel: the read model's table exists (Open creates it); an
	// audit open of an older ledger answers Latest from the events alone.
	ReadModel bool
}

func (s *Store) fail(what string, err error) error {
	return fmt.Errorf("%s: %s: %w", s.B.Name, what, s.B.MapErr(err))
}

func (s *Store) latest() string {
	if s.ReadModel {
		return s.B.Latest
	}
	return ""
}

// EventsQuery is the SELECT that Events runs for f.
func (s *Store) EventsQuery(f premis.Filter) (string, []any) {
	return QueryLatest(s.B.Events, s.latest(), f, s.Syntax)
}

// Events implements premis.Ledger.
func (s *Store) Events(ctx context.Context, f premis.Filter) ([]premis.Event, error) {
	q, args := s.EventsQuery(f)
	rows, err := s.B.Query(ctx, q, args...)
	if err != nil {
		return nil, s.fail("query", err)
	}
	defer rows.Close()
	var out []premis.Event
	for rows.Next() {
		e, err := s.B.Scan(rows)
		if err != nil {
			return nil, s.fail("scan", err)
		}
		out = f.Expand(out, e) // a record's steps, as events of their own
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("query", err)
	}
	return out, nil
}

// CountEvents implements premis.Counter.
func (s *Store) CountEvents(ctx context.Context, f premis.Filter) (int64, error) {
	q, args := CountLatest(s.B.Events, s.latest(), f, s.Syntax)
	var n int64
	if err := s.B.QueryRow(ctx, q, args...).Scan(&n); err != nil {
		return 0, s.fail("count", err)
	}
	return n, nil
}

// Event implements premis.Ledger.
// An id that may be a step's (premis.StepOf) is looked up as a row's and
// as its record's, in one statement.
func (s *Store) Event(ctx context.Context, id string) (premis.Event, error) {
	q, args := `SELECT `+s.Syntax.Select()+` FROM `+s.B.Events+` WHERE id = `+s.Syntax.Placeholder(1), []any{s.Syntax.Value(id)}
	record, step, isStep := premis.StepOf(id)
	if isStep && !s.Syntax.BeforeSteps {
		q, args = q+` OR id = `+s.Syntax.Placeholder(2), append(args, s.Syntax.Value(record))
	}
	rows, err := s.B.Query(ctx, q, args...)
	if err != nil {
		return premis.Event{}, s.fail("event "+id, err)
	}
	defer rows.Close()
	var found *premis.Event
	for rows.Next() {
		e, err := s.B.Scan(rows)
		if err != nil {
			return premis.Event{}, s.fail("event "+id, err)
		}
		switch {
		case e.ID == id:
			e.Steps = nil
			found = &e
		case found == nil && e.ID == record && step < len(e.Steps):
			st := e.Step(step)
			found = &st
		}
	}
	if err := rows.Err(); err != nil {
		return premis.Event{}, s.fail("event "+id, err)
	}
	if found == nil {
		return premis.Event{}, fmt.Errorf("%w: %s", premis.ErrNotFound, id)
	}
	return *found, nil
}

// LatestOfEach implements premis.Ledger one LatestOf at a time: for a
// ledger on local disk a point lookup costs less than building one query
// of many; a backend across a network (PostgreSQL) overrides it with one.
func (s *Store) LatestOfEach(ctx context.Context, correlationIDs []string) (map[string]premis.Latest, error) {
	out := make(map[string]premis.Latest, len(correlationIDs))
	for _, id := range correlationIDs {
		lt, ok, err := s.LatestOf(ctx, id)
		if err != nil {
			return nil, err
		}
		if ok {
			out[id] = lt
		}
	}
	return out, nil
}

// LatestOf implements premis.Ledger: the read model's row for the
// item and its event's task, two primary-key lookups, through Query (whose
// statements a backend may keep prepared: a worker asks it for every task).
func (s *Store) LatestOf(ctx context.Context, correlationID string) (premis.Latest, bool, error) {
	if !s.ReadModel {
		return premis.Latest{}, false, nil
	}
	rows, err := s.B.Query(ctx, `SELECT l.seq, l.destination, e.task_id FROM `+s.B.Latest+` l JOIN `+s.B.Events+` e ON e.seq = l.seq
		WHERE l.correlation_id = `+s.Syntax.Placeholder(1), s.Syntax.Value(correlationID))
	if err != nil {
		return premis.Latest{}, false, s.fail("latest", err)
	}
	defer rows.Close()
	var lt premis.Latest
	var dest string
	found := rows.Next()
	if found {
		if err := rows.Scan(&lt.Seq, &dest, &lt.TaskID); err != nil {
			return premis.Latest{}, false, s.fail("latest", err)
		}
		lt.Destination = premis.Destination(dest)
	}
	if err := rows.Err(); err != nil {
		return premis.Latest{}, false, s.fail("latest", err)
	}
	return lt, found, nil
}

// LatestOfAll is LatestOf for several items in one query, the read
// model's rows of those that have one (a backend whose lookups cross a
// network offers it as premis.LatestEachLookup's LatestOfEach).
func (s *Store) LatestOfAll(ctx context.Context, correlationIDs []string) (map[string]premis.Latest, error) {
	out := make(map[string]premis.Latest, len(correlationIDs))
	if !s.ReadModel || len(correlationIDs) == 0 {
		return out, nil
	}
	var args []any
	arg := argsIn(&args, s.Syntax)
	marks := make([]string, len(correlationIDs))
	for i, id := range correlationIDs {
		marks[i] = arg(s.Syntax.Value(id))
	}
	in := "l.correlation_id IN (" + strings.Join(marks, ", ") + ")"
	rows, err := s.B.Query(ctx, `SELECT l.correlation_id, l.seq, l.destination, e.task_id FROM `+s.B.Latest+` l JOIN `+s.B.Events+` e ON e.seq = l.seq
		WHERE `+in, args...)
	if err != nil {
		return nil, s.fail("latest", err)
	}
	defer rows.Close()
	for rows.Next() {
		var stored any
		var dest string
		var lt premis.Latest
		if err := rows.Scan(&stored, &lt.Seq, &dest, &lt.TaskID); err != nil {
			return nil, s.fail("latest", err)
		}
		id, err := s.Syntax.text(stored)
		if err != nil {
			return nil, s.fail("latest", fmt.Errorf("read model: correlation_id: %w", err))
		}
		lt.Destination = premis.Destination(dest)
		out[id] = lt
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("latest", err)
	}
	return out, nil
}

// Walk implements premis.Auditor.
func (s *Store) Walk(ctx context.Context, fn func(premis.Event, error) error) error {
	return s.WalkFrom(ctx, 0, fn)
}

// WalkFrom implements premis.SeqWalker, in one statement (in PostgreSQL,
// one snapshot).
func (s *Store) WalkFrom(ctx context.Context, seq int64, fn func(premis.Event, error) error) error {
	rows, err := s.B.Query(ctx, `SELECT `+s.Syntax.Select()+` FROM `+s.B.Events+` WHERE seq >= `+s.Syntax.Placeholder(1)+` ORDER BY seq`, seq)
	if err != nil {
		return s.fail("walk", err)
	}
	defer rows.Close()
	for rows.Next() {
		e, err := s.B.Scan(rows)
		if err != nil && !s.B.Damaged(err) {
			return s.fail("walk", err)
		}
		if err := fn(e, err); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return s.fail("walk", err)
	}
	return nil
}

// HeadRecord reads the head record, for premis.Auditor's RecordedHead once
// the backend has found its table: false when the row is gone.
func (s *Store) HeadRecord(ctx context.Context) (premis.Head, bool, error) {
	var h premis.Head
	var last any
	err := s.B.QueryRow(ctx, `SELECT event_count, last_hash FROM `+s.B.Head+` WHERE id = 1`).Scan(&h.Count, &last)
	if errors.Is(err, s.B.NoRows) {
		return h, false, nil
	}
	if err != nil {
		return h, false, s.fail("head", err)
	}
	if h.Hash, err = s.Syntax.text(last); err != nil {
		return h, false, fmt.Errorf("%s %s: %w: the head record's last_hash: %w", s.B.Name, s.B.Where, premis.ErrTampered, err)
	}
	return h, true, nil
}

// CheckHead is what Open requires of the head record, once the guards are
// found in place: it names the last stored event.
func (s *Store) CheckHead(ctx context.Context) error {
	var h premis.Head
	var head, last any
	err := s.B.QueryRow(ctx, `SELECT h.event_count, h.last_hash, (SELECT hash FROM `+s.B.Events+` ORDER BY seq DESC LIMIT 1)
		FROM `+s.B.Head+` h WHERE h.id = 1`).Scan(&h.Count, &head, &last)
	if errors.Is(err, s.B.NoRows) {
		return fmt.Errorf("%s %s: %w: the head record is gone (run lazaret ledger verify)", s.B.Name, s.B.Where, premis.ErrTampered)
	}
	if err != nil {
		return fmt.Errorf("%s %s: head: %w", s.B.Name, s.B.Where, s.B.MapErr(err))
	}
	lastHash := premis.ChainGenesis
	if last != nil {
		lastHash, err = s.Syntax.text(last)
		if err != nil {
			return fmt.Errorf("%s %s: %w: the last event's hash: %w (run lazaret ledger verify)", s.B.Name, s.B.Where, premis.ErrTampered, err)
		}
	}
	if h.Hash, err = s.Syntax.text(head); err != nil {
		return fmt.Errorf("%s %s: %w: the head record's last_hash: %w (run lazaret ledger verify)", s.B.Name, s.B.Where, premis.ErrTampered, err)
	}
	if lastHash != h.Hash {
		return fmt.Errorf("%s %s: %w: the head record (%s) is not the last stored event (hash %q): events were removed or added past the ledger (run lazaret ledger verify)",
			s.B.Name, s.B.Where, premis.ErrTampered, h, lastHash)
	}
	return nil
}

// CheckReadModel implements premis.ReadModelAuditor: every item's latest
// event with a destination must be its row in the read model, and the read
// model must hold no other rows.
func (s *Store) CheckReadModel(ctx context.Context) (string, error) {
	if !s.ReadModel {
		return "", nil // a ledger written before the read model; Open builds it
	}
	var wrong, extra int64
	if err := s.B.QueryRow(ctx, ReadModelCheck(s.B.Events, s.B.Latest)).Scan(&wrong, &extra); err != nil {
		return "", s.fail("read model", err)
	}
	return ReadModelProblem(wrong, extra), nil
}

// CheckGuards reports the guards in want that found, which maps each
// trigger found to what is wrong with it ("altered", "disabled"; "" when it
// is as written), lacks or finds wrong, as a *premis.GuardError naming the
// ledger.
func (s *Store) CheckGuards(want []string, found map[string]string) error {
	var bad []string
	for _, name := range want {
		problem, ok := found[name]
		switch {
		case !ok:
			bad = append(bad, name+": missing")
		case problem != "":
			bad = append(bad, name+": "+problem)
		}
	}
	if len(bad) > 0 {
		return &premis.GuardError{Ledger: s.B.Name + " " + s.B.Where, Guards: bad}
	}
	return nil
}

// Squeeze collapses white space, as a database may when it stores a
// statement, for comparing a guard's text with what it was written as.
func Squeeze(s string) string { return strings.Join(strings.Fields(s), " ") }
