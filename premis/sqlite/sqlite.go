// Package sqlite is the embedded PREMIS ledger: one SQLite file in WAL mode,
// append-only, hash-chained (see premis.ChainHash) and idempotent on the
// event key of each item (events_item: correlation id and key).
//
// Guards. Triggers refuse UPDATE and DELETE of events; a BEFORE INSERT
// trigger (events_no_replace) makes an INSERT whose seq, id or item key is
// stored already do nothing (RAISE(IGNORE)), so INSERT OR REPLACE, whose implicit
// delete fires no delete trigger, cannot overwrite a row, while Append's own
// ON CONFLICT DO NOTHING still inserts nothing and reads the stored row back.
// The head record (ledger_head: event count and last hash) is written in the
// same transaction as every append; its triggers keep it to one row that
// only moves forward, to the last stored event.
//
// Open creates the schema only in a file without the events table. It never
// re-creates a guard: a ledger whose guards are missing, disabled or altered,
// or whose head is not its last event, fails to open with premis.ErrTampered.
// A ledger written before the chain (no prev_hash and hash columns) gets the
// columns, and its rows are chained once, in seq order, in one transaction.
// A ledger written before the read model gets it, built from its events; one
// written before events_item gets the index (see itemIndex) once its guards
// are found to be exactly those it was written with.
//
// Formats. Open creates a ledger in the packed format (ledgersql.Pack:
// identifiers and digests as bytes, times as integers, details and steps
// compressed; some 1,450 bytes an accepted master where the text format
// took 2,390). A ledger written in the text format before it stays in
// that format, read and appended to as it was: the two cannot mix in one
// file, since the idempotency lookups, the replace guard and the head's
// trigger compare stored values.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/ledgersql"
)

var (
	_ premis.Ledger    = (*Ledger)(nil)
	_ premis.Counter   = (*Ledger)(nil)
	_ premis.Auditor   = (*Ledger)(nil)
	_ premis.SeqWalker = (*Ledger)(nil)
)

// Ledger is a premis.Ledger in an SQLite file.
type Ledger struct {
	// store is the reads every SQL ledger shares (Events, Walk, the
	// head and read-model checks), over this file.
	store
	db   *sql.DB
	path string
	// The append's statements, prepared once (Open) rather than parsed
	// again for every event; nil in a ledger opened for audit.
	appendStmts *appendStmts
	queries     queries
	// packed: the file stores events in the packed format (see
	// ledgersql.Pack), set once at open.
	packed bool
}

// store is embedded under this name so that its methods are the Ledger's
// and its fields stay the package's.
type store = ledgersql.Store

type appendStmts struct{ head, insert, byKey, move, latest *sql.Stmt }

// queries caches the prepared statements of Events by their text: a
// filter has few shapes (a worker asks the same one for every task), and
// parsing one costs as much as running it.
type queries struct {
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

// defaultReaders is how many concurrent readers the pool keeps a
// connection idle for until SetReaders says otherwise: a worker at the
// default concurrency, with room for the API and metrics beside it.
const defaultReaders = 8

// maxQueryShapes bounds the cache; past it, queries are parsed each time.
const maxQueryShapes = 64

func (l *Ledger) query(ctx context.Context, q string, args ...any) (ledgersql.Rows, error) {
	l.queries.mu.Lock()
	s, ok := l.queries.stmts[q]
	if !ok && len(l.queries.stmts) < maxQueryShapes {
		var err error
		if s, err = l.db.PrepareContext(ctx, q); err != nil {
			l.queries.mu.Unlock()
			return nil, err
		}
		if l.queries.stmts == nil {
			l.queries.stmts = map[string]*sql.Stmt{}
		}
		l.queries.stmts[q] = s
	}
	l.queries.mu.Unlock()
	var rows *sql.Rows
	var err error
	if s == nil {
		rows, err = l.db.QueryContext(ctx, q, args...)
	} else {
		rows, err = s.QueryContext(ctx, args...)
	}
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

// sqlRows are database/sql's rows as ledgersql reads them.
type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { r.Rows.Close() }

const (
	headQuery  = `SELECT event_count, last_hash FROM ledger_head WHERE id = 1`
	byKeyQuery = ` FROM events WHERE correlation_id = ? AND key = ?` // after SELECT and the ledger's select list
	moveHead   = `UPDATE ledger_head SET event_count = ?, last_hash = ? WHERE id = 1`
)

// prepareAppend prepares the append's statements on the pool (database/sql
// prepares them again on each connection as it is used).
func (l *Ledger) prepareAppend(ctx context.Context) error {
	var st appendStmts
	for _, p := range []struct {
		dst **sql.Stmt
		q   string
	}{{&st.head, headQuery}, {&st.insert, insert}, {&st.byKey, "SELECT " + l.Syntax.Select() + byKeyQuery}, {&st.move, moveHead}, {&st.latest, moveLatest}} {
		s, err := l.db.PrepareContext(ctx, p.q)
		if err != nil {
			return fmt.Errorf("sqlite ledger: prepare: %w", mapErr(err))
		}
		*p.dst = s
	}
	l.appendStmts = &st
	return nil
}

const tables = `
CREATE TABLE events (
	seq            INTEGER PRIMARY KEY AUTOINCREMENT,
	id             TEXT NOT NULL UNIQUE,
	key            TEXT NOT NULL,
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
	envelope       BLOB,
	prev_hash      TEXT NOT NULL DEFAULT '',
	hash           TEXT NOT NULL DEFAULT '',
	members        TEXT NOT NULL DEFAULT '',
	steps          TEXT NOT NULL DEFAULT ''
);
CREATE INDEX events_object ON events(object_id);
CREATE INDEX events_members ON events(batch_id, type) WHERE members <> '';
CREATE INDEX events_batch ON events(batch_id);
CREATE UNIQUE INDEX events_item ON events(correlation_id, key);
CREATE INDEX events_datetime ON events(datetime);
`

// packedTables are the tables of a ledger created in the packed format
// (see ledgersql.Pack): the columns tables has, those Pack stores
// declared BLOB (a value as it is given: bytes, or text that is not
// canonical), datetime an INTEGER of nanoseconds, detail text or its
// compressed bytes, prev_hash the start of the hash. inspect tells the
// format by datetime's declared type.
// datetime's CHECK refuses the row a build from before the format would
// insert (its time is text): such a build cannot write into a packed
// ledger, and its reads fail on the integer time rather than misread.
var packedTables = strings.NewReplacer(
	"id             TEXT NOT NULL UNIQUE", "id             BLOB NOT NULL UNIQUE",
	"key            TEXT NOT NULL,", "key            BLOB NOT NULL,",
	"datetime       TEXT NOT NULL,", "datetime       INTEGER NOT NULL CHECK (typeof(datetime) = 'integer'),",
	"detail         TEXT NOT NULL DEFAULT '',", "detail         BLOB NOT NULL DEFAULT '',",
	"correlation_id TEXT NOT NULL DEFAULT '',", "correlation_id BLOB NOT NULL DEFAULT '',",
	"sha256         TEXT NOT NULL DEFAULT '',", "sha256         BLOB NOT NULL DEFAULT '',",
	"prev_hash      TEXT NOT NULL DEFAULT '',", "prev_hash      BLOB NOT NULL DEFAULT '',",
	"hash           TEXT NOT NULL DEFAULT '',", "hash           BLOB NOT NULL DEFAULT '',",
	"correlation_id TEXT PRIMARY KEY,", "correlation_id BLOB PRIMARY KEY,",
	"last_hash   TEXT NOT NULL", "last_hash   BLOB NOT NULL",
).Replace(tables + headTable + latestTable)

// membersColumn holds the members of an event that records several objects
// (see premis.Member and ledgersql.EncodeMembers), added to a ledger
// written before it; events_members finds a batch's such events of a type (a batch
// status counts their members) without reading the batch's other events.
const membersColumn = `
ALTER TABLE events ADD COLUMN members TEXT NOT NULL DEFAULT '';
CREATE INDEX events_members ON events(batch_id, type) WHERE members <> '';
`

// stepsColumn holds the steps a decision's record holds beside its own
// event (see premis.Step and ledgersql.EncodeSteps), added to a ledger
// written before it. No index: a step is found through its record.
const stepsColumn = `
ALTER TABLE events ADD COLUMN steps TEXT NOT NULL DEFAULT '';
`

// The chain columns, added to a ledger written before the chain.
const addChainColumns = `
ALTER TABLE events ADD COLUMN prev_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE events ADD COLUMN hash TEXT NOT NULL DEFAULT '';
`

// latestTable is the read model: each item's (correlation's) latest event
// with a destination, moved in the same transaction as the append, so
// "open failures", "batch status" and "where is item X" read the current
// state, not the history. It is derived from the events (ledger verify
// checks it against them) and is the one table that is updated in place.
const latestTable = `
CREATE TABLE latest (
	correlation_id TEXT PRIMARY KEY,
	seq            INTEGER NOT NULL,
	destination    TEXT NOT NULL,
	batch_id       TEXT NOT NULL
);
CREATE INDEX latest_destination ON latest(destination, seq);
CREATE INDEX latest_batch ON latest(batch_id, seq);
`

// countsTable counts the read model's items by destination, kept by
// triggers on latest in the append's own transaction: the total of a
// listing of open failures reads three rows, not every open failure.
// Derived like latest, and checked against it (CheckReadModel); rebuilt
// from latest by Open when it or a trigger is missing (dropping latest
// drops its triggers).
const countsTable = `
DROP TRIGGER IF EXISTS latest_counts_insert;
DROP TRIGGER IF EXISTS latest_counts_update;
DROP TRIGGER IF EXISTS latest_counts_delete;
DROP TABLE IF EXISTS latest_counts;
CREATE TABLE latest_counts (
	destination TEXT PRIMARY KEY,
	n           INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TRIGGER latest_counts_insert AFTER INSERT ON latest BEGIN
	INSERT INTO latest_counts (destination, n) VALUES (NEW.destination, 1)
		ON CONFLICT (destination) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER latest_counts_update AFTER UPDATE OF destination ON latest WHEN OLD.destination <> NEW.destination BEGIN
	UPDATE latest_counts SET n = n - 1 WHERE destination = OLD.destination;
	INSERT INTO latest_counts (destination, n) VALUES (NEW.destination, 1)
		ON CONFLICT (destination) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER latest_counts_delete AFTER DELETE ON latest BEGIN
	UPDATE latest_counts SET n = n - 1 WHERE destination = OLD.destination;
END;
INSERT INTO latest_counts (destination, n) SELECT destination, count(*) FROM latest GROUP BY destination;
`

// fillLatest builds the read model of a ledger written before it.
const fillLatest = `INSERT INTO latest (correlation_id, seq, destination, batch_id)
	SELECT e.correlation_id, e.seq, e.destination, e.batch_id FROM events e
	JOIN (SELECT max(seq) AS seq FROM events WHERE destination <> '' GROUP BY correlation_id) m ON m.seq = e.seq`

// moveLatest records an appended event with a destination as its item's
// latest.
const moveLatest = `INSERT INTO latest (correlation_id, seq, destination, batch_id) VALUES (?, ?, ?, ?)
	ON CONFLICT (correlation_id) DO UPDATE SET seq = excluded.seq, destination = excluded.destination, batch_id = excluded.batch_id
	WHERE excluded.seq > latest.seq`

const headTable = `
CREATE TABLE ledger_head (
	id          INTEGER PRIMARY KEY CHECK (id = 1),
	event_count INTEGER NOT NULL,
	last_hash   TEXT NOT NULL
);
`

// guard is an append-only trigger: its name, its table, and the statement
// that creates it, which is also what sqlite_master must hold for it.
type guard struct{ name, table, sql string }

var guards = []guard{
	{"events_no_update", "events", `CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'premis ledger is append-only'); END`},
	{"events_no_delete", "events", `CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'premis ledger is append-only'); END`},
	noReplace,
	{"ledger_head_no_delete", "ledger_head", `CREATE TRIGGER ledger_head_no_delete BEFORE DELETE ON ledger_head
BEGIN SELECT RAISE(ABORT, 'premis ledger head is append-only'); END`},
	{"ledger_head_one_row", "ledger_head", `CREATE TRIGGER ledger_head_one_row BEFORE INSERT ON ledger_head
WHEN EXISTS (SELECT 1 FROM ledger_head)
BEGIN SELECT RAISE(ABORT, 'premis ledger head is append-only'); END`},
	{"ledger_head_forward", "ledger_head", `CREATE TRIGGER ledger_head_forward BEFORE UPDATE ON ledger_head
WHEN NEW.id IS NOT OLD.id OR NEW.event_count <= OLD.event_count
	OR NEW.last_hash IS NOT (SELECT hash FROM events ORDER BY seq DESC LIMIT 1)
BEGIN SELECT RAISE(ABORT, 'premis ledger head only moves forward, to the last event'); END`},
}

// noReplace is the replace guard: an INSERT whose seq, id or item key
// (correlation id and key, the idempotency key of events_item) is stored
// already does nothing.
var noReplace = guard{"events_no_replace", "events", `CREATE TRIGGER events_no_replace BEFORE INSERT ON events
WHEN EXISTS (SELECT 1 FROM events WHERE seq = NEW.seq OR (correlation_id = NEW.correlation_id AND key = NEW.key) OR id = NEW.id)
BEGIN SELECT RAISE(IGNORE); END`}

// keyGuards are the guards of a ledger written before events_item, whose
// replace guard tested the key alone (the key was unique by itself).
var keyGuards = func() []guard {
	g := append([]guard(nil), guards...)
	g[2] = guard{"events_no_replace", "events", `CREATE TRIGGER events_no_replace BEFORE INSERT ON events
WHEN EXISTS (SELECT 1 FROM events WHERE seq = NEW.seq OR key = NEW.key OR id = NEW.id)
BEGIN SELECT RAISE(IGNORE); END`}
	return g
}()

// itemIndex moves a ledger written before events_item onto it: the
// idempotency key indexed with its item, so that an item's events share
// one index page instead of one each (a key is a hash), which also serves
// every lookup by correlation; events_task goes, since every lookup by
// task names the correlation too; and events_failure, since failures are
// listed through the read model (latest), never by scanning the events for
// a class. The key's own unique index, part of the table's definition,
// stays: an older ledger keeps that cost.
const itemIndex = `
CREATE UNIQUE INDEX events_item ON events(correlation_id, key);
DROP INDEX IF EXISTS events_correlation;
DROP INDEX IF EXISTS events_task;
DROP INDEX IF EXISTS events_failure;
`

// legacyGuards are the triggers of a ledger written before the chain; the
// first two guards, created then with IF NOT EXISTS, which SQLite does not
// keep in sqlite_master.
var legacyGuards = guards[:2]

// Open opens (creating if needed) the ledger at path. The folder is created
// too. The file is in WAL mode with synchronous=FULL: an appended event
// survives a power cut. See the package doc for what Open checks, creates
// and migrates.
func Open(ctx context.Context, path string) (*Ledger, error) { return openFormat(ctx, path, true) }

// openFormat is Open, creating a new ledger packed or in the text format
// every ledger had before (which tests write, as older builds did).
func openFormat(ctx context.Context, path string, packed bool) (*Ledger, error) {
	if path == "" {
		return nil, errors.New("sqlite ledger: empty path")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("sqlite ledger: %w", err)
	}
	// busy_timeout first: switching to WAL takes a lock, and another process
	// may be opening the same ledger.
	l, err := open(path, "busy_timeout(10000)", "journal_mode(WAL)", "synchronous(FULL)", "foreign_keys(ON)", "temp_store(MEMORY)")
	if err != nil {
		return nil, err
	}
	// Another process creating or migrating the schema at the same moment
	// holds the write lock: wait for it rather than fail. A move onto
	// events_item builds an index over every event (7 s a million events
	// in C SQLite here, more in this pure-Go one), so workers started
	// together on a large old ledger wait minutes, not seconds.
	deadline := time.Now().Add(openWait)
	var st state
	for {
		var err error
		if st, err = l.prepare(ctx, packed); err == nil {
			break
		}
		if !errors.Is(err, premis.ErrBusy) || time.Now().After(deadline) || ctx.Err() != nil {
			l.db.Close()
			return nil, fmt.Errorf("sqlite ledger: schema %s: %w", path, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	l.setFormat(st)
	if err := l.check(ctx); err != nil {
		l.db.Close()
		return nil, err
	}
	if err := l.prepareAppend(ctx); err != nil {
		l.db.Close()
		return nil, err
	}
	l.ReadModel, l.Counted = true, true
	return l, nil
}

// openWait bounds how long Open waits for another process's schema work.
const openWait = 10 * time.Minute

// OpenAudit opens an existing chained ledger read-only, for premis.Verify
// alone: it creates, migrates and checks nothing, so a ledger that Open
// refuses (premis.ErrTampered) can still be walked to find the damage.
func OpenAudit(ctx context.Context, path string) (*Ledger, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("sqlite ledger: %w", err)
	}
	l, err := open(path, "busy_timeout(10000)", "query_only(1)")
	if err != nil {
		return nil, err
	}
	st, err := inspect(ctx, l.db)
	l.ReadModel, l.Counted = st.latest, st.counts
	l.setFormat(st)
	if err == nil && (!st.events || !st.chained) {
		err = fmt.Errorf("sqlite ledger %s: no hash chain to audit (events table %v, chain columns %v)", path, st.events, st.chained)
	}
	if err != nil {
		l.db.Close()
		return nil, fmt.Errorf("sqlite ledger: audit: %w", mapErr(err))
	}
	return l, nil
}

func open(path string, pragmas ...string) (*Ledger, error) {
	q := url.Values{}
	for _, p := range pragmas {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite ledger: open %s: %w", path, err)
	}
	l := &Ledger{db: db, path: path}
	l.store = store{Syntax: dialect, B: ledgersql.Backend{
		Name: "sqlite ledger", Where: path,
		Events: "events", Latest: "latest", Head: "ledger_head", Counts: "latest_counts",
		Query: l.query,
		QueryRow: func(ctx context.Context, q string, args ...any) ledgersql.Row {
			return db.QueryRowContext(ctx, q, args...)
		},
		Scan:    func(r ledgersql.Row) (premis.Event, error) { return scanOne(r, l.packed) },
		Damaged: func(err error) bool { var de *decodeError; return errors.As(err, &de) },
		NoRows:  sql.ErrNoRows, MapErr: mapErr,
	}}
	l.SetReaders(defaultReaders)
	// Idle ones go after a minute, so that a burst does not keep their
	// page caches (up to 2 MiB each) and file descriptors.
	db.SetConnMaxIdleTime(time.Minute)
	return l, nil
}

// setFormat makes the reads speak the format st found: packed, or the
// text columns with or without members and steps.
func (l *Ledger) setFormat(st state) {
	l.packed = st.packed
	if st.packed {
		l.Syntax = packedDialect
		return
	}
	l.Syntax = dialect
	l.Syntax.BeforeMembers, l.Syntax.BeforeSteps = !st.members, !st.steps
}

// SetReaders sizes the connection pool for n goroutines reading at once (a
// worker's concurrency). A new connection reads the schema and prepares the
// append and every query shape again, and database/sql keeps only two idle:
// with more readers than idle connections, nearly every read closed one and
// the next opened one (TestConcurrentReadsReuseConnections). The group
// committer's transaction holds one more.
func (l *Ledger) SetReaders(n int) {
	l.db.SetMaxIdleConns(max(n, 1) + 1)
}

// state is what a file holds of the schema.
type state struct {
	events, chained, head, latest, item, members, steps, counts bool
	// packed: the ledger stores events in the packed format.
	packed bool
}

func (st state) current() bool {
	return st.events && st.chained && st.head && st.latest && st.item && st.members && st.steps && st.counts
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func inspect(ctx context.Context, q querier) (state, error) {
	var st state
	err := q.QueryRowContext(ctx, `SELECT
		EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'events'),
		(SELECT count(*) FROM pragma_table_info('events') WHERE name IN ('prev_hash', 'hash')) = 2,
		EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'ledger_head'),
		EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'latest'),
		EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'events_item'),
		EXISTS (SELECT 1 FROM pragma_table_info('events') WHERE name = 'members'),
		EXISTS (SELECT 1 FROM pragma_table_info('events') WHERE name = 'steps'),
		EXISTS (SELECT 1 FROM pragma_table_info('events') WHERE name = 'datetime' AND type = 'INTEGER'),
		EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'latest_counts') AND
			(SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'latest'
				AND name IN ('latest_counts_insert', 'latest_counts_update', 'latest_counts_delete')) = 3`).Scan(&st.events, &st.chained,
		&st.head, &st.latest, &st.item, &st.members, &st.steps, &st.packed, &st.counts)
	return st, err
}

// prepare creates the schema in a new file and chains a ledger written
// before the chain, and says what the file then holds. It takes the write
// lock only when there is work.
func (l *Ledger) prepare(ctx context.Context, packed bool) (state, error) {
	st, err := inspect(ctx, l.db)
	if err != nil || st.current() {
		return st, mapErr(err)
	}
	if err := l.upgrade(ctx, packed); err != nil {
		return st, err
	}
	st, err = inspect(ctx, l.db)
	return st, mapErr(err)
}

// upgrade is prepare's work, in one transaction.
func (l *Ledger) upgrade(ctx context.Context, packed bool) error {
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return mapErr(err)
	}
	defer tx.Rollback()
	st, err := inspect(ctx, tx) // another process may have done it meanwhile
	if err != nil {
		return mapErr(err)
	}
	if st.events && !st.members && (st.chained == st.head) {
		// A ledger written before members gets the column before anything
		// here reads its events: every read selects it, migrate's chaining
		// of a ledger written before the chain too.
		if _, err := tx.ExecContext(ctx, membersColumn); err != nil {
			return mapErr(err)
		}
		st.members = true
	}
	if st.events && !st.steps && (st.chained == st.head) {
		if _, err := tx.ExecContext(ctx, stepsColumn); err != nil {
			return mapErr(err)
		}
		st.steps = true
	}
	switch {
	case st.current():
	case st.events && st.chained && st.head:
		// A ledger written before the read model, or before events_item,
		// or both.
		if !st.item {
			if err := l.checkGuards(ctx, tx, keyGuards); err != nil {
				return fmt.Errorf("not moving a ledger onto events_item: %w", err)
			}
			if _, err := tx.ExecContext(ctx, itemIndex+"DROP TRIGGER events_no_replace;\n"+noReplace.sql); err != nil {
				return mapErr(err)
			}
		}
		if !st.latest {
			if _, err := tx.ExecContext(ctx, latestTable+";"+fillLatest); err != nil {
				return mapErr(err)
			}
		}
	case !st.events && !st.head:
		schema, syntax := tables+headTable+latestTable, dialect
		if packed {
			schema, syntax = packedTables, packedDialect
		}
		if _, err := tx.ExecContext(ctx, schema); err != nil {
			return mapErr(err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO ledger_head (id, event_count, last_hash) VALUES (1, 0, ?)`, syntax.Value(premis.ChainGenesis)); err != nil {
			return mapErr(err)
		}
		if err := createGuards(ctx, tx); err != nil {
			return err
		}
	case st.events && !st.chained && !st.head:
		if err := l.migrate(ctx, tx); err != nil {
			return err
		}
		// migrate created today's guards; the indexes are the old ones.
		if _, err := tx.ExecContext(ctx, itemIndex); err != nil {
			return mapErr(err)
		}
		if _, err := tx.ExecContext(ctx, latestTable+";"+fillLatest); err != nil {
			return mapErr(err)
		}
	case !st.events:
		return fmt.Errorf("%w: the events table is gone, its head record is not", premis.ErrTampered)
	case st.chained:
		return fmt.Errorf("%w: the events table has a hash chain but no head record (ledger_head)", premis.ErrTampered)
	default:
		return fmt.Errorf("%w: a head record (ledger_head) but no hash chain in the events table", premis.ErrTampered)
	}
	if !st.counts {
		// The read model exists by now, whatever the branch: count it.
		if _, err := tx.ExecContext(ctx, countsTable); err != nil {
			return mapErr(err)
		}
	}
	if err := tx.Commit(); err != nil {
		return mapErr(err)
	}
	return nil
}

func createGuards(ctx context.Context, tx *sql.Tx) error {
	for _, g := range guards {
		if _, err := tx.ExecContext(ctx, g.sql); err != nil {
			return fmt.Errorf("guard %s: %w", g.name, mapErr(err))
		}
	}
	return nil
}

// migrate chains a ledger written before the chain, in tx: its guards must
// be those it was created with; its rows are chained in seq order, a page
// at a time; the head record and the guards of today are created.
func (l *Ledger) migrate(ctx context.Context, tx *sql.Tx) error {
	if err := l.checkGuards(ctx, tx, legacyGuards); err != nil {
		return fmt.Errorf("not chaining a ledger written before the chain: %w", err)
	}
	for _, g := range legacyGuards {
		if _, err := tx.ExecContext(ctx, "DROP TRIGGER "+g.name); err != nil {
			return mapErr(err)
		}
	}
	if _, err := tx.ExecContext(ctx, addChainColumns); err != nil {
		return mapErr(err)
	}
	head := premis.Head{Hash: premis.ChainGenesis}
	type link struct {
		seq        int64
		prev, hash string
	}
	const page = 500
	for after := int64(0); ; {
		rows, err := tx.QueryContext(ctx, `SELECT `+ledgersql.Select+` FROM events WHERE seq > ? ORDER BY seq LIMIT ?`, after, page)
		if err != nil {
			return mapErr(err)
		}
		var links []link
		for rows.Next() {
			e, err := scanOne(rows, false)
			if err != nil {
				rows.Close()
				return fmt.Errorf("seq %d does not decode, not chaining it: %w", e.Seq, err)
			}
			h := premis.ChainHash(head.Hash, &e)
			links = append(links, link{e.Seq, head.Hash, h})
			head = premis.Head{Count: head.Count + 1, Hash: h}
			after = e.Seq
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return mapErr(err)
		}
		for _, k := range links {
			if _, err := tx.ExecContext(ctx, `UPDATE events SET prev_hash = ?, hash = ? WHERE seq = ?`, k.prev, k.hash, k.seq); err != nil {
				return mapErr(err)
			}
		}
		if len(links) < page {
			break
		}
	}
	if _, err := tx.ExecContext(ctx, headTable); err != nil {
		return mapErr(err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO ledger_head (id, event_count, last_hash) VALUES (1, ?, ?)`, head.Count, head.Hash); err != nil {
		return mapErr(err)
	}
	return createGuards(ctx, tx)
}

// check is what Open requires of a ledger: every guard in place, and the
// head record naming the last stored event.
func (l *Ledger) check(ctx context.Context) error {
	if err := l.Guards(ctx); err != nil {
		return err
	}
	return l.CheckHead(ctx)
}

// Guards implements premis.Auditor. A ledger written before events_item
// (opened for audit, which moves nothing) must hold the guards it was
// written with.
func (l *Ledger) Guards(ctx context.Context) error {
	st, err := inspect(ctx, l.db)
	if err != nil {
		return fmt.Errorf("sqlite ledger %s: guards: %w", l.path, mapErr(err))
	}
	if !st.item {
		return l.checkGuards(ctx, l.db, keyGuards)
	}
	return l.checkGuards(ctx, l.db, guards)
}

type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func (l *Ledger) checkGuards(ctx context.Context, q queryer, want []guard) error {
	rows, err := q.QueryContext(ctx, `SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'trigger'`)
	if err != nil {
		return fmt.Errorf("sqlite ledger %s: guards: %w", l.path, mapErr(err))
	}
	defer rows.Close()
	type trigger struct{ table, sql string }
	have := map[string]trigger{}
	for rows.Next() {
		var name, table string
		var text sql.NullString
		if err := rows.Scan(&name, &table, &text); err != nil {
			return fmt.Errorf("sqlite ledger %s: guards: %w", l.path, mapErr(err))
		}
		have[name] = trigger{table, text.String}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlite ledger %s: guards: %w", l.path, mapErr(err))
	}
	names := make([]string, len(want))
	found := map[string]string{}
	for i, g := range want {
		names[i] = g.name
		if t, ok := have[g.name]; ok {
			found[g.name] = ""
			if t.table != g.table || ledgersql.Squeeze(t.sql) != ledgersql.Squeeze(g.sql) {
				found[g.name] = "altered"
			}
		}
	}
	return l.CheckGuards(names, found)
}

// RecordedHead implements premis.Auditor.
func (l *Ledger) RecordedHead(ctx context.Context) (premis.Head, bool, error) {
	st, err := inspect(ctx, l.db)
	if err != nil {
		return premis.Head{}, false, fmt.Errorf("sqlite ledger: head: %w", mapErr(err))
	}
	if !st.head {
		return premis.Head{}, false, nil
	}
	return l.HeadRecord(ctx)
}

var insert = ledgersql.Insert("events", sqlitePlaceholder)

// Append implements premis.Ledger. The write lock (BEGIN IMMEDIATE) orders
// appends: each reads the head, chains its events onto it and moves it, in
// one transaction.
func (l *Ledger) Append(ctx context.Context, events ...*premis.Event) ([]bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	if err := premis.Prepare(events...); err != nil {
		return nil, fmt.Errorf("sqlite ledger: %w", err)
	}
	st := l.appendStmts
	if st == nil {
		return nil, errors.New("sqlite ledger: opened for audit: read-only")
	}
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("sqlite ledger: begin: %w", mapErr(err))
	}
	defer tx.Rollback()
	ins, latest := tx.StmtContext(ctx, st.insert), tx.StmtContext(ctx, st.latest)
	var head premis.Head
	var last any
	err = tx.StmtContext(ctx, st.head).QueryRowContext(ctx).Scan(&head.Count, &last)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite ledger: %w: the head record is gone", premis.ErrTampered)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite ledger: head: %w", mapErr(err))
	}
	if head.Hash, err = l.hashText(last); err != nil {
		return nil, fmt.Errorf("sqlite ledger: %w: the head record's last_hash: %w", premis.ErrTampered, err)
	}
	chain := ledgersql.NewChain(head, events)
	row := make([]any, 0, ledgersql.NumColumns+2)
	for i, e := range events {
		args, hash, err := chain.Row(row[:0], i, l.Syntax)
		if err != nil {
			return nil, fmt.Errorf("sqlite ledger: %w", err)
		}
		res, err := ins.ExecContext(ctx, args...)
		if err != nil {
			return nil, fmt.Errorf("sqlite ledger: append %s: %w", e.Type, mapErr(err))
		}
		if n, _ := res.RowsAffected(); n == 1 {
			seq, err := res.LastInsertId()
			if err != nil {
				return nil, fmt.Errorf("sqlite ledger: append %s: %w", e.Type, mapErr(err))
			}
			chain.Link(i, seq, hash)
			if e.Destination != "" {
				if _, err := latest.ExecContext(ctx, l.Syntax.Value(e.CorrelationID), seq, e.Destination, e.BatchID); err != nil {
					return nil, fmt.Errorf("sqlite ledger: read model: %w", mapErr(err))
				}
			}
			continue
		}
		stored, err := scanOne(tx.StmtContext(ctx, st.byKey).QueryRowContext(ctx, l.Syntax.Value(e.CorrelationID), l.Syntax.Value(e.Key)), l.packed)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("sqlite ledger: append %s: event id %s is stored already, under another key", e.Type, e.ID)
		}
		if err != nil {
			return nil, fmt.Errorf("sqlite ledger: read back %s: %w", e.Key, mapErr(err))
		}
		*e = stored
	}
	if chain.Moved() {
		if _, err := tx.StmtContext(ctx, st.move).ExecContext(ctx, chain.Head.Count, l.Syntax.Value(chain.Head.Hash)); err != nil {
			return nil, fmt.Errorf("sqlite ledger: head: %w", mapErr(err))
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("sqlite ledger: commit: %w", mapErr(err))
	}
	return chain.Done(), nil
}

// hashText is a hash as the file stores it, as text.
func (l *Ledger) hashText(v any) (string, error) {
	if l.packed {
		return ledgersql.Unpack(v)
	}
	if s, ok := v.(string); ok {
		return s, nil
	}
	return "", fmt.Errorf("a %T, want text", v)
}

func sqlitePlaceholder(int) string { return "?" }

// dialect is SQLite's spelling of what ledgersql renders.
var dialect = ledgersql.Dialect{
	Placeholder: sqlitePlaceholder,
	Time:        func(t time.Time) any { return t.Format(time.RFC3339Nano) },
	Contains:    func(col, arg string) string { return "instr(" + col + ", " + arg + ") > 0" },
}

// packedDialect is dialect for a ledger in the packed format.
var packedDialect = func() ledgersql.Dialect {
	d := dialect
	d.Packed, d.Time = true, ledgersql.PackTime
	return d
}()

// AppendsFirst implements premis.Ledger: no. A SQLite ledger is one
// writer on local disk, where the worker's LatestOf before a delivery
// costs a point lookup, not a round trip; it checks no first delivery in
// its append.
func (l *Ledger) AppendsFirst() bool { return false }

// AppendFirst implements premis.Ledger: ErrNotImplemented (AppendsFirst).
func (l *Ledger) AppendFirst(context.Context, []premis.FirstDelivery, ...*premis.Event) ([]bool, error) {
	return nil, fmt.Errorf("sqlite ledger: append on a first delivery: %w", premis.ErrNotImplemented)
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
func (l *Ledger) Close() error {
	l.queries.mu.Lock()
	for _, s := range l.queries.stmts {
		s.Close()
	}
	l.queries.stmts = nil
	l.queries.mu.Unlock()
	if st := l.appendStmts; st != nil {
		for _, s := range []*sql.Stmt{st.head, st.insert, st.byKey, st.move, st.latest} {
			s.Close()
		}
	}
	return l.db.Close()
}

type scanner interface{ Scan(...any) error }

// selectNames are the columns of ledgersql.Select, for decoding errors.
var selectNames = strings.Fields(strings.ReplaceAll(ledgersql.Select, ",", " "))

// decodeError is a row whose columns hold values the ledger never writes
// (SQLite stores any value in any column).
type decodeError struct {
	Column string
	Value  any
	Want   string
}

func (e *decodeError) Error() string {
	return fmt.Sprintf("column %s holds %T %v, want %s", e.Column, e.Value, e.Value, e.Want)
}

// scanOne reads one row of ledgersql.Select. The values are read as SQLite
// holds them and checked one by one, so a row that does not decode still
// gives its seq, chain fields and the rest that does, with a *decodeError.
func scanOne(s scanner, packed bool) (premis.Event, error) {
	n := len(selectNames)
	if packed {
		n++ // the hash of the row before (ledgersql.SelectPacked)
	}
	vals := make([]any, n)
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := s.Scan(ptrs...); err != nil {
		return premis.Event{}, err
	}
	d := decoder{vals: vals, packed: packed}
	var e premis.Event
	e.Seq = d.int()
	prev := d.next()
	e.Hash = d.id()
	e.ID, e.Key, e.Type = d.id(), d.id(), premis.EventType(d.text())
	e.DateTime = d.time()
	detail := d.next()
	e.Outcome, e.Note, e.Class, e.Code, e.Message = premis.Outcome(d.text()), d.text(), premis.Class(d.text()), d.text(), d.text()
	e.Offset = d.nullInt()
	if p := d.nullInt(); p != nil {
		v := int(*p)
		e.Page = &v
	}
	e.Segment, e.Element, e.Component = int(d.int()), int(d.int()), int(d.int())
	e.Tag, e.Destination = d.text(), premis.Destination(d.text())
	e.ObjectID, e.BatchID, e.CorrelationID, e.Kind, e.SHA256 = d.text(), d.text(), d.id(), d.text(), d.id()
	e.Size = d.int()
	e.PUID, e.Path = d.text(), d.text()
	e.Attempt, e.Retries = int(d.int()), int(d.int())
	e.TaskID, e.ReplayOf, e.Agent, e.Operator = d.text(), d.text(), d.text(), d.text()
	e.Detail = d.detail(detail, &e)
	if stored := d.blob(); d.err == nil {
		env, err := ledgersql.DecodeEnvelope(stored, &e)
		if err != nil {
			d.err = &decodeError{Column: "envelope", Value: truncated(string(stored)), Want: "an envelope the ledger writes (" + err.Error() + ")"}
		}
		e.Envelope = env
	}
	if text := d.text(); d.err == nil {
		ms, err := ledgersql.DecodeMembers(text)
		if err != nil {
			d.err = &decodeError{Column: "members", Value: truncated(text), Want: "the members the ledger writes (" + err.Error() + ")"}
		}
		e.Members = ms
	}
	if text := d.text(); d.err == nil {
		decode := ledgersql.DecodeSteps
		if d.packed {
			decode = ledgersql.DecodeStepsPacked
		}
		steps, err := decode(text, &e)
		if err != nil {
			d.err = &decodeError{Column: "steps", Value: truncated(text), Want: "the steps the ledger writes (" + err.Error() + ")"}
		}
		e.Steps = steps
	}
	e.PrevHash = d.prev(prev)
	if d.err != nil {
		return e, d.err
	}
	return e, nil
}

// truncated is a long column text as an error names it: its start, quoted.
func truncated(s string) string {
	const keep = 80
	if len(s) > keep {
		return fmt.Sprintf("%q (%d bytes)", s[:keep], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// decoder reads the values of one row in column order, keeping the first
// error.
type decoder struct {
	vals []any
	i    int
	err  *decodeError
	// packed: the row is in the packed format (see ledgersql.Pack).
	packed bool
}

func (d *decoder) next() any {
	v := d.vals[d.i]
	d.i++
	return v
}

func (d *decoder) fail(v any, want string) {
	if d.err == nil {
		d.err = &decodeError{Column: selectNames[d.i-1], Value: v, Want: want}
	}
}

func (d *decoder) text() string {
	switch v := d.next().(type) {
	case string:
		return v
	case []byte:
		return string(v)
	default:
		d.fail(v, "text")
		return ""
	}
}

// id reads an identifier or digest column, which a packed ledger stores
// packed.
func (d *decoder) id() string {
	if !d.packed {
		return d.text()
	}
	v := d.next()
	s, err := ledgersql.Unpack(v)
	if err != nil {
		d.fail(v, "an identifier as the ledger packs it ("+err.Error()+")")
	}
	return s
}

// prev reads prev_hash, whose value v was read in its place: a packed
// row's from the start it stores and the row before's hash, the last
// value of its select list.
func (d *decoder) prev(v any) string {
	if !d.packed {
		switch v := v.(type) {
		case string:
			return v
		case []byte:
			return string(v)
		}
		if d.err == nil {
			d.err = &decodeError{Column: "prev_hash", Value: v, Want: "text"}
		}
		return ""
	}
	before := d.next()
	s, err := ledgersql.UnpackPrev(v, before)
	if err != nil && d.err == nil {
		d.err = &decodeError{Column: "prev_hash", Value: v, Want: "the start of a hash, as the ledger packs it (" + err.Error() + ")"}
	}
	return s
}

// detail reads the detail column's value v (read before the columns its
// compressed form needs) for row e.
func (d *decoder) detail(v any, e *premis.Event) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		if !d.packed {
			return string(v)
		}
		if d.err != nil {
			return ""
		}
		s, err := ledgersql.DecodeDetail(v, e)
		if err != nil {
			d.err = &decodeError{Column: "detail", Value: truncated(string(v)), Want: "a detail the ledger writes (" + err.Error() + ")"}
		}
		return s
	default:
		if d.err == nil {
			d.err = &decodeError{Column: "detail", Value: v, Want: "text"}
		}
		return ""
	}
}

func (d *decoder) int() int64 {
	v := d.next()
	if n, ok := v.(int64); ok {
		return n
	}
	d.fail(v, "an integer")
	return 0
}

func (d *decoder) nullInt() *int64 {
	switch v := d.next().(type) {
	case nil:
		return nil
	case int64:
		return &v
	default:
		d.fail(v, "an integer or NULL")
		return nil
	}
}

func (d *decoder) blob() []byte {
	switch v := d.next().(type) {
	case nil:
		return nil
	case []byte:
		return v
	case string:
		return []byte(v)
	default:
		d.fail(v, "a blob")
		return nil
	}
}

func (d *decoder) time() time.Time {
	if d.packed {
		v := d.next()
		if n, ok := v.(int64); ok {
			return time.Unix(0, n).UTC()
		}
		d.fail(v, "nanoseconds since 1970 (an integer)")
		return time.Time{}
	}
	switch v := d.next().(type) {
	case time.Time:
		return v.UTC()
	case string:
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			d.fail(v, "an RFC 3339 time")
		}
		return t.UTC()
	default:
		d.fail(v, "an RFC 3339 time")
		return time.Time{}
	}
}

// mapErr turns SQLite's busy and locked codes, and a disk full or a file
// made read-only, into premis.ErrBusy: a condition that passes (the
// workers wait for the ledger instead of spending routing budgets), which
// the classifier sees as transient.
func mapErr(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_FULL, sqlite3.SQLITE_READONLY:
			return fmt.Errorf("%w: %v", premis.ErrBusy, err)
		}
	}
	return err
}
