"""Notifications about a run's gate keep their link: teams 0005 gave them a generic target, this
copies each `approval_id` there (the content type of runs.ApprovalRequest, the same id) and
then drops the old column with its foreign key and unique constraint. This runs in the runs app
because the link is to one of its models; the teams app's migrations name nothing above them.

Going back re-adds the column (with its foreign key, index and unique constraint) and copies the
links back.
"""

from typing import Any

from django.db import migrations

TABLE = "projects_notification"


def _approval_type_id(apps: Any) -> int:
    content_type = apps.get_model("contenttypes", "ContentType")
    # Content types are made after migrating, so a database that never finished a migrate may
    # not have this one yet.
    return content_type.objects.get_or_create(app_label="runs", model="approvalrequest")[0].pk


def links_to_targets(apps: Any, schema_editor: Any) -> None:
    schema_editor.execute(
        "UPDATE projects_notification SET target_type_id = %s, target_id = approval_id "
        "WHERE approval_id IS NOT NULL", [_approval_type_id(apps)])


def targets_to_links(apps: Any, schema_editor: Any) -> None:
    schema_editor.execute(
        "UPDATE projects_notification SET approval_id = target_id, target_type_id = NULL, "
        "target_id = NULL WHERE target_type_id = %s", [_approval_type_id(apps)])


class Migration(migrations.Migration):

    dependencies = [
        ('contenttypes', '0002_remove_content_type_name'),
        ('runs', '0013_llmcall_purpose'),
        ('teams', '0005_notification_target'),
    ]

    operations = [
        migrations.RunPython(links_to_targets, targets_to_links),
        migrations.RunSQL(
            # The copy above left the deferred foreign key checks of its rows pending, and
            # PostgreSQL alters no table with pending checks: run them now. Dropping the column
            # drops its foreign key, index and unique constraint with it.
            sql=["SET CONSTRAINTS ALL IMMEDIATE", f"ALTER TABLE {TABLE} DROP COLUMN approval_id"],
            reverse_sql=[
                f"ALTER TABLE {TABLE} ADD COLUMN approval_id bigint NULL "
                "CONSTRAINT projects_notification_approval_id_fk "
                "REFERENCES projects_approvalrequest (id) DEFERRABLE INITIALLY DEFERRED",
                f"CREATE INDEX projects_notification_approval_id_idx ON {TABLE} (approval_id)",
                f"ALTER TABLE {TABLE} ADD CONSTRAINT unique_notification_per_approval "
                "UNIQUE (user_id, approval_id, kind)",
            ],
        ),
    ]
