"""The documentation stage's host side: the README checked against the real manifest, and its
runnable Python examples picked out for the sandbox to execute (docs/engine.md, "The quality
pipeline")."""

from __future__ import annotations

import ast
import re

from autocoder.plugins.manifest import PluginManifest
from autocoder.quality.report import Finding

README = "README.md"
_FENCE = re.compile(r"^```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)^```", re.M | re.S)
# Where a README names a command: a heading or an on_command call, or a "command": "x" in JSON
_NAMED_COMMANDS = (re.compile(r"^#{2,4}\s+`([a-z0-9][a-z0-9_-]*)`\s*$", re.M),
                   re.compile(r"on_command\(\s*[\"']([^\"']+)[\"']"),
                   re.compile(r"/commands/([a-z0-9][a-z0-9_-]*)"))
_SECTION_WORDS = {"commands", "examples", "installing", "install", "usage", "settings",
                  "constraints", "schedule", "api", "form", "team-tool", "limits", "hosts",
                  "development", "tests", "license", "notes", "errors", "inputs", "outputs"}


def readme_text(files: dict[str, str | bytes]) -> str | None:
    raw = files.get(README)
    if raw is None:
        return None
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw


def runnable_blocks(readme: str) -> list[str]:
    """The README's Python code blocks that are whole programs (they parse, have no `...`
    placeholder); each is executed in the sandbox with the plugin importable."""
    blocks = []
    for language, body in _FENCE.findall(readme):
        if language.lower() not in ("python", "py", "python3"):
            continue
        try:
            tree = ast.parse(body)
        except SyntaxError:
            continue
        if any(isinstance(node, ast.Constant) and node.value is Ellipsis
               for node in ast.walk(tree)):
            continue
        blocks.append(body)
    return blocks


def check_readme(readme: str | None, manifest: PluginManifest | None) -> list[Finding]:
    if readme is None or not readme.strip():
        return [Finding("there is no README.md: write one from plugin.toml", README)]
    if manifest is None:
        return [Finding("plugin.toml cannot be read, so the README cannot be checked against "
                        "it", "plugin.toml")]
    findings: list[Finding] = []
    text = readme.lower()
    for command in manifest.commands:
        if not _names(text, command.name):
            findings.append(Finding(f"the README does not name the command `{command.name}`",
                                    README))
        for field in command.inputs:
            if not _names(text, field.name):
                findings.append(Finding(f"the README does not name `{field.name}`, an input "
                                        f"of `{command.name}`", README))
    declared = {c.name for c in manifest.commands}
    claimed = sorted({name for pattern in _NAMED_COMMANDS for name in pattern.findall(readme)
                      if name not in declared and name.lower() not in _SECTION_WORDS
                      and name != manifest.name and name != manifest.package})
    for name in claimed:
        findings.append(Finding(f"the README describes a command `{name}` that plugin.toml "
                                "does not declare", README))
    for setting in manifest.settings:
        if not _names(text, setting.name):
            findings.append(Finding(f"the README does not name the setting `{setting.name}` "
                                    "the team enters", README))
    for rule in manifest.hosts:
        if rule.host.lower() not in text:
            findings.append(Finding(f"the README does not say the plugin talks to "
                                    f"{rule.text()}", README))
    if "curl" not in text:
        findings.append(Finding("the README has no example of calling the plugin through the "
                                "portal's API (a curl command)", README))
    if "schedule" not in text:
        findings.append(Finding("the README does not say how to run the plugin on a schedule "
                                "as a team tool", README))
    return findings


def _names(text: str, name: str) -> bool:
    lowered = name.lower()
    return re.search(rf"(?<![a-z0-9_-]){re.escape(lowered)}(?![a-z0-9_-])", text) is not None
