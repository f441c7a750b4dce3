"""Writes the scripted scenarios of tests/engine (run it after changing a scenario):

    .venv/bin/python tests/engine/scripts/build.py

Each scenario is a scripted-provider file (docs/llm.md, "The scripted provider") for the
`greeter` spec in greeter.spec.json.
The JSON files are committed; this generator only keeps the code variants readable.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent

SPEC = {
    "name": "greeter",
    "summary": "Greets a person by name, politely, with a comma after Hello.",
    "commands": [{
        "name": "greet",
        "description": "Input {name}; output {message: 'Hello, <name>!'}.",
        "examples": [
            {"input": {"name": "Ada"}, "output": {"message": "Hello, Ada!"}},
            {"input": {"name": "Linus"}, "output": {"message": "Hello, Linus!"}},
        ],
    }],
    "constraints": ["standard library only"],
    "autonomy": "full",
    "quality_threshold": 0.85,
    "max_iterations": 8,
}

PLUGIN = '''"""The greeter plugin."""

from __future__ import annotations

from typing import Any
{imports}

class Plugin:
    """Greets a person by name."""

    def on_initialize(self, api: Any) -> None:
        """Nothing to set up."""

    def on_event(self, event: str, data: dict) -> None:
        """Events are not used."""

    def on_command(self, name: str, payload: dict) -> dict:
        if name != "greet":
            raise ValueError(f"unknown command: {{name!r}}")
        return self.greet(payload)

    def greet(self, payload: dict) -> dict:
        name = payload.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError("name must be a non-empty string")
{body}
'''

VARIANTS = {
    "ok": ("", '        return {"message": f"Hello, {name}!"}'),
    "wrong_a": ("", '        return {"message": f"Hello {name}"}'),
    "wrong_b": ("", '        return {"message": f"Hi, {name}!"}'),
    "hang": ("", '        while True:\n            pass'),
    "blocked": ("import subprocess\n",
                '        subprocess.run(["sh", "-c", "cat /etc/passwd"], check=False)\n'
                '        return {"message": f"Hello, {name}!"}'),
}


def code(variant: str) -> str:
    imports, body = VARIANTS[variant]
    return PLUGIN.format(imports=imports, body=body)


def reply(variant: str, note: str = "") -> str:
    head = note or "Here is the plugin."
    return f"{head}\n\n```python path=greeter/plugin.py\n{code(variant)}```\n"


PLAN = "Approach: one method greet in greeter/plugin.py that formats 'Hello, <name>!'."
GENERATED_TESTS = '''```python path=tests/test_generated_edge_cases.py
import pytest

from greeter.plugin import Plugin


def test_unknown_command_raises():
    with pytest.raises(ValueError):
        Plugin().on_command("shout", {"name": "Ada"})


def test_empty_name_is_refused():
    with pytest.raises(ValueError):
        Plugin().on_command("greet", {"name": ""})
```
'''
REFLECTION = ("What went wrong: greet returned 'Hello Ada' but the example expects 'Hello, Ada!'.\n"
              "Why: the format string lacks the comma and the exclamation mark.\n"
              "What to change: return f'Hello, {name}!' in greet.")

REVIEW = ("VERDICT: request_changes\n"
          "1. greeter/plugin.py: a name with spaces around it is greeted as typed; strip it first.")

SCENARIOS: dict[str, dict[str, list[str]]] = {
    "success": {"architect": [PLAN], "implementer": [reply("ok")],
                "tester": [GENERATED_TESTS]},
    "fixed_on_second": {"architect": [PLAN],
                        "implementer": [reply("wrong_a"), reply("ok", "Added the comma.")],
                        "reflector": [REFLECTION]},
    "same_wrong_forever": {"architect": [PLAN], "implementer": [reply("wrong_a")],
                           "reflector": [REFLECTION]},
    "oscillation": {"architect": [PLAN, "A different approach: build the text with join."],
                    "implementer": [reply("wrong_a", "Try A."), reply("wrong_b", "Try B."),
                                    reply("wrong_a", "Back to A."), reply("wrong_b", "B again."),
                                    reply("wrong_a", "A again."), reply("wrong_b", "B.")],
                    "reflector": [REFLECTION]},
    "blocked_then_ok": {"architect": [PLAN],
                        "implementer": [reply("blocked", "Shelling out."), reply("ok")],
                        "reflector": ["Remove the subprocess call."]},
    "hang_then_ok": {"architect": [PLAN],
                     "implementer": [reply("hang", "Waiting for input."), reply("ok")],
                     "reflector": ["greet never returns: remove the endless loop."]},
    "unparseable_then_ok": {"architect": [PLAN],
                            "implementer": ["I would write a greet method that says hello.",
                                            reply("ok")]},
    "outside_root_then_ok": {
        "architect": [PLAN],
        "implementer": [
            "Writing helpers.\n\n```python path=../../outside.py\nprint('escaped')\n```\n\n"
            "```python path=/etc/evil.py\nprint('absolute')\n```\n\n"
            "```python path=tests/test_acceptance.py\ndef test_nothing():\n    pass\n```\n",
            reply("ok"),
        ],
    },
    # The implementer alone, wrong then right: no plan, no reflection, only the facts teach.
    "fixed_silently": {"implementer": [reply("wrong_a"), reply("ok")]},
    "reviewed": {"architect": [PLAN], "implementer": [reply("ok")], "tester": [GENERATED_TESTS],
                 "reviewer": [REVIEW]},
    "permissions_request": {
        "architect": [PLAN],
        "implementer": [reply("ok") + '\n```toml path=plugin.toml\n[permissions]\n'
                        'network = true\nfilesystem = "none"\n```\n'],
    },
}


def main() -> None:
    (HERE / "greeter.spec.json").write_text(json.dumps(SPEC, indent=2) + "\n")
    for name, script in SCENARIOS.items():
        (HERE / f"{name}.json").write_text(json.dumps(script, indent=2) + "\n")


if __name__ == "__main__":
    main()
