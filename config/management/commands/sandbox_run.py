from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from autocoder import sandbox
from autocoder.sandbox.dirfiles import read_job_dir


class Command(BaseCommand):
    help = ("Run CMD in the sandbox with the files of DIR as its workdir. Exits 0 when the "
            "command ran (whatever its exit code), 2 when the sandbox itself failed.")

    def add_arguments(self, parser: Any) -> None:
        defaults = sandbox.Limits()
        parser.add_argument("dir", type=Path, help="directory copied into the workdir")
        parser.add_argument("--backend", choices=["bwrap", "docker"], default=None)
        parser.add_argument("--timeout", type=float, default=defaults.timeout_s,
                            help="wall-clock seconds")
        parser.add_argument("--memory-mb", type=int, default=defaults.memory_mb)
        parser.add_argument("--pids", type=int, default=defaults.pids)
        parser.add_argument("--output-kb", type=int, default=defaults.output_kb)
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument("command", nargs="*", help="-- CMD [ARGS...]")

    def run_from_argv(self, argv: list[str]) -> None:
        # Everything after `--` is the job's argv, options included; argparse would otherwise
        # stop matching positionals at the first option after DIR.
        if "--" in argv:
            at = argv.index("--")
            self._job_argv: list[str] = argv[at + 1:]
            argv = argv[:at]
        super().run_from_argv(argv)

    def handle(self, *args: Any, **options: Any) -> None:
        command = options["command"] or getattr(self, "_job_argv", [])
        if not command:
            raise CommandError("give the command to run after `--`, e.g. -- python -c pass")
        try:
            limits = sandbox.Limits(timeout_s=options["timeout"], memory_mb=options["memory_mb"],
                                    pids=options["pids"], output_kb=options["output_kb"])
            files = read_job_dir(options["dir"], limits)
        except (ValueError, OSError) as exc:
            raise CommandError(str(exc)) from exc
        try:
            result = sandbox.run(files, command, limits, backend=options["backend"])
        except sandbox.SandboxError as exc:
            if options["json"]:
                self.stdout.write(json.dumps({"error": str(exc)}))
            self.stderr.write(f"sandbox failure: {exc}")
            raise SystemExit(2) from exc
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        self._print(result, options["json"])

    def _print(self, result: sandbox.RunResult, as_json: bool) -> None:
        if as_json:
            self.stdout.write(json.dumps(result.as_dict()))
            return
        self.stdout.write(result.stdout, ending="")
        self.stderr.write(result.stderr, ending="")
        status = f"exit {result.exit_code}" if result.exit_code is not None else "killed"
        reason = f" ({result.killed_reason})" if result.killed_reason else ""
        self.stderr.write(f"[sandbox {result.backend}: {status}{reason} "
                          f"in {result.duration_ms} ms]")
