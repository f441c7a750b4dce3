"""Moving teams (and Project) between apps moved no row: the migrations that did it change
Django's state only, and the tables keep their names (docs/development.md, "Layers")."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from django.apps import apps
from django.core.management import call_command

# (app, migration) of the moves: teams 0001, the foreign keys of the other apps, the deletions
# from the projects app's state, and Project's move to the runs app.
STATE_ONLY = [
    ("teams", "0001_initial"),
    ("lessons", "0004_team_in_teams_app"),
    ("llm", "0005_team_in_teams_app"),
    ("marketplace", "0008_team_in_teams_app"),
    ("runs", "0005_team_in_teams_app"),
    ("tools", "0003_team_in_teams_app"),
    ("projects", "0017_team_models_to_teams_app"),
    ("runs", "0006_project_from_projects_app"),
    ("projects", "0018_project_to_runs_app"),
]

MOVED_TABLES = {
    ("teams", "Team"): "projects_team",
    ("teams", "Membership"): "projects_membership",
    ("teams", "SiteTeamSettings"): "projects_siteteamsettings",
    ("teams", "Invitation"): "projects_invitation",
    ("teams", "AuditEntry"): "projects_auditentry",
    ("teams", "Notification"): "projects_notification",
    ("runs", "Project"): "projects_project",
}


@pytest.mark.django_db
@pytest.mark.parametrize(("app", "migration"), STATE_ONLY)
def test_the_moves_run_no_sql(app: str, migration: str) -> None:
    out = io.StringIO()
    call_command("sqlmigrate", app, migration, stdout=out)
    statements = [line for line in out.getvalue().splitlines()
                  if line.strip() and not line.lstrip().startswith("--")
                  and not re.fullmatch(r"\s*(BEGIN|COMMIT);\s*", line)]
    assert statements == [], f"{app} {migration} would run SQL:\n" + "\n".join(statements)


def test_the_moved_models_keep_their_tables() -> None:
    tables = {key: apps.get_model(*key)._meta.db_table for key in MOVED_TABLES}
    assert tables == MOVED_TABLES


@pytest.mark.django_db
def test_the_audit_log_keeps_its_trigger_on_the_kept_table() -> None:
    """The append-only trigger (projects 0003, 0010) is on the table, which did not move."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal"
                       " AND tgrelid = 'projects_auditentry'::regclass")
        assert cursor.fetchall(), "the audit log's trigger is gone"


def test_the_teams_migrations_name_no_app_above_teams() -> None:
    """teams stands below runs and projects, its schema too (docs/development.md, "Layers"):
    its migrations depend on and point at only Django's own apps; the apps above say the
    order from their side (`run_before`)."""
    from django.db.migrations.loader import MigrationLoader

    loader = MigrationLoader(None, ignore_no_migrations=True)
    below = {"teams", "auth", "contenttypes", "__setting__"}
    named = {(name, dependency) for (app, name), migration in loader.disk_migrations.items()
             if app == "teams" for dependency, _ in migration.dependencies
             if dependency not in below}
    assert named == set()
    from pathlib import Path

    import teams

    pointing = [path.name for path in (Path(teams.__file__).parent / "migrations").glob("*.py")
                if re.search(r"to=['\"](runs|projects|marketplace|tools)\.", path.read_text())]
    assert pointing == []


def _links() -> dict[int, tuple[int | None, int | None, int | None]]:
    from django.db import connection

    columns = {c.name for c in connection.introspection.get_table_description(
        connection.cursor(), "projects_notification")}
    approval = "approval_id" if "approval_id" in columns else "NULL"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id, {approval}, target_type_id, target_id "
                       "FROM projects_notification ORDER BY id")
        return {row[0]: tuple(row[1:]) for row in cursor.fetchall()}


@pytest.mark.django_db(transaction=True)
def test_a_notice_about_a_gate_keeps_its_link_through_the_migration_and_back(
        portal: Any) -> None:
    """runs 0013 moves `approval_id` into the generic target; going back restores it."""
    from django.contrib.contenttypes.models import ContentType
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    from projects.services.notifications import notifications_approval_requested
    from teams.models import Notification
    from tests.projects.portal_factories import ProjectFactory, approval_for, run_with_history

    gate = approval_for(run_with_history(project=ProjectFactory(
        team=portal.team, requester=portal.requester)))
    notifications_approval_requested(approval=gate)  # the reviewer and the admin
    told = Notification.objects.filter(approval=gate).count()
    assert told == 2
    plain = Notification.objects.create(user=portal.admin, team=portal.team,
                                        kind=Notification.Kind.BUDGET, message="Budget")
    gate_type = ContentType.objects.get_for_model(gate).pk
    executor = MigrationExecutor(connection)
    executor.migrate([("runs", "0012_llm_call_reply_form")])
    try:
        before = _links()
        assert {link for pk, link in before.items() if pk != plain.pk} == {(gate.pk, None, None)}
        assert before[plain.pk] == (None, None, None)
        with connection.cursor() as cursor:  # a notice written by the old code
            cursor.execute(
                "INSERT INTO projects_notification (user_id, team_id, kind, message, url, "
                "approval_id, created_at) VALUES (%s, %s, 'decided', 'Decided', '', %s, now()) "
                "RETURNING id", [portal.requester.pk, portal.team.pk, gate.pk])
            old_style = cursor.fetchone()[0]
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
    after = _links()
    assert after[plain.pk] == (None, None, None)
    assert {link for pk, link in after.items() if pk != plain.pk} == {
        (None, gate_type, gate.pk)}
    assert Notification.objects.filter(approval=gate).count() == told + 1
    assert Notification.objects.get(pk=old_style).target == gate
