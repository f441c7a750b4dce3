"""Role prompts: what each role is told, and the budget that trims the least important first."""

from __future__ import annotations

import pytest

from autocoder.engine.prompting import (
    PLAN_MAX_CHARS,
    PROMPTS_DIR,
    PromptContext,
    build_messages,
    plan_from_reply,
    review_opinion,
    review_verdict,
)
from autocoder.engine.replies import parse_reply
from autocoder.engine.scaffold import scaffold_files
from autocoder.engine.spec import Spec, spec_from_dict
from autocoder.llm.types import ROLES, Message


def make_spec(summary: str = "Spreads tasks over the days of a week.") -> Spec:
    return spec_from_dict({
        "name": "weekly-scheduler",
        "summary": summary,
        "commands": [{"name": "generate-schedule", "description": "Assign tasks to days.",
                      "examples": [{"input": {"tasks": ["a", "b"], "days": 2},
                                    "output": {"monday": ["a"], "tuesday": ["b"]}}]}],
        "constraints": ["Weeks start on Monday."],
    })


def context(**overrides: object) -> PromptContext:
    spec = make_spec()
    values: dict[str, object] = {"spec": spec, "iteration": 2, "files": scaffold_files(spec)}
    values.update(overrides)
    return PromptContext(**values)  # type: ignore[arg-type]


def text_of(messages: list[Message]) -> str:
    return "\n".join(m.content for m in messages)


def test_templates_live_in_files_one_per_role() -> None:
    for role in ROLES:
        assert (PROMPTS_DIR / f"{role}.md").is_file()


@pytest.mark.parametrize("role", ROLES)
def test_every_role_gets_a_system_and_a_user_message(role: str) -> None:
    messages = build_messages(role, context(failures="E assert 1 == 2", plan="Loop over days."))
    assert [m.role for m in messages] == ["system", "user"]
    assert "$" not in messages[0].content  # every placeholder was filled
    assert "weekly_scheduler" in messages[0].content
    user = messages[1].content
    assert '{"tasks": ["a", "b"], "days": 2}' in user and '{"monday": ["a"]' in user
    assert "Weeks start on Monday." in user
    sections = [line for line in user.split("\n") if line.startswith("# ")]
    assert sections[0] == "# The request" and sections[-1] == "# Your task"


def test_implementer_is_told_the_protocol_the_contract_and_the_rules() -> None:
    system = build_messages("implementer", context())[0].content
    example = parse_reply(system)
    assert list(example.files) == ["weekly_scheduler/plugin.py"]  # a working example block
    for rule in ("WHOLE content", "raise `ValueError`", "blocks network access",
                 "subprocesses", "`eval()`", "built-in\n  `compile()` (`re.compile` is fine)",
                 "tests/test_acceptance.py", "read-only", "on_command"):
        assert rule in system, rule


def test_roles_that_write_no_files_are_not_shown_the_protocol() -> None:
    for role in ("analyst", "architect", "reviewer", "reflector"):
        system = build_messages(role, context())[0].content
        assert "path=" not in system and "file blocks" in system


def test_tester_writes_only_generated_test_files() -> None:
    messages = build_messages("tester", context())
    assert "tests/test_generated_" in messages[0].content
    assert "tests/test_generated_*.py` file blocks only" in messages[1].content


def test_reflector_gets_the_failures_and_asks_three_short_questions() -> None:
    failures = "FAILED tests/test_acceptance.py::test_generate_schedule_example_1\nKeyError: 'x'"
    user = build_messages("reflector", context(failures=failures))[1].content
    assert failures in user
    for heading in ("What went wrong:", "Why:", "What to change:"):
        assert heading in user


def test_reviewer_is_asked_for_a_verdict_line() -> None:
    user = build_messages("reviewer", context())[1].content
    assert "VERDICT: approve" in user and "VERDICT: request_changes" in user
    assert "VERDICT: unsure" in user


def test_reviewer_is_shown_what_the_checks_found_not_a_failure_history() -> None:
    user = build_messages("reviewer", context(checks="Tests: 3 passed, 0 failed.",
                                              failures="old failure"))[1].content
    assert "# What the tests and the safety gate found\n\nTests: 3 passed, 0 failed." in user
    assert "old failure" not in user
    assert "# What the tests" not in build_messages("implementer",
                                                    context(checks="x"))[1].content


@pytest.mark.parametrize(("reply", "opinion"), [
    ("VERDICT: approve\n1. fine", {"verdict": "approve", "remarks": "1. fine"}),
    ("**Verdict: Request changes**\n- plugin.py: strip the name",
     {"verdict": "request_changes", "remarks": "- plugin.py: strip the name"}),
    ("Some thoughts first.\nVERDICT: unsure", {"verdict": "unsure",
                                               "remarks": "Some thoughts first."}),
    ("", None),
    ("Looks great, ship it!", None),
    ("VERDICT: maybe", None),
])
def test_a_review_without_a_verdict_line_is_no_opinion(reply: str,
                                                       opinion: dict[str, str] | None) -> None:
    assert review_opinion(reply) == opinion


def test_try_alternative_lists_every_earlier_approach_for_the_architect() -> None:
    approaches = ["Greedy assignment by order.", "Round robin over days."]
    user = build_messages("architect", context(escape="try_alternative",
                                               earlier_approaches=approaches))[1].content
    assert "different in substance from EVERY earlier approach" in user
    assert "1. Greedy assignment by order." in user and "2. Round robin over days." in user


def test_the_architect_sees_the_old_plan_as_the_one_to_replace() -> None:
    architect = build_messages("architect", context(plan="Greedy."))[1].content
    assert "# The plan so far (you write its successor)\n\nGreedy." in architect
    implementer = build_messages("implementer", context(plan="Greedy."))[1].content
    assert "# Plan\n\nGreedy." in implementer


def test_guidance_and_escapes_appear_when_given() -> None:
    user = build_messages("implementer", context(guidance="Use ISO week days.",
                                                 escape="escalate"))[1].content
    assert "# Guidance from a person (follow it)\n\nUse ISO week days." in user
    assert "takes precedence" in user
    reset = build_messages("implementer", context(escape="reset_context"))[1].content
    assert "fresh start" in reset.lower()
    plain = build_messages("implementer", context())[1].content
    assert "Guidance" not in plain and "Change of course" not in plain


def test_unknown_role_or_escape_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown role"):
        build_messages("poet", context())
    with pytest.raises(ValueError, match="unknown escape"):
        build_messages("implementer", context(escape="pray"))


def test_braces_and_dollars_in_user_text_are_harmless() -> None:
    spec = make_spec(summary="Use {placeholders} and $dollars and ${braces} literally.")
    messages = build_messages("implementer", context(spec=spec, guidance="{x} $y"))
    assert "Use {placeholders} and $dollars and ${braces} literally." in messages[1].content
    assert "{x} $y" in messages[1].content


def test_files_are_shown_in_the_reply_protocol_with_a_safe_fence() -> None:
    files = {"weekly_scheduler/plugin.py": "x = 1\n", "README.md": "# R\n```sh\nls\n```\n"}
    user = build_messages("implementer", context(files=files))[1].content
    shown = parse_reply(user).files
    assert shown == files


def test_everything_fits_nothing_is_trimmed() -> None:
    ctx = context(plan="P", failures="F1\nF2", earlier_approaches=["A1", "A2", "A3"],
                  lessons="L1")
    user = build_messages("implementer", ctx)[1].content
    for text in ("1. A1", "3. A3", "L1", "F1\nF2", "path=weekly_scheduler/plugin.py"):
        assert text in user
    assert "Not shown" not in user
    # The host's files say the request again: they are named, not shown (docs/llm.md).
    assert "path=README.md" not in user and "path=tests/test_acceptance.py" not in user
    assert ("Written by the host from the request, so not shown: plugin.toml, "
            "tests/test_acceptance.py, README.md") in user


def test_a_file_the_model_changed_is_shown_even_if_the_host_wrote_it() -> None:
    files = {**scaffold_files(make_spec()), "README.md": "# weekly-scheduler\nNew words.\n"}
    user = build_messages("implementer", context(files=files))[1].content
    assert "path=README.md\n# weekly-scheduler\nNew words." in user
    assert "so not shown: plugin.toml, tests/test_acceptance.py, tests/conftest.py" in user


def huge_context() -> PromptContext:
    spec = make_spec()
    files = dict(scaffold_files(spec))
    files["weekly_scheduler/plugin.py"] = "def main():\n    return 1\n"
    for i in range(300):
        files[f"weekly_scheduler/helpers_{i:03}.py"] = f"# helper {i}\n" + "x = 1\n" * 3000
    failures = "\n".join(["FIRST LINE: 3 failed"] + [f"trace line {i}" for i in range(200_000)]
                         + ["LAST LINE: AssertionError"])
    return PromptContext(
        spec=spec, iteration=7, plan="THE PLAN " * 300, files=files, failures=failures,
        earlier_approaches=[f"approach number {i}: " + "detail " * 300 for i in range(80)],
        lessons="\n".join(f"lesson {i}: avoid mutable defaults" for i in range(20_000)),
        guidance="GUIDANCE: keep Monday first.",
    )


@pytest.mark.parametrize("budget", [12_000, 24_000, 60_000])
def test_huge_inputs_are_kept_within_the_budget(budget: int) -> None:
    ctx = huge_context()
    messages = build_messages("implementer", ctx, budget_chars=budget)
    total = sum(len(m.content) for m in messages)
    assert total <= budget
    user = messages[1].content
    # Never dropped: the request with its examples, the guidance, the plan.
    assert '{"tasks": ["a", "b"], "days": 2}' in user
    assert "GUIDANCE: keep Monday first." in user
    assert ctx.plan.strip() in user
    # The package's plugin.py is shown whole; other files are listed by name only.
    assert "```python path=weekly_scheduler/plugin.py\ndef main():\n    return 1\n```" in user
    assert "path=weekly_scheduler/helpers_" not in user
    assert "Not shown, to save space" in user and "more" in user
    # Older approaches go first: the newest ones stay.
    assert "80. approach number 79" in user and "1. approach number 0:" not in user
    # Failures keep their first and last lines.
    assert "FIRST LINE: 3 failed" in user and "LAST LINE: AssertionError" in user
    assert "lines cut to fit" in user


def test_trimming_order_files_go_before_failures_and_lessons() -> None:
    ctx = huge_context()
    ctx.failures = "FIRST\n" + "middle\n" * 200 + "LAST"
    ctx.lessons = "lesson one\nlesson two"
    user = build_messages("implementer", ctx, budget_chars=24_000)[1].content
    assert ctx.failures in user and ctx.lessons in user  # small enough once files are names


def test_lessons_go_before_the_last_of_the_failures() -> None:
    ctx = huge_context()
    ctx.lessons = "\n".join(f"lesson {i}" for i in range(5000))
    messages = build_messages("implementer", ctx, budget_chars=14_000)
    user = messages[1].content
    assert "FIRST LINE: 3 failed" in user and "LAST LINE: AssertionError" in user
    assert "lesson 4999" not in user


def test_a_huge_plugin_py_is_cut_in_the_middle_as_a_last_resort() -> None:
    ctx = huge_context()
    ctx.files["weekly_scheduler/plugin.py"] = "HEAD = 1\n" + "y = 2\n" * 50_000 + "TAIL = 3\n"
    messages = build_messages("implementer", ctx, budget_chars=24_000)
    user = messages[1].content
    assert sum(len(m.content) for m in messages) <= 24_000
    assert "HEAD = 1" in user and "TAIL = 3" in user and "lines cut to fit" in user


def test_plan_from_reply_strips_file_blocks_and_caps_the_length() -> None:
    reply = "Plan:\n1. Parse days.\n```python path=x.py\ncode\n```\n2. Assign tasks."
    assert plan_from_reply(reply) == "Plan:\n1. Parse days.\n2. Assign tasks."
    long_plan = plan_from_reply("step\n" * 5000)
    assert len(long_plan) <= PLAN_MAX_CHARS and long_plan.endswith("[... plan shortened ...]")
    assert plan_from_reply("") == ""


@pytest.mark.parametrize(("reply", "verdict"), [
    ("VERDICT: approve\nLooks good.", "approve"),
    ("**Verdict:** request_changes\n1. fix", "request_changes"),
    ("verdict: Request changes", "request_changes"),
    ("I think it is fine.", ""),
    ("", ""),
])
def test_review_verdict(reply: str, verdict: str) -> None:
    assert review_verdict(reply) == verdict
