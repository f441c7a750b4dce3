"""The Docker backend's image, built without any image registry (`make sandbox-image`).

`python -m autocoder.sandbox.image [--force] [--image NAME]`: mmdebstrap writes a Debian
bookworm root file system (minbase, python3, python3-venv, ca-certificates) from the Debian
mirror this machine's apt uses; its customize hooks build the plugin runtime in a venv at
RUNTIME_DIR from autocoder/runtime/requirements.txt (the wheels this machine's pip downloads
from the package index, installed offline), remove pip from it, and add the `sandbox` user
(uid 10001) and /workdir. `docker import` turns the tar into `autocoder-sandbox:<lock
digest>` (also tagged :latest) with the user, workdir, PATH and a label holding the lock's
sha256, which `doctor` compares with the lock. Runs without Django (like
autocoder.runtime.build). docker/sandbox.Dockerfile builds the same image for those who can
pull python:3.11-slim.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REQUIREMENTS = Path(__file__).resolve().parents[1] / "runtime" / "requirements.txt"
REPOSITORY = "autocoder-sandbox"
LOCK_LABEL = "org.autocoder.runtime-lock"
RUNTIME_DIR = "/opt/plugin-runtime"
SANDBOX_PATH = f"{RUNTIME_DIR}/bin:/usr/local/bin:/usr/bin:/bin"
SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
REBUILD = "make sandbox-image  (or: python -m autocoder.sandbox.image)"


def lock_digest() -> str:
    return hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()


def locked_tag() -> str:
    return f"{REPOSITORY}:{lock_digest()[:12]}"


def debian_mirror(sources: tuple[Path, ...] = (Path("/etc/apt/sources.list"),
                                                Path("/etc/apt/sources.list.d"))) -> str:
    """The Debian mirror this machine's apt uses for bookworm (deb822 or one-line form)."""
    texts = []
    for source in sources:
        files = sorted(source.glob("*.list")) + sorted(source.glob("*.sources")) \
            if source.is_dir() else [source]
        texts += [f.read_text(errors="replace") for f in files if f.is_file()]
    for text in texts:
        for stanza in re.split(r"\n\s*\n", text):
            uris = re.search(r"^URIs:\s*(\S+)", stanza, re.M)
            suites = re.search(r"^Suites:\s*(.+)$", stanza, re.M)
            if uris and suites and SUITE in suites.group(1).split():
                return uris.group(1)
        for line in text.splitlines():
            match = re.match(r"\s*deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+(\S+)", line)
            if match and match.group(2) == SUITE:
                return match.group(1)
    return DEFAULT_MIRROR


def download_wheels(target: Path) -> None:
    """The lock's wheels, fetched by this machine's pip (its index, mirrors and certificates):
    the root file system installs them offline. Binary wheels for bookworm's Python 3.11."""
    subprocess.run([sys.executable, "-m", "pip", "download", "-qq", "--no-deps",
                    "--disable-pip-version-check", "--only-binary=:all:",
                    "--python-version", "3.11", "--implementation", "cp",
                    "--platform", "manylinux_2_17_x86_64", "--platform", "manylinux2014_x86_64",
                    "-d", str(target), "-r", str(REQUIREMENTS)], check=True)


def mmdebstrap_command(target: Path, mirror: str, wheels: Path) -> list[str]:
    venv_pip = f"{RUNTIME_DIR}/bin/pip"
    clean_env = "env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8"
    hooks = [
        f'copy-in {shlex.quote(str(wheels))} /tmp',
        f'chroot "$1" {clean_env} python3 -m venv {RUNTIME_DIR}',
        f'chroot "$1" {clean_env} sh -c "{venv_pip} install -q --no-index --no-deps '
        f'--no-cache-dir --disable-pip-version-check /tmp/{wheels.name}/*.whl"',
        # plugins install nothing: the runtime keeps no pip
        f'chroot "$1" {clean_env} {venv_pip} uninstall -q -y pip setuptools',
        'chroot "$1" useradd --uid 10001 --user-group --no-create-home --home-dir /tmp '
        '--shell /usr/sbin/nologin sandbox',
        'mkdir -p "$1/workdir" && chown 10001:10001 "$1/workdir"',
        f'rm -rf "$1/tmp/{wheels.name}" "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*',
    ]
    return ["mmdebstrap", "--quiet", "--variant=minbase",
            "--include=python3,python3-venv,ca-certificates",
            # a throw-away root file system: no fsync, no documentation, no translations
            "--dpkgopt=force-unsafe-io", "--aptopt=Acquire::Languages \"none\"",
            *[f"--dpkgopt=path-exclude=/usr/share/{d}/*" for d in ("doc", "man", "info",
                                                                   "locale", "lintian")],
            *[f"--customize-hook={hook}" for hook in hooks], SUITE, str(target), mirror]


def import_changes() -> list[str]:
    return ["USER 10001:10001", "WORKDIR /workdir", f"ENV PATH={SANDBOX_PATH}",
            "ENV LANG=C.UTF-8", "ENV PYTHONDONTWRITEBYTECODE=1",
            f"LABEL {LOCK_LABEL}={lock_digest()}",
            'CMD ["python", "-c", "print(\'autocoder sandbox image: run jobs through the '
            'docker backend\')"]']


def build(image: str | None = None, *, force: bool = False, client: Any = None) -> str:
    """Build the image unless one matching the lock is there; the tag built or found."""
    import docker

    client = client or docker.from_env()
    tag = locked_tag()
    if not force and image_problem(tag, client) is None:
        _tag(client, tag, image)
        return tag
    with tempfile.TemporaryDirectory(prefix="sandbox-image-") as scratch:
        rootfs, wheels = Path(scratch) / "rootfs.tar", Path(scratch) / "wheels"
        download_wheels(wheels)
        started = time.monotonic()
        subprocess.run(mmdebstrap_command(rootfs, debian_mirror(), wheels), check=True)
        print(f"root file system written in {time.monotonic() - started:.0f} s "
              f"({rootfs.stat().st_size >> 20} MB)")
        started = time.monotonic()
        repository, version = tag.split(":")
        client.api.import_image_from_file(str(rootfs), repository=repository, tag=version,
                                          changes=import_changes())
        print(f"imported in {time.monotonic() - started:.0f} s")
    _tag(client, tag, image)
    return tag


def _tag(client: Any, tag: str, image: str | None) -> None:
    found = client.images.get(tag)
    for name in {f"{REPOSITORY}:latest", image or f"{REPOSITORY}:latest"}:
        repository, _, version = name.rpartition(":")
        found.tag(repository, version)


def image_problem(image: str, client: Any = None) -> str | None:
    """Why `image` cannot run sandbox jobs as the lock says, or None."""
    from docker.errors import DockerException, ImageNotFound

    import docker

    try:
        client = client or docker.from_env()
        found = client.images.get(image)
    except ImageNotFound:
        return f"the sandbox image {image} does not exist"
    except DockerException as exc:
        return f"the Docker engine does not answer ({exc})"
    labels = (found.attrs.get("Config") or {}).get("Labels") or {}
    if labels.get(LOCK_LABEL) != lock_digest():
        return (f"the sandbox image {image} was built from another plugin-runtime lock "
                f"(autocoder/runtime/requirements.txt changed since)")
    return None


def runtime_registered(name: str, client: Any = None) -> bool:
    import docker

    client = client or docker.from_env()
    return name in (client.info().get("Runtimes") or {})


def docker_problem(image: str, runtime: str = "") -> tuple[str, str] | None:
    """(what is wrong, how to fix it) with the Docker backend's set-up, or None: the engine
    answers, `image` matches the plugin-runtime lock, `runtime` (if any) is registered, and
    as gVisor with the flags the sandbox needs (runsc_flags.py)."""
    import docker

    try:
        client = docker.from_env(timeout=10)
        client.ping()
    except Exception as exc:  # noqa: BLE001 (any reason means: no engine to use)
        return (f"no Docker engine answers ({type(exc).__name__})",
                "start the Docker engine (`dockerd`) and let the portal reach its socket "
                "(DOCKER_HOST), or set SANDBOX_BACKEND=bwrap")
    problem = image_problem(image, client)
    if problem:
        return problem, f"build it: {REBUILD}"
    return runtime_problem(runtime, client) if runtime else None


def runtime_problem(runtime: str, client: Any = None) -> tuple[str, str] | None:
    """(what is wrong, how to fix it) with the engine's registration of `runtime`, or None."""
    import docker
    from autocoder.sandbox.runsc_flags import daemon_json_read, registration_problem

    client = client or docker.from_env(timeout=10)
    return registration_problem(runtime, client.info().get("Runtimes") or {},
                                daemon_json_read())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="rebuild even when up to date")
    parser.add_argument("--image", default=None, help="also tag it so (e.g. SANDBOX_DOCKER_IMAGE)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        tag = build(args.image, force=args.force)
    except subprocess.CalledProcessError as error:
        command = error.cmd[0] if error.cmd[0] == "mmdebstrap" else "pip download"
        print(f"the sandbox image could not be built: {command} failed "
              f"(exit {error.returncode}); see its output above", file=sys.stderr)
        return 2
    except FileNotFoundError as error:
        print(f"the sandbox image could not be built: {error.filename} is not installed "
              f"(apt-get install mmdebstrap docker.io)", file=sys.stderr)
        return 2
    except Exception as error:  # noqa: BLE001 (the engine's errors: say them plainly)
        print(f"the sandbox image could not be built: the Docker engine: {error} "
              f"(is dockerd running? see docs/sandbox.md)", file=sys.stderr)
        return 2
    print(f"sandbox image {tag} (lock sha256 {lock_digest()[:12]}) ready "
          f"in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
