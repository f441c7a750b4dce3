"""`manage.py generate` and `manage.py approve` as a user runs them: real processes on the test
session's database, with the reference docs' autoload on, as a user's installation has it (the
test session turns it off for everything else: config/testing/pytest_plugin.py).

What a user met: a successful demo run ended with exit code 134 ("terminate called without an
active exception": the reference load's thread was still in the embedding model at exit) and
left no reference entries; the step line said "iteration 3/6 next: learn" at the end of a
two-attempt run; approving the publish request published nothing.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from autocoder.reference.models import ReferenceEntry
from marketplace.models import PluginVersion
from runs.models import ApprovalRequest, Project, Run
from tests.live import child_env

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
DEMO = ["generate", str(EXAMPLES / "weekly-scheduler.spec.json"), "--provider", "scripted",
        "--script", str(EXAMPLES / "weekly-scheduler.script.json")]
# The first load on a machine embeds about 4,400 entries (minutes of CPU on a busy 2-core
# machine) and keeps the vectors beside reference.json; later loads only insert rows.
FIRST_LOAD_S = 1500


def manage(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=settings.BASE_DIR,
                          capture_output=True, text=True, timeout=timeout,
                          env=child_env(REFERENCE_AUTOLOAD="1"))
    print(f"manage.py {args[0]}: exit {done.returncode} after {time.monotonic() - started:.0f} s")
    return done


@pytest.mark.timeout(FIRST_LOAD_S + 120)  # the session's 300 s would cut a first load short
def test_the_demo_exits_0_with_the_reference_loaded_and_approving_publishes_it(
        tmp_path: Path) -> None:
    done = manage(*DEMO, "--out", str(tmp_path / "plugin"), timeout=FIRST_LOAD_S)

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "terminate called" not in done.stderr
    out = done.stdout
    run = Run.objects.get()
    assert run.status == Run.Status.SUCCEEDED and run.iteration == 2
    # The reference docs are in the database, and the output says so.
    entries = ReferenceEntry.objects.count()
    assert entries > 1000
    assert f"reference   loaded: {entries} entries" in out, out[-1500:]

    # The step lines number attempts as the run page does, the last one included.
    steps = [line.split("  ", 1)[1] for line in out.splitlines() if line.startswith("run ")]
    assert steps[0] == "attempt 1 of 6  next: implement"
    assert "attempt 1 of 6  next: reflect" in steps
    assert steps[-1] == "attempt 2 of 6  next: learn"
    assert "iteration" not in out
    assert "attempts    2" in out
    assert f"manage.py approve {run.id} --as USERNAME" in out

    # The requester may not approve their own request: nothing is decided, and it says why.
    refused = manage("approve", str(run.id), "--as", "requester")
    assert refused.returncode == 1
    assert "does not let the author of a change decide it" in refused.stderr
    assert not PluginVersion.objects.exists()

    approved = manage("approve", str(run.id), "--as", "reviewer")

    assert approved.returncode == 0, approved.stdout + approved.stderr
    version = PluginVersion.objects.get(run=run)
    assert version.status == PluginVersion.Status.PUBLISHED and version.version == "0.1.0"
    assert ApprovalRequest.objects.get(run=run, kind="publish").status == "approved"
    assert Project.objects.get(pk=run.project_id).status == Project.Status.PUBLISHED
    assert f"publish request approved: run {run.id} is now succeeded" in approved.stdout
    assert (f"published   {version.plugin.name} 0.1.0 (who sees it: Team (every member of "
            "the team); category: ") in approved.stdout


def test_a_bounded_wait_stops_the_load_cleanly_and_says_so(
        settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """What `generate --reference-wait 0` does after its run, in this process so that the load
    is surely not done yet: the load is stopped at its next slice, nothing half-loaded is
    kept, and the words say what to run instead."""
    from autocoder.reference import background

    settings.REFERENCE_AUTOLOAD = True
    monkeypatch.setattr(background, "_loads", {})  # a first load in this process
    background.ensure_loaded()
    assert background.load_running()

    settled = background.load_settle(wait_s=0)

    assert settled.state == "stopped" and not background.load_running()
    assert settled.text.startswith("the load was stopped after ")
    assert "(nothing half-loaded is kept); `python manage.py reference_load` loads them" in (
        settled.text)
    assert ReferenceEntry.objects.count() == 0


def test_a_process_that_exits_during_the_load_stops_it_first() -> None:
    """Any process (a shell, a worker, the web server) that exits while the background load
    runs stops it at exit instead of aborting in the model's native code."""
    code = ("from autocoder.reference.background import ensure_loaded, load_running\n"
            "ensure_loaded()\nassert load_running()\n")
    done = manage("shell", "-c", code, timeout=240)

    assert done.returncode == 0, done.stderr[-3000:]
    assert "stopping the reference docs load as the process exits" in done.stderr
    assert "the reference docs load was stopped" in done.stderr
    assert ReferenceEntry.objects.count() == 0
