-- Lazaret's PostgreSQL ledger: what the writer and the reader may do. Step 3
-- of deploy/postgres/roles.sql; run it as the owner (or a superuser) after
-- the ledger was opened once as the owner:
--
--   psql -f deploy/postgres/grants.sql
--
-- Names are psql variables: -v schema=... -v writer=... -v reader=...

\if :{?schema}
\else
  \set schema lazaret
\endif
\if :{?writer}
\else
  \set writer lazaret_writer
\endif
\if :{?reader}
\else
  \set reader lazaret_reader
\endif

GRANT USAGE ON SCHEMA :"schema" TO :"writer", :"reader";

-- Append: insert events, draw their seq, read them back.
GRANT SELECT, INSERT ON :"schema".lazaret_events TO :"writer";
GRANT USAGE ON SEQUENCE :"schema".lazaret_events_seq_seq TO :"writer";
-- Move the head: SELECT ... FOR UPDATE and UPDATE need UPDATE; its trigger
-- lets the head only move forward, to the last stored event.
GRANT SELECT, UPDATE ON :"schema".lazaret_ledger_head TO :"writer";
-- The read model (each item's latest outcome) moves in the same
-- transaction; it is derived from the events, and ledger verify checks it.
GRANT SELECT, INSERT, UPDATE ON :"schema".lazaret_latest TO :"writer";

GRANT SELECT ON :"schema".lazaret_events, :"schema".lazaret_ledger_head, :"schema".lazaret_latest TO :"reader";
-- The read model's counts by destination (a listing's total) are kept by a
-- SECURITY DEFINER trigger as the owner, and readable by every role: no
-- grant is needed on lazaret_latest_counts.

-- Not granted, on purpose: UPDATE, DELETE, TRUNCATE, TRIGGER, REFERENCES on
-- lazaret_events; DELETE, TRUNCATE, TRIGGER on lazaret_ledger_head; CREATE
-- on the schema; membership in the owner role.
