"""A change run starts from the version in use (issue 29): the cases that went wrong become a
regression test that must fail on that version first (the run says so when it does not), every
test of the version keeps passing, the reviewer sees the diff against the version in use, and
publishing gives the next version computed from the two manifests.

Real services, the real sandbox; the model is the scripted provider (a hosted model is a
boundary we cannot reach here)."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from autocoder.engine.scaffold import scaffold_files
from autocoder.engine.spec import spec_from_dict
from marketplace.models import PluginVersion
from marketplace.services.publishing import plugin_version_publish
from runs.approval_rules import approval_candidate
from runs.models import ApprovalRequest, Run
from runs.selectors import results as selectors
from runs.services import deciding, driving
from runs.services.approvals import approval_vote_cast
from runs.services.changes import (
    NO_EXPECTED_ANSWER,
    change_project_create,
    change_project_name,
)
from tests.engine.conftest import greeter_spec

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

PLUGIN_HEAD = '''"""The greeter plugin."""

from __future__ import annotations

from typing import Any


class Plugin:
    """Greets a person by name."""

    def on_initialize(self, api: Any) -> None:
        """Nothing to set up."""

    def on_event(self, event: str, data: dict) -> None:
        """Events are not used."""

    def on_command(self, name: str, payload: dict) -> dict:
        handlers = {"greet": self.greet%s}
        if name not in handlers:
            raise ValueError(f"unknown command: {name!r}")
        return handlers[name](payload)

    def greet(self, payload: dict) -> dict:
        name = payload.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError("name must be a non-empty string")
        return {"message": f"Hello, %s!"}
'''
BUGGY = PLUGIN_HEAD % ("", "{name.title()}")
FIXED = PLUGIN_HEAD % ("", "{name}")
WITH_FAREWELL = PLUGIN_HEAD % (', "farewell": self.farewell', "{name}") + '''
    def farewell(self, payload: dict) -> dict:
        return {"message": f"Goodbye, {payload['name']}!"}
'''
EDGE_TESTS = '''import pytest

from greeter.plugin import Plugin


def test_unknown_command_raises():
    with pytest.raises(ValueError):
        Plugin().on_command("shout", {"name": "Ada"})


def test_empty_name_is_refused():
    with pytest.raises(ValueError):
        Plugin().on_command("greet", {"name": ""})
'''
NAME_TESTS = '''from greeter.plugin import Plugin


def test_ada_is_greeted():
    assert Plugin().on_command("greet", {"name": "Ada"})["message"].startswith("Hello")
'''
MCCARTHY = {"command": "greet", "input": {"name": "McCarthy"},
            "got": {"message": "Hello, Mccarthy!"}, "expected": {"message": "Hello, McCarthy!"}}


def version_1_0_0() -> dict[str, str]:
    """Version 1.0.0 of the greeter as a team uses it: its acceptance tests pass, but it
    capitalises names its own way (McCarthy becomes Mccarthy)."""
    files = scaffold_files(spec_from_dict(greeter_spec()))
    files["plugin.toml"] = files["plugin.toml"].replace('version = "0.1.0"', 'version = "1.0.0"')
    assert 'version = "1.0.0"' in files["plugin.toml"]
    return {**files, "greeter/plugin.py": BUGGY, "tests/test_generated_edge_cases.py": EDGE_TESTS,
            "tests/test_generated_names.py": NAME_TESTS}


def replying(plugin_py: str, *extra: str) -> dict[str, list[str]]:
    reply = f"The fix.\n\n```python path=greeter/plugin.py\n{plugin_py}```\n" + "".join(extra)
    return {"architect": ["Plan: keep the plugin, change only what the request asks."],
            "implementer": [reply], "tester": ["No more tests needed."]}


def change(people: dict[str, Any], script: dict[str, list[str]], *, cases: list[dict[str, Any]],
           autonomy: str = "semi", what: str = "Names like McCarthy lose their capitals.",
           ) -> Run:
    project = change_project_create(
        team=people["team"], requester=people["requester"], base_name="greeter",
        base_version="1.0.0", base_files=version_1_0_0(), change=what,
        keep="The greeting stays 'Hello, <name>!'.", cases=cases, autonomy=autonomy,
        provider="scripted", script=script, use_lessons=False, dispatch=None)
    run = project.runs.get()
    return driving.run_drive(run_id=run.id)


def pending(run: Run) -> ApprovalRequest:
    approval = selectors.pending_approval(run)
    assert approval is not None, f"run {run.id} has no pending approval ({run.status})"
    return approval


def approve(approval: ApprovalRequest, user: Any) -> None:
    deciding.approval_decide(approval=approval, user=user, decision="approve", comment="",
                             dispatch=None)


def page_text(user: Any, url: str) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", response.content.decode())).split())


def test_a_fix_starts_from_the_version_in_use_and_is_published_as_the_next_patch(
        people: dict[str, Any], engine_settings: Any) -> None:
    run = change(people, replying(FIXED), cases=[MCCARTHY])
    assert run.base_version == "1.0.0"
    note = "The new test fails on version 1.0.0, as expected."
    assert run.base_note == note
    plan = pending(run)
    assert plan.kind == "plan" and plan.payload["base_check"] == note
    assert note in page_text(people["reviewer"], reverse("run_detail", args=[run.pk]))
    # The model was shown the version's code and the new test, not a skeleton.
    prompt = run.llm_calls.filter(role="architect").get().messages[-1]["content"]
    assert "name.title()" in prompt and "test_regression_1.py" in prompt
    assert "NotImplementedError" not in prompt

    approve(plan, people["reviewer"])
    final = driving.run_drive(run_id=run.id)
    assert final.status == Run.Status.SUCCEEDED, final.error
    first = final.iterations.get(number=1)
    # The diff is against version 1.0.0: the fix, the new test and the next version number.
    assert "--- a/greeter/plugin.py" in first.diff
    assert "-        return {\"message\": f\"Hello, {name.title()}!\"}" in first.diff
    assert "+        return {\"message\": f\"Hello, {name}!\"}" in first.diff
    assert "+++ b/tests/test_regression_1.py" in first.diff
    assert '-version = "1.0.0"' in first.diff and '+version = "1.0.1"' in first.diff
    for untouched in ("greeter/__init__.py", "tests/test_acceptance.py", "README.md",
                      "tests/test_generated_edge_cases.py"):
        assert f"b/{untouched}" not in first.diff
    # Every test passes: the version's own and the regression test.
    outcomes = {o["nodeid"]: o["outcome"] for o in first.test_report["outcomes"]}
    assert outcomes["tests/test_regression_1.py::test_greet_example_1"] == "passed"
    assert outcomes["tests/test_generated_edge_cases.py::test_empty_name_is_refused"] == "passed"
    assert outcomes["tests/test_generated_names.py::test_ada_is_greeted"] == "passed"
    assert outcomes["tests/test_acceptance.py::test_greet_example_2"] == "passed"
    assert set(outcomes.values()) == {"passed"}
    assert 'McCarthy' in first.files["tests/test_regression_1.py"]

    publish = pending(final)
    assert publish.kind == "publish"
    assert publish.payload["change"]["from_version"] == "1.0.0"
    assert publish.payload["change"]["version"] == "1.0.1"
    assert publish.payload["change"]["reasons"][0].startswith("patch: ")
    assert publish.payload["change"]["new_tests"] == ["tests/test_regression_1.py"]
    assert publish.payload["change"]["tests_lost"] == []
    assert publish.payload["change"]["cases"] == [
        {"command": "greet", "input": {"name": "McCarthy"},
         "expected": {"message": "Hello, McCarthy!"}}]
    assert "+++ b/tests/test_regression_1.py" in publish.payload["change"]["diff"]
    assert publish.payload["publish_as"]["version"] == "1.0.1"

    approval_vote_cast(approval=publish, user=people["reviewer"], decision="approve",
                       candidate=approval_candidate(publish))
    version = plugin_version_publish(run=final, user=people["requester"], visibility="team")
    assert version.status == PluginVersion.Status.PUBLISHED
    assert version.version == "1.0.1"
    assert 'version = "1.0.1"' in version.files["plugin.toml"]


def test_a_new_command_is_published_as_the_next_minor_version(
        people: dict[str, Any], engine_settings: Any) -> None:
    farewell = {"command": "farewell", "input": {"name": "Ada"},
                "expected": {"message": "Goodbye, Ada!"}}
    final = change(people, replying(WITH_FAREWELL), cases=[farewell], autonomy="full",
                   what="Say goodbye too.")
    assert final.base_note == "The new test fails on version 1.0.0, as expected."
    assert final.status == Run.Status.SUCCEEDED, final.error
    best = final.best_iteration
    assert best is not None
    assert 'version = "1.1.0"' in best.files["plugin.toml"]
    assert 'name = "farewell"' in best.files["plugin.toml"]
    # The version's own manifest stays: its summary is not the change request.
    assert "Greets a person by name" in best.files["plugin.toml"]
    publish = pending(final)
    assert publish.payload["change"]["version"] == "1.1.0"
    assert publish.payload["change"]["reasons"] == ["minor: a new command 'farewell'"]


def test_a_case_the_version_already_answers_right_is_said_so(
        people: dict[str, Any], engine_settings: Any) -> None:
    ada = {"input": {"name": "Ada"}, "expected": {"message": "Hello, Ada!"}}
    run = change(people, replying(FIXED), cases=[ada])
    note = ("This input already gives the expected answer with version 1.0.0: the change may "
            "not be needed.")
    assert run.base_note == note
    assert pending(run).payload["base_check"] == note
    assert note in page_text(people["reviewer"], reverse("run_detail", args=[run.pk]))


def test_a_reply_that_drops_tests_of_the_version_is_shown_to_the_reviewer(
        people: dict[str, Any], engine_settings: Any) -> None:
    weakened = EDGE_TESTS.split("\n\ndef test_empty_name_is_refused")[0] + "\n"
    script = replying(FIXED, "\n```python path=tests/test_generated_names.py\n```\n",
                      f"\n```python path=tests/test_generated_edge_cases.py\n{weakened}```\n",
                      "\n```python path=tests/test_regression_1.py\n# nothing\n```\n")
    run = change(people, script, cases=[MCCARTHY])
    approve(pending(run), people["reviewer"])
    run = driving.run_drive(run_id=run.id)

    gate = pending(run)
    assert gate.kind == "change"
    reasons = gate.payload["reasons"]
    assert ("removes the test tests/test_generated_edge_cases.py::test_empty_name_is_refused"
            in reasons)
    assert ("the reply tried to delete tests of the version in use "
            "(tests/test_generated_names.py); they were kept") in reasons
    assert ("the reply tried to change the regression tests (tests/test_regression_1.py); "
            "the change was refused") in reasons
    first = run.iterations.get(number=1)
    assert first.files["tests/test_generated_names.py"] == NAME_TESTS
    assert "McCarthy" in first.files["tests/test_regression_1.py"]
    assert "removes the test" in page_text(people["reviewer"],
                                           reverse("approval_detail", args=[gate.pk]))


def test_a_change_needs_at_least_one_expected_answer(people: dict[str, Any]) -> None:
    with pytest.raises(ValueError) as refused:
        change_project_create(
            team=people["team"], requester=people["requester"], base_name="greeter",
            base_version="1.0.0", base_files=version_1_0_0(), change="Be nicer.",
            cases=[{"command": "greet", "input": {"name": "Ada"}, "got": {"message": "Hi"}}])
    assert str(refused.value) == NO_EXPECTED_ANSWER
    assert not Run.objects.exists()


def test_what_the_asker_expected_in_words_reaches_the_model_but_is_not_a_test(
        people: dict[str, Any]) -> None:
    """Words ("capitals after Mc should stay") tell the model what is wanted; only an exact
    answer becomes a regression test."""
    project = change_project_create(
        team=people["team"], requester=people["requester"], base_name="greeter",
        base_version="1.0.0", base_files=version_1_0_0(), change="Keep Mc capitals.",
        cases=[{"command": "greet", "input": {"name": "McCarthy"},
                "got": {"message": "Hello, Mccarthy!"},
                "expected_words": "the C after Mc should stay a capital"},
               {"command": "greet", "input": {"name": "McBride"},
                "expected": {"message": "Hello, McBride!"}}],
        provider="scripted", script={}, use_lessons=False, dispatch=None)
    spec = project.spec
    assert [e["input"] for e in spec["commands"][0]["examples"]] == [{"name": "McBride"}]
    said = " ".join(spec["constraints"])
    assert 'with {"name": "McCarthy"} answered {"message": "Hello, Mccarthy!"}; they expected:' \
        ' the C after Mc should stay a capital' in said


HI = FIXED.replace('f"Hello, {name}!"', 'f"Hi, {name}!"')


def test_a_change_that_says_behaviour_changes_may_rewrite_the_versions_tests(
        people: dict[str, Any], engine_settings: Any) -> None:
    """"Say Hi instead of Hello": the version's acceptance tests check "Hello", so they must
    change with it; without the reviewer saying behaviour changes, they stay read-only."""
    files = version_1_0_0()
    hi_tests = files["tests/test_acceptance.py"].replace("Hello", "Hi")
    script = replying(HI, f"\n```python path=tests/test_acceptance.py\n{hi_tests}```\n",
                      "\n```python path=tests/test_generated_names.py\n"
                      f"{NAME_TESTS.replace('Hello', 'Hi')}```\n")
    hi = {"command": "greet", "input": {"name": "Ada"}, "expected": {"message": "Hi, Ada!"}}

    project = change_project_create(
        team=people["team"], requester=people["requester"], base_name="greeter",
        base_version="1.0.0", base_files=files, change="Say Hi instead of Hello.",
        cases=[hi], autonomy="full", behaviour_changes=True, provider="scripted",
        script=script, use_lessons=False, dispatch=None)
    run = driving.run_drive(run_id=project.runs.get().id)
    assert run.base_tests_may_change and run.status == Run.Status.SUCCEEDED, run.error
    best = run.best_iteration
    assert best is not None and "Hi, " in best.files["tests/test_acceptance.py"]
    assert "update the existing tests" in " ".join(project.spec["constraints"])

    # The same reply without the reviewer's word: the acceptance tests stay as they were, so
    # the run cannot pass them.
    kept = change(people, script, cases=[hi], autonomy="full", what="Say Hi instead of Hello.")
    assert kept.status != Run.Status.SUCCEEDED
    first = kept.iterations.get(number=1)
    assert first.files["tests/test_acceptance.py"] == files["tests/test_acceptance.py"]


@pytest.mark.parametrize(("change", "name"), [
    ("Names like McCarthy lose their capitals.\nAlso O'Brien.",
     "greeter: Names like McCarthy lose their capitals"),
    ("The totals must also count LIDL and NETTO receipts (in the March export they are "
     "missing) and round to cents.",
     "greeter: The totals must also count LIDL and NETTO receipts\u2026"),
])
def test_a_change_run_is_named_for_the_change_in_whole_words(change: str, name: str) -> None:
    assert change_project_name("greeter", change) == name


def test_a_change_rewrites_the_words_it_makes_untrue_and_its_prompts_name_its_tests(
        people: dict[str, Any], engine_settings: Any) -> None:
    """"Say Hi instead of Hello": the summary and the command's description say "Hello"; the
    reply rewrites them in plugin.toml (only those words are taken) and in the README, the
    reviewer is told, and the next version carries them. Every prompt names the regression
    tests as the change's own and calls its rounds the change's attempts."""
    files = version_1_0_0()
    manifest = files["plugin.toml"]
    rewritten = (manifest.replace("Greets a person by name, politely, with a comma after "
                                  "Hello.", "Greets a person by name with Hi.")
                 .replace("Input {name}; output {message: 'Hello, <name>!'}.",
                          "Input {name}; output {message: 'Hi, <name>!'}.")
                 .replace('name = "greeter"', 'name = "renamed-by-the-model"'))
    readme = files["README.md"].replace("Hello", "Hi")
    hi_tests = files["tests/test_acceptance.py"].replace("Hello", "Hi")
    script = replying(HI, f"\n```toml path=plugin.toml\n{rewritten}```\n",
                      f"\n````markdown path=README.md\n{readme}````\n",
                      f"\n```python path=tests/test_acceptance.py\n{hi_tests}```\n",
                      "\n```python path=tests/test_generated_names.py\n"
                      f"{NAME_TESTS.replace('Hello', 'Hi')}```\n")
    script["reviewer"] = ["VERDICT: approve\nThe words now say Hi."]
    hi = {"command": "greet", "input": {"name": "Ada"}, "expected": {"message": "Hi, Ada!"}}
    project = change_project_create(
        team=people["team"], requester=people["requester"], base_name="greeter",
        base_version="1.0.0", base_files=files, change="Say Hi instead of Hello.",
        cases=[hi], autonomy="full", behaviour_changes=True, provider="scripted",
        script=script, use_lessons=False, dispatch=None)
    run = driving.run_drive(run_id=project.runs.get().id)

    assert run.status == Run.Status.SUCCEEDED, run.error
    best = run.best_iteration
    assert best is not None
    toml = best.files["plugin.toml"]
    assert 'summary = "Greets a person by name with Hi."' in toml
    assert "Input {name}; output {message: 'Hi, <name>!'}." in toml
    assert 'name = "greeter"' in toml and 'version = "1.0.1"' in toml  # only the words
    assert best.files["README.md"] == readme
    review = run.llm_calls.get(role="reviewer").messages[-1]["content"]
    assert ("The change rewrites the plugin's summary from \u201cGreets a person by name, "
            "politely, with a comma after Hello.\u201d to \u201cGreets a person by name with "
            "Hi.\u201d") in review
    assert "The change rewrites the description of `greet`" in review
    for call in run.llm_calls.exclude(role="reviewer"):
        text = "\n".join(m["content"] for m in call.messages)
        assert "they are the tests in tests/test_regression_1.py and must pass exactly" in text
        assert "This run changes version 1.0.0" in text and "iteration" not in text.lower()
        assert "this change's examples (tests/test_regression_1.py) and every test of " \
               "version 1.0.0 pass" in text
