"""The folder drawing: which folder imports which (docs/development.md, "Layers").

A folder is a top-level package (config/, tools/, marketplace/, projects/, runs/, teams/), a
package inside autocoder/ (autocoder/engine/, autocoder/llm/, ...) or autocoder's own files
(autocoder/*.py, the ground's small parts). Drawn by folder, the stack is a line: no arrow goes
back up, so no two folders import each other, also through others. The one knot left is the
plugin's floor (autocoder/plugins, runtime, safety, sandbox: one layer of the contract, which
may import each other). `make folders` prints the drawing.
"""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from graphlib import CycleError
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = [name for name in ("config", "autocoder", "tools", "marketplace", "projects", "runs",
                              "teams") if (ROOT / name / "__init__.py").is_file()]
# One floor of the layers contract whose folders may import each other.
KNOT = {"autocoder/plugins/", "autocoder/runtime/", "autocoder/safety/", "autocoder/sandbox/"}
KNOT_NAME = "autocoder/{plugins,runtime,safety,sandbox}/"


def folder(module: str) -> str:
    parts = module.split(".")
    if parts[0] != "autocoder":
        return parts[0] + "/"
    if len(parts) > 1 and (ROOT / "autocoder" / parts[1]).is_dir():
        return f"autocoder/{parts[1]}/"
    return "autocoder/*.py"


def folder_arrows() -> Counter[tuple[str, str]]:
    """{(folder, folder it imports): how many module imports}; migrations left out."""
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    arrows: Counter[tuple[str, str]] = Counter()
    for module in graph.modules:
        if "migrations" in module.split("."):
            continue
        for imported in graph.find_modules_directly_imported_by(module):
            if "migrations" not in imported.split(".") and folder(module) != folder(imported):
                arrows[folder(module), folder(imported)] += 1
    return arrows


def _node(name: str) -> str:
    return KNOT_NAME if name in KNOT else name


def contract_layers() -> list[list[str]]:
    """The modules of each layer of pyproject.toml's `layers` contract, top to bottom."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c["layers"] for c in config["contracts"] if c["type"] == "layers")
    return [[part.strip() for part in re.split(r"[:|]", layer)] for layer in layers]


def _rank(node: str, layers: list[list[str]]) -> int:
    """The contract's highest layer holding a module of the folder `node`."""
    ranks = [index for index, layer in enumerate(layers) for module in layer
             if _node(folder(module)) == node]
    return min(ranks, default=len(layers))


def stack(arrows: Counter[tuple[str, str]]) -> list[str]:
    """The folders top to bottom (the knot as one), in the contract's order where the arrows
    leave a choice; raises CycleError for folders that import each other."""
    layers = contract_layers()
    below: dict[str, set[str]] = {}
    for source, target in arrows:
        below.setdefault(_node(source), set())
        below.setdefault(_node(target), set())
        if _node(source) != _node(target):
            below[_node(source)].add(_node(target))
    importers = Counter(target for targets in below.values() for target in targets)
    order: list[str] = []
    while len(order) < len(below):
        ready = [node for node in below if node not in order and importers[node] == 0]
        if not ready:
            knot = sorted(node for node in below if node not in order)
            raise CycleError("folders that import each other", knot)
        node = min(ready, key=lambda name: (_rank(name, layers), name))
        order.append(node)
        for target in below[node]:
            importers[target] -= 1
    return order


def drawing() -> str:
    arrows = folder_arrows()
    lines = []
    for node in stack(arrows):
        targets = Counter[str]()
        for (source, target), count in arrows.items():
            if _node(source) == node and _node(target) != node:
                targets[_node(target)] += count
        below = ", ".join(f"{target} ({count})" for target, count in sorted(targets.items()))
        lines.append(f"{node} -> {below or 'nothing of ours'}")
    return "\n".join(lines)


def test_drawn_by_folder_the_stack_has_no_arrow_back_up() -> None:
    arrows = folder_arrows()
    try:
        order = stack(arrows)
    except CycleError as error:
        raise AssertionError(f"folders that import each other: {error.args[1]}") from None
    assert order[0] == "config/", order
    up = [(source, target) for source, target in arrows if target == "config/"]
    assert up == [], f"imports of the site's top layers from below: {up}"


def test_the_layers_contract_names_every_package_and_every_part_of_autocoder() -> None:
    named = {module for layer in contract_layers() for module in layer}
    parts = {f"{package}.{path.stem}" for package in ("config", "autocoder")
             for path in (ROOT / package).iterdir()
             if path.name != "__init__.py" and (path.suffix == ".py" or (
                 path / "__init__.py").is_file())}
    apps = set(PACKAGES) - {"config", "autocoder"}
    assert sorted(parts - named) == [] and sorted(apps - named) == []
    assert sorted(named - parts - apps) == [], "the contract names what is not there"


if __name__ == "__main__":
    print(drawing())
