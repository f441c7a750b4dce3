"""The client configuration the tool and tokens pages offer to copy: a desktop assistant's
`mcpServers` entry for the team's MCP address (docs/tools.md, "From an assistant (MCP)").

Desktop assistants start their servers as local commands, so the entry runs `mcp-remote`, the
usual bridge to a remote Streamable HTTP server, with the token in an environment variable (the
header's value without a space: some systems split arguments on spaces).
"""

from __future__ import annotations

import json

TOKEN_PLACEHOLDER = "YOUR-TOKEN"  # noqa: S105 - the word a person replaces, not a secret


def mcp_url(base: str, team_slug: str) -> str:
    """The team's MCP address (`base`: "https://portal.example.org/")."""
    return f"{base.rstrip('/')}/mcp/{team_slug}/"


def server_key(team_slug: str) -> str:
    return f"{team_slug}-tools"


def desktop_config(*, url: str, team_slug: str, token: str = TOKEN_PLACEHOLDER) -> str:
    """The `mcpServers` JSON of a desktop assistant's configuration file."""
    entry = {"command": "npx",
             "args": ["-y", "mcp-remote", url, "--header", "Authorization:${AUTH_HEADER}"],
             "env": {"AUTH_HEADER": f"Bearer {token}"}}
    return json.dumps({"mcpServers": {server_key(team_slug): entry}}, indent=2)


def editor_config(*, url: str, team_slug: str, token: str = TOKEN_PLACEHOLDER) -> str:
    """An editor's entry for a remote server (Cursor's `mcp.json` form: address and header)."""
    entry = {"url": url, "headers": {"Authorization": f"Bearer {token}"}}
    return json.dumps({"mcpServers": {server_key(team_slug): entry}}, indent=2)
