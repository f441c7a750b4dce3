"""`manage.py serve`: the web server alone, several ASGI processes on one port (compose's web
service; `up` starts the same processes next to the workers). See autocoder/supervisor.py."""

from __future__ import annotations

import os
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from autocoder.supervisor import (
    Stop,
    catch_stop_signals,
    ignore_stop_signals,
    listening_sockets,
    restart_exited,
    stop_all,
    web_children,
    web_process_count,
)

STOP_BUDGET_S = 5.0


class Command(BaseCommand):
    help = ("Serve the portal with several ASGI processes on one port, each restarted within "
            "seconds if it dies (migrations and static files are not this command's job).")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument("--processes", type=int, default=0,
                            help="ASGI processes (default: WEB_PROCESSES, or cores + 1)")

    def handle(self, *args: Any, **options: Any) -> None:
        catch_stop_signals()
        count = options["processes"] or web_process_count()
        try:
            sockets = listening_sockets(options["host"], options["port"], count)
        except OSError as error:
            raise CommandError(str(error)) from error
        web = web_children(sockets)
        self.stdout.write(f"Serving on http://{options['host']}:{options['port']}/ with "
                          f"{count} processes")
        try:
            for child in web:
                child.start()
            while True:
                restart_exited(web, self.stderr.write)
                time.sleep(0.25)
        except Stop:
            pass
        finally:
            ignore_stop_signals()
            stop_all(web, STOP_BUDGET_S)
            for sock in sockets:
                sock.close()
