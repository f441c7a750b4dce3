"""The words for a setting a team has not entered yet, said the same way wherever a call meets
it: the tools' refusal before a call (tools/services/invocations.py, `invocation_check`) and
`api.http` when a request names a secret with no value (autocoder/calling/http_request.py).
docs/tools.md, "Settings still missing".

A ground module: the standard library only.
"""

from __future__ import annotations

from collections.abc import Sequence

SETTINGS_PAGE = "the tool's Settings page"


def setting_named(name: str, description: str = "") -> str:
    """“api_key” (The key of your accounting system): the name and, when known, its words."""
    words = description.strip().rstrip(".")
    return f"“{name}” ({words})" if words else f"“{name}”"


def settings_missing_words(missing: Sequence[tuple[str, str]], url: str = "") -> str:
    """One sentence for the settings (name, description) that have no value yet, and where a
    team admin enters them (`url`: the settings page; "" when the caller has no address)."""
    named = [setting_named(name, description) for name, description in missing]
    listed = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
    what = (f"the setting {listed} has" if len(named) == 1
            else f"the settings {listed} have")
    where = f"{SETTINGS_PAGE}, {url}" if url else SETTINGS_PAGE
    one = "it" if len(named) == 1 else "them"
    return f"{what} no value yet: a team admin enters {one} on {where}"
