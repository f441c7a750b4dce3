"""The wheel and sdist the index serves are written by the portal from exactly the reviewed
files: an upload's own pyproject.toml and build backend never run, and every served file is
checked against the reviewed ones (no .pth, no stray module, nothing unreviewed)."""

from __future__ import annotations

import dataclasses
import io
import tarfile
import zipfile
from typing import Any

import pytest
from django.urls import reverse

from marketplace.build import build_artifacts, generated_sdist_files, metadata_text
from marketplace.checks import served_artifacts
from marketplace.models import PluginVersion
from marketplace.storage import artifact_path
from marketplace.validation import (
    PackageError,
    check_plugin_files,
    check_served_artifacts,
)
from tests.marketplace.conftest import client_for, plugin_tree

# The probe from the issue: a pyproject.toml naming a PEP 517 backend kept in tests/
# (backend-path), which writes a wheel with an extra zz_probe.pth. It uses only what the safety
# gate allows, so the gate lets it through: only the build may stop it.
PROBE_PYPROJECT = '''[build-system]
requires = []
build-backend = "probe_backend"
backend-path = ["tests"]

[project]
name = "word-count"
version = "0.1.0"
'''

PROBE_BACKEND = '''"""A build backend kept with the tests."""
import os
import shutil
import tempfile
from pathlib import Path

DIST = "word_count-0.1.0"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    staging = Path(tempfile.mkdtemp())
    (staging / "zz_probe.pth").write_text("import sys; sys.stderr.write('probe ran')\\n")
    info = staging / (DIST + ".dist-info")
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\\n")
    archive = shutil.make_archive(os.path.join(wheel_directory, DIST), "zip", staging)
    target = os.path.join(wheel_directory, DIST + "-py3-none-any.whl")
    os.replace(archive, target)
    return os.path.basename(target)
'''


def probe_tree() -> dict[str, str]:
    return {**plugin_tree(), "pyproject.toml": PROBE_PYPROJECT,
            "tests/probe_backend.py": PROBE_BACKEND}


def stored(version: PluginVersion, kind: str) -> bytes:
    return artifact_path(version.artifacts.get(kind=kind).path).read_bytes()


def wheel_members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def sdist_members(data: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        return {m.name: archive.extractfile(m).read() for m in archive.getmembers()  # type: ignore[union-attr]
                if m.isfile()}


@pytest.mark.django_db
def test_an_upload_with_its_own_build_backend_gets_the_portals_wheel(
        market: dict, submit: Any) -> None:
    files = probe_tree()
    version = submit(files)
    wheel = wheel_members(stored(version, "wheel"))
    package = {path for path in files if path.startswith("word_count/")}
    dist_info = {f"word_count-0.1.0.dist-info/{name}" for name in ("METADATA", "WHEEL", "RECORD")}
    assert set(wheel) == package | {"word_count/plugin.toml"} | dist_info
    assert not [name for name in wheel if name.endswith(".pth")]
    assert wheel["word_count/plugin.py"].decode() == files["word_count/plugin.py"]

    sdist = sdist_members(stored(version, "sdist"))
    assert not [name for name in sdist if name.endswith(".pth")]
    pyproject = sdist["word_count-0.1.0/pyproject.toml"].decode()
    assert 'build-backend = "setuptools.build_meta"' in pyproject
    assert "probe_backend" not in pyproject and "backend-path" not in pyproject

    page = client_for(market["reviewer"]).get(
        reverse("marketplace:version", args=["word-count", "0.1.0"])).content.decode()
    assert "Files served" in page and "Not used: pyproject.toml" in page
    for member in wheel:
        assert f"<code>{member}</code>" in page, member


@pytest.mark.django_db
def test_the_upload_page_says_the_uploaded_pyproject_is_not_used(market: dict) -> None:
    from tests.marketplace.conftest import zip_bytes
    from tests.marketplace.test_upload import _upload_file

    response = client_for(market["requester"]).post(reverse("marketplace:upload"), {
        "team": market["acme"].pk, "package": _upload_file(zip_bytes(probe_tree())),
        "visibility": "team", "tags": ""}, follow=True)
    assert "Not used: pyproject.toml from your upload" in response.content.decode()


def test_the_same_files_build_the_same_bytes() -> None:
    files = plugin_tree()
    manifest = check_plugin_files(files)
    first, second = build_artifacts(files, manifest), build_artifacts(dict(files), manifest)
    assert [a.data for a in first] == [a.data for a in second]
    assert [a.filename for a in first] == ["word_count-0.1.0-py3-none-any.whl",
                                           "word_count-0.1.0.tar.gz"]


def test_the_wheel_carries_the_metadata_from_plugin_toml() -> None:
    files = plugin_tree()
    files["plugin.toml"] = files["plugin.toml"].replace(
        "[permissions]", 'requires_python = ">=3.11"\n\n[permissions]')
    wheel = next(a for a in served_artifacts(files, check_plugin_files(files))
                 if a.kind == "wheel")
    metadata = wheel_members(wheel.data)["word_count-0.1.0.dist-info/METADATA"].decode()
    assert metadata.startswith("Metadata-Version: 2.1\nName: word-count\nVersion: 0.1.0\n")
    assert "Summary: Counts the words in a text.\n" in metadata
    assert "Requires-Python: >=3.11\n" in metadata
    assert metadata.endswith(files["README.md"])


def test_a_generated_plugin_with_start_up_code_is_refused() -> None:
    files = {**plugin_tree(), "word_count/zz_probe.pth": "import os"}
    with pytest.raises(PackageError) as caught:
        check_plugin_files(files)
    assert caught.value.errors == ["word_count/zz_probe.pth: is compiled or start-up code,"
                                   " which the marketplace does not accept"]


def _tampered_wheel(extra: dict[str, str]) -> list[Any]:
    files = plugin_tree()
    manifest = check_plugin_files(files)
    wheel, sdist = build_artifacts(files, manifest)
    members = wheel_members(wheel.data)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in {**members, **{k: v.encode() for k, v in extra.items()}}.items():
            archive.writestr(name, data)
    return [dataclasses.replace(wheel, data=buffer.getvalue()), sdist]


@pytest.mark.parametrize(("extra", "error"), [
    ({"zz_probe.pth": "import os"},
     "zz_probe.pth is compiled or start-up code, which the marketplace does not accept"),
    ({"json.py": "raise SystemExit"},
     "json.py would be installed outside the plugin's package"),
    ({"word_count/extra.py": "x = 1"}, "word_count/extra.py was not reviewed"),
    ({"word_count/plugin.py": "class Plugin: pass"},
     "word_count/plugin.py differs from the reviewed file"),
])
def test_a_served_wheel_holding_anything_unreviewed_is_refused(extra: dict[str, str],
                                                               error: str) -> None:
    files = plugin_tree()
    manifest = check_plugin_files(files)
    metadata = metadata_text(manifest, files["README.md"], ())
    with pytest.raises(PackageError) as caught:
        check_served_artifacts(_tampered_wheel(extra), files=files, manifest=manifest,
                               portal_files=generated_sdist_files(files, manifest, metadata))
    assert any(error in message for message in caught.value.errors), caught.value.errors


def test_a_served_sdist_holding_the_uploaded_pyproject_is_refused() -> None:
    files = probe_tree()
    manifest = check_plugin_files(files)
    metadata = metadata_text(manifest, files["README.md"], ())
    portal = generated_sdist_files(files, manifest, metadata)
    wheel, _ = build_artifacts(files, manifest)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as archive:
        for path, text in {**files, "PKG-INFO": metadata}.items():
            data = text.encode()
            info = tarfile.TarInfo(f"word_count-0.1.0/{path}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    sdist = dataclasses.replace(build_artifacts(files, manifest)[1], data=raw.getvalue())
    with pytest.raises(PackageError) as caught:
        check_served_artifacts([wheel, sdist], files=files, manifest=manifest,
                               portal_files=portal, left_out=("pyproject.toml",))
    assert ("build: word_count-0.1.0.tar.gz: pyproject.toml differs from the one the portal"
            " writes") in caught.value.errors
