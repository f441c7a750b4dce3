"""The checking tools are pinned in the plugin runtime but are not libraries a plugin may import;
hypothesis is open to tests under the stress strategy only."""

from __future__ import annotations

import re

from autocoder import runtime
from autocoder.runtime import LIBRARIES, PROPERTY_TEST_LIBRARIES, REQUIREMENTS, TOOLS


def test_tools_are_pinned_and_not_importable_by_plugins() -> None:
    lock = {re.sub(r"[-_.]+", "-", name).lower(): version for name, version in
            re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)$", REQUIREMENTS.read_text(), re.M)}
    for tool in TOOLS:
        assert lock[tool.distribution] == tool.version
    tools = {"ruff", "mypy", "coverage", "hypothesis"}
    assert not tools & (runtime.plugin_modules() | runtime.test_modules())
    assert runtime.test_modules(property_tests=True) - runtime.test_modules() == {"hypothesis"}
    assert [lib.distribution for lib in PROPERTY_TEST_LIBRARIES] == ["hypothesis"]
    assert not {lib.distribution for lib in TOOLS} & {lib.distribution for lib in LIBRARIES}
