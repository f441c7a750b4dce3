#!/usr/bin/env bash
# The portal's PostgreSQL role, without superuser rights (docs/operating.md, "The database role").
#
# The postgres image runs this once, on its first start with an empty data directory, as the
# superuser POSTGRES_USER over the local socket. It creates the role APP_DB_USER (password
# APP_DB_PASSWORD; it may log in and nothing more), makes it the owner of the database POSTGRES_DB
# (created if missing), and creates the pgvector extension there as the superuser, which the role
# could not. It is idempotent: an installation whose data directory predates it runs it by hand
#   docker compose exec postgres bash /docker-entrypoint-initdb.d/10-autocoder-role.sh
# which also hands over the tables and functions the superuser owns in the database's public
# schema. The values reach SQL only as psql variables (:'literal', :"identifier"), read with
# \getenv, so no name or password is pasted into SQL text or shown on a command line.
set -e

: "${POSTGRES_USER:?POSTGRES_USER (the superuser) is not set}"
: "${POSTGRES_DB:?POSTGRES_DB (the portal database) is not set}"
: "${APP_DB_USER:?APP_DB_USER (the portal role) is not set}"
: "${APP_DB_PASSWORD:?set APP_DB_PASSWORD in .env}"

psql -v ON_ERROR_STOP=1 --no-psqlrc --no-password --quiet \
    --username "$POSTGRES_USER" --dbname postgres <<'SQL'
\getenv app_user APP_DB_USER
\getenv app_password APP_DB_PASSWORD
\getenv app_db POSTGRES_DB
SELECT :'app_user' = current_user AS app_is_superuser_account \gset
\if :app_is_superuser_account
DO $$ BEGIN
    RAISE EXCEPTION 'APP_DB_USER names the superuser POSTGRES_USER; the portal needs its own role';
END $$;
\endif
SELECT NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'app_user') AS role_missing \gset
\if :role_missing
CREATE ROLE :"app_user";
\endif
-- Also on a re-run: an existing role loses any rights it had beyond logging in.
ALTER ROLE :"app_user" WITH LOGIN NOSUPERUSER NOCREATEROLE NOCREATEDB NOREPLICATION NOBYPASSRLS
    PASSWORD :'app_password';
SELECT NOT EXISTS (SELECT FROM pg_database WHERE datname = :'app_db') AS db_missing \gset
\if :db_missing
CREATE DATABASE :"app_db" OWNER :"app_user";
\endif
ALTER DATABASE :"app_db" OWNER TO :"app_user";
SQL

psql -v ON_ERROR_STOP=1 --no-psqlrc --no-password --quiet \
    --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" <<'SQL'
\getenv app_user APP_DB_USER
\getenv app_db POSTGRES_DB
CREATE EXTENSION IF NOT EXISTS vector;
-- Hand over what the superuser created in public (an installation older than this script):
-- tables, views and free sequences (identity and serial sequences follow their tables), then
-- functions (the audit triggers'); the extension's own objects stay the superuser's.
SELECT format('ALTER %s %s OWNER TO %I',
              CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'
                             WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END,
              c.oid::regclass, :'app_user')
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm', 'S')
  AND c.relowner = (SELECT oid FROM pg_roles WHERE rolname = current_user)
  AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_class'::regclass
                  AND d.objid = c.oid AND d.deptype IN ('e', 'a', 'i'))
\gexec
SELECT format('ALTER ROUTINE %s OWNER TO %I', p.oid::regprocedure, :'app_user')
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = 'public'
  AND p.proowner = (SELECT oid FROM pg_roles WHERE rolname = current_user)
  AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass
                  AND d.objid = p.oid AND d.deptype = 'e')
\gexec
\echo autocoder: the role :app_user (no superuser rights) owns the database :app_db (pgvector)
SQL
