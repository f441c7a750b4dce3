#!/usr/bin/env python
"""Django's command-line utility; starts or joins the embedded PostgreSQL and Redis first."""

from __future__ import annotations

import os
import sys

# Commands that never touch the database or Redis start faster without the embedded services.
NO_SERVICES = {"help", "version", "--help", "-h", "--version", "check", "makemigrations",
               "collectstatic", "compilemessages", "sandbox_run", "safety_scan", "sandbox_bench",
               # runs a stack of its own, which starts the embedded servers
               "bench_db_outage"}


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    command = sys.argv[1] if len(sys.argv) > 1 else "help"
    if command not in NO_SERVICES:
        from autocoder.embedded import ensure_services

        ensure_services()
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
