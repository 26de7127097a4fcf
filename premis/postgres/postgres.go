// Package postgres is the PREMIS ledger for multi-node deployments: any
// number of workers on any number of machines append to one PostgreSQL
// database. Append-only, hash-chained (see premis.ChainHash) and idempotent
// on the event key, like the embedded SQLite ledger.
//
// # Guards
//
// Triggers refuse UPDATE, DELETE and TRUNCATE of lazaret_events. The head
// record (lazaret_ledger_head: event count and last hash) is written in the
// same transaction as every append; its triggers keep it to one row that only
// moves forward, to the last stored event. Every trigger is ENABLE ALWAYS, so
// session_replication_role = replica does not switch it off.
//
// Open creates the schema only where neither table exists. It never
// re-creates a guard: a ledger whose guards are missing, disabled or altered
// (trigger or function), or whose head is not its last event, fails to open
// with premis.ErrTampered. A ledger written before the chain (no prev_hash
// and hash columns) gets the columns, and its rows are chained once, in seq
// order, in one transaction.
//
// # Writers
//
// Appends are ordered by a row lock on the head record (SELECT ... FOR
// UPDATE, held to commit): each append reads the head, chains its events onto
// it, inserts them and moves the head. This serializes appends on one ledger,
// as a transaction-level advisory lock would, but is scoped to the table
// (several ledgers in one database do not wait for each other) and costs no
// extra statement, since the head is read and written anyway. An append
// that chains onto the head its Ledger's last append left is one pipelined
// round trip, whose lock is held only while the server runs it; one that
// finds the head moved (another process appended) or a key stored goes
// again in two, holding the lock for one round trip and the commit (see
// Append).
//
// # Roles
//
// Triggers stop mistakes and the application's own role; they do not stop
// the table's owner, who may drop them. Run workers as a role that cannot:
//
//   - owner (e.g. lazaret_owner, NOLOGIN, used for the first Open and for
//     upgrades): owns the schema, the tables, the sequence, the trigger
//     functions and the triggers. Creates and migrates the schema.
//   - writer (e.g. lazaret_writer, what workers and the CLI log in as):
//     SELECT and INSERT on lazaret_events, USAGE on its sequence, SELECT and
//     UPDATE on lazaret_ledger_head (UPDATE is what SELECT ... FOR UPDATE
//     needs; the head's trigger lets it only move forward), USAGE on the
//     schema. No UPDATE, DELETE, TRUNCATE, TRIGGER or REFERENCES on
//     lazaret_events, no DELETE, TRUNCATE or TRIGGER on the head, no CREATE
//     on the schema, and not a member of the owner role.
//   - reader (optional, for lazaret ledger verify and exports): SELECT on
//     both tables, USAGE on the schema.
//
// A writer can then add events but not change, remove or unchain them; what
// it inserts past Append (a row with a wrong hash) shows in Verify.
// deploy/postgres/roles.sql sets this up.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lazaret/lazaret/premis"
	"github.com/lazaret/lazaret/premis/ledgersql"
)

var (
	_ premis.Ledger    = (*Ledger)(nil)
	_ premis.Counter   = (*Ledger)(nil)
	_ premis.Auditor   = (*Ledger)(nil)
	_ premis.SeqWalker = (*Ledger)(nil)
)

// Ledger is a premis.Ledger in PostgreSQL.
type Ledger struct {
	// store is the reads every SQL ledger shares (Events, Walk, the
	// head and read-model checks), over this database.
	store
	pool *pgxpool.Pool
	name string // user@host:port/database, for messages (no password)

	// head is the head this ledger's last append left, for the next
	// append to chain onto without reading it first (see appendAt).
	headMu    sync.Mutex
	head      premis.Head
	headKnown bool
	headBusy  bool // an append is chaining onto head
	// After an append found the head moved by another process, the next
	// skip appends go the two-trip way at once; backoff doubles with each
	// such find in a row (up to maxBackoff), and a one-trip append that
	// commits resets it.
	skip, backoff int
	// The appends that committed in one round trip and in two, and the
	// one-trip tries that found the head moved.
	oneTrip, twoTrips, moved atomic.Int64
}

// maxBackoff bounds how many appends in a row go the two-trip way after
// one-trip tries found the head moved: with several processes appending,
// about one append in maxBackoff pays for a try that fails.
const maxBackoff = 64

// store is embedded under this name so that its methods are the Ledger's
// and its fields stay the package's.
type store = ledgersql.Store

const tables = `
CREATE TABLE lazaret_events (
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
	envelope       BYTEA,
	prev_hash      TEXT NOT NULL DEFAULT '',
	hash           TEXT NOT NULL DEFAULT '',
	members        TEXT NOT NULL DEFAULT '',
	steps          TEXT NOT NULL DEFAULT ''
);
CREATE INDEX lazaret_events_members ON lazaret_events(batch_id, type) WHERE members <> '';
CREATE INDEX lazaret_events_object ON lazaret_events(object_id);
CREATE INDEX lazaret_events_batch_seq ON lazaret_events(batch_id, seq);
CREATE INDEX lazaret_events_correlation ON lazaret_events(correlation_id);
CREATE INDEX lazaret_events_datetime ON lazaret_events(datetime);
`

// spareIndexes are the indexes of a ledger written before they went: every
// lookup by task names its correlation too (lazaret_events_correlation
// finds it), and open failures are listed through the read model
// (lazaret_latest), never by scanning the events for a class, as in the
// SQLite ledger. Each cost every append two index entries an event: an
// eighth to a fifth of the appends a second from 8 writers.
var spareIndexes = []string{"lazaret_events_task", "lazaret_events_failure"}

// batchSeqIndex replaces lazaret_events_batch (batch_id alone) in a ledger
// written before it. A batch's events are read a page at a time in seq
// order (events ls --batch, a batch's PREMIS export). With the index on
// batch_id alone, PostgreSQL gathered every event of the batch after the
// page's start and sorted them, or walked the whole ledger from there by
// seq: each page cost the rest of the batch or of the ledger
// (TestBatchPagesReadTheirPage).
const (
	batchSeqIndex = `CREATE INDEX CONCURRENTLY lazaret_events_batch_seq ON lazaret_events(batch_id, seq)`
	oldBatchIndex = "lazaret_events_batch"
)

// membersColumn holds the members of an event that records several objects
// (see premis.Member and ledgersql.EncodeMembers), added to a ledger
// written before it; lazaret_events_members finds a batch's such events.
const membersColumn = `
ALTER TABLE lazaret_events ADD COLUMN members TEXT NOT NULL DEFAULT '';
CREATE INDEX lazaret_events_members ON lazaret_events(batch_id, type) WHERE members <> '';
`

// stepsColumn holds the steps a decision's record holds beside its own
// event (see premis.Step and ledgersql.EncodeSteps), added to a ledger
// written before it. No index: a step is found through its record.
const stepsColumn = `ALTER TABLE lazaret_events ADD COLUMN steps TEXT NOT NULL DEFAULT ''`

// The chain columns, added to a ledger written before the chain.
const addChainColumns = `ALTER TABLE lazaret_events ADD COLUMN prev_hash TEXT NOT NULL DEFAULT '', ADD COLUMN hash TEXT NOT NULL DEFAULT ''`

// latestTable is the read model: each correlation's latest event with a
// destination, moved in the append's transaction (see the SQLite ledger).
const latestTable = `
CREATE TABLE lazaret_latest (
	correlation_id TEXT PRIMARY KEY,
	seq            BIGINT NOT NULL,
	destination    TEXT NOT NULL,
	batch_id       TEXT NOT NULL
);
CREATE INDEX lazaret_latest_destination ON lazaret_latest(destination, seq);
CREATE INDEX lazaret_latest_batch ON lazaret_latest(batch_id, seq);
INSERT INTO lazaret_latest (correlation_id, seq, destination, batch_id)
	SELECT DISTINCT ON (correlation_id) correlation_id, seq, destination, batch_id FROM lazaret_events
	WHERE destination <> '' ORDER BY correlation_id, seq DESC;
`

// moveLatest records the rows an INSERT of events returned (the CTE
// inserted: seq, correlation_id, destination, batch_id) that have a
// destination as their correlations' latest, in the INSERT's own statement
// (see insertRows): no second statement that finds the rows again by key.
const moveLatest = `INSERT INTO lazaret_latest (correlation_id, seq, destination, batch_id)
	SELECT DISTINCT ON (correlation_id) correlation_id, seq, destination, batch_id FROM inserted
	WHERE destination <> '' ORDER BY correlation_id, seq DESC
	ON CONFLICT (correlation_id) DO UPDATE SET seq = excluded.seq, destination = excluded.destination, batch_id = excluded.batch_id
	WHERE excluded.seq > lazaret_latest.seq`

// countsTable counts the read model's items by destination, kept by
// triggers on lazaret_latest in the append's own transaction (see the
// SQLite ledger). The trigger function is SECURITY DEFINER, its owner the
// ledger's: a writer role granted what deploy/postgres/grants.sql grants
// keeps the counts without any grant on them, and every role may read them
// (how many items wait in each destination; the rows stay the read
// model's). Rebuilt from lazaret_latest when a part of it is missing.
const countsTable = `
DROP TRIGGER IF EXISTS lazaret_latest_counts_rows ON lazaret_latest;
DROP TRIGGER IF EXISTS lazaret_latest_counts_moves ON lazaret_latest;
DROP TABLE IF EXISTS lazaret_latest_counts;
CREATE TABLE lazaret_latest_counts (
	destination TEXT PRIMARY KEY,
	n           BIGINT NOT NULL
);
CREATE OR REPLACE FUNCTION lazaret_latest_count() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $fn$
BEGIN
	IF TG_OP = 'UPDATE' OR TG_OP = 'DELETE' THEN
		UPDATE lazaret_latest_counts SET n = n - 1 WHERE destination = OLD.destination;
	END IF;
	IF TG_OP = 'UPDATE' OR TG_OP = 'INSERT' THEN
		INSERT INTO lazaret_latest_counts (destination, n) VALUES (NEW.destination, 1)
			ON CONFLICT (destination) DO UPDATE SET n = lazaret_latest_counts.n + 1;
	END IF;
	RETURN NULL;
END $fn$;
CREATE TRIGGER lazaret_latest_counts_rows AFTER INSERT OR DELETE ON lazaret_latest FOR EACH ROW EXECUTE FUNCTION lazaret_latest_count();
CREATE TRIGGER lazaret_latest_counts_moves AFTER UPDATE OF destination ON lazaret_latest FOR EACH ROW
	WHEN (OLD.destination IS DISTINCT FROM NEW.destination) EXECUTE FUNCTION lazaret_latest_count();
INSERT INTO lazaret_latest_counts (destination, n) SELECT destination, count(*) FROM lazaret_latest GROUP BY destination;
GRANT SELECT ON lazaret_latest_counts TO PUBLIC;
`

const headTable = `
CREATE TABLE lazaret_ledger_head (
	id          INTEGER PRIMARY KEY CHECK (id = 1),
	event_count BIGINT NOT NULL,
	last_hash   TEXT NOT NULL
);
`

// The trigger functions: name, body (what pg_proc.prosrc must hold) and
// what follows the body in CREATE FUNCTION.
var functions = []struct{ name, body, options string }{
	{"lazaret_events_append_only", ` BEGIN RAISE EXCEPTION 'premis ledger is append-only'; END `, ""},
	{"lazaret_ledger_head_forward", `
BEGIN
	IF NEW.id <> OLD.id OR NEW.event_count <= OLD.event_count
		OR NEW.last_hash IS DISTINCT FROM (SELECT hash FROM lazaret_events ORDER BY seq DESC LIMIT 1) THEN
		RAISE EXCEPTION 'premis ledger head only moves forward, to the last event';
	END IF;
	RETURN NEW;
END
`, " SET search_path FROM CURRENT"},
}

func functionBody(name string) string {
	for _, f := range functions {
		if f.name == name {
			return f.body
		}
	}
	panic("postgres ledger: no function " + name)
}

// pg_trigger.tgtype bits.
const (
	tgRow      = 1
	tgBefore   = 2
	tgDelete   = 8
	tgUpdate   = 16
	tgTruncate = 32
)

// guard is an append-only trigger and what pg_trigger must say of it.
type guard struct {
	name, table, timing, level, function string
	tgtype                               int
}

var guards = []guard{
	{"lazaret_events_no_change", "lazaret_events", "BEFORE UPDATE OR DELETE", "ROW", "lazaret_events_append_only", tgRow | tgBefore | tgUpdate | tgDelete},
	{"lazaret_events_no_truncate", "lazaret_events", "BEFORE TRUNCATE", "STATEMENT", "lazaret_events_append_only", tgBefore | tgTruncate},
	{"lazaret_ledger_head_no_delete", "lazaret_ledger_head", "BEFORE DELETE", "ROW", "lazaret_events_append_only", tgRow | tgBefore | tgDelete},
	{"lazaret_ledger_head_no_truncate", "lazaret_ledger_head", "BEFORE TRUNCATE", "STATEMENT", "lazaret_events_append_only", tgBefore | tgTruncate},
	{"lazaret_ledger_head_forward", "lazaret_ledger_head", "BEFORE UPDATE", "ROW", "lazaret_ledger_head_forward", tgRow | tgBefore | tgUpdate},
}

// legacyGuards is the trigger of a ledger written before the chain.
var legacyGuards = guards[:1]

func guardsSQL() string {
	var b strings.Builder
	for _, f := range functions {
		fmt.Fprintf(&b, "CREATE OR REPLACE FUNCTION %s() RETURNS trigger LANGUAGE plpgsql%s AS $fn$%s$fn$;\n", f.name, f.options, f.body)
	}
	for _, g := range guards {
		b.WriteString(g.sql())
	}
	return b.String()
}

// sql creates the trigger, ENABLE ALWAYS.
func (g guard) sql() string {
	return fmt.Sprintf("CREATE TRIGGER %s %s ON %s FOR EACH %s EXECUTE FUNCTION %s();\nALTER TABLE %s ENABLE ALWAYS TRIGGER %s;\n",
		g.name, g.timing, g.table, g.level, g.function, g.table, g.name)
}

// Open connects to the ledger at dsn (postgres://...). See the package doc
// for what Open checks, creates and migrates. Several processes may open the
// same database at once.
func Open(ctx context.Context, dsn string) (*Ledger, error) {
	l, err := connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	if err := l.prepare(ctx); err != nil {
		l.pool.Close()
		return nil, fmt.Errorf("postgres ledger %s: schema: %w", l.name, err)
	}
	if err := l.check(ctx); err != nil {
		l.pool.Close()
		return nil, err
	}
	if err := l.changeIndexes(ctx); err != nil {
		l.pool.Close()
		return nil, fmt.Errorf("postgres ledger %s: indexes: %w", l.name, err)
	}
	counted, err := l.count(ctx)
	if err != nil {
		l.pool.Close()
		return nil, fmt.Errorf("postgres ledger %s: counts: %w", l.name, err)
	}
	l.ReadModel, l.Counted = true, counted
	return l, nil
}

// count makes the read model's counts (countsTable) where they are
// missing, best effort: a role that may not create them (a writer, a
// reader) leaves them to the owner's next open, and the totals are counted
// from the read model's rows meanwhile. It says whether they exist.
func (l *Ledger) count(ctx context.Context) (bool, error) {
	st, err := inspect(ctx, l.pool)
	if err != nil || st.counts {
		return st.counts, mapErr(err)
	}
	tx, err := l.pool.Begin(ctx)
	if err != nil {
		return false, mapErr(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7271, hashtext(coalesce(current_schema(), '')))`); err != nil {
		return false, mapErr(err)
	}
	if st, err = inspect(ctx, tx); err != nil || st.counts {
		return st.counts, mapErr(err) // another process made them meanwhile
	}
	if _, err := tx.Exec(ctx, countsTable); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && (pe.Code == "42501" || pe.Code == "25006") { // insufficient privilege, read-only
			return false, nil
		}
		return false, mapErr(err)
	}
	return true, mapErr(tx.Commit(ctx))
}

// OpenAudit connects to an existing chained ledger for premis.Verify alone:
// it creates, migrates and checks nothing, so a ledger that Open refuses
// (premis.ErrTampered) can still be walked to find the damage.
func OpenAudit(ctx context.Context, dsn string) (*Ledger, error) {
	l, err := connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	st, err := inspect(ctx, l.pool)
	l.ReadModel, l.Counted, l.Syntax.BeforeMembers, l.Syntax.BeforeSteps = st.latest, st.counts, !st.members, !st.steps
	if err == nil && (!st.events || !st.chained) {
		err = fmt.Errorf("no hash chain to audit (events table %v, chain columns %v)", st.events, st.chained)
	}
	if err != nil {
		l.pool.Close()
		return nil, fmt.Errorf("postgres ledger %s: audit: %w", l.name, mapErr(err))
	}
	return l, nil
}

func connect(ctx context.Context, dsn string) (*Ledger, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres ledger: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres ledger: %w", err)
	}
	c := cfg.ConnConfig
	name := fmt.Sprintf("%s@%s:%d/%s", c.User, c.Host, c.Port, c.Database)
	if sp := c.RuntimeParams["search_path"]; sp != "" {
		name += " (search_path " + sp + ")"
	}
	l := &Ledger{pool: pool, name: name}
	l.store = store{Syntax: dialect, B: ledgersql.Backend{
		Name: "postgres ledger", Where: name,
		Events: "lazaret_events", Latest: "lazaret_latest", Head: "lazaret_ledger_head", Counts: "lazaret_latest_counts",
		Query: func(ctx context.Context, q string, args ...any) (ledgersql.Rows, error) {
			return pool.Query(ctx, q, args...)
		},
		QueryRow: func(ctx context.Context, q string, args ...any) ledgersql.Row {
			return pool.QueryRow(ctx, q, args...)
		},
		Scan:    func(r ledgersql.Row) (premis.Event, error) { return scanOne(r) },
		Damaged: func(err error) bool { var me *columnError; return errors.As(err, &me) },
		NoRows:  pgx.ErrNoRows, MapErr: mapErr,
	}}
	return l, nil
}

// state is what the database holds of the schema, on the search path.
type state struct {
	events, chained, head, latest, members, steps bool
	// counts: lazaret_latest_counts and both its triggers exist.
	counts bool
}

func inspect(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (state, error) {
	var st state
	err := q.QueryRow(ctx, `SELECT to_regclass('lazaret_events') IS NOT NULL,
		(SELECT count(*) FROM pg_attribute WHERE attrelid = to_regclass('lazaret_events')
			AND attname IN ('prev_hash', 'hash') AND NOT attisdropped) = 2,
		to_regclass('lazaret_ledger_head') IS NOT NULL,
		to_regclass('lazaret_latest') IS NOT NULL,
		EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('lazaret_events')
			AND attname = 'members' AND NOT attisdropped),
		EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('lazaret_events')
			AND attname = 'steps' AND NOT attisdropped),
		to_regclass('lazaret_latest_counts') IS NOT NULL AND (SELECT count(*) FROM pg_trigger
			WHERE tgrelid = to_regclass('lazaret_latest') AND tgname IN ('lazaret_latest_counts_rows', 'lazaret_latest_counts_moves')
			AND tgenabled <> 'D') = 2`).Scan(
		&st.events, &st.chained, &st.head, &st.latest, &st.members, &st.steps, &st.counts)
	return st, err
}

// prepare creates the schema where there is none and chains a ledger
// written before the chain, in one transaction under an advisory lock on
// the schema, so processes starting together do it once.
func (l *Ledger) prepare(ctx context.Context) error {
	tx, err := l.pool.Begin(ctx)
	if err != nil {
		return mapErr(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7271, hashtext(coalesce(current_schema(), '')))`); err != nil {
		return mapErr(err)
	}
	st, err := inspect(ctx, tx)
	if err != nil {
		return mapErr(err)
	}
	if st.events && !st.members && st.chained == st.head {
		// A ledger written before members gets the column before anything
		// here reads its events: every read selects it, migrate's chaining
		// of a ledger written before the chain too.
		if _, err := tx.Exec(ctx, membersColumn); err != nil {
			return mapErr(err)
		}
		st.members = true
	}
	if st.events && !st.steps && st.chained == st.head {
		if _, err := tx.Exec(ctx, stepsColumn); err != nil {
			return mapErr(err)
		}
		st.steps = true
	}
	switch {
	case st.events && st.chained && st.head && st.latest:
	case st.events && st.chained && st.head:
		// A ledger written before the read model: build it from the events.
		if _, err := tx.Exec(ctx, latestTable); err != nil {
			return mapErr(err)
		}
	case !st.events && !st.head:
		if _, err := tx.Exec(ctx, tables+headTable+latestTable); err != nil {
			return mapErr(err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO lazaret_ledger_head (id, event_count, last_hash) VALUES (1, 0, $1)`, premis.ChainGenesis); err != nil {
			return mapErr(err)
		}
		if _, err := tx.Exec(ctx, guardsSQL()); err != nil {
			return mapErr(err)
		}
	case st.events && !st.chained && !st.head:
		if err := l.migrate(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, latestTable); err != nil {
			return mapErr(err)
		}
	case !st.events:
		return fmt.Errorf("%w: the events table is gone, its head record is not", premis.ErrTampered)
	case st.chained:
		return fmt.Errorf("%w: the events table has a hash chain but no head record (lazaret_ledger_head)", premis.ErrTampered)
	default:
		return fmt.Errorf("%w: a head record (lazaret_ledger_head) but no hash chain in the events table", premis.ErrTampered)
	}
	if err := tx.Commit(ctx); err != nil {
		return mapErr(err)
	}
	return nil
}

// changeIndexes makes a ledger written before them drop spareIndexes and
// move onto batchSeqIndex, best effort and without holding appends up:
// each change is CONCURRENTLY, in a transaction of its own, and gives up
// after lockWait on a lock; a role that does not own the table (a writer,
// a reader), a read-only session, or another open making the changes at
// the same moment (an advisory lock) leaves them to a later open. An index
// build that fails leaves an invalid index, which this drops, and the next
// open builds again. The old batch index goes only once the new one is
// valid. The indexes make appends or pages slower, never wrong.
func (l *Ledger) changeIndexes(ctx context.Context) error {
	var seqValid *bool // nil: no lazaret_events_batch_seq
	var drop []string
	err := l.pool.QueryRow(ctx, `SELECT (SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass('lazaret_events_batch_seq')),
		ARRAY(SELECT n FROM unnest($1::text[]) n WHERE to_regclass(n) IS NOT NULL)`, slices.Concat(spareIndexes, []string{oldBatchIndex})).Scan(&seqValid, &drop)
	if err != nil {
		return mapErr(err)
	}
	if seqValid != nil && *seqValid && len(drop) == 0 {
		return nil
	}
	// A connection of its own, closed afterwards: its session settings and
	// advisory lock go with it, never back into the pool.
	conn, err := pgx.ConnectConfig(ctx, l.pool.Config().ConnConfig)
	if err != nil {
		return mapErr(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var mine bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(7272, hashtext(coalesce(current_schema(), '')))`).Scan(&mine); err != nil || !mine {
		return mapErr(err)
	}
	if _, err := conn.Exec(ctx, `SET lock_timeout = '`+lockWait+`'`); err != nil {
		return mapErr(err)
	}
	const dropSeq = `DROP INDEX CONCURRENTLY IF EXISTS lazaret_events_batch_seq`
	if seqValid == nil || !*seqValid {
		if seqValid != nil { // an earlier build's invalid index
			if done, err := bestEffort(ctx, conn, dropSeq); !done {
				return err
			}
		}
		if done, err := bestEffort(ctx, conn, batchSeqIndex); !done {
			if err == nil { // the build's invalid index
				_, err = bestEffort(ctx, conn, dropSeq)
			}
			return err
		}
	}
	for _, name := range drop {
		if _, err := bestEffort(ctx, conn, `DROP INDEX CONCURRENTLY IF EXISTS `+name); err != nil {
			return err
		}
	}
	return nil
}

// bestEffort runs stmt outside a transaction block (as CONCURRENTLY
// requires). A refusal by the database (not the owner, a read-only
// session, a lock not had in time) is not done and no error; anything
// else is the connection's error.
func bestEffort(ctx context.Context, conn *pgx.Conn, stmt string) (done bool, err error) {
	_, err = conn.Exec(ctx, stmt)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return false, nil
	}
	return err == nil, mapErr(err)
}

// lockWait bounds how long changeIndexes waits for a lock.
const lockWait = "1s"

// migrate chains a ledger written before the chain, in tx: its trigger must
// be the one it was created with; its rows are chained in seq order, a page
// at a time; the head record and today's guards are created.
func (l *Ledger) migrate(ctx context.Context, tx pgx.Tx) error {
	if err := l.checkGuards(ctx, tx, legacyGuards, true); err != nil {
		return fmt.Errorf("not chaining a ledger written before the chain: %w", err)
	}
	if _, err := tx.Exec(ctx, `DROP TRIGGER lazaret_events_no_change ON lazaret_events`); err != nil {
		return mapErr(err)
	}
	if _, err := tx.Exec(ctx, addChainColumns); err != nil {
		return mapErr(err)
	}
	head := premis.Head{Hash: premis.ChainGenesis}
	const page = 1000
	for after := int64(0); ; {
		rows, err := tx.Query(ctx, `SELECT `+ledgersql.Select+` FROM lazaret_events WHERE seq > $1 ORDER BY seq LIMIT $2`, after, page)
		if err != nil {
			return mapErr(err)
		}
		var seqs []int64
		var prevs, hashes []string
		for rows.Next() {
			e, err := scanOne(rows)
			if err != nil {
				rows.Close()
				return fmt.Errorf("a row after seq %d does not decode, not chaining it: %w", after, mapErr(err))
			}
			h := premis.ChainHash(head.Hash, &e)
			seqs, prevs, hashes = append(seqs, e.Seq), append(prevs, head.Hash), append(hashes, h)
			head = premis.Head{Count: head.Count + 1, Hash: h}
			after = e.Seq
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return mapErr(err)
		}
		if len(seqs) > 0 {
			if _, err := tx.Exec(ctx, `UPDATE lazaret_events e SET prev_hash = v.prev, hash = v.hash
				FROM unnest($1::bigint[], $2::text[], $3::text[]) AS v(seq, prev, hash) WHERE e.seq = v.seq`, seqs, prevs, hashes); err != nil {
				return mapErr(err)
			}
		}
		if len(seqs) < page {
			break
		}
	}
	if _, err := tx.Exec(ctx, headTable); err != nil {
		return mapErr(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO lazaret_ledger_head (id, event_count, last_hash) VALUES (1, $1, $2)`, head.Count, head.Hash); err != nil {
		return mapErr(err)
	}
	if _, err := tx.Exec(ctx, guardsSQL()); err != nil {
		return mapErr(err)
	}
	return nil
}

// check is what Open requires of a ledger: every guard in place, and the
// head record naming the last stored event.
func (l *Ledger) check(ctx context.Context) error {
	if err := l.Guards(ctx); err != nil {
		return err
	}
	return l.CheckHead(ctx)
}

// Guards implements premis.Auditor.
func (l *Ledger) Guards(ctx context.Context) error {
	return l.checkGuards(ctx, l.pool, guards, false)
}

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// checkGuards compares the triggers of both tables with want: present,
// enabled ALWAYS (or, for a ledger written before the chain, ORIGIN too),
// for the same events and level, calling the same function with the same
// body.
func (l *Ledger) checkGuards(ctx context.Context, q querier, want []guard, legacy bool) error {
	name := l.name
	rows, err := q.Query(ctx, `SELECT c.relname::text, t.tgname::text, t.tgenabled::text, t.tgtype::int, p.proname::text, p.prosrc
		FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_proc p ON p.oid = t.tgfoid
		WHERE t.tgrelid IN (to_regclass('lazaret_events'), to_regclass('lazaret_ledger_head')) AND NOT t.tgisinternal`)
	if err != nil {
		return fmt.Errorf("postgres ledger %s: guards: %w", name, mapErr(err))
	}
	type trigger struct {
		table, enabled, function, body string
		tgtype                         int
	}
	have := map[string]trigger{}
	for rows.Next() {
		var n string
		var t trigger
		if err := rows.Scan(&t.table, &n, &t.enabled, &t.tgtype, &t.function, &t.body); err != nil {
			rows.Close()
			return fmt.Errorf("postgres ledger %s: guards: %w", name, mapErr(err))
		}
		have[n] = t
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("postgres ledger %s: guards: %w", name, mapErr(err))
	}
	names := make([]string, len(want))
	found := map[string]string{}
	for i, g := range want {
		names[i] = g.name
		t, ok := have[g.name]
		switch {
		case !ok:
		case t.enabled == "D":
			found[g.name] = "disabled"
		case t.enabled == "R" || (t.enabled == "O" && !legacy):
			found[g.name] = "not ENABLE ALWAYS (session_replication_role would switch it off)"
		case t.table != g.table || t.tgtype != g.tgtype || t.function != g.function || ledgersql.Squeeze(t.body) != ledgersql.Squeeze(functionBody(g.function)):
			found[g.name] = "altered"
		default:
			found[g.name] = ""
		}
	}
	return l.CheckGuards(names, found)
}

// RecordedHead implements premis.Auditor.
func (l *Ledger) RecordedHead(ctx context.Context) (premis.Head, bool, error) {
	st, err := inspect(ctx, l.pool)
	if err != nil {
		return premis.Head{}, false, fmt.Errorf("postgres ledger: head: %w", mapErr(err))
	}
	if !st.head {
		return premis.Head{}, false, nil
	}
	return l.HeadRecord(ctx)
}

// rowsPerInsert bounds the events one INSERT writes (35 arguments each, of
// PostgreSQL's 65,535): an append's events go in as few statements as
// that allows, each a parse, plan and executor start less on the server
// than one an event.
const rowsPerInsert = 64

// insertRows is the INSERT of n events (1 to rowsPerInsert), returning each
// one's seq by id, that also moves the read model onto those with a
// destination (moveLatest). Each text is rendered once, on first use, not
// on every append: n×35 placeholders formatted again for every commit.
func insertRows(n int) string { return insertSQL[n]() }

var insertSQL = func() (f [rowsPerInsert + 1]func() string) {
	for n := 1; n <= rowsPerInsert; n++ {
		f[n] = sync.OnceValue(func() string {
			return "WITH inserted AS (" + ledgersql.InsertRows("lazaret_events", n, pgPlaceholder) +
				" RETURNING seq, id, correlation_id, destination, batch_id), moved AS (" + moveLatest + ")\nSELECT seq, id FROM inserted"
		})
	}
	return f
}()

// readSeqs reads the seq of each of the events at ins from the result of
// their insertRows, into chain.
func readSeqs(br pgx.BatchResults, events []*premis.Event, ins []int, chain *ledgersql.Chain) error {
	rows, err := br.Query()
	if err != nil {
		return fmt.Errorf("postgres ledger: append: %w", mapErr(err))
	}
	defer rows.Close()
	seqs := make(map[string]int64, len(ins))
	for rows.Next() {
		var seq int64
		var id uuid.UUID
		if err := rows.Scan(&seq, &id); err != nil {
			return fmt.Errorf("postgres ledger: append: %w", mapErr(err))
		}
		seqs[id.String()] = seq
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("postgres ledger: append: %w", mapErr(err))
	}
	for _, i := range ins {
		seq, ok := seqs[events[i].ID]
		if !ok {
			return fmt.Errorf("postgres ledger: append %s: no seq returned for event %s", events[i].Type, events[i].ID)
		}
		chain.SetSeq(i, seq)
	}
	return nil
}

// Append implements premis.Ledger. An append chains onto the head the
// ledger's last append left, in one round trip that fails as a whole if
// the head has moved since or a key is stored already (appendAt); then, or
// with no head known yet or another append chaining onto it, it reads the
// head and the stored keys first, in two (appendOn).
func (l *Ledger) Append(ctx context.Context, events ...*premis.Event) ([]bool, error) {
	return l.append(ctx, nil, events)
}

var _ premis.FirstAppender = (*Ledger)(nil)

// AppendsFirst implements premis.FirstAppender: a ledger with its read
// model (every ledger Open gives) checks a first delivery.
func (l *Ledger) AppendsFirst() bool { return l.ReadModel }

// AppendFirst implements premis.FirstAppender: Append, with the read
// model's rows of the items checked in the same round trip, once the head
// is held (see firstsHeld), so that no append can come between.
func (l *Ledger) AppendFirst(ctx context.Context, firsts []premis.FirstDelivery, events ...*premis.Event) ([]bool, error) {
	if !l.ReadModel {
		return nil, errors.New("postgres ledger: no read model to check a first delivery against")
	}
	return l.append(ctx, firsts, events)
}

func (l *Ledger) append(ctx context.Context, firsts []premis.FirstDelivery, events []*premis.Event) ([]bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	if err := premis.Prepare(events...); err != nil {
		return nil, fmt.Errorf("postgres ledger: %w", err)
	}
	for _, e := range events {
		// The id is hashed as it will be read back: the canonical UUID.
		if u, err := uuid.Parse(e.ID); err == nil {
			e.ID = u.String()
		}
	}
	firsts = distinctFirsts(firsts)
	conn, err := l.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres ledger: begin: %w", mapErr(err))
	}
	defer conn.Release() // destroys a connection left in a transaction
	c := conn.Conn()
	inserted, err := l.appendAt(ctx, c, firsts, events)
	if err == nil {
		l.oneTrip.Add(1)
		return inserted, nil
	}
	// Not in appendOn's batch: a statement this connection has not
	// prepared yet is prepared first, which an aborted transaction refuses.
	rollback(ctx, c)
	if !errors.Is(err, errHeadMoved) {
		return nil, l.readOnly(err)
	}
	inserted, head, err := appendOn(ctx, c, firsts, events)
	if err != nil {
		rollback(ctx, c)
		return nil, l.readOnly(err)
	}
	l.headMu.Lock()
	if !l.headBusy {
		l.head, l.headKnown = head, true
	}
	l.headMu.Unlock()
	l.twoTrips.Add(1)
	return inserted, nil
}

// readOnly passes err on. When the server refused
// the write as read-only (SQLSTATE 25006: a primary demoted to a standby,
// pg_is_in_recovery, or default_transaction_read_only), every pooled
// connection is dropped first: they all lead to that server, and a new
// one, dialled through a multi-host URL with target_session_attrs=
// read-write, finds the writable primary. The caller (premis.ErrBusy)
// waits and tries again.
func (l *Ledger) readOnly(err error) error {
	var pe *pgconn.PgError
	if errors.Is(err, errReadOnly) || (errors.As(err, &pe) && pe.Code == readOnlyTransaction) {
		l.pool.Reset()
	}
	return err
}

// distinctFirsts is firsts without repeats, each counted once by the
// check (see firstsHeld).
func distinctFirsts(firsts []premis.FirstDelivery) []premis.FirstDelivery {
	if len(firsts) < 2 {
		return firsts
	}
	seen := make(map[premis.FirstDelivery]bool, len(firsts))
	out := make([]premis.FirstDelivery, 0, len(firsts))
	for _, f := range firsts {
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out
}

// firstsArgs are the arguments of firstsHeld and firstsFound.
func firstsArgs(firsts []premis.FirstDelivery) []any {
	corr, task := make([]string, len(firsts)), make([]string, len(firsts))
	for i, f := range firsts {
		corr[i], task[i] = f.CorrelationID, f.TaskID
	}
	return []any{corr, task, len(firsts)}
}

// firstsFound counts the premis.FirstDelivery conditions that hold: the
// item's row in the read model is its submission (the latest event with a
// destination), by that task. $3, the number of conditions, is unused
// here; it is firstsHeld's.
const firstsFound = `SELECT count(*), $3::int FROM unnest($1::text[], $2::text[]) AS f(correlation_id, task_id)
	JOIN lazaret_latest l ON l.correlation_id = f.correlation_id
	JOIN lazaret_events e ON e.seq = l.seq
	WHERE l.destination = '` + string(premis.Submitted) + `' AND e.task_id = f.task_id`

// firstsHeld fails the transaction, by a division by zero as holdHead
// does, unless every condition holds. Sent after holdHead: the head's row
// lock orders it after every append that committed before, and before
// every one after.
const firstsHeld = `SELECT 1 / (n = want)::int FROM (` + firstsFound + `) AS found(n, want)`

// rollback ends the transaction a failed append left open on c, if any.
func rollback(ctx context.Context, c *pgx.Conn) {
	if c.PgConn().TxStatus() == 'I' {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	c.Exec(rctx, "ROLLBACK")
	cancel()
}

// errHeadMoved: an append in one round trip knew no head, found it
// elsewhere or found a key stored already, and wrote nothing; the append
// reads the head and the keys and goes again.
var errHeadMoved = errors.New("postgres ledger: head moved")

// holdHead locks the head record only if it is still the one the append
// chains onto, and fails the transaction otherwise: the count is 0 when
// another append has moved it (under READ COMMITTED a locked row changed by
// a transaction that committed meanwhile is checked again in its new
// version) and the division by zero aborts everything sent after it.
const holdHead = `SELECT 1 / count(*) FROM (SELECT 1 FROM lazaret_ledger_head
	WHERE id = 1 AND event_count = $1 AND last_hash = $2 FOR UPDATE) AS head`

// appendAt appends events in one round trip — begin, hold the head if it
// is still the one expected, insert, move the head and the read model,
// commit — chained onto l.head, the head this Ledger's last append left.
// The head's row lock is held only while the server runs those
// statements, never across a round trip to the client.
//
// One append at a time goes this way: appends sent together on several
// connections meet the server in any order, so all but one would find the
// head elsewhere. The others, and an append while the Ledger knows no head,
// return errHeadMoved at once. So does one that finds the head moved
// (another process appended) or an event's key or id stored already: its
// transaction fails before anything commits, and it forgets l.head. After
// a moved head the next appends go the two-trip way at once (see skip),
// so that processes appending side by side do not each pay a failed try
// an append.
func (l *Ledger) appendAt(ctx context.Context, conn *pgx.Conn, firsts []premis.FirstDelivery, events []*premis.Event) ([]bool, error) {
	l.headMu.Lock()
	if !l.headKnown || l.headBusy || l.skip > 0 {
		l.skip = max(0, l.skip-1)
		l.headMu.Unlock()
		return nil, errHeadMoved
	}
	head := l.head
	l.headBusy = true
	l.headMu.Unlock()
	chain := ledgersql.NewChain(head, events)
	inserted, err := func() ([]bool, error) {
		b := &pgx.Batch{}
		b.Queue(`BEGIN ISOLATION LEVEL READ COMMITTED`)
		b.Queue(noSeqScan)
		b.Queue(holdHead, head.Count, head.Hash)
		lead := 3
		if len(firsts) > 0 {
			b.Queue(firstsHeld, firstsArgs(firsts)...)
			lead++
		}
		first, ins, err := queueInserts(b, chain, events, nil)
		if err != nil {
			return nil, err
		}
		if err := readInserts(conn.SendBatch(ctx, b), chain, events, ins, lead); err != nil {
			return nil, err
		}
		return done(chain, events, first), nil
	}()
	var pe *pgconn.PgError
	errors.As(err, &pe)
	var le *leadError
	// A division by zero in firstsHeld (the fourth statement), not in
	// holdHead: the head was held as expected, and some item has a history.
	notFirst := pe != nil && pe.Code == "22012" && errors.As(err, &le) && le.n == 3
	moved := pe != nil && pe.Code == "22012" && !notFirst
	l.headMu.Lock()
	l.head, l.headKnown, l.headBusy = chain.Head, err == nil, false
	if notFirst {
		l.head, l.headKnown = head, true // nothing written: the head stays
	}
	switch {
	case err == nil:
		l.backoff = 0
	case moved:
		l.backoff = min(max(1, 2*l.backoff), maxBackoff)
		l.skip = l.backoff
	}
	l.headMu.Unlock()
	if moved {
		l.moved.Add(1)
	}
	if notFirst {
		return nil, fmt.Errorf("postgres ledger: %w", premis.ErrNotFirst)
	}
	if moved || pe != nil && pe.Code == "23505" {
		return nil, errHeadMoved
	}
	return inserted, err
}

// noSeqScan keeps the append's lookups on their indexes. pgx prepares each
// statement once a connection, and after five runs PostgreSQL may plan it
// once for all values: for "key = ANY($1)" (an array of unknown length) on
// a young ledger, that generic plan is a sequential scan, kept until the
// table is next analyzed or the connection closes, so that each append
// read the whole table (TestAppendsUseTheKeyIndex). Every lookup of an
// append is by key, seq or id, so it never wants one.
const noSeqScan = `SET LOCAL enable_seqscan = off`

// appendOn appends events in two round trips. The first begins the
// transaction, locks and reads the head and reads back the events whose
// keys are stored already; the second inserts the new events chained onto
// the head, moves the head and commits. The row lock on the head, held to
// commit, orders appends, so nothing can be stored between the read-back
// and the inserts; any conflict (an id stored under another key) aborts the
// whole transaction. It returns the head the append leaves.
func appendOn(ctx context.Context, conn *pgx.Conn, firsts []premis.FirstDelivery, events []*premis.Event) ([]bool, premis.Head, error) {
	keys := make([]string, len(events))
	for i, e := range events {
		keys[i] = e.Key
	}
	b := &pgx.Batch{}
	b.Queue(`BEGIN ISOLATION LEVEL READ COMMITTED`)
	b.Queue(noSeqScan)
	b.Queue(`SELECT event_count, last_hash FROM lazaret_ledger_head WHERE id = 1 FOR UPDATE`)
	if len(firsts) > 0 {
		b.Queue(firstsFound, firstsArgs(firsts)...)
	}
	b.Queue(`SELECT `+ledgersql.Select+` FROM lazaret_events WHERE key = ANY($1)`, keys)
	var head premis.Head
	stored := map[string]premis.Event{}
	err := func() error {
		br := conn.SendBatch(ctx, b)
		defer br.Close()
		for range 2 { // BEGIN, noSeqScan
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("postgres ledger: begin: %w", mapErr(err))
			}
		}
		err := br.QueryRow().Scan(&head.Count, &head.Hash)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("postgres ledger: %w: the head record is gone", premis.ErrTampered)
		}
		if err != nil {
			return fmt.Errorf("postgres ledger: head: %w", mapErr(err))
		}
		if len(firsts) > 0 {
			var found, want int
			if err := br.QueryRow().Scan(&found, &want); err != nil {
				return fmt.Errorf("postgres ledger: first delivery: %w", mapErr(err))
			}
			if found != want {
				return fmt.Errorf("postgres ledger: %w", premis.ErrNotFirst)
			}
		}
		rows, err := br.Query()
		if err != nil {
			return fmt.Errorf("postgres ledger: read back: %w", mapErr(err))
		}
		defer rows.Close()
		for rows.Next() {
			e, err := scanOne(rows)
			if err != nil {
				return fmt.Errorf("postgres ledger: read back: %w", mapErr(err))
			}
			stored[e.Key] = e
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("postgres ledger: read back: %w", mapErr(err))
		}
		rows.Close()
		if err := br.Close(); err != nil {
			return mapErr(err)
		}
		return nil
	}()
	if err != nil {
		return nil, head, err
	}

	chain := ledgersql.NewChain(head, events)
	b = &pgx.Batch{}
	first, ins, err := queueInserts(b, chain, events, stored)
	if err != nil {
		return nil, head, err
	}
	if err := readInserts(conn.SendBatch(ctx, b), chain, events, ins, 0); err != nil {
		return nil, head, err
	}
	return done(chain, events, first), chain.Head, nil
}

// queueInserts queues on b the inserts of the events chained onto the
// chain's head, then the head's move and the read model's, then COMMIT.
// An event whose key is stored already takes the stored event's place; one
// whose key an earlier event of this append holds is filled in from it
// (see done). It returns that first event of each key and the events it
// inserts.
func queueInserts(b *pgx.Batch, chain *ledgersql.Chain, events []*premis.Event, stored map[string]premis.Event) (map[string]int, []int, error) {
	first := map[string]int{} // key → the event of this call that inserts it
	var ins []int
	var args []any // of the inserted events, in order
	for i, e := range events {
		if s, ok := stored[e.Key]; ok {
			*e = s
			continue
		}
		if _, ok := first[e.Key]; ok {
			continue // filled in from the first once stored
		}
		first[e.Key] = i
		var hash string
		var err error
		if args, hash, err = chain.Row(args, i, dialect); err != nil {
			return nil, nil, fmt.Errorf("postgres ledger: %w", err)
		}
		chain.Link(i, 0, hash) // its seq comes back from the insert
		ins = append(ins, i)
	}
	const perRow = ledgersql.NumColumns + 2
	for from := 0; from < len(ins); from += rowsPerInsert {
		n := min(rowsPerInsert, len(ins)-from)
		b.Queue(insertRows(n), args[from*perRow:(from+n)*perRow]...)
	}
	if len(ins) > 0 {
		b.Queue(`UPDATE lazaret_ledger_head SET event_count = $1, last_hash = $2 WHERE id = 1`, chain.Head.Count, chain.Head.Hash)
	}
	b.Queue(`COMMIT`)
	return first, ins, nil
}

// readInserts reads the results of a batch queueInserts queued after lead
// statements of its own: each inserted event's seq into chain.
func readInserts(br pgx.BatchResults, chain *ledgersql.Chain, events []*premis.Event, ins []int, lead int) error {
	defer br.Close()
	for n := range lead {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("postgres ledger: begin: %w", &leadError{n, mapErr(err)})
		}
	}
	for from := 0; from < len(ins); from += rowsPerInsert {
		if err := readSeqs(br, events, ins[from:min(from+rowsPerInsert, len(ins))], chain); err != nil {
			return err
		}
	}
	if len(ins) > 0 {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("postgres ledger: head: %w", mapErr(err))
		}
	}
	if _, err := br.Exec(); err != nil {
		return fmt.Errorf("postgres ledger: commit: %w", mapErr(err))
	}
	return mapErr(br.Close())
}

// leadError is the error of the lead statement n (0-based) of a batch
// readInserts reads.
type leadError struct {
	n   int
	err error
}

func (e *leadError) Error() string { return e.err.Error() }
func (e *leadError) Unwrap() error { return e.err }

// done hands the committed events their chain fields and each event that
// repeated a key the event first inserted under it, and says which were
// inserted.
func done(chain *ledgersql.Chain, events []*premis.Event, first map[string]int) []bool {
	inserted := chain.Done()
	for i, e := range events {
		if j, ok := first[e.Key]; ok && !inserted[i] {
			*e = *events[j] // j < i: filled in already
		}
	}
	return inserted
}

func pgPlaceholder(n int) string { return fmt.Sprintf("$%d", n) }

// dialect is PostgreSQL's spelling of what ledgersql renders.
var dialect = ledgersql.Dialect{
	Placeholder: pgPlaceholder,
	Time:        func(t time.Time) any { return t },
	Contains:    func(col, arg string) string { return "strpos(" + col + ", " + arg + ") > 0" },
}

// Event implements premis.Ledger.
func (l *Ledger) Event(ctx context.Context, id string) (premis.Event, error) {
	if _, err := uuid.Parse(id); err != nil {
		return premis.Event{}, fmt.Errorf("%w: %s", premis.ErrNotFound, id)
	}
	return l.store.Event(ctx, id)
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

// scanOne reads one row of ledgersql.Select.
func scanOne(row pgx.Row) (premis.Event, error) {
	var e premis.Event
	var id uuid.UUID
	var typ, outcome, class, dest string
	var off *int64
	var page *int32
	var seg, el, comp, attempt, retries int32
	var members, steps string
	err := row.Scan(&e.Seq, &e.PrevHash, &e.Hash, &id, &e.Key, &typ, &e.DateTime, &e.Detail, &outcome, &e.Note, &class, &e.Code, &e.Message, &off, &page,
		&seg, &el, &comp, &e.Tag, &dest, &e.ObjectID, &e.BatchID, &e.CorrelationID, &e.Kind, &e.SHA256, &e.Size, &e.PUID, &e.Path,
		&attempt, &retries, &e.TaskID, &e.ReplayOf, &e.Agent, &e.Operator, &e.Envelope, &members, &steps)
	if err != nil {
		return e, err
	}
	e.Members, err = ledgersql.DecodeMembers(members)
	if err == nil {
		e.Steps, err = ledgersql.DecodeSteps(steps, &e)
	}
	if err == nil {
		e.Envelope, err = ledgersql.DecodeEnvelope(e.Envelope, &e)
	}
	if err != nil {
		err = &columnError{err}
	}
	e.ID, e.Type, e.Outcome, e.Class, e.Destination = id.String(), premis.EventType(typ), premis.Outcome(outcome), premis.Class(class), premis.Destination(dest)
	e.DateTime = e.DateTime.UTC()
	e.Offset = off
	if page != nil {
		p := int(*page)
		e.Page = &p
	}
	e.Segment, e.Element, e.Component, e.Attempt, e.Retries = int(seg), int(el), int(comp), int(attempt), int(retries)
	return e, err
}

// columnError: the members, steps or envelope column holds what the
// ledger never writes. The rest of the row is read; Walk hands it on with
// the error.
type columnError struct{ err error }

func (e *columnError) Error() string { return e.err.Error() }

// mapErr turns conditions worth retrying (a connection that failed, a
// serialization failure, a deadlock, too many connections, a server
// shutting down, a disk full, a primary that became read-only or a
// standby: 25006 read_only_sql_transaction) into premis.ErrBusy, so the
// classifier sees a transient condition and the workers wait for the
// ledger instead of spending routing budgets.
// readOnlyTransaction is SQLSTATE 25006: a write on a read-only
// transaction (default_transaction_read_only, or a server in recovery).
const readOnlyTransaction = "25006"

// errReadOnly marks a write the server refused as read-only (see
// Ledger.readOnly).
var errReadOnly = errors.New("the server is read-only (a standby, or default_transaction_read_only): waiting for a writable primary")

func mapErr(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case readOnlyTransaction:
			return fmt.Errorf("%w: %w: %v", premis.ErrBusy, errReadOnly, err)
		case "40001", "40P01", "53300", "57P01", "57P02", "57P03", "08000", "08003", "08006", "53100":
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

var _ premis.LatestEachLookup = (*Ledger)(nil)

// LatestOfEach implements premis.LatestEachLookup: the read model's rows
// of several items in one round trip, so that a worker's handlers, each
// asking for its item's row at the start of a delivery, share one.
func (l *Ledger) LatestOfEach(ctx context.Context, correlationIDs []string) (map[string]premis.Latest, error) {
	return l.LatestOfAll(ctx, correlationIDs)
}
