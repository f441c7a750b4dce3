"""A change of a plugin in use (issue 29): a project and its run that start from the version's
files, with the cases that went wrong as regression tests (autocoder/engine/changing.py).

The tools app's "Ask for a change" calls `change_project_create` once the change is clear.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from django.contrib.auth.models import User
from django.db import transaction

from autocoder.engine.spec import MAX_SUMMARY_CHARS, SpecError, spec_from_dict
from autocoder.plugins import PluginManifest, read_manifest
from runs.models import Project, Run
from runs.services.starting import project_create, run_start
from teams.models import Team

NO_EXPECTED_ANSWER = ("Say what the answer should have been for at least one of the cases: "
                      "the change is tested with it.")
NO_MANIFEST = "The version to change has no readable plugin.toml, so it cannot be changed here."
MAX_CASE_CHARS = 600

# A case as `change_project_create` takes it (a JSON object; its keys in the docstring there).
Case = Mapping[str, object]


class _Command(TypedDict):
    name: str
    description: str
    examples: list[dict[str, object]]


class _SettingNote(TypedDict, total=False):
    name: str
    description: str
    secret: bool
    kind: str


class _Services(TypedDict):
    hosts: list[str]
    settings: list[_SettingNote]


def change_project_create(*, team: Team, requester: User, base_name: str, base_version: str,
                          base_files: dict[str, str], change: str, keep: str = "",
                          cases: Sequence[Case], autonomy: str = "semi",
                          behaviour_changes: bool = False, asked: str = "",
                          **run_options: Any) -> Project:
    """A project whose run changes version `base_version` of the plugin `base_name` (its
    files `base_files`) as `change` says, keeping what `keep` says.

    Each case is {"command" (optional when the plugin has one command), "input": {...},
    "expected": answer (or "output"), "got": what the version answered (optional),
    "settings", "http" (optional, as in a spec's example)}. The cases with an expected answer
    become the spec's examples, and so the run's regression tests; a case naming a command
    the plugin does not have adds that command. ValueError, with a sentence for the person,
    when no case has an expected answer or the spec cannot be made; nothing is written then.
    `behaviour_changes`: the request says what the version does today changes, so its tests
    may change too (the engine still names each test removed or weakened at a gate).
    `asked`: more the model is told of the request (the asker's own words, the follow-up
    questions and their answers, when `change` and `keep` are the change spec).
    `run_options` go to run_start (provider, script, max_iterations, ...).
    """
    manifest = read_manifest(base_files.get("plugin.toml", ""))
    if manifest is None:
        raise ValueError(NO_MANIFEST)
    spec = change_spec(manifest, change=change, keep=keep, cases=cases, autonomy=autonomy,
                       version=base_version, behaviour_changes=behaviour_changes,
                       asked=asked)
    with transaction.atomic():
        project = project_create(team=team, requester=requester, spec=spec,
                                 name=change_project_name(base_name or manifest.name, change))
        run_start(project=project, started_by=requester, autonomy=autonomy,
                  base_files=dict(base_files), base_version=base_version or manifest.version,
                  base_tests_may_change=behaviour_changes, **run_options)
    return project


def change_spec(manifest: PluginManifest, *, change: str, keep: str,
                cases: Sequence[Case], autonomy: str, version: str = "",
                behaviour_changes: bool = False, asked: str = "") -> dict[str, Any]:
    """The spec of a change run (a checked dict; ValueError with plain words otherwise)."""
    commands: list[_Command] = [
        {"name": c.name, "description": c.description, "examples": []}
        for c in manifest.commands]
    by_name = {command["name"]: command for command in commands}
    only = commands[0]["name"] if len(commands) == 1 else ""
    answered = 0
    for case in cases:
        name = str(case.get("command") or only)
        if not name:
            continue
        example = _example(case)
        if example is None:
            continue
        if name not in by_name:
            by_name[name] = {"name": name, "description": "", "examples": []}
            commands.append(by_name[name])
        by_name[name]["examples"].append(example)
        answered += 1
    if not answered:
        raise ValueError(NO_EXPECTED_ANSWER)
    spec: dict[str, object] = {
        "name": manifest.name,
        "summary": _summary(change, keep, asked),
        "commands": commands,
        "constraints": _constraints(manifest, version, cases, behaviour_changes),
        "autonomy": autonomy,
    }
    services = _services(manifest)
    if services:
        spec["services"] = services
    try:
        return spec_from_dict(spec).as_dict()
    except SpecError as error:
        raise ValueError("The change cannot be started: " + "; ".join(error.errors)) from None


def _example(case: Case) -> dict[str, object] | None:
    key = "expected" if "expected" in case else "output" if "output" in case else ""
    if not key or case.get(key) in (None, "") or not isinstance(case.get("input"), dict):
        return None
    example: dict[str, object] = {"input": case["input"], "output": case[key]}
    for extra in ("settings", "http"):
        if case.get(extra):
            example[extra] = case[extra]
    return example


def _summary(change: str, keep: str, asked: str = "") -> str:
    text = f"What to change: {change.strip()}"
    if keep.strip():
        text += f"\nWhat must stay as it is: {keep.strip()}"
    if asked.strip():
        text += f"\n{asked.strip()}"
    return text[:MAX_SUMMARY_CHARS]


def _constraints(manifest: PluginManifest, version: str, cases: Sequence[Case],
                 behaviour_changes: bool = False) -> list[str]:
    if behaviour_changes:
        words = [f"This changes version {version or manifest.version} of the plugin, and the "
                 "request says what it does today changes: start from its code and tests, "
                 "change only what the request asks, and update the existing tests (the "
                 "acceptance tests too) where they check the behaviour that changes; keep every "
                 "other test passing. tests/test_regression_*.py hold the new cases: they are "
                 "read-only."]
    else:
        words = [f"This changes version {version or manifest.version} of the plugin: start "
                 "from its code and tests, change only what the request asks, and keep every "
                 "existing test passing. tests/test_regression_*.py hold the cases that went "
                 "wrong: they are read-only, like the acceptance tests."]
    for case in cases[:20]:
        if not isinstance(case.get("input"), dict) or not ("got" in case
                                                            or case.get("expected_words")):
            continue
        line = f"A call of {case.get('command') or 'the plugin'} with {_short(case['input'])}"
        if "got" in case:
            line += f" answered {_short(case['got'])}"
        if case.get("expected_words"):  # the asker's words for what it should have answered
            line += f"; they expected: {str(case['expected_words'])[:MAX_CASE_CHARS]}"
        words.append(line[:1000])
    return words


def _short(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= MAX_CASE_CHARS else text[:MAX_CASE_CHARS] + "..."


def _services(manifest: PluginManifest) -> _Services | None:
    """The version's hosts and settings, so the model and the tests know them."""
    if not manifest.hosts and not manifest.settings:
        return None
    return {"hosts": [rule.text() for rule in manifest.hosts],
            "settings": [_setting_note(s.name, s.description or s.name, s.secret, s.kind)
                         for s in manifest.settings]}


def _setting_note(name: str, description: str, secret: bool, kind: str) -> _SettingNote:
    note: _SettingNote = {"name": name, "description": description, "secret": secret}
    if kind:
        note["kind"] = kind
    return note


CHANGE_NAME_CHARS = 60


def change_project_name(name: str, change: str) -> str:
    """"greeter: Names like McCarthy lose their capitals": the plugin and the change's first
    sentence, shortened at a word (never inside brackets) when it is long."""
    words = " ".join(change.split())
    first = re.split(r"(?<=[.!?])\s", words, maxsplit=1)[0].rstrip(".") if words else ""
    if len(first) > CHANGE_NAME_CHARS:
        cut = first[:CHANGE_NAME_CHARS + 1].rsplit(" ", 1)[0]
        if cut.count("(") > cut.count(")"):
            cut = cut[:cut.rfind("(")]
        first = cut.rstrip(" ,;:-(") + "…"
    return f"{name}: {first}"[:120] if first else name[:120]


def change_run(project: Project) -> Run | None:
    """The project's newest run (the change run it was created with)."""
    return project.runs.order_by("-created_at", "-pk").first()
