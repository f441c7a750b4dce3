"""Moving teams (and Project) between apps moved no row: the migrations that did it change
Django's state only, and the tables keep their names (docs/development.md, "Layers")."""

from __future__ import annotations

import io
import re

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
