"""`manage.py plugin_publish DIR --team SLUG [--visibility ...] --approve-as USERNAME [--json]`.

Publishes a plugin directory through the same checks as an upload (manifest, safety gate, tests
in the sandbox, artifacts); the named admin's approval is recorded in the audit log.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.core.management.base import BaseCommand, CommandError

from marketplace.models import Plugin
from marketplace.services.publishing import plugin_directory_publish
from marketplace.validation import PackageError
from teams.models import Team


class Command(BaseCommand):
    help = "Check, build and publish a plugin directory to the marketplace."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("directory", type=Path, help="the plugin directory (plugin.toml)")
        parser.add_argument("--team", required=True, help="slug of the owner team")
        parser.add_argument("--visibility", choices=Plugin.Visibility.values, default="",
                            help="default: team for a new plugin, unchanged for an existing one")
        parser.add_argument("--approve-as", required=True, metavar="USERNAME",
                            help="an admin of the team, who approves the publication")
        parser.add_argument("--category", choices=Plugin.Category.values, default="")
        parser.add_argument("--tags", default="", help="comma-separated")
        parser.add_argument("--changelog", default="")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        team = Team.objects.filter(slug=options["team"]).first()
        if team is None:
            raise CommandError(f"no team with slug {options['team']!r}")
        approver = get_user_model().objects.filter(username=options["approve_as"]).first()
        if approver is None:
            raise CommandError(f"no user named {options['approve_as']!r}")
        if not options["directory"].is_dir():
            raise CommandError(f"{options['directory']} is not a directory")
        try:
            version = plugin_directory_publish(
                directory=options["directory"], team=team, approver=approver,
                visibility=options["visibility"], category=options["category"],
                tags=[t for t in options["tags"].split(",") if t.strip()],
                changelog=options["changelog"])
        except PackageError as exc:
            raise CommandError("the plugin was not published:\n  "
                               + "\n  ".join(exc.errors)) from None
        except PermissionDenied as exc:
            raise CommandError(str(exc)) from exc
        result: dict[str, Any] = {
            "plugin": version.plugin.name, "version": version.version,
            "files": [{"filename": a.filename, "sha256": a.sha256, "size": a.size}
                      for a in version.artifacts.order_by("kind")],
        }
        if options["json"]:
            self.stdout.write(json.dumps(result))
            return
        self.stdout.write(f"published {result['plugin']} {result['version']}"
                          f" ({version.plugin.visibility})")
        for file in result["files"]:
            self.stdout.write(f"  {file['filename']}  sha256:{file['sha256']}")
