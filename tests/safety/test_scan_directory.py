"""`scan_directory`: a plugin directory with its plugin.toml permissions."""

from __future__ import annotations

from pathlib import Path

import pytest

from autocoder.safety import read_permissions, scan_directory


def make_plugin(root: Path, permissions: str, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "plugin.toml").write_text(
        '[plugin]\nname = "weekly-scheduler"\nversion = "0.1.0"\n'
        'entry = "weekly_scheduler.plugin:Plugin"\n' + permissions)
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    return root


WRITER = {"weekly_scheduler/__init__.py": "",
          "weekly_scheduler/plugin.py": "def save(text):\n"
                                        "    with open('schedule.txt', 'w') as f:\n"
                                        "        f.write(text)\n"}


def test_permissions_from_plugin_toml_decide(tmp_path: Path) -> None:
    none = make_plugin(tmp_path / "a", '[permissions]\nnetwork = false\nfilesystem = "none"\n',
                       WRITER)
    workdir = make_plugin(tmp_path / "b",
                          '[permissions]\nnetwork = false\nfilesystem = "workdir"\n', WRITER)
    assert scan_directory(none).verdict == "block"
    assert scan_directory(workdir).verdict == "pass"
    assert read_permissions(workdir).filesystem == "workdir"


def test_missing_manifest_means_the_strictest_permissions(tmp_path: Path) -> None:
    for name, source in WRITER.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(source)
    assert scan_directory(tmp_path).verdict == "block"


@pytest.mark.parametrize("permissions", [
    '[permissions]\nfilesystem = "everything"\n',
    '[permissions]\nnetwork = "yes"\n',
    '[permissions]\nshell = true\n',
    "[permissions\n",
])
def test_invalid_manifest_blocks_with_a_clear_finding(tmp_path: Path, permissions: str) -> None:
    report = scan_directory(make_plugin(tmp_path, permissions, {"x.py": "X = 1\n"}))
    assert report.verdict == "block"
    assert report.findings[0].rule == "manifest-invalid"
    assert report.findings[0].file == "plugin.toml"


def test_tests_and_nested_files_are_scanned_symlinks_and_caches_are_not(tmp_path: Path) -> None:
    plugin = make_plugin(tmp_path, '[permissions]\nnetwork = false\nfilesystem = "none"\n',
                         {"weekly_scheduler/plugin.py": "X = 1\n",
                          "tests/test_plugin.py": "import ctypes\n",
                          "__pycache__/junk.py": "import subprocess\n"})
    (plugin / "linked.py").symlink_to("/etc/hostname")
    report = scan_directory(plugin)
    assert [(f.file, f.rule) for f in report.findings if f.tool == "ast"] == [
        ("tests/test_plugin.py", "native-code")]


def test_not_a_directory_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        scan_directory(tmp_path / "missing")
