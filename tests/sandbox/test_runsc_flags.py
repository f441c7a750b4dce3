"""A gVisor runtime registered without the flags the sandbox needs (issue 44): `doctor`, the
runtime probe and the tests' choice of backends say which flag is missing and how to add it
(autocoder/sandbox/runsc_flags.py), and `.ci/docker-engine` refuses such a registration.

The detection is tested over runtime reports as the engine gives them (`docker info`'s
`Runtimes`), over this machine's real engine (its registration is the right one: nothing to
say), and through the CI script, whose `docker` is a stand-in on PATH printing a report
(the script would otherwise start or reload the machine's real engine)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from autocoder.sandbox.runsc_flags import (
    missing_flags,
    registration_problem,
    runtime_flags,
)

ROOT = Path(settings.BASE_DIR)
GOOD = {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none", "--host-uds=open"]}
NO_UDS = {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none"]}
RUNC = {"path": "runc"}


def test_flags_are_read_in_every_form_go_takes() -> None:
    assert runtime_flags(["--host-uds=open", "-network=none", "--debug", "--root", "/x"]) == {
        "--host-uds": "open", "--network": "none", "--debug": "true", "--root": "/x"}
    assert missing_flags(["--network", "none", "-host-uds", "all"]) == []
    assert missing_flags(["--host-uds=open", "--host-uds=none"]) == ["--network=none",
                                                                      "--host-uds=open"]


def test_a_right_registration_has_nothing_to_say() -> None:
    assert registration_problem("runsc", {"runc": RUNC, "runsc": GOOD}) is None
    assert registration_problem("kata", {"kata": {"path": "kata-runtime"}}) is None


def test_without_host_uds_it_says_which_flag_and_how_to_add_it() -> None:
    found = registration_problem("runsc", {"runc": RUNC, "runsc": NO_UDS})
    assert found is not None
    problem, fix = found
    assert "registered without --host-uds=open" in problem
    assert "cannot be reached ([Errno 1] Operation not permitted)" in problem  # the symptom
    assert fix.startswith('add "--host-uds=open" to the "runtimeArgs" of "runsc" in'
                          " /etc/docker/daemon.json")
    assert ('"runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none",'
            ' "--host-uds=open"]}') in fix  # what it keeps, and the flag added
    assert "kill -HUP" in fix and "docs/sandbox.md" in fix


def test_a_wrong_value_is_replaced_and_no_args_at_all_gets_both_flags() -> None:
    found = registration_problem("runsc", {"runsc": {
        "path": "/opt/runsc", "runtimeArgs": ["--host-uds=none", "--debug"]}})
    assert found is not None and '"runtimeArgs": ["--debug", "--network=none",' \
        ' "--host-uds=open"]' in found[1] and '"path": "/opt/runsc"' in found[1]
    found = registration_problem("runsc", {"runsc": {"path": "/usr/bin/runsc"}})
    assert found is not None and "without --network=none and --host-uds=open" in found[0]


def test_gvisor_under_another_name_is_checked_too() -> None:
    found = registration_problem("gvisor", {"gvisor": {"path": "/usr/local/bin/runsc"}})
    assert found is not None and "'gvisor'" in found[0]


def test_a_daemon_json_not_yet_reloaded_is_told_apart() -> None:
    configured = {"runtimes": {"runsc": GOOD}}
    found = registration_problem("runsc", {"runsc": NO_UDS}, configured)
    assert found is not None and "already has it, but the engine has not read it" in found[1]
    found = registration_problem("runsc", {"runc": RUNC}, configured)
    assert found is not None and "no runtime 'runsc'" in found[0]
    assert "has not read it" in found[1]
    found = registration_problem("runsc", {"runc": RUNC}, {})
    assert found is not None and found[1].startswith("register it in /etc/docker/daemon.json")
    assert '"runtimeArgs": ["--network=none", "--host-uds=open"]' in found[1]


def _engine_runtimes() -> dict[str, Any] | None:
    try:
        import docker

        return dict(docker.from_env(timeout=10).info().get("Runtimes") or {})
    except Exception:  # noqa: BLE001 (no engine here)
        return None


def test_this_machines_engine_registration_is_usable() -> None:
    """For real: the engine CI registers with .ci/docker-engine has both flags."""
    runtimes = _engine_runtimes()
    if runtimes is None:
        if os.environ.get("AUTOCODER_DOCKER_TESTS") == "required":
            pytest.fail("no Docker engine answers (AUTOCODER_DOCKER_TESTS=required)")
        pytest.skip("no Docker engine answers here: start dockerd to check its registration")
    if "runsc" not in runtimes and os.environ.get("AUTOCODER_DOCKER_TESTS") != "required":
        pytest.skip("this engine has no runsc registered (docs/sandbox.md, 'gVisor')")
    assert registration_problem("runsc", runtimes) is None, runtimes


# -- .ci/docker-engine -------------------------------------------------------------------------


def _ci_script(tmp_path: Path, runtimes: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """`.ci/docker-engine` with a `docker` on PATH that answers `info` with `runtimes`, and a
    daemon.json (DOCKER_DAEMON_JSON) that registers them, so it neither writes nor reloads."""
    (tmp_path / "daemon.json").write_text(json.dumps({"runtimes": runtimes}))
    (tmp_path / "runtimes.json").write_text(json.dumps(runtimes))
    fake = tmp_path / "bin" / "docker"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\n[ "$1" = info ] || exit 2\ncase "$*" in\n'
                    f'  *"json .Runtimes"*) cat {tmp_path / "runtimes.json"} ;;\n'
                    '  *ServerVersion*) echo "stand-in, runtimes: runc runsc" ;;\nesac\n')
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}",
           "DOCKER_DAEMON_JSON": str(tmp_path / "daemon.json")}
    return subprocess.run(["bash", str(ROOT / ".ci" / "docker-engine")], env=env,
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture
def as_root() -> None:
    if os.geteuid() != 0:
        pytest.skip(".ci/docker-engine runs docker through sudo when not root, which ignores"
                    " the stand-in on PATH; CI runs as root")


@pytest.mark.usefixtures("as_root")
def test_the_ci_script_refuses_a_runsc_without_host_uds_with_the_fix(tmp_path: Path) -> None:
    done = _ci_script(tmp_path, {"runc": RUNC, "runsc": NO_UDS})
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "registered without --host-uds=open" in done.stderr
    assert 'add "--host-uds=open" to the "runtimeArgs" of "runsc"' in done.stderr
    assert "the gVisor (runsc) variants of the tests cannot run" in done.stderr
    assert "Docker engine:" not in done.stdout


@pytest.mark.usefixtures("as_root")
def test_the_ci_script_goes_on_with_a_right_registration(tmp_path: Path) -> None:
    done = _ci_script(tmp_path, {"runc": RUNC, "runsc": GOOD})
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "Docker engine: stand-in, runtimes: runc runsc" in done.stdout
