"""The moved models' content types follow them to the teams app: their permissions (and who
holds them) and the admin's history keep pointing at the same models.

On a fresh database there is nothing to move yet (content types are made after migrating). A
content type the teams app already has is left alone; the old one then stays behind, stale.
"""

from typing import Any

from django.db import migrations

MOVED = ["team", "membership", "siteteamsettings", "invitation", "auditentry", "notification"]


def _move(apps: Any, source: str, target: str) -> None:
    content_type = apps.get_model("contenttypes", "ContentType")
    taken = set(content_type.objects.filter(app_label=target, model__in=MOVED)
                .values_list("model", flat=True))
    content_type.objects.filter(app_label=source, model__in=MOVED).exclude(
        model__in=taken).update(app_label=target)


def forwards(apps: Any, schema_editor: Any) -> None:
    _move(apps, "projects", "teams")


def backwards(apps: Any, schema_editor: Any) -> None:
    _move(apps, "teams", "projects")


class Migration(migrations.Migration):

    # After projects 0017 (it says so with `run_before`): this app names nothing above it.
    dependencies = [
        ("teams", "0001_initial"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
