"""Plugins to publish: real plugin trees (the scaffold plus a working implementation), zipped
the way a person zips a directory, and helpers to put them through the real checks."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from autocoder.engine.scaffold import scaffold_files
from autocoder.engine.spec import package_name, spec_from_dict
from marketplace.checks import safety_scan
from marketplace.models import PluginVersion
from marketplace.proposals import publish_payload_default
from marketplace.services.gate import plugin_version_decide
from marketplace.services.uploads import plugin_upload_submit
from marketplace.validation import check_plugin_files
from runs.models import ApprovalRequest, Iteration, LLMCall, Project, Run
from teams.models import Team
from tests.factories import MembershipFactory, TeamFactory, UserFactory

WORD_COUNT_SPEC: dict[str, Any] = {
    "name": "word-count",
    "summary": "Counts the words in a text.",
    "commands": [{"name": "count-words", "description": "How many words a text has.",
                  "examples": [{"input": {"text": "one two three"}, "output": {"words": 3}}]}],
}

WORD_COUNT_IMPL = '''"""The word-count plugin."""

from __future__ import annotations

from typing import Any


class Plugin:
    def on_initialize(self, api: Any) -> None:
        """Nothing to set up."""

    def on_event(self, event: str, data: dict) -> None:
        """No events used."""

    def on_command(self, name: str, payload: dict) -> dict:
        if name != "count-words":
            raise ValueError(f"unknown command: {name!r}")
        return {"words": len(str(payload.get("text", "")).split())}
'''


def plugin_tree(name: str = "word-count", version: str = "0.1.0", summary: str = "",
                body: str | None = None) -> dict[str, str]:
    """A complete, working plugin directory: scaffold files with an implementation.

    `body` replaces the implementation (which must keep the count-words contract)."""
    spec = spec_from_dict({**WORD_COUNT_SPEC, "name": name,
                           "summary": summary or WORD_COUNT_SPEC["summary"]})
    files = scaffold_files(spec)
    files[f"{spec.package}/plugin.py"] = body if body is not None else WORD_COUNT_IMPL
    files["plugin.toml"] = files["plugin.toml"].replace('version = "0.1.0"',
                                                        f"version = {json.dumps(version)}")
    return files


def zip_bytes(files: dict[str, str | bytes], *, folder: str = "") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, content in files.items():
            archive.writestr(f"{folder}{path}", content)
    return buffer.getvalue()


def package_of(name: str) -> str:
    return package_name(name)


@pytest.fixture(autouse=True)
def private_artifact_store(request: pytest.FixtureRequest, settings: Any, tmp_path: Any) -> None:
    """Each test gets its own artifact store, so "no file was left" is checkable; a module
    talking to a server subprocess sets SHARED_VAR_DIR and keeps the session's directory."""
    if not getattr(request.module, "SHARED_VAR_DIR", False):
        settings.VAR_DIR = tmp_path / "var"


@pytest.fixture
def market(db: None) -> dict[str, Any]:
    """Team acme (admin, reviewer, requester), team other (admin), and a user in no team."""
    acme, other = TeamFactory(slug="acme", name="Acme"), TeamFactory(slug="other", name="Other")
    users = {role: UserFactory(username=f"acme-{role}") for role in
             ("admin", "reviewer", "requester")}
    for role, user in users.items():
        MembershipFactory(team=acme, user=user, role=role)
    outsider, other_reviewer = UserFactory(username="other-admin"), UserFactory(
        username="other-reviewer")
    MembershipFactory(team=other, user=outsider, role="admin")
    MembershipFactory(team=other, user=other_reviewer, role="reviewer")
    return {"acme": acme, "other": other, **users, "outsider": outsider,
            "other_reviewer": other_reviewer, "loner": UserFactory(username="loner")}


Submit = Callable[..., PluginVersion]


@pytest.fixture
def submit(market: dict[str, Any]) -> Submit:
    """Upload a plugin tree as a zip through the real checks (as acme's requester)."""
    def _submit(files: dict[str, str] | None = None, *, team: Team | None = None,
                user: Any = None, visibility: str = "team", **listing: Any) -> PluginVersion:
        return plugin_upload_submit(
            team=team or market["acme"], user=user or market["requester"],
            filename="plugin.zip", data=zip_bytes(files or plugin_tree()),
            visibility=visibility, **listing)
    return _submit


@pytest.fixture
def publish(market: dict[str, Any], submit: Submit) -> Submit:
    """Upload and approve (acme's reviewer), so the version is live."""
    def _publish(files: dict[str, str] | None = None, **kwargs: Any) -> PluginVersion:
        version = submit(files, **kwargs)
        team = kwargs.get("team") or market["acme"]
        approver = market["reviewer"] if team == market["acme"] else market["other_reviewer"]
        return plugin_version_decide(version=version, user=approver, approve=True)
    return _publish


def client_for(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture(scope="session")
def sandbox_report() -> dict[str, Any]:
    """The word-count plugin's tests, run for real in the sandbox once per session."""
    from autocoder.sandbox.pytest_runner import run_pytest
    from marketplace.checks import sandbox_report_dict

    return sandbox_report_dict(run_pytest(plugin_tree()))


@pytest.fixture
def succeeded_run(market: dict, sandbox_report: dict) -> Run:
    """A run of acme's requester as the engine leaves it after success: three iterations, the
    last one tested in the sandbox, and a pending publish request with the defaults."""
    files = plugin_tree()
    project = Project.objects.create(team=market["acme"], requester=market["requester"],
                                     name="Word count", spec=WORD_COUNT_SPEC,
                                     status=Project.Status.AWAITING_APPROVAL)
    run = Run.objects.create(project=project, status=Run.Status.SUCCEEDED, iteration=3,
                             phase=Run.Phase.DONE)
    for number in (1, 2):
        Iteration.objects.create(run=run, number=number, files={"plugin.toml": "draft"})
    best = Iteration.objects.create(
        run=run, number=3, files=files, test_report=sandbox_report, pass_rate=1.0,
        acceptance_passed=True, tests_ran=True, succeeded=True,
        safety_report=safety_scan(files, check_plugin_files(files)), safety_verdict="pass")
    run.best_iteration = best
    run.save()
    for role, model in (("architect", "plan-model"), ("implementer", "code-model"),
                        ("implementer", "code-model")):
        LLMCall.objects.create(run=run, iteration=3, role=role, provider="openai", model=model)
    ApprovalRequest.objects.create(
        run=run, project=project, kind=ApprovalRequest.Kind.PUBLISH, iteration=3,
        payload={"files": sorted(files), **publish_payload_default(team=market["acme"],
                                                                    files=files)})
    return run
