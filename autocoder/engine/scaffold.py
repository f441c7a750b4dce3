"""The starting files of a plugin (docs/engine.md, "The plugin contract"), built from a spec alone.

Deterministic on purpose: the same spec gives byte-identical files, so a resumed run, a retried
worker message and a checkpoint diff all see the same skeleton. The acceptance tests are built
from the requester's examples and are read-only for the model.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from autocoder.engine.spec import CommandSpec, Spec, package_name
from autocoder.plugins import (
    CommandDecl,
    Permissions,
    PluginManifest,
    render_manifest,
)
from autocoder.plugins.api_calls import (
    PORTAL_PLACEHOLDER,
    TEAM_PLACEHOLDER,
    TOKEN_PLACEHOLDER,
    curl_command,
    tool_api_url,
)

ACCEPTANCE_TEST_PATH = "tests/test_acceptance.py"
PLUGIN_VERSION = "0.1.0"

# Files whose edits would let a model change what "passing" means (pytest configuration,
# conftest hooks at the root and in tests/), besides the acceptance tests and the manifest.
_TEST_HARNESS_PATHS = frozenset({
    "tests/conftest.py", "conftest.py", "pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini",
})


def scaffold_files(spec: Spec) -> dict[str, str]:
    pkg = spec.package
    return {
        "plugin.toml": plugin_toml(spec),
        f"{pkg}/__init__.py": _package_init(spec),
        f"{pkg}/plugin.py": _plugin_module(spec),
        "tests/__init__.py": "",
        ACCEPTANCE_TEST_PATH: _acceptance_tests(spec),
        "tests/conftest.py": _CONFTEST,
        "README.md": _readme(spec),
    }


def protected_paths(spec: Spec) -> frozenset[str]:
    """Paths the model may never write: the acceptance tests, the manifest, the test harness.

    plugin.toml changes only through a permissions request, which the loop treats as a major
    change that a person approves.
    """
    return frozenset({ACCEPTANCE_TEST_PATH, "plugin.toml"}) | _TEST_HARNESS_PATHS


def acceptance_nodeids(spec: Spec) -> list[str]:
    """The pytest node ids of the acceptance tests, one per example, in spec order."""
    return [f"{ACCEPTANCE_TEST_PATH}::{name}" for name, _, _ in _acceptance_cases(spec)]


def method_name(command: str) -> str:
    """The Plugin method that handles `command` (`generate-schedule` -> `generate_schedule`)."""
    return package_name(command)


# -- plugin.toml ---------------------------------------------------------------------------------


def plugin_toml(spec: Spec, *, permissions: Permissions | None = None,
                libraries: Sequence[str] = ()) -> str:
    """The manifest; `permissions` those granted so far (None: what the spec asks for, its
    services' hosts), `libraries` the plugin runtime's libraries the code imports, pinned
    ("openpyxl==3.1.5"), listed under [runtime] (see docs/plugins.md). Written by the plugin
    contract's one writer (autocoder/plugins/render.py)."""
    return render_manifest(scaffold_manifest(spec, permissions=permissions, libraries=libraries))


def spec_permissions(spec: Spec) -> Permissions:
    """What a new plugin is granted from the start: no network, no files, the hosts of the
    spec's services (which the person approving the spec has read)."""
    return Permissions(hosts=spec.services.hosts)


def scaffold_manifest(spec: Spec, *, permissions: Permissions | None = None,
                      libraries: Sequence[str] = ()) -> PluginManifest:
    """What a generated plugin's plugin.toml says: the spec's name, summary, commands and the
    settings its services need."""
    return PluginManifest(
        name=spec.name, version=PLUGIN_VERSION, summary=spec.summary,
        entry=f"{spec.package}.plugin:Plugin", package=spec.package,
        permissions=permissions if permissions is not None else spec_permissions(spec),
        libraries=tuple(libraries),
        commands=tuple(CommandDecl(name=command.name, description=command.description)
                       for command in spec.commands),
        settings=spec.services.settings)  # the contract's own SettingDecl, checked once


# -- the package ---------------------------------------------------------------------------------


# The stub's docstrings are one line each: the request is said once, in the prompt's request
# section, not again in every file the model reads and copies back (docs/llm.md).


def _package_init(spec: Spec) -> str:
    return f'{_docstring(f"The {spec.name} plugin.")}\n'


def _plugin_module(spec: Spec) -> str:
    returns = "dict" if _all_outputs_are_objects(spec) else "Any"
    dispatch = "\n".join(
        f"            {json.dumps(c.name)}: self.{method_name(c.name)}," for c in spec.commands
    )
    methods = "".join(_command_method(command, returns) for command in spec.commands)
    return (
        f"{_docstring(f'The {spec.name} plugin.')}\n"
        "\n"
        "from __future__ import annotations\n"
        "\n"
        "from typing import Any\n"
        "\n"
        "\n"
        "class Plugin:\n"
        f"    {_docstring(f'The commands of {spec.name}.', indent='    ')}\n"
        "\n"
        "    def on_initialize(self, api: Any) -> None:\n"
        '        """Called once when the host loads the plugin; nothing to set up yet."""\n'
        "\n"
        "    def on_event(self, event: str, data: dict) -> None:\n"
        '        """Host events are not used by this plugin yet."""\n'
        "\n"
        f"    def on_command(self, name: str, payload: dict) -> {returns}:\n"
        "        handlers = {\n"
        f"{dispatch}\n"
        "        }\n"
        "        handler = handlers.get(name)\n"
        "        if handler is None:\n"
        '            raise ValueError(f"unknown command: {name!r}")\n'
        "        return handler(payload)\n"
        f"{methods}"
    )


def _command_method(command: CommandSpec, returns: str) -> str:
    doc = f"The {command.name} command."
    message = json.dumps(f"{command.name} is not written yet")
    return (
        "\n"
        f"    def {method_name(command.name)}(self, payload: dict) -> {returns}:\n"
        f"        {_docstring(doc, indent='        ')}\n"
        f"        raise NotImplementedError({message})\n"
    )


def _all_outputs_are_objects(spec: Spec) -> bool:
    return all(isinstance(ex.output, dict) for c in spec.commands for ex in c.examples)


# -- tests ---------------------------------------------------------------------------------------

_CONFTEST = '''"""Puts the plugin root on sys.path so the tests import the plugin package."""

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
'''


def _acceptance_cases(spec: Spec) -> list[tuple[str, CommandSpec, int]]:
    return [
        (f"test_{method_name(command.name)}_example_{i}", command, i - 1)
        for command in spec.commands
        for i in range(1, len(command.examples) + 1)
    ]


def _acceptance_tests(spec: Spec) -> str:
    header = (
        "# Acceptance tests generated from the requester's examples. READ-ONLY: the generation\n"
        "# loop may add tests in other files (tests/test_generated_*.py) but never edits or\n"
        "# removes these; each asserts Plugin().on_command(command, input) == output.\n"
        "# The examples are embedded as JSON text so that any JSON value round-trips exactly.\n"
        "\n"
        "import json\n"
        "\n"
        f"from {spec.package}.plugin import Plugin\n"
    )
    if spec.services:
        header = header.replace(
            "# The examples are", "# `plugin_api` is the test harness's api: its api.http answers"
            " from the\n# example's answers, never from a network (docs/plugins.md).\n# The"
            " examples are")
    tests = [(_service_test if spec.services else _acceptance_test)(name, command, index)
             for name, command, index in _acceptance_cases(spec)]
    return header + "".join(tests)


def regression_tests(spec: Spec) -> str:
    """A change run's tests/test_regression_<n>.py (autocoder/engine/changing.py): the cases
    that motivated the change, built like the acceptance tests and read-only like them."""
    return _acceptance_tests(spec).replace(
        "# Acceptance tests generated from the requester's examples. READ-ONLY: the generation\n"
        "# loop may add tests in other files (tests/test_generated_*.py) but never edits or\n"
        "# removes these;",
        "# Regression tests generated from the cases a change was asked for. READ-ONLY: the\n"
        "# generation loop never edits or removes these, and every test of the version in use\n"
        "# keeps passing;", 1)


def _service_test(name: str, command: CommandSpec, index: int) -> str:
    """An example of a plugin that talks to other services: the plugin gets the harness's
    `plugin_api` (settings, storage, a recording api.http answering from the example), and
    every answer the example gives must have been asked for."""
    example = command.examples[index]
    return (
        "\n\n"
        f"def {name}(plugin_api):\n"
        f"    payload = json.loads({_json_literal(example.input)})\n"
        f"    expected = json.loads({_json_literal(example.output)})\n"
        f"    plugin_api.configure(settings=json.loads({_json_literal(example.settings)}))\n"
        f"    for answer in json.loads({_json_literal(list(example.http))}):\n"
        "        plugin_api.http.reply(**answer)\n"
        "    plugin = Plugin()\n"
        "    plugin.on_initialize(plugin_api)\n"
        f"    assert plugin.on_command({json.dumps(command.name)}, payload) == expected\n"
        "    assert plugin_api.http.unused() == [], \"the plugin did not make these requests\"\n"
    )


def _acceptance_test(name: str, command: CommandSpec, index: int) -> str:
    example = command.examples[index]
    return (
        "\n\n"
        f"def {name}():\n"
        f"    payload = json.loads({_json_literal(example.input)})\n"
        f"    expected = json.loads({_json_literal(example.output)})\n"
        f"    assert Plugin().on_command({json.dumps(command.name)}, payload) == expected\n"
    )


def _json_literal(value: Any) -> str:
    # repr of an ASCII-only JSON text is always a valid, single-line Python string literal.
    return repr(json.dumps(value, ensure_ascii=True))


# -- README --------------------------------------------------------------------------------------


def _readme(spec: Spec) -> str:
    parts = [f"# {spec.name}\n", f"{spec.summary.strip()}\n", "## Commands\n"]
    for command in spec.commands:
        parts.append(f"### `{command.name}`\n")
        if command.description.strip():
            parts.append(f"{command.description.strip()}\n")
        for i, example in enumerate(command.examples, start=1):
            shown = json.dumps({"input": example.input, "output": example.output}, indent=2,
                               ensure_ascii=False)
            parts.append(f"Example {i}:\n\n```json\n{shown}\n```\n")
    if spec.constraints:
        parts.append("## Constraints\n")
        parts.append("".join(f"- {c.strip()}\n" for c in spec.constraints))
    # The commands' examples passed the tests: the first command that has one is called, so
    # the printed commands work as printed (a command without an example would get `{}`).
    first = next((c for c in spec.commands if c.examples),
                 spec.commands[0] if spec.commands else None)
    payload = first.examples[0].input if first and first.examples else {}
    parts.append(_INSTALL.format(name=spec.name, package=spec.package,
                                 command=first.name if first else "COMMAND",
                                 payload=json.dumps(payload, ensure_ascii=False),
                                 services=_services_words(spec)))
    parts.append(_team_tool(spec.name, first.name if first else "COMMAND", payload))
    return "\n".join(parts)


_INSTALL = """## Installing

Open the plugin's page in the Autocoder marketplace and copy its **Install** command: it is
`pip install {name}` with the address of your portal's package index (and, for a plugin only
your team sees, the place for one of your API tokens).

Then load it in Python:

```python
from {package}.plugin import Plugin

plugin = Plugin()
result = plugin.on_command("{command}", {payload})
```

An unknown command raises `ValueError`. {services}
"""


def _team_tool(name: str, command: str, payload: dict[str, Any]) -> str:
    """How a team uses the plugin; its curl command is the one the tool's page shows
    (autocoder/plugins/api_calls.py), with the words to replace, in a fenced block of its own
    at the top level: a fence inside a list item renders as one line of inline code in the
    portal's Markdown (and `sh curl ...` pasted from it fails)."""
    url = tool_api_url(portal=PORTAL_PLACEHOLDER, team=TEAM_PLACEHOLDER, plugin=name,
                       command=command)
    return f"""## Using it as a team tool

Once a team activates it in the portal (*Tools*), anyone in the team can use it:

- **From a form**: open the tool's page, pick a command, fill in its fields and press *Run*.
- **On a schedule**: the tool's *Schedules* page runs a command with a fixed input every few
  minutes or hours, or daily at a set time (UTC), and keeps each result.

**From another system**: a team admin creates an API token on the tool's page, which also
shows this command ready to paste. Here, put your portal's address in place of
`{PORTAL_PLACEHOLDER}`, your team's short name in place of `{TEAM_PLACEHOLDER}` and the token in
place of `{TOKEN_PLACEHOLDER}`:

```sh
{curl_command(url=url, payload=payload)}
```

It answers `{{"ok": true, "output": ...}}`.
"""


def _services_words(spec: Spec) -> str:
    services = spec.services
    if not services:
        return "The plugin needs no network access and no files."
    words = []
    if services.hosts:
        hosts = ", ".join(rule.text() for rule in services.hosts)
        words.append(f"It sends requests to {hosts}, through the portal's `api.http`, so it"
                     " runs as a team tool of the portal (activate it there), not on its own.")
    if services.address_settings:
        names = ", ".join(f"`{s.name}`" for s in services.address_settings)
        words.append(f"It also reaches the address the team enters in {names}, once the admin"
                     " who activates it approves that address.")
    if services.settings:
        names = ", ".join(f"`{s.name}`" + (" (secret)" if s.secret else "")
                          for s in services.settings)
        words.append(f"The team enters its settings when activating it: {names}.")
    if services.storage:
        words.append("It keeps data between calls in the team's `api.storage`.")
    return " ".join(words)


# -- helpers -------------------------------------------------------------------------------------


def _docstring(text: str, indent: str = "") -> str:
    """A triple-quoted literal holding `text` exactly, whatever quotes or backslashes it has."""
    body = text.replace("\\", "\\\\").replace('"', '\\"')
    body = "".join(ch if ch in "\n\t" or (ord(ch) >= 32 and ch != "\x7f")
                   else ch.encode("unicode_escape").decode("ascii") for ch in body)
    lines = body.split("\n")
    body = "\n".join([lines[0]] + [indent + line if line.strip() else "" for line in lines[1:]])
    return f'"""{body}"""'
