"""The product as a user installs and meets it (CI's user-install stage).

Run with the python of a venv installed exactly as `make run` installs it (no dev or test
extras: no pytest, no llama-cpp-python), from the checkout's root:

    make user-install-check

It starts the whole stack with `manage.py up` on its own embedded PostgreSQL and Redis, then
- generates the bundled demo plugin with `manage.py generate` (scripted replies: no model that
  writes code is reachable here) and expects the run to succeed, its tests having run in the
  sandbox on the plugin runtime;
- publishes it with `manage.py plugin_publish` through the marketplace's checks;
- installs it with pip from the running portal's /simple/ index into a bare venv and calls it;
- makes a recurring automation between two systems and runs it on a calendar
  (automation_stages.py: generate, publish, activate with an address and a secret, schedule
  Mondays 08:00 Europe/Berlin for last week, run what is due on the Monday after the clock
  change, and check the secret stays on the host).
Standard library only: this interpreter has no test tools, like a user's.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from automation_stages import automation_stages  # beside this file (.ci/)

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "docs" / "examples" / "weekly-scheduler.spec.json"
SCRIPT = ROOT / "docs" / "examples" / "weekly-scheduler.script.json"
results: list[tuple[str, bool, str]] = []


def stage(name: str, step: Callable[[], str]) -> None:
    """Run one stage; a failure is recorded and ends the run (later stages need this one)."""
    try:
        detail = step()
    except Exception as error:
        results.append((name, False, f"{type(error).__name__}: {error}"))
        raise
    results.append((name, True, detail))
    print(f"ok   {name}: {detail}", flush=True)


def manage(*args: str, env: dict[str, str], timeout: float = 600) -> str:
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"manage.py {args[0]} exited {done.returncode}:\n"
                           f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done.stdout


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_healthy(url: str, up: subprocess.Popen[bytes], timeout_s: float = 600) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if up.poll() is not None:
            raise RuntimeError(f"manage.py up exited with {up.returncode} before serving")
        try:
            with urllib.request.urlopen(f"{url}healthz", timeout=5) as response:  # noqa: S310
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(1)
    raise RuntimeError(f"{url}healthz did not answer 200 within {timeout_s:.0f} s")


def main() -> int:
    if any((Path(sys.prefix) / "bin" / tool).exists() for tool in ("pytest", "ruff")):
        print(f"{sys.prefix} has dev tools: run this with a venv installed as `make run` does",
              file=sys.stderr)
        return 2
    scratch = Path(tempfile.mkdtemp(prefix="autocoder-user-install-"))
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    # TOOLS_INTERNAL_HOSTS: the automation's booking system and chat are loopback servers of
    # this script (automation_stages.py), which an install would list as internal services.
    env = {**os.environ, "AUTOCODER_VAR_DIR": str(scratch / "var"), "PYTHONUNBUFFERED": "1",
           "TOOLS_INTERNAL_HOSTS": "127.0.0.1"}
    for name in ("DATABASE_URL", "REDIS_URL", "LLM_PROVIDER", "LLM_SCRIPT"):
        env.pop(name, None)
    log = (scratch / "up.log").open("wb")
    up = subprocess.Popen([sys.executable, "manage.py", "up", "--port", str(port)], cwd=ROOT,
                          env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        run_stages(url, env, scratch, up)
    except Exception:
        print(f"---- the end of `manage.py up`'s output ({scratch / 'up.log'}):", file=sys.stderr)
        print((scratch / "up.log").read_text(errors="replace")[-4000:], file=sys.stderr)
    finally:
        stop(up)
    failed = sum(not ok for _, ok, _ in results)
    for name, ok, detail in results:
        if not ok:
            print(f"FAIL {name}: {detail}", file=sys.stderr)
    print(f"user-install: {len(results) - failed} passed, {failed} failed")
    return 1 if failed or not results else 0


def run_stages(url: str, env: dict[str, str], scratch: Path,
               up: subprocess.Popen[bytes]) -> None:
    plugin_dir = scratch / "weekly-scheduler"

    def _start() -> str:
        started = time.monotonic()
        wait_healthy(url, up)
        return f"{url}healthz answered 200 after {time.monotonic() - started:.0f} s"

    def _generate() -> str:
        # A fresh runtime's first reference load embeds for minutes: the run's exit code must
        # be 0 whether the load finished or was stopped at the bound (and the JSON says which).
        out = manage("generate", str(SPEC), "--provider", "scripted", "--script", str(SCRIPT),
                     "--out", str(plugin_dir), "--reference-wait", "300", "--json", env=env)
        summary = json.loads(out.strip().splitlines()[-1])
        if summary["status"] != "succeeded":
            raise RuntimeError(f"the run ended {summary['status']}: {summary}")
        return (f"run {summary['run_id']} succeeded in {summary['iterations']} attempt(s), "
                f"pass rate {summary['pass_rate']:.0%}; reference docs: "
                f"{summary['reference']['detail']}")

    def _publish() -> str:
        out = manage("plugin_publish", str(plugin_dir), "--team", "demo", "--visibility",
                     "public", "--approve-as", "admin", "--json", env=env)
        published = json.loads(out.strip().splitlines()[-1])
        files = ', '.join(file['filename'] for file in published['files'])
        return f"{published['plugin']} {published['version']}: {files}"

    def _install() -> str:
        bare = scratch / "bare-venv"
        subprocess.run([sys.executable, "-m", "venv", str(bare)], check=True)
        subprocess.run([str(bare / "bin" / "pip"), "install", "-q", "--no-cache-dir",
                        "--index-url", f"{url}simple/", "weekly-scheduler"],
                       check=True, env={**env, "PIP_CONFIG_FILE": os.devnull,
                                        "PIP_FIND_LINKS": "", "PIP_EXTRA_INDEX_URL": ""})
        example = json.loads(SPEC.read_text())["commands"][0]["examples"][0]
        call = ("import json, sys\nfrom weekly_scheduler.plugin import Plugin\n"
                "print(json.dumps(Plugin().on_command('generate-schedule', "
                "json.loads(sys.argv[1]))))")
        done = subprocess.run([str(bare / "bin" / "python"), "-c", call,
                               json.dumps(example["input"])], capture_output=True, text=True,
                              check=True, cwd=scratch)
        answer = json.loads(done.stdout)
        if answer != example["output"]:
            raise RuntimeError(f"expected {example['output']}, got {answer}")
        return f"generate-schedule answered {answer}"

    stage("the stack starts from `manage.py up`", _start)
    stage("the bundled demo is generated", _generate)
    stage("the plugin is published through the marketplace's checks", _publish)
    stage("pip installs it from the portal's /simple/ index and it answers", _install)
    automation_stages(stage, manage, env, scratch, scratch / "up.log")


def stop(up: subprocess.Popen[bytes]) -> None:
    """Ctrl-C, as a user stops it; then make sure nothing is left behind."""
    if up.poll() is None:
        os.killpg(up.pid, signal.SIGINT)
        try:
            up.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(up.pid, signal.SIGKILL)
            up.wait()


if __name__ == "__main__":
    raise SystemExit(main())
