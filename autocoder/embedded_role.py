"""The embedded PostgreSQL's role for the portal: no superuser rights.

A superuser connection could drop the audit log's triggers, read the server's files or run
programs (COPY ... PROGRAM). The portal connects as `config.EMBEDDED_APP_ROLE` instead: it owns
the portal's database and its tables (it runs the migrations), may create databases (the test
suite's), and nothing more. pgvector cannot be created by such a role, so the superuser creates
it here, also in template1, from which new databases (the tests') inherit it.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

# Idempotent: run on every start, it also hands over the tables an older installation created
# as the superuser (identity sequences follow their tables; extension members stay).
HAND_OVER_SQL = """
DO $$
DECLARE r record;
BEGIN
    FOR r IN
        SELECT c.oid::regclass AS name, c.relkind FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm', 'S')
          AND c.relowner = (SELECT oid FROM pg_roles WHERE rolname = current_user)
          AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass
                          AND d.objid = c.oid AND d.deptype IN ('e', 'a', 'i'))
    LOOP
        EXECUTE format('ALTER %s %s OWNER TO %I',
                       CASE r.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'
                                      WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END,
                       r.name, %(role)s);
    END LOOP;
END $$;
"""


def database_role_ensure(*, superuser_url: str, role: str, database: str) -> None:
    """Create `role` (login, no superuser) and make it the owner of `database` and its tables."""
    with psycopg.connect(superuser_url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role]).fetchone()
        if not exists:
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEROLE CREATEDB")
                         .format(sql.Identifier(role)))
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(sql.SQL("ALTER DATABASE {} OWNER TO {}").format(
            sql.Identifier(database), sql.Identifier(role)))
        conn.execute(sql.SQL(HAND_OVER_SQL.replace("%(role)s", "{}")).format(sql.Literal(role)))
    template_url = superuser_url.rsplit("/", 1)[0] + "/template1"
    with psycopg.connect(template_url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
