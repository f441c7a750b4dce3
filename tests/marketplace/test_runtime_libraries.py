"""A plugin that uses a library of the plugin runtime: its tests run with it in the sandbox,
plugin.toml may list it, and the published wheel declares it; anything else is refused."""

from __future__ import annotations

import io
import zipfile
from typing import Any

import pytest

from marketplace.models import PluginVersion
from marketplace.storage import artifact_path
from marketplace.validation import PackageError
from tests.marketplace.conftest import WORD_COUNT_IMPL, plugin_tree

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

YAML_IMPL = WORD_COUNT_IMPL.replace(
    "from typing import Any\n", "from typing import Any\n\nimport yaml\n").replace(
    'return {"words": len(str(payload.get("text", "")).split())}',
    'return {"words": len(str(yaml.safe_load(repr(str(payload.get("text", ""))))).split())}')


def _wheel_metadata(version: PluginVersion) -> str:
    wheel = version.artifacts.get(kind="wheel")
    with zipfile.ZipFile(io.BytesIO(artifact_path(wheel.path).read_bytes())) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        return archive.read(name).decode()


def test_a_plugin_using_a_runtime_library_is_tested_and_its_wheel_declares_it(
        submit: Any) -> None:
    version = submit(plugin_tree(body=YAML_IMPL))
    assert version.test_report["passed"] == 1, version.test_report
    assert "Requires-Dist: PyYAML==6.0.3" in _wheel_metadata(version)


def test_plugin_toml_may_list_runtime_libraries_pinned_as_the_runtime_has_them(
        submit: Any) -> None:
    files = plugin_tree()
    files["plugin.toml"] += '\n[runtime]\nlibraries = ["openpyxl"]\n'
    version = submit(files)
    assert "Requires-Dist: openpyxl==3.1.5" in _wheel_metadata(version)


@pytest.mark.parametrize("listed", ['["requests"]', '["openpyxl==2.0"]', '"openpyxl"'])
def test_a_library_outside_the_runtime_is_refused_in_plain_words(
        submit: Any, listed: str) -> None:
    files = plugin_tree()
    files["plugin.toml"] += f"\n[runtime]\nlibraries = {listed}\n"
    with pytest.raises(PackageError) as caught:
        submit(files)
    assert any("[runtime]" in error for error in caught.value.errors), caught.value.errors


def test_code_importing_a_library_the_runtime_lacks_is_blocked(submit: Any) -> None:
    body = WORD_COUNT_IMPL.replace("from typing import Any\n",
                                   "from typing import Any\n\nimport requests  # noqa\n")
    with pytest.raises(PackageError) as caught:
        submit(plugin_tree(body=body))
    assert any("requests is not available to plugins" in error
               for error in caught.value.errors), caught.value.errors


def test_the_probes_module_kept_as_a_value_is_refused_before_publishing(submit: Any) -> None:
    """The security probe's plugin: it passed the gate, published, and ran a shell command
    on the machine of whoever pip-installed it and imported it."""
    body = WORD_COUNT_IMPL.replace(
        "from typing import Any\n",
        'from typing import Any\n\nimport shutil\n\n_box = {"m": getattr(shutil, "os")}\n'
        'RAN = _box["m"].system("echo ran > f.txt")\n')
    with pytest.raises(PackageError) as caught:
        submit(plugin_tree(body=body))
    assert any("through another module's attribute" in error or "used as a value" in error
               for error in caught.value.errors), caught.value.errors
    assert not PluginVersion.objects.filter(status=PluginVersion.Status.PUBLISHED).exists()


def test_a_module_imported_in_a_class_body_is_refused_before_publishing(submit: Any) -> None:
    """The third probe's plugin: `class _K: import os as o`, then `_K.o.system(...)`, passed
    the gate with no finding and published."""
    body = WORD_COUNT_IMPL.replace(
        "from typing import Any\n",
        "from typing import Any\n\n\nclass _K:\n    import os as o\n\n\n"
        '_K.o.system("echo ran > f.txt")\n')
    with pytest.raises(PackageError) as caught:
        submit(plugin_tree(body=body))
    assert any("inside `class _K`" in error for error in caught.value.errors), \
        caught.value.errors
    assert not PluginVersion.objects.filter(status=PluginVersion.Status.PUBLISHED).exists()
