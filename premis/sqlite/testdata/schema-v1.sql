-- The SQLite ledger's schema before events_item (lazaret up to 8a089e5): the
-- key unique by itself, indexes on correlation_id and task_id, and the replace
-- guard testing the key alone. Read by TestMovesLedgerOntoItemIndex.
CREATE TABLE events (
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
	envelope       BLOB,
	prev_hash      TEXT NOT NULL DEFAULT '',
	hash           TEXT NOT NULL DEFAULT ''
);
CREATE INDEX events_object ON events(object_id);
CREATE INDEX events_batch ON events(batch_id);
CREATE INDEX events_correlation ON events(correlation_id);
CREATE INDEX events_task ON events(task_id);
CREATE INDEX events_failure ON events(class, destination);
CREATE INDEX events_datetime ON events(datetime);
CREATE TABLE ledger_head (
	id          INTEGER PRIMARY KEY CHECK (id = 1),
	event_count INTEGER NOT NULL,
	last_hash   TEXT NOT NULL
);
CREATE TABLE latest (
	correlation_id TEXT PRIMARY KEY,
	seq            INTEGER NOT NULL,
	destination    TEXT NOT NULL,
	batch_id       TEXT NOT NULL
);
CREATE INDEX latest_destination ON latest(destination, seq);
CREATE INDEX latest_batch ON latest(batch_id, seq);
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'premis ledger is append-only'); END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'premis ledger is append-only'); END;
CREATE TRIGGER events_no_replace BEFORE INSERT ON events
WHEN EXISTS (SELECT 1 FROM events WHERE seq = NEW.seq OR key = NEW.key OR id = NEW.id)
BEGIN SELECT RAISE(IGNORE); END;
CREATE TRIGGER ledger_head_no_delete BEFORE DELETE ON ledger_head
BEGIN SELECT RAISE(ABORT, 'premis ledger head is append-only'); END;
CREATE TRIGGER ledger_head_one_row BEFORE INSERT ON ledger_head
WHEN EXISTS (SELECT 1 FROM ledger_head)
BEGIN SELECT RAISE(ABORT, 'premis ledger head is append-only'); END;
CREATE TRIGGER ledger_head_forward BEFORE UPDATE ON ledger_head
WHEN NEW.id IS NOT OLD.id OR NEW.event_count <= OLD.event_count
	OR NEW.last_hash IS NOT (SELECT hash FROM events ORDER BY seq DESC LIMIT 1)
BEGIN SELECT RAISE(ABORT, 'premis ledger head only moves forward, to the last event'); END;
