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
