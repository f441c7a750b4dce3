"""`plugin_publish` and `marketplace_bench` as an operator runs them, the publish gate's rules
(roles, own submissions, N approvals) and the immutability of published versions."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import PermissionDenied
from django.core.management import CommandError, call_command
from django.db import IntegrityError, InternalError, transaction

from marketplace.models import Artifact, Plugin, PluginVersion
from marketplace.services.gate import DecisionConflict, plugin_version_decide
from marketplace.services.yanking import plugin_version_unyank, plugin_version_yank
from marketplace.validation import PackageError
from teams.models import AuditEntry
from tests.marketplace.conftest import plugin_tree

pytestmark = pytest.mark.django_db


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for path, content in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    return root


def publish_command(*args: str) -> dict[str, Any]:
    out = io.StringIO()
    call_command("plugin_publish", *args, "--json", stdout=out)
    return json.loads(out.getvalue())


def test_plugin_publish_prints_plugin_version_files_and_audits_the_admin(
        market: dict, tmp_path: Path) -> None:
    directory = write_tree(tmp_path / "word-count", plugin_tree())
    (directory / "word_count" / "__pycache__").mkdir()
    (directory / "word_count" / "__pycache__" / "plugin.cpython-311.pyc").write_bytes(b"\0")
    result = publish_command(str(directory), "--team", "acme", "--visibility", "public",
                             "--approve-as", "acme-admin")
    assert result["plugin"] == "word-count" and result["version"] == "0.1.0"
    files = {f["filename"]: f for f in result["files"]}
    assert set(files) == {"word_count-0.1.0-py3-none-any.whl", "word_count-0.1.0.tar.gz"}
    for artifact in Artifact.objects.all():
        assert files[artifact.filename]["sha256"] == artifact.sha256
    version = PluginVersion.objects.get()
    assert version.status == "published" and version.source == "cli"
    assert Plugin.objects.get().visibility == "public"
    entry = AuditEntry.objects.get(action="plugin.publish")
    assert entry.actor == market["admin"] and entry.actor_name == "acme-admin"
    assert AuditEntry.objects.filter(action="plugin.approve", actor=market["admin"]).exists()


def test_plugin_publish_refuses_non_admins_and_bad_plugins(market: dict, tmp_path: Path) -> None:
    directory = write_tree(tmp_path / "p", plugin_tree())
    with pytest.raises(CommandError, match="acme-reviewer is not an admin of team acme"):
        publish_command(str(directory), "--team", "acme", "--approve-as", "acme-reviewer")
    with pytest.raises(CommandError, match="no team with slug 'nope'"):
        publish_command(str(directory), "--team", "nope", "--approve-as", "acme-admin")
    (directory / "plugin.toml").write_text("[plugin]\nname = 'word-count'\n")
    with pytest.raises(CommandError) as caught:
        publish_command(str(directory), "--team", "acme", "--approve-as", "acme-admin")
    assert "the plugin was not published" in str(caught.value)
    assert "version must be a string" in str(caught.value)
    assert PluginVersion.objects.count() == 0


def test_marketplace_bench_reports_both_figures_and_leaves_nothing(market: dict) -> None:
    out = io.StringIO()
    call_command("marketplace_bench", "--plugins", "60", "--searches", "5",
                 "--index-requests", "10", "--json", stdout=out)
    result = json.loads(out.getvalue())
    assert result["plugins"] == 60 and result["catalogue_total"] == 60
    assert result["search_p95_ms"] > 0 and result["simple_project_p95_ms"] > 0
    assert result["index"]["statuses"] == [200]
    assert Plugin.objects.count() == 0  # rolled back


def test_the_gate_needs_a_reviewer_other_than_the_submitter(market: dict, submit: Any) -> None:
    version = submit(plugin_tree(), user=market["reviewer"])
    with pytest.raises(PermissionDenied, match="You submitted this version"):
        plugin_version_decide(version=version, user=market["reviewer"], approve=True)
    with pytest.raises(PermissionDenied, match="Only members"):
        plugin_version_decide(version=version, user=market["outsider"], approve=True)
    with pytest.raises(PermissionDenied, match="Only reviewers and admins"):
        plugin_version_decide(version=version, user=market["requester"], approve=True)
    decided = plugin_version_decide(version=version, user=market["admin"], approve=True)
    assert decided.status == "published"
    with pytest.raises(DecisionConflict, match="already published"):
        plugin_version_decide(version=version, user=market["admin"], approve=False)


def test_a_team_requiring_two_approvals_publishes_at_the_second(market: dict,
                                                                submit: Any) -> None:
    market["acme"].required_approvals = 2
    market["acme"].save()
    version = submit(plugin_tree())
    first = plugin_version_decide(version=version, user=market["reviewer"], approve=True)
    assert first.status == "pending"
    second = plugin_version_decide(version=version, user=market["admin"], approve=True)
    assert second.status == "published" and second.decisions.count() == 2


def test_a_rejection_frees_the_version_number(market: dict, submit: Any) -> None:
    version = submit(plugin_tree())
    rejected = plugin_version_decide(version=version, user=market["reviewer"],
                                     approve=False, comment="needs a README")
    assert rejected.status == "rejected" and rejected.decision_comment == "needs a README"
    again = submit(plugin_tree())
    assert again.version == "0.1.0" and again.status == "pending"


def test_published_versions_are_immutable_in_the_database(market: dict, publish: Any) -> None:
    version = publish(plugin_tree(), visibility="public")
    for change in ({"files": {"x.py": "evil"}}, {"version": "0.1.1"}, {"status": "pending"}):
        with pytest.raises((IntegrityError, InternalError)), transaction.atomic():
            PluginVersion.objects.filter(pk=version.pk).update(**change)
    with pytest.raises((IntegrityError, InternalError)), transaction.atomic():
        Artifact.objects.filter(version=version).update(sha256="0" * 64)
    with pytest.raises((IntegrityError, InternalError)), transaction.atomic():
        PluginVersion.objects.filter(pk=version.pk).delete()
    yanked = plugin_version_yank(version=version, user=market["reviewer"],
                                 reason="security fix in 0.1.1")
    assert yanked.yanked and yanked.yank_reason == "security fix in 0.1.1"
    plugin = Plugin.objects.get()
    assert plugin.latest_version is None  # nothing installable by default: off the catalogue
    plugin_version_unyank(version=version, user=market["reviewer"])
    plugin.refresh_from_db()
    assert plugin.latest_version == version


def test_yanking_needs_a_reason_and_a_reviewer(market: dict, publish: Any) -> None:
    version = publish(plugin_tree(), visibility="public")
    with pytest.raises(PackageError, match="needs a reason"):
        plugin_version_yank(version=version, user=market["reviewer"], reason="  ")
    with pytest.raises(PermissionDenied):
        plugin_version_yank(version=version, user=market["requester"], reason="bad")


def test_a_new_version_keeps_the_listing_only_admins_change_it(market: dict, publish: Any,
                                                               tmp_path: Path) -> None:
    publish(plugin_tree(version="0.1.0"), visibility="team", tags=["words"])
    newer = publish(plugin_tree(version="0.2.0"), visibility="public", tags=["other"])
    plugin = Plugin.objects.get()
    assert (plugin.visibility, plugin.tags) == ("team", ["words"])  # a requester's upload
    assert newer.visibility == "team" and plugin.latest_version == newer
    directory = write_tree(tmp_path / "p", plugin_tree(version="0.3.0"))
    publish_command(str(directory), "--team", "acme", "--approve-as", "acme-admin")
    plugin.refresh_from_db()
    assert plugin.visibility == "team"  # no --visibility: unchanged
    directory = write_tree(tmp_path / "q", plugin_tree(version="0.4.0"))
    publish_command(str(directory), "--team", "acme", "--visibility", "public",
                    "--approve-as", "acme-admin")
    plugin.refresh_from_db()
    assert plugin.visibility == "public"
    assert AuditEntry.objects.filter(action="plugin.settings_update",
                                     actor=market["admin"]).exists()
