"""`manage.py tool_token TEAM --as MEMBER [--name NAME] [--url URL] [--json]`.

Makes a tool token of all of the team's tools (an assistant's, over MCP, or a script's, over
the HTTP API), as the team admin named by --as would on a tokens page, and prints it once with
the team's addresses: the API's (`<api_url><plugin>/<command>`) and the MCP server's. With
--json it prints one object: token, api_url, mcp_url, name. Only a hash is kept; the token is
revoked on any of the team's tokens pages. docs/tools.md, "From an assistant (MCP)".
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from runs.approval_rules import MayNotDecide
from tools.management._options import team_option, user_option
from tools.services.activations import ActivationError
from tools.services.tokens import tool_token_create


class Command(BaseCommand):
    help = "Make a token of all of a team's tools and print it once, with the team's addresses."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("team", help="slug of the team")
        parser.add_argument("--as", dest="username", required=True, metavar="MEMBER",
                            help="a team admin, who makes the token (it is listed as theirs)")
        parser.add_argument("--name", default="An assistant (MCP)",
                            help="what the token is for, shown on the tokens pages")
        parser.add_argument("--url", default="http://127.0.0.1:8000/",
                            help="the portal's address as clients reach it "
                                 "(default http://127.0.0.1:8000/, what `up` serves)")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        team = team_option(options["team"])
        user = user_option(options["username"])
        try:
            _, raw = tool_token_create(team=team, plugin=None, user=user,
                                       name=options["name"])
        except (MayNotDecide, ActivationError) as exc:
            raise CommandError(f"no token made: {exc}") from None
        base = options["url"].rstrip("/") + "/"
        result = {"token": raw, "api_url": f"{base}api/tools/{team.slug}/",
                  "mcp_url": f"{base}mcp/{team.slug}/", "name": " ".join(options["name"].split())}
        if options["json"]:
            self.stdout.write(json.dumps(result))
            return
        self.stdout.write(f"A token of all of {team.name}'s tools (shown once; copy it now):\n"
                          f"  {raw}\n"
                          f"MCP address (for an assistant): {result['mcp_url']}\n"
                          f"API address: {result['api_url']}<plugin>/<command>\n"
                          f"Send it as: Authorization: Bearer <token>")
