"""The documentation stage's host side: the README checked against the real manifest, and its
runnable Python examples picked out for the sandbox to execute (docs/engine.md, "The quality
pipeline")."""

from __future__ import annotations

import ast
import re

from autocoder.plugins.manifest import PluginManifest
from autocoder.quality.readme_names import Mentions, read_mentions
from autocoder.quality.report import Finding

README = "README.md"
# The code blocks whose language is given (the Python ones are run)
_FENCE = re.compile(r"^```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)^```", re.M | re.S)


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
    """The README against plugin.toml, both ways: what the manifest declares and the README
    does not describe, and what the README mentions that the manifest does not have."""
    if readme is None or not readme.strip():
        return [Finding("there is no README.md: write one from plugin.toml", README)]
    if manifest is None:
        return [Finding("plugin.toml cannot be read, so the README cannot be checked against "
                        "it", "plugin.toml")]
    mentions = read_mentions(readme)
    findings = _undescribed(readme.lower(), mentions.prose.lower(), manifest)
    findings += _unknown(mentions, manifest)
    text = readme.lower()
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


def _undescribed(text: str, prose: str, manifest: PluginManifest) -> list[Finding]:
    """Commands and settings plugin.toml declares that the README's words (not only its code
    blocks) never name, and command inputs it names nowhere."""
    findings: list[Finding] = []
    for command in manifest.commands:
        if not _names(prose, command.name):
            findings.append(Finding(f"the README does not describe the command "
                                    f"`{command.name}` that plugin.toml declares: give it a "
                                    "section saying what it does", README))
        for field in command.inputs:
            if not _names(text, field.name):
                findings.append(Finding(f"the README does not name `{field.name}`, an input "
                                        f"of `{command.name}`", README))
    for setting in manifest.settings:
        if not _names(prose, setting.name):
            findings.append(Finding(f"the README does not name the setting `{setting.name}` "
                                    "the team enters", README))
    return findings


def _unknown(mentions: Mentions, manifest: PluginManifest) -> list[Finding]:
    """Commands and settings the README mentions that plugin.toml does not declare."""
    commands = {c.name.lower() for c in manifest.commands}
    inputs = {f.name.lower() for c in manifest.commands for f in c.inputs}
    settings = {s.name.lower() for s in manifest.settings}
    ours = {manifest.name.lower(), manifest.package.lower(), *(t.lower() for t in manifest.tags)}
    findings = [Finding(f"the README describes a command `{name}` that plugin.toml does not "
                        "declare: remove it from the README or add the command", README)
                for name in sorted(mentions.commands)
                if name.lower() not in commands | ours | settings | inputs]
    findings += [Finding(f"the README mentions a setting `{name}` that plugin.toml does not "
                         "declare: remove it from the README or declare it in [[settings]]",
                         README)
                 for name in sorted(mentions.settings)
                 if name.lower() not in settings | inputs | commands | ours]
    return findings


def _names(text: str, name: str) -> bool:
    lowered = name.lower()
    return re.search(rf"(?<![a-z0-9_-]){re.escape(lowered)}(?![a-z0-9_-])", text) is not None
