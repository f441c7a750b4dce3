"""Uploads: an uploaded .zip or wheel is stored as a version being checked and its
checks are queued (marketplace/services/checking.py runs them on a worker).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from autocoder import durable
from marketplace.checks import plugin_quick_check
from marketplace.models import PluginVersion
from marketplace.permissions import require_member
from marketplace.services.checking import CHECK_ACTOR, plugin_version_check
from marketplace.services.submissions import (
    MAX_CHANGELOG_CHARS,
    commands_with_examples,
    listing_asked,
    listing_in_force,
    plugin_for_submission,
)
from marketplace.validation import PackageError, files_from_wheel, files_from_zip, source_sha256
from teams.models import Team
from teams.services.audit import audit_record


def files_from_upload(*, filename: str, data: bytes) -> dict[str, str]:
    lower = filename.lower()
    if lower.endswith(".whl"):
        return files_from_wheel(data, Path(filename).name)
    if lower.endswith(".zip"):
        return files_from_zip(data)
    raise PackageError([f"{filename}: upload the plugin directory as a .zip, or a wheel (.whl)"])


def plugin_upload_store(*, team: Team, user: User, filename: str, data: bytes,
                        visibility: str, category: str = "", tags: Sequence[str] = (),
                        changelog: str = "", queue: bool = True) -> PluginVersion:
    """Store an uploaded .zip or wheel as a version being checked, and queue its checks.

    The quick checks (plugin.toml, the file tree, the name and version rules) run here, so a
    malformed upload is refused at once and nothing is created (PackageError lists every
    problem). The slow ones (the safety gate, the tests in the sandbox, the build) run on a
    worker (`plugin_version_check`); the message is written to the outbox in the same
    transaction, so it goes out even if Redis is down at this moment. `queue=False`: the
    caller runs the checks itself (`plugin_upload_submit`)."""
    require_member(user, team)
    files = files_from_upload(filename=filename, data=data)
    manifest = plugin_quick_check(team=team, files=files)
    listing = listing_asked(manifest, visibility, category, tags)
    with transaction.atomic():
        plugin = plugin_for_submission(team, manifest, listing)
        version = PluginVersion.objects.create(
            plugin=plugin, version=manifest.version, source=PluginVersion.Source.UPLOAD,
            status=PluginVersion.Status.CHECKING, check_step=PluginVersion.CheckStep.QUEUED,
            check_started_at=timezone.now(), summary=manifest.summary,
            manifest=manifest.as_dict(), commands=commands_with_examples(manifest, None),
            files=files,
            source_sha256=source_sha256(files), readme=files["README.md"],
            changelog=changelog.strip()[:MAX_CHANGELOG_CHARS], submitted_by=user,
            **listing_in_force(plugin, listing))
        audit_record(actor=user, action="plugin.submit", team=team, target=version,
                     after={"plugin": plugin.name, "version": version.version,
                            "source": version.source, "visibility": version.visibility,
                            "run": None})
        if queue:
            durable.outbox_message_queue(actor=CHECK_ACTOR, args=[version.pk])
    return version


def plugin_upload_submit(*, team: Team, user: User, filename: str, data: bytes,
                         visibility: str, category: str = "", tags: Sequence[str] = (),
                         changelog: str = "") -> PluginVersion:
    """Store an upload and check it in this process, waiting for the outcome (scripts and
    tests; the upload page queues the checks instead). PackageError lists every problem; a
    version that failed the slow checks stays, "failed the checks", with the reasons."""
    version = plugin_upload_store(team=team, user=user, filename=filename, data=data,
                                  visibility=visibility, category=category, tags=tags,
                                  changelog=changelog, queue=False)
    checked = plugin_version_check(version_id=version.pk) or version
    checked.refresh_from_db()
    if checked.status == PluginVersion.Status.FAILED:
        raise PackageError(list(checked.check_errors))
    return checked
