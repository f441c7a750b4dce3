"""`manage.py plugin_history_backfill [--plugin NAME]`.

Records every published version in its plugin's git history (marketplace/history.py), in
version order: for installs that published before the history existed, and for any version
whose recording failed at publication. A version already recorded is left as it is, so the
command can run as often as wanted (for example from cron).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from marketplace.history import HistoryError, published_in_order, record_version
from marketplace.models import Plugin
from marketplace.validation import normalize_name


class Command(BaseCommand):
    help = "Record every published plugin version in its plugin's git history."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--plugin", default="", metavar="NAME",
                            help="only this plugin (default: every plugin)")

    def handle(self, *args: Any, **options: Any) -> None:
        plugin_id = None
        if options["plugin"]:
            wanted = normalize_name(options["plugin"])
            plugin = Plugin.objects.filter(normalized_name=wanted).first()
            if plugin is None:
                raise CommandError(f"no plugin called {options['plugin']!r}")
            plugin_id = plugin.pk
        recorded = failed = 0
        for version in published_in_order(plugin_id):
            try:
                commit = record_version(version)
            except (HistoryError, OSError) as error:
                failed += 1
                self.stderr.write(f"{version.plugin.name} {version.version}: {error}")
                continue
            if commit:
                recorded += 1
                self.stdout.write(f"{version.plugin.name} {version.version}: {commit[:12]}")
        self.stdout.write(f"{recorded} version{'s' * (recorded != 1)} recorded,"
                          f" {failed} failed.")
        if failed:
            raise CommandError(f"{failed} version(s) could not be recorded")
