"""A change run's own words (docs/engine.md, "Change runs"): a change may make the plugin's
summary or a command's description untrue (they are in plugin.toml, the tool page and the
marketplace). plugin.toml stays the host's, but in a change run a reply may rewrite those
words: the host takes the new summary and descriptions (nothing else) into the version's
manifest, keeps them through every later rendering of it, and a person and the reviewing model
are shown the new words.
"""

from __future__ import annotations

import dataclasses

from autocoder.engine.pending import WordsChange
from autocoder.plugins import PluginManifest, read_manifest
from autocoder.plugins.render import render_manifest


def words_request(current_toml: str, proposed_toml: str) -> tuple[str, WordsChange] | None:
    """(plugin.toml with the summary and the commands' descriptions of `proposed_toml`, what
    changed: {"summary": [old, new], "commands": {name: [old, new]}}) when a reply's manifest
    rewrites those words of the current one; None when it does not, or cannot be read."""
    current, proposed = read_manifest(current_toml), read_manifest(proposed_toml)
    if current is None or proposed is None:
        return None
    changed: WordsChange = {}
    if proposed.summary.strip() and proposed.summary.strip() != current.summary.strip():
        changed["summary"] = [current.summary, proposed.summary.strip()]
    described = {c.name: c.description.strip() for c in proposed.commands}
    commands = {c.name: [c.description, described[c.name]] for c in current.commands
                if described.get(c.name) and described[c.name] != c.description.strip()}
    if commands:
        changed["commands"] = commands
    if not changed:
        return None
    return render_manifest(with_words(current, proposed)), changed


def with_words(manifest: PluginManifest, words: PluginManifest | None) -> PluginManifest:
    """`manifest` with the summary and the descriptions of the commands both have of `words`
    (the rest, its version, permissions, settings and inputs, as `manifest` has them)."""
    if words is None:
        return manifest
    described = {c.name: c.description for c in words.commands if c.description.strip()}
    commands = tuple(dataclasses.replace(c, description=described.get(c.name, c.description))
                     for c in manifest.commands)
    return dataclasses.replace(manifest, summary=words.summary.strip() or manifest.summary,
                               commands=commands)


def words_lines(changed: WordsChange | None) -> list[str]:
    """What the change rewrote, in words for the reviewer and a person at a gate."""
    if not changed:
        return []
    lines = []
    if changed.get("summary"):
        old, new = changed["summary"]
        lines.append(f"The change rewrites the plugin's summary from \u201c{old}\u201d to "
                     f"\u201c{new}\u201d.")
    for name, (old, new) in sorted((changed.get("commands") or {}).items()):
        lines.append(f"The change rewrites the description of `{name}` from \u201c{old}\u201d "
                     f"to \u201c{new}\u201d.")
    return lines
