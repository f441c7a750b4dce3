"""`manage.py secrets_reseal [--dry-run]`: after a SECRET_KEY change, seal every stored secret
(model API keys, plugin secrets) again under the new key, so the old one can leave
DJANGO_SECRET_KEY_FALLBACKS (docs/operating.md, "Rotating the secret key")."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from autocoder.resealing import ResealReport, sealed_values_reseal

ENTER_AGAIN = ("enter them again (the site's key on the Model page, a team's in the admin's team "
               "model overrides, a tool's secret on its settings page), or add the key they were "
               "sealed under to DJANGO_SECRET_KEY_FALLBACKS and run this again")


class Command(BaseCommand):
    help = ("Seal every stored secret again under the current SECRET_KEY (those that open only "
            "with a key in DJANGO_SECRET_KEY_FALLBACKS); then the fallback can be removed.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--dry-run", action="store_true",
                            help="count what would be sealed again, change nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        report = sealed_values_reseal(dry_run=options["dry_run"])
        self.stdout.write(self._summary(report, dry_run=options["dry_run"]))
        if report.unreadable:
            places = ", ".join(report.unreadable)
            raise CommandError(f"{len(report.unreadable)} stored secret(s) open with no key "
                               f"({places}): {ENTER_AGAIN}.")
        if settings.SECRET_KEY_FALLBACKS and not options["dry_run"]:
            self.stdout.write("Every stored secret opens with SECRET_KEY alone now: once every "
                              "web process and worker runs with the new key, remove "
                              "DJANGO_SECRET_KEY_FALLBACKS and restart them.")

    @staticmethod
    def _summary(report: ResealReport, *, dry_run: bool) -> str:
        done = "would be sealed" if dry_run else "sealed"
        return (f"{report.resealed} stored secret(s) {done} again under the current SECRET_KEY; "
                f"{report.current} already were.")
