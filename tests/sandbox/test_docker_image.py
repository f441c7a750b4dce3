"""The sandbox image (autocoder/sandbox/image.py) and what `doctor` says about it."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import Any

import pytest

from autocoder.sandbox import image
from tests.sandbox.backends import use_backend


def test_the_debian_mirror_is_the_one_apt_uses(tmp_path: Path) -> None:
    deb822 = tmp_path / "debian.sources"
    deb822.write_text("Types: deb\nURIs: http://mirror.example/debian-security\n"
                      "Suites: bookworm-security\n\n"
                      "Types: deb\nURIs: http://mirror.example/debian\n"
                      "Suites: bookworm bookworm-updates\nComponents: main\n")
    assert image.debian_mirror((deb822,)) == "http://mirror.example/debian"
    one_line = tmp_path / "sources.list"
    one_line.write_text("# a comment\ndeb [arch=amd64] http://other.example/debian bookworm main\n")
    assert image.debian_mirror((one_line,)) == "http://other.example/debian"
    assert image.debian_mirror((tmp_path / "absent",)) == image.DEFAULT_MIRROR


def test_the_root_file_system_holds_the_runtime_and_no_pip(tmp_path: Path) -> None:
    command = " ".join(image.mmdebstrap_command(tmp_path / "r.tar", "http://m/debian",
                                                tmp_path / "wheels"))
    assert "--variant=minbase" in command and "python3-venv" in command
    assert "--no-index --no-deps" in command and "uninstall -q -y pip" in command
    assert "useradd --uid 10001" in command
    assert f"LABEL {image.LOCK_LABEL}={image.lock_digest()}" in image.import_changes()


def test_doctor_says_when_the_image_is_missing_or_of_another_lock(settings: Any) -> None:
    import docker
    from autocoder.sandbox import probe
    from config import health

    use_backend("docker", settings)
    client = docker.from_env()
    rootfs = io.BytesIO()
    with tarfile.open(fileobj=rootfs, mode="w") as tar:
        info = tarfile.TarInfo("marker")
        tar.addfile(info, io.BytesIO(b""))
    client.api.import_image(src=rootfs.getvalue(), repository="autocoder-sandbox-test",
                            tag="old-lock", changes=[f"LABEL {image.LOCK_LABEL}=0123"])
    try:
        for name, words in (("autocoder-sandbox-test:old-lock", "another plugin-runtime lock"),
                            ("autocoder-sandbox-test:never-built", "does not exist")):
            settings.SANDBOX_DOCKER_IMAGE = name
            probe.runtime_fault(fresh=True)
            check = health.check_sandbox()
            assert not check.ok and words in check.detail
            assert "make sandbox-image" in check.hint
        settings.SANDBOX_DOCKER_IMAGE = image.locked_tag()
        probe.runtime_fault(fresh=True)
        check = health.check_sandbox()
        assert check.ok and "matches the runtime lock" in check.detail, check
    finally:
        client.images.remove("autocoder-sandbox-test:old-lock", force=True)
        probe.runtime_fault(fresh=True)


def test_doctor_says_runsc_needs_the_channel_socket(settings: Any,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A runsc registered without --host-uds=open runs jobs, but a plugin's api.http cannot
    reach the portal: doctor says so. (This engine's daemon.json has the flag: its report of
    its runtimes is edited at the SDK boundary.)"""
    import docker

    use_backend("runsc", settings)
    real_from_env = docker.from_env

    class Reports:
        def __init__(self, real: Any) -> None:
            self.real = real

        def __getattr__(self, name: str) -> Any:
            return getattr(self.real, name)

        def info(self) -> dict[str, Any]:
            found: dict[str, Any] = self.real.info()
            found["Runtimes"]["runsc"]["runtimeArgs"] = ["--network=none"]
            return found

    monkeypatch.setattr(docker, "from_env", lambda **kw: Reports(real_from_env(**kw)))
    problem = image.docker_problem(settings.SANDBOX_DOCKER_IMAGE, "runsc")
    assert problem is not None and "--host-uds=open" in problem[0]
    assert "daemon.json" in problem[1]
