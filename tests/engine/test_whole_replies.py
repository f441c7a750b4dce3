"""A reply cut at its length limit is never handed on as complete (docs/engine.md, "The reply
protocol for files"): free text is continued and joined, a JSON reply is asked for again with
more room, and one still short after that says so.

The model here is a list of replies in order (ModelCalls is the loop's door to the model; the
runs app's RunLLM and a real server are tests/engine/test_cut_replies_wire.py's).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from autocoder.engine.reply_formats import CONTINUE_ASK, ask, joined, read_files
from autocoder.llm.types import CAPPED, FINISHED, Message, ReplySchema

ASKED = [Message("system", "Write the plugin."), Message("user", "A greeter.")]
FILE = ('class Plugin:\n    def on_command(self, name: str, payload: dict) -> dict:\n'
        '        return {"message": "Hello, " + payload["name"] + "!"}\n')


@dataclass
class Model:
    """Answers each call with the next (text, finish reason), and keeps what it was asked."""

    replies: list[tuple[str, str]]
    calls: list[dict[str, object]] = field(default_factory=list)
    last_finish_reason: str = ""
    tokens: int = 0

    def complete(self, role: str, messages: list[Message], schema: ReplySchema | None = None,
                 *, purpose: str = "", room: int = 1) -> str:
        self.calls.append({"role": role, "messages": messages, "purpose": purpose,
                           "room": room, "schema": schema})
        text, self.last_finish_reason = self.replies.pop(0)
        return text

    def prompt_chars(self, role: str) -> int | None:
        return None

    def reply_cap(self, role: str, messages: list[Message], *, room: int = 1) -> int:
        return min(self.window, 1000 * room)

    window: int = 10**9


def test_a_file_cut_at_the_limit_is_continued_and_joined_whole() -> None:
    reply = f"Here it is.\n\n```python path=greeter/plugin.py\n{FILE}```\n"
    cut = len(reply) // 2
    model = Model([(reply[:cut], CAPPED), (reply[cut:], FINISHED)])
    answer = ask(model, "implementer", ASKED, package="greeter")

    assert (answer.text, answer.cut, answer.asked) == (reply, False, ("continue",))
    assert read_files(answer.text).files == {"greeter/plugin.py": FILE}
    follow_up = model.calls[1]
    assert follow_up["purpose"] == "continue" and follow_up["schema"] is None
    assert follow_up["messages"] == [*ASKED, Message("assistant", reply[:cut]),
                                     Message("user", CONTINUE_ASK)]


def test_a_continuation_that_repeats_the_end_or_reopens_the_block_is_joined_once() -> None:
    head = "```python path=greeter/plugin.py\nclass Plugin:\n    def on_command(self"
    assert joined(head, "    def on_command(self, name):\n        return {}\n```") == (
        head + ", name):\n        return {}\n```")
    assert joined(head, "```python path=greeter/plugin.py\n, name):\n```") == (
        head + ", name):\n```")
    assert joined("several currencies in one mo", "nth: each total") == (
        "several currencies in one month: each total")


def test_a_block_left_open_is_continued_even_when_the_model_said_it_had_finished() -> None:
    model = Model([(f"```python path=greeter/plugin.py\n{FILE}", FINISHED), ("```\n", FINISHED)])
    answer = ask(model, "tester", ASKED, package="greeter")
    assert answer.asked == ("continue",) and not answer.cut
    assert read_files(answer.text).files == {"greeter/plugin.py": FILE}


def test_a_json_reply_cut_short_is_asked_for_again_with_more_room() -> None:
    whole = json.dumps({"files": [{"path": "greeter/plugin.py", "content": FILE}],
                        "reason": "greets"})
    model = Model([(whole[:40], CAPPED), (whole[:90], CAPPED), (whole, FINISHED)])
    answer = ask(model, "implementer", ASKED, package="greeter")

    assert (answer.text, answer.cut, answer.asked) == (whole, False, ("longer", "longer"))
    assert [(c["purpose"], c["room"]) for c in model.calls] == [
        ("", 1), ("longer", 2), ("longer", 3)]
    assert all(c["messages"] == ASKED and c["schema"] is not None for c in model.calls)


def test_a_json_reply_is_not_asked_again_when_the_window_has_no_more_room() -> None:
    model = Model([('{"files": [{"path": "greeter/plugin.py", "content": "cl', CAPPED)])
    model.window = 1000  # the cap already fills what the window leaves
    answer = ask(model, "implementer", ASKED, package="greeter")
    assert answer.cut and answer.asked == () and len(model.calls) == 1


def test_a_reply_still_cut_after_two_continuations_says_so() -> None:
    model = Model([("1. Read the rows; 2. group them by", CAPPED), (" week; 3. sum the", CAPPED),
                   (" hours per", CAPPED)])
    answer = ask(model, "architect", ASKED)
    assert answer.cut and answer.asked == ("continue", "continue")
    assert answer.text == "1. Read the rows; 2. group them by week; 3. sum the hours per"
    assert len(model.calls) == 3


def test_a_whole_reply_is_asked_for_once() -> None:
    model = Model([("VERDICT: approve\nClear code.", FINISHED)])
    answer = ask(model, "reviewer", ASKED)
    assert (answer.cut, answer.asked, len(model.calls)) == (False, (), 1)
    # Prose roles write no file blocks: a fence left open in prose is not a cut.
    model = Model([("Use ```python path=x.py for the helper", FINISHED)])
    assert not ask(model, "architect", ASKED).cut
