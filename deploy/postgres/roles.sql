-- Lazaret's PostgreSQL ledger: the roles. See the doc of package
-- premis/postgres ("Roles") for why.
--
-- Step 1, once, as a superuser (or a role with CREATEROLE), in the ledger's
-- database:
--
--   psql -v writer_password=... -f deploy/postgres/roles.sql
--
-- Step 2: open the ledger once as the owner, which creates the tables, the
-- trigger functions and the triggers; e.g. as a member of lazaret_owner
-- (the role parameter is sent at connection start, like SET ROLE):
--
--   lazaret ledger verify --ledger 'postgres://dba@db/lazaret?search_path=lazaret&role=lazaret_owner'
--
-- Step 3: deploy/postgres/grants.sql gives the writer and the reader what
-- they may do, and nothing else.
--
-- Workers and the CLI then log in as lazaret_writer:
--
--   LAZARET_LEDGER='postgres://lazaret_writer:...@db/lazaret'
--
-- Names are psql variables: -v schema=... -v owner=... -v writer=... -v reader=...

\if :{?schema}
\else
  \set schema lazaret
\endif
\if :{?owner}
\else
  \set owner lazaret_owner
\endif
\if :{?writer}
\else
  \set writer lazaret_writer
\endif
\if :{?reader}
\else
  \set reader lazaret_reader
\endif
\if :{?writer_password}
\else
  \echo 'set the writer''s password: psql -v writer_password=... -f roles.sql'
  \quit
\endif

-- The owner owns the schema and everything in it; nobody logs in as it.
CREATE ROLE :"owner" NOLOGIN;
-- The writer appends: SELECT and INSERT, never UPDATE, DELETE, TRUNCATE or
-- TRIGGER on the events; not a member of the owner.
CREATE ROLE :"writer" LOGIN PASSWORD :'writer_password';
-- The reader verifies and exports.
CREATE ROLE :"reader" NOLOGIN;

CREATE SCHEMA :"schema" AUTHORIZATION :"owner";
-- Nobody but the owner creates objects in the schema (or in public: the
-- default since PostgreSQL 15; run this on older servers).
REVOKE CREATE ON SCHEMA public FROM PUBLIC;

ALTER ROLE :"writer" SET search_path = :"schema";
ALTER ROLE :"reader" SET search_path = :"schema";
