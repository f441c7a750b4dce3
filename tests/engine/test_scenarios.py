"""Scripted scenarios through the real services, the real sandbox (bwrap) and PostgreSQL.

The model is the scripted provider (docs/llm.md, "The scripted provider"): the only stand-in,
for a hosted LLM that
cannot be reached here. Everything else - parsing, merging, the safety gate, pytest in the
sandbox, the checkpoints, the loop detector and escapes - is the production code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from runs.models import ApprovalRequest, LLMCall, Project, Run
from runs.selectors import results as selectors
from runs.services import driving
from tests.engine.conftest import iterations, load_script, prompts

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def drive(run: Run) -> Run:
    return driving.run_drive(run_id=run.id)


def test_success_on_the_first_try(start_run: Callable[..., Run]) -> None:
    run = drive(start_run("success"))

    assert run.status == Run.Status.SUCCEEDED
    assert run.iteration == 1
    (first,) = iterations(run)
    assert first.succeeded and first.acceptance_passed and first.pass_rate == 1.0
    outcomes = {o["nodeid"]: o["outcome"] for o in first.test_report["outcomes"]}
    assert outcomes == {
        "tests/test_acceptance.py::test_greet_example_1": "passed",
        "tests/test_acceptance.py::test_greet_example_2": "passed",
        "tests/test_generated_edge_cases.py::test_unknown_command_raises": "passed",
        "tests/test_generated_edge_cases.py::test_empty_name_is_refused": "passed",
    }
    assert "Hello, {name}!" in first.files["greeter/plugin.py"]
    assert "+        return {\"message\": f\"Hello, {name}!\"}" in first.diff
    assert run.best_iteration_id == first.id
    assert set(first.timings) >= {"implement", "test_write", "gate", "sandbox", "verify"}
    # Every role was called once and each call is on record with its tokens; the reviewer
    # reads the candidate before it goes to a person (its script is silent: no opinion).
    roles = list(run.llm_calls.values_list("role", flat=True))
    assert roles == ["architect", "implementer", "tester", "reviewer"]
    assert run.tokens_prompt == sum(LLMCall.objects.filter(run=run)
                                    .values_list("prompt_tokens", flat=True)) > 0
    # A successful run asks for its publish approval; the project waits for it.
    publish = run.approvals.get()
    assert (publish.kind, publish.status) == ("publish", "pending")
    assert run.project.status == Project.Status.AWAITING_APPROVAL


def test_wrong_first_answer_is_fixed_on_the_second(start_run: Callable[..., Run]) -> None:
    run = drive(start_run("fixed_on_second"))

    assert run.status == Run.Status.SUCCEEDED
    first, second = iterations(run)
    assert not first.succeeded and second.succeeded
    assert "Hello Ada" in first.failures[0] or "Hello Ada" in "\n".join(first.failures)
    assert first.reflection.startswith("What went wrong")
    assert run.llm_calls.filter(role="reflector").count() == 1
    # The second implementer prompt carries the failure and the reflection on it.
    second_prompt = prompts(run, "implementer")[1]
    assert "test_greet_example_1" in second_prompt
    assert "Reflection on attempt 1" in second_prompt
    assert run.loop_events.count() == 0


def test_the_same_wrong_answer_forever_is_detected_and_escalated(
        start_run: Callable[..., Run]) -> None:
    run = drive(start_run("same_wrong_forever", max_iterations=10))

    assert run.status == Run.Status.ESCALATED, run.error
    events = list(run.loop_events.order_by("id"))
    assert events and events[0].iteration <= 5
    actions = [e.action for e in events]
    assert actions.index("escalate") > 0, "an escape is tried before a person is asked"
    assert {"reset_context", "try_alternative"} & set(actions)
    # Never all iterations burnt: the run waits for a person well before its budget.
    assert run.iteration <= 5 < run.max_iterations
    escalation = run.approvals.get(status="pending")
    assert escalation.kind == ApprovalRequest.Kind.ESCALATION
    assert "same" in escalation.payload["reason"]
    # Plain words for the reviewer; the detector's terms only in the folded details.
    for code in ("reset_context", "try_alternative", "identical_replies", "repeated_error"):
        assert code not in escalation.payload["reason"], escalation.payload["reason"]
    assert escalation.payload["details"].startswith("loop detector: ")
    assert run.project.status == Project.Status.ESCALATED
    # An escape re-planned: the architect was asked again after the first detection.
    assert run.llm_calls.filter(role="architect").count() >= 2


def test_oscillation_between_two_wrong_answers(start_run: Callable[..., Run]) -> None:
    run = drive(start_run("oscillation", max_iterations=6))

    hashes = [it.code_hash for it in iterations(run)]
    assert hashes[0] == hashes[2] != hashes[1]
    oscillation = run.loop_events.filter(type="oscillation").order_by("id").first()
    assert oscillation is not None and oscillation.iteration == 3
    assert oscillation.action in ("try_alternative", "escalate", "abort")
    # try_alternative lists the earlier approach for the architect to avoid.
    architect_prompts = prompts(run, "architect")
    assert len(architect_prompts) >= 2
    assert "Earlier approaches in this run" in architect_prompts[1]
    assert run.status in (Run.Status.ESCALATED, Run.Status.ABORTED, Run.Status.FAILED)


def test_code_blocked_by_the_safety_gate_never_reaches_the_sandbox(
        start_run: Callable[..., Run], monkeypatch: pytest.MonkeyPatch) -> None:
    from autocoder.quality import pipeline

    sandboxed: list[str] = []
    real_run_quality = pipeline.run_quality

    def watched(files: dict[str, Any], **kwargs: Any) -> Any:
        sandboxed.append(files["greeter/plugin.py"])  # a spy around the real sandbox job
        return real_run_quality(files, **kwargs)

    monkeypatch.setattr(pipeline, "run_quality", watched)
    run = drive(start_run("blocked_then_ok"))

    assert run.status == Run.Status.SUCCEEDED
    blocked, fixed = iterations(run)
    assert blocked.safety_verdict == "block" and not blocked.tests_ran
    assert blocked.test_report == {} and "sandbox" not in blocked.timings
    assert "safety gate blocked" in blocked.failures[0]
    assert "subprocess" in blocked.failures[0]
    assert len(sandboxed) == 1 and "subprocess" not in sandboxed[0]
    assert selectors.run_summary(run)["safety_blocks"] == 1
    assert run.best_iteration_id == fixed.id


def test_code_that_hangs_is_timed_out_and_the_loop_continues(
        start_run: Callable[..., Run], settings: Any) -> None:
    settings.ENGINE_SANDBOX_TIMEOUT_S = 4
    run = drive(start_run("hang_then_ok"))

    assert run.status == Run.Status.SUCCEEDED
    hung, fixed = iterations(run)
    assert hung.test_report["timed_out"] is True
    assert hung.pass_rate == 0.0
    assert any("did not finish in time" in failure for failure in hung.failures)
    assert hung.timings["sandbox"] < 15_000
    assert fixed.succeeded


def test_an_unparseable_reply_fails_the_iteration_and_the_loop_goes_on(
        start_run: Callable[..., Run]) -> None:
    run = drive(start_run("unparseable_then_ok"))

    assert run.status == Run.Status.SUCCEEDED
    unparsed, fixed = iterations(run)
    assert not unparsed.tests_ran
    assert "no file blocks" in unparsed.failures[0]
    assert unparsed.error_signature.startswith("reply:")
    assert "path=greeter/plugin.py" in prompts(run, "implementer")[1]


def test_extra_tests_that_do_not_parse_are_left_out_and_the_code_is_still_tested(
        start_run: Callable[..., Run]) -> None:
    script = load_script("success")
    script["tester"] = ["```python path=tests/test_generated_broken.py\ndef test_x(:\n```\n"]
    run = drive(start_run(script))

    assert run.status == Run.Status.SUCCEEDED
    (first,) = iterations(run)
    assert first.tests_ran and first.acceptance_passed
    assert "tests/test_generated_broken.py" not in first.files
    reasons = {r["path"]: r["reason"] for r in first.rejected_paths}
    assert reasons["tests/test_generated_broken.py"].startswith(
        "the extra tests do not parse (line 1: ")


def test_a_reply_writing_outside_the_plugin_root_is_refused(
        start_run: Callable[..., Run], tmp_path: Any) -> None:
    run = drive(start_run("outside_root_then_ok"))

    assert run.status == Run.Status.SUCCEEDED
    first = iterations(run)[0]
    reasons = {r["path"]: r["reason"] for r in first.rejected_paths}
    assert "escapes the plugin root" in reasons["../../outside.py"]
    assert "absolute paths are not allowed" in reasons["/etc/evil.py"]
    assert "read-only" in reasons["tests/test_acceptance.py"]
    assert all(not path.startswith(("/", "..")) for path in first.files)
    assert "def test_nothing" not in first.files["tests/test_acceptance.py"]
    written = selectors.candidate_write(run, tmp_path / "plugin")
    assert written is not None and sorted(p.name for p in tmp_path.iterdir()) == ["plugin"]


def test_budget_exhaustion_keeps_the_best_candidate(start_run: Callable[..., Run]) -> None:
    run = drive(start_run("same_wrong_forever", max_iterations=2))

    assert run.status == Run.Status.FAILED
    assert "attempt budget exhausted" in run.error
    assert run.iteration == 2
    assert run.best_iteration is not None and run.best_iteration.number == 1
    assert run.project.status == Project.Status.FAILED


def test_token_budget_stops_the_run(start_run: Callable[..., Run]) -> None:
    run = drive(start_run("same_wrong_forever", max_iterations=10, max_tokens=400))

    assert run.status == Run.Status.FAILED
    assert "token budget exhausted" in run.error
    assert run.tokens_total >= 400
    assert run.iteration < 10
