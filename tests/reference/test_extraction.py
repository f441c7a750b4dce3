"""The runtime's build extracts the reference of what plugins may import, and nothing else."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from autocoder.runtime import LIBRARIES, runtime_python
from autocoder.runtime.build import _EXTRACTOR
from tests.reference.conftest import runtime_reference


def _extract(tmp_path: Path, what: dict[str, object]) -> dict[str, dict[str, Any]]:
    out = tmp_path / "reference.json"
    subprocess.run([str(runtime_python()), "-I", str(_EXTRACTOR), str(out)],
                   input=json.dumps(what), text=True, check=True, capture_output=True)
    return {e["name"]: e for e in json.loads(out.read_text())["entries"]}


def test_public_names_with_signatures_docs_and_versions(tmp_path: Path) -> None:
    runtime_reference()
    entries = _extract(tmp_path, {
        "libraries": [{"distribution": "tomli-w", "version": "1.2.0", "modules": ["tomli_w"]},
                      {"distribution": "PyYAML", "version": "6.0.3", "modules": ["yaml"]}],
        "stdlib": {"modules": ["textwrap"], "names": {"os": ["getcwd"], "builtins": ["str"]},
                   "exclude": ["textwrap.dedent"]},
    })
    dumps = entries["tomli_w.dumps"]
    assert dumps["library"] == "tomli-w" and dumps["version"] == "1.2.0"
    assert dumps["kind"] == "function" and dumps["signature"].startswith("(")
    assert entries["yaml.safe_load"]["doc"].startswith("Parse the first YAML document")
    assert entries["textwrap.wrap"]["library"] == "python"
    assert entries["str.removeprefix"]["kind"] == "method"
    assert "os.getcwd" in entries and "os.system" not in entries  # only reviewed names
    assert "textwrap.dedent" not in entries
    assert not [n for n in entries if any(p.startswith("_") and not p.endswith("__")
                                          for p in n.split("."))]


def test_the_runtime_reference_holds_only_what_plugins_may_import() -> None:
    data = json.loads(runtime_reference().read_text())
    libraries = {e["library"] for e in data["entries"]}
    allowed = {lib.distribution for lib in LIBRARIES} | {"python"}
    assert libraries <= allowed  # no pytest, ruff, mypy, coverage or hypothesis
    assert {"openpyxl", "python-dateutil", "PyYAML", "Jinja2", "tomli-w", "python"} <= libraries
    names = {e["name"] for e in data["entries"]}
    assert "subprocess.run" not in names and "os.system" not in names
    modules = {e["name"] for e in data["entries"] if e["kind"] == "module"}
    assert not any(".tests" in n or ".test_" in n or "._" in n for n in modules)
    load_workbook = next(e for e in data["entries"] if e["name"] == "openpyxl.load_workbook")
    assert "openpyxl.reader.excel.load_workbook" in load_workbook["aliases"]
    assert 1000 < len(data["entries"]) < 8000
