"""The two readers of a role's reply (autocoder/engine/reply_formats.py): a JSON reply held to
the role's schema and the fenced protocol end in the same files and texts, every path through
the same rule, and a JSON reply cut at its length limit keeps the files it finished."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest

from autocoder.engine.prompting import plan_from_reply, review_opinion
from autocoder.engine.replies import parse_reply
from autocoder.engine.reply_formats import as_text, read_files
from runs.models import Run
from runs.services import driving
from tests.engine.conftest import iterations, load_script


def files_reply(*files: tuple[str, str], reason: str = "greets by name") -> str:
    return json.dumps({"files": [{"path": p, "content": c} for p, c in files],
                       "reason": reason})


def test_a_json_reply_gives_the_same_files_as_the_blocks_would() -> None:
    code = "def greet(name):\n    return f'Hello, {name}'\n"
    json_reply = read_files(files_reply(("./greeter//plugin.py", code)))
    block_reply = read_files(f"greets by name\n\n```python path=greeter/plugin.py\n{code}```\n")
    assert json_reply.files == block_reply.files == {"greeter/plugin.py": code}
    assert json_reply.prose == block_reply.prose == "greets by name"
    # Content without its last newline gets one, as a block's always has.
    assert read_files(files_reply(("a.py", "X = 1"))).files == {"a.py": "X = 1\n"}


def test_the_schema_lets_no_path_start_outside_the_plugin_root() -> None:
    from autocoder.engine.reply_formats import SCHEMAS

    path = SCHEMAS["implementer"].schema["properties"]["files"]["items"]["properties"]["path"]
    pattern = re.compile(path["pattern"])
    assert all(pattern.match(p) for p in ("weekly_scheduler/plugin.py", "README.md",
                                          "tests/test_generated_edges.py"))
    assert not any(pattern.match(p) for p in ("../x.py", "/etc/passwd", "~/x", ".env",
                                              "a b.py", "a\\b.py"))


def test_with_its_package_a_role_can_only_name_files_where_it_writes() -> None:
    from autocoder.engine.reply_formats import schema_for

    def path_pattern(role: str, **options: object) -> re.Pattern[str]:
        shape = schema_for(role, package="weekly_scheduler", **options)  # type: ignore[arg-type]
        assert shape is not None
        items = shape.schema["properties"]["files"]["items"]
        return re.compile(items["properties"]["path"]["pattern"])

    implementer = path_pattern("implementer")
    assert all(implementer.match(p) for p in ("weekly_scheduler/plugin.py", "README.md",
                                              "plugin.toml", "tests/test_generated_edges.py"))
    # Never the acceptance tests or the harness: a small model sent an empty acceptance file.
    assert not any(implementer.match(p) for p in ("files", "config/user.json", "../x.py",
                                                  "tests/test_acceptance.py",
                                                  "tests/conftest.py"))
    tester = path_pattern("tester")
    assert tester.match("tests/test_generated_edges.py")
    assert not tester.match("weekly_scheduler/plugin.py")
    edits = schema_for("implementer", package="weekly_scheduler", edits=True)
    assert edits is not None
    edit_path = edits.schema["properties"]["edits"]["items"]["properties"]["path"]["pattern"]
    assert edit_path == implementer.pattern
    assert schema_for("reviewer", package="weekly_scheduler") == schema_for("reviewer")


def test_paths_in_json_meet_the_same_rule_as_paths_in_blocks() -> None:
    parsed = read_files(files_reply(("../outside.py", "x"), ("/etc/passwd", "x"),
                                    ("ok.py", "X = 1\n")))
    assert parsed.files == {"ok.py": "X = 1\n"}
    reasons = {r.path: r.reason for r in parsed.rejected}
    assert "escapes the plugin root" in reasons["../outside.py"]
    assert "absolute paths" in reasons["/etc/passwd"]
    odd = read_files(json.dumps({"files": [{"path": 3, "content": None}, "text"],
                                 "reason": ""}))
    assert odd.files == {} and len(odd.rejected) == 2


def test_a_json_reply_cut_at_its_limit_keeps_the_files_it_finished() -> None:
    whole = files_reply(("greeter/plugin.py", "X = 1\n"), ("greeter/util.py", "Y = 2\n" * 50))
    cut = whole[: whole.index("Y = 2") + 40]
    parsed = read_files(cut)
    assert parsed.files == {"greeter/plugin.py": "X = 1\n"}
    [unfinished] = parsed.rejected
    assert unfinished.path == "greeter/util.py" and "stopped inside" in unfinished.reason
    assert read_files('{"files": [{"pa').files == {}


def test_json_in_a_json_fence_and_free_text_are_read_too() -> None:
    fenced_json = "```json\n" + files_reply(("a.py", "A = 1\n")) + "\n```"
    assert read_files(fenced_json).files == {"a.py": "A = 1\n"}
    assert read_files("No files, only words.").files == {}
    assert read_files("{ not json at all").files == {}


def test_the_other_roles_json_becomes_the_text_their_readers_take() -> None:
    plan = as_text("architect", json.dumps({"steps": ["Read the name", "Return the greeting"]}))
    assert plan_from_reply(plan) == "1. Read the name\n2. Return the greeting"
    opinion = review_opinion(as_text("reviewer", json.dumps(
        {"reasons": "The empty name is not handled.", "verdict": "request_changes"})))
    assert opinion == {"verdict": "request_changes",
                       "remarks": "The empty name is not handled."}
    reflection = as_text("reflector", json.dumps(
        {"what_went_wrong": "A test failed.", "why": "Off by one.", "what_to_change": "Use <="}))
    assert reflection.splitlines() == ["What went wrong: A test failed.", "Why: Off by one.",
                                       "What to change: Use <="]
    assert as_text("architect", "1. Plain plan") == "1. Plain plan"


# -- a whole run -----------------------------------------------------------------------------

pytest_slow = pytest.mark.slow


def _as_json(role: str, text: str) -> str:
    """A scripted reply as a server holding the role to its schema would send it."""
    if role in ("implementer", "tester"):
        parsed = parse_reply(text)
        return files_reply(*parsed.files.items(), reason=parsed.prose)
    if role == "architect":
        return json.dumps({"steps": [line for line in text.splitlines() if line.strip()]})
    return text


@pytest.mark.django_db
@pytest_slow
def test_a_run_whose_model_answers_in_json_succeeds_as_one_in_blocks(
        start_run: Callable[..., Run]) -> None:
    steps = load_script("success")
    script = {role: [_as_json(role, reply) for reply in replies]
              for role, replies in steps.items()}
    assert script["implementer"][0].startswith('{"files"')
    run = driving.run_drive(run_id=start_run(script).id)
    assert run.status == Run.Status.SUCCEEDED, run.error
    (only,) = iterations(run)
    assert only.tests_ran and only.pass_rate == 1.0
    assert run.plan.startswith("1. ")
