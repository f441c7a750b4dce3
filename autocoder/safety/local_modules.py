"""The AST policy's checks about a plugin's own modules: a module that one file imports may
not be taken from it by another (`from .helpers import os`, `helpers.os`), where the gate
would not see it imported (docs/safety.md, "Modules are used only as `module.name`")."""

from __future__ import annotations

import ast
from collections.abc import Callable

from autocoder.safety.source import Exports, module_name


class LocalModuleChecks:
    """Mixed into the policy's checker, which sets these attributes and `_add`."""

    path: str
    local: frozenset[str]
    exports: Exports
    local_names: dict[str, str]
    parents: dict[ast.AST, ast.AST]

    _add: Callable[[str, str, ast.AST, str], None]  # the checker's: records a finding

    def _local_module(self, node: ast.expr) -> str | None:
        """The plugin's own module an expression names (`helpers` after `from . import
        helpers`, `pkg.helpers`), absolute, else None."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.local_names:
            return None
        name = ".".join([self.local_names[node.id], *reversed(parts)])
        return name if name in self.exports else None

    def _check_local_module_value(self, node: ast.Name) -> None:
        """One of the plugin's own modules that imported modules, handed around as a value
        (`[helpers][0].os`), would carry them where the gate cannot follow."""
        module = self._local_module(node)
        if not module or not any(names for name, names in self.exports.items()
                                 if name == module or name.startswith(module + ".")):
            return
        parent = self.parents.get(node)
        if isinstance(parent, ast.Attribute) and parent.value is node:
            return
        self._add("module-as-value", "HIGH", node,
                  f"the plugin's module `{module}` is used as a value; it imports modules the "
                  "gate can only judge where their names are written out")

    def _check_reexported(self, node: ast.Attribute) -> None:
        module = self._local_module(node.value)
        if module and node.attr in self.exports[module]:
            self._add_reexport(node, module, node.attr)

    def _check_local_import(self, node: ast.ImportFrom) -> None:
        module = self._absolute(node)
        if module not in self.exports:
            return
        for alias in node.names:
            if alias.name == "*" and self.exports[module]:
                self._add_reexport(node, module, sorted(self.exports[module])[0])
            elif alias.name in self.exports[module]:
                self._add_reexport(node, module, alias.name)

    def _add_reexport(self, node: ast.AST, module: str, name: str) -> None:
        self._add("module-through-module", "HIGH", node,
                  f"`{name}` is a module that the plugin's own `{module}` imported; import it "
                  f"here by its own name, so the gate can judge what this file does with it")

    def _absolute(self, node: ast.ImportFrom) -> str:
        """The absolute name of the module an import reads (`from .helpers` in pkg/plugin.py
        is `pkg.helpers`)."""
        if not node.level:
            return node.module or ""
        package = module_name(self.path).split(".")
        if not self.path.endswith("__init__.py"):
            package = package[:-1]
        base = package[:len(package) - node.level + 1] if node.level > 1 else package
        return ".".join([*base, *([node.module] if node.module else [])])

    def _collect_local_names(self, nodes: list[ast.AST]) -> None:
        """Names bound to the plugin's own modules, absolute (`helpers` -> `pkg.helpers`)."""
        for node in nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".", 1)[0] in self.local:
                        bound = alias.asname or alias.name.split(".", 1)[0]
                        self.local_names[bound] = alias.name if alias.asname else bound
            elif isinstance(node, ast.ImportFrom):
                module = self._absolute(node)
                if module.split(".", 1)[0] in self.local:
                    for alias in node.names:
                        self.local_names[alias.asname or alias.name] = f"{module}.{alias.name}"
