"""The curl command that calls a team tool's HTTP API (docs/tools.md, "Calling a tool from
another system"), built in one place so that it works as printed wherever it is shown: the
tool's pages (tools/api_commands.py: the address the page was asked for, a real token after
making one) and the README a generated plugin starts with (autocoder/engine/scaffold.py: the
words a person replaces). The address and the JSON body are quoted for a POSIX shell, each
option on its own line after a backslash, so the block runs pasted into sh or bash.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from autocoder.plugins.names import normalize_name

TOKEN_PLACEHOLDER = "YOUR-TOKEN"  # noqa: S105 - the words a person replaces, not a secret
PORTAL_PLACEHOLDER = "https://YOUR-PORTAL"
TEAM_PLACEHOLDER = "YOUR-TEAM"


def curl_command(*, url: str, payload: dict[str, Any], token: str = TOKEN_PLACEHOLDER) -> str:
    """`curl -X POST URL` with the token and the JSON body, quoted for a POSIX shell."""
    body = shlex.quote(json.dumps(payload, ensure_ascii=False))
    return (f"curl -X POST {shlex.quote(url)} \\\n"
            f'  -H "Authorization: Bearer {token}" \\\n'
            f'  -H "Content-Type: application/json" \\\n'
            f"  -d {body}")


def tool_api_url(*, portal: str, team: str, plugin: str, command: str) -> str:
    """The API address of a plugin's command in a team (tools/urls.py, "api")."""
    return f"{portal.rstrip('/')}/api/tools/{team}/{normalize_name(plugin)}/{command}"
