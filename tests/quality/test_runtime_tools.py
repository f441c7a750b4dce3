"""The checking tools are pinned in the plugin runtime but are not libraries a plugin may import;
hypothesis is open to a plugin's tests, never to its code."""

from __future__ import annotations

import re

from autocoder import runtime
from autocoder.runtime import LIBRARIES, REQUIREMENTS, TEST_LIBRARIES, TOOLS


def test_tools_are_pinned_and_not_importable_by_plugins() -> None:
    lock = {re.sub(r"[-_.]+", "-", name).lower(): version for name, version in
            re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)$", REQUIREMENTS.read_text(), re.M)}
    for tool in (*TOOLS, *TEST_LIBRARIES):
        assert lock[tool.distribution] == tool.version
    tools = {"ruff", "mypy", "coverage"}
    assert not tools & (runtime.plugin_modules() | runtime.test_modules())
    assert "hypothesis" in runtime.test_modules() and "hypothesis" not in runtime.plugin_modules()
    assert not {lib.distribution for lib in TOOLS} & {lib.distribution for lib in LIBRARIES}
