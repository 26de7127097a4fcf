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
