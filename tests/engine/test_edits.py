"""From the second iteration, the implementer may change a file with edits instead of sending
it whole (docs/engine.md, "The reply protocol for files"): edit blocks and JSON edits are read
alike, an edit applies only where its SEARCH text is found exactly once, and a run whose edits
did not apply goes back to whole files.

The model is the scripted provider (a stand-in for a model server we cannot reach here); the
sandbox, the services and the database are real.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from autocoder.engine.replies import Edit, apply_edits, parse_reply
from autocoder.engine.reply_formats import read_files
from runs.models import Run
from runs.services import driving
from tests.engine.conftest import iterations, load_script, prompts

FILE = "def greet(name):\n    return f'Hello {name}'\n\n\ndef part():\n    return 1\n"
EDIT_BLOCK = """Adds the comma.

```python path=greeter/plugin.py edit
<<<<<<< SEARCH
        return {"message": f"Hello {name}"}
=======
        return {"message": f"Hello, {name}!"}
>>>>>>> REPLACE
```
"""


def test_an_edit_block_is_read_as_edits_and_applied_where_its_text_is_found_once() -> None:
    parsed = parse_reply("```python path=g.py edit\n<<<<<<< SEARCH\n    return f'Hello {name}'\n"
                         "=======\n    return f'Hello, {name}!'\n>>>>>>> REPLACE\n```\n")
    assert parsed.files == {} and parsed.rejected == ()
    assert parsed.edits == (Edit("g.py", "    return f'Hello {name}'\n",
                                 "    return f'Hello, {name}!'\n"),)
    changed, missed = apply_edits({"g.py": FILE}, {}, parsed.edits)
    assert missed == () and changed["g.py"] == FILE.replace("Hello {name}", "Hello, {name}!")


def test_an_edit_that_is_not_found_or_found_twice_is_refused_with_its_reason() -> None:
    current = {"g.py": FILE + "\n\ndef again():\n    return 1\n"}
    changed, missed = apply_edits(current, {}, (
        Edit("g.py", "    return 2\n", "x"),
        Edit("g.py", "    return 1\n", "    return 3\n"),
        Edit("g.py", "def greet(name):\n", "def greet(name: str):\n"),
        Edit("new.py", "a", "b"),
    ))
    assert [m.reason for m in missed] == [
        "an edit's SEARCH text is not in the file as it is now",
        "an edit's SEARCH text appears 2 times in the file (include more lines)",
        "an edit names a file that does not exist (send a new file whole)"]
    assert changed["g.py"].startswith("def greet(name: str):\n")  # the good edit still applies
    malformed = parse_reply("```python path=g.py edit\nold line\n```\n")
    assert malformed.edits == () and "only SEARCH" in malformed.rejected[0].reason


def test_edits_apply_after_whole_files_of_the_same_reply_and_come_in_json_too() -> None:
    reply = json.dumps({"files": [{"path": "g.py", "content": "A = 1\n"}],
                        "edits": [{"path": "g.py", "search": "A = 1\n", "replace": "A = 2\n"},
                                  {"path": "../x.py", "search": "a", "replace": "b"}],
                        "reason": "two steps"})
    parsed = read_files(reply)
    changed, missed = apply_edits({"g.py": FILE}, parsed.files, parsed.edits)
    assert changed == {"g.py": "A = 2\n"} and missed == ()
    assert "escapes the plugin root" in parsed.rejected[0].reason


@pytest.mark.django_db
@pytest.mark.slow
def test_a_second_iteration_fixed_by_an_edit_succeeds_and_edits_are_offered_from_the_first(
        start_run: Callable[..., Run]) -> None:
    steps = load_script("fixed_on_second")
    run = driving.run_drive(run_id=start_run(
        {**steps, "implementer": [steps["implementer"][0], EDIT_BLOCK]}).id)
    assert run.status == Run.Status.SUCCEEDED, run.error
    first, second = iterations(run)
    assert not first.succeeded and second.succeeded
    assert 'f"Hello, {name}!"' in second.files["greeter/plugin.py"]
    assert "+        return {\"message\": f\"Hello, {name}!\"}" in second.diff
    # Offered from the first code reply on (the stub is there to edit).
    offered = [("<<<<<<< SEARCH" in prompt) for prompt in prompts(run, "implementer")]
    assert offered == [True, True]


@pytest.mark.django_db
@pytest.mark.slow
def test_edits_that_did_not_apply_send_the_next_iteration_back_to_whole_files(
        start_run: Callable[..., Run]) -> None:
    steps = load_script("fixed_on_second")
    missing = EDIT_BLOCK.replace('f"Hello {name}"', 'f"Hi {name}"', 1)
    run = driving.run_drive(run_id=start_run(
        {**steps, "implementer": [steps["implementer"][0], missing, steps["implementer"][1]]},
        max_iterations=3).id)
    assert run.status == Run.Status.SUCCEEDED, run.error
    first, second, third = iterations(run)
    assert any("SEARCH text is not in the file" in failure for failure in second.failures)
    offered = [("<<<<<<< SEARCH" in prompt) for prompt in prompts(run, "implementer")]
    assert offered == [True, True, False]
    assert third.succeeded
