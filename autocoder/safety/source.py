"""What the AST policy reads out of source: literal strings and paths, string annotations,
import bindings, and the modules each of a plugin's own files imports (which another file may
not take from it)."""

from __future__ import annotations

import ast
from pathlib import PurePosixPath

from autocoder.safety.reviewed import is_library_module, is_module_value, is_stdlib, library_of
from autocoder.safety.rules import ANNOTATION_NODES, MAX_ANNOTATION_DEPTH

Exports = dict[str, frozenset[str]]
# The nodes that open a scope of their own; every other block binds in the scope around it.
SCOPES = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
          ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def binding_scope(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> ast.AST | None:
    """The scope a statement binds its names in: the nearest module, class, function, lambda
    or comprehension around it, through every block (`if`, `try`, `with`, `match`, ...) in
    between, so no block kind can hide where a name lands."""
    current = parents.get(node)
    while current is not None and not isinstance(current, SCOPES):
        current = parents.get(current)
    return current


def module_name(path: str) -> str:
    """The module a plugin file is (`pkg/helpers.py` -> `pkg.helpers`, `pkg/__init__.py` ->
    `pkg`)."""
    parts = list(PurePosixPath(path).with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def module_exports(files: dict[str, str], local: frozenset[str]) -> Exports:
    """For each of the plugin's own modules, the names it binds to a module from elsewhere
    (`import os`, `from os import path`, `m = os`): another file that takes such a name from
    it uses a module the gate never saw imported there. Every statement counts, in any block
    or scope (`try: import os`, `def f(): global m; import os as m`): a name bound anywhere
    may be an attribute of the module by the time another file reads it."""
    exports: Exports = {}
    for path, source in files.items():
        if not path.endswith(".py"):
            continue
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        exports[module_name(path)] = _bound_modules(tree, local)
    return exports


def _bound_modules(tree: ast.Module, local: frozenset[str]) -> frozenset[str]:
    nodes = list(ast.walk(tree))
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names |= {alias.asname or alias.name.split(".", 1)[0] for alias in node.names
                      if alias.name.split(".", 1)[0] not in local}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module.split(".", 1)[0] not in local:
                names |= {alias.asname or alias.name for alias in node.names
                          if _names_a_module(f"{node.module}.{alias.name}")}
    for _ in range(3):  # `m = os` and `m = os.path` re-bind a module under a new name
        for target, value in _assignments(nodes):
            if _root_name(value) in names:
                names.add(target)
    return frozenset(names)


def _assignments(nodes: list[ast.AST]) -> list[tuple[str, ast.AST]]:
    """(name, value) of every `name = value`, `name: T = value` and `(name := value)`."""
    found: list[tuple[str, ast.AST]] = []
    for node in nodes:
        if isinstance(node, ast.Assign):
            found += [(t.id, node.value) for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None \
                and isinstance(node.target, ast.Name):
            found.append((node.target.id, node.value))
    return found


def _names_a_module(qualname: str) -> bool:
    if library_of(qualname):
        return is_library_module(qualname)
    return is_stdlib(qualname) and is_module_value(qualname)


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def is_dunder(part: str) -> bool:
    return len(part) > 4 and part.startswith("__") and part.endswith("__")


def annotation_problem(annotation: ast.expr) -> str | None:
    """The first string in an annotation that parses as more than a type, else None."""
    pending: list[ast.AST] = [annotation]
    for _ in range(MAX_ANNOTATION_DEPTH):
        strings = [inner.value for tree in pending for inner in ast.walk(tree)
                   if isinstance(inner, ast.Constant) and isinstance(inner.value, str)]
        pending = []
        for text in strings:
            parsed = _parse_annotation(text)
            if parsed is None:
                continue
            if not all(isinstance(node, ANNOTATION_NODES) for node in ast.walk(parsed)):
                return text
            pending.append(parsed)
        if not pending:
            return None
    return "".join(strings[:1]) or "(nested too deeply)"


def _parse_annotation(text: str) -> ast.Expression | None:
    try:
        return ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # not an expression: eval() of it fails as well


def import_bindings(node: ast.AST) -> list[tuple[str, str]]:
    """(name, what it stands for) for each name an import binds; a relative import's target
    starts with "." (the plugin's own module, never resolved as the standard library)."""
    if isinstance(node, ast.Import):
        return [(alias.asname or alias.name.split(".")[0],
                 alias.name if alias.asname else alias.name.split(".")[0])
                for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        module = "." * node.level + (node.module or "")
        return [(alias.asname or alias.name, f"{module}.{alias.name}")
                for alias in node.names if alias.name != "*"]
    return []


def fold(node: ast.AST) -> object:
    """The value of a string built only from literals ('a' + 'b', f'{"a"}b'), else None."""
    stack: list[tuple[ast.AST, bool]] = [(node, False)]
    values: list[object] = []
    while stack:  # post-order without recursion: `'a' + 'b' + ...` may be very long
        current, expanded = stack.pop()
        if isinstance(current, ast.Constant):
            values.append(current.value)
        elif isinstance(current, ast.BinOp) and isinstance(current.op, ast.Add):
            if expanded:
                right, left = values.pop(), values.pop()
                if not (isinstance(left, str) and isinstance(right, str)):
                    return None
                values.append(left + right)
            else:
                stack += [(current, True), (current.right, False), (current.left, False)]
        elif isinstance(current, ast.JoinedStr):
            parts = [_joined_part(part) for part in current.values]
            if any(part is None for part in parts):
                return None
            values.append("".join(str(part) for part in parts))
        else:
            return None
    return values[0] if len(values) == 1 else None


def _joined_part(node: ast.AST) -> object:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.FormattedValue) and node.format_spec is None:
        value = fold(node.value)
        return value if isinstance(value, str) else None
    return None


def escaping_literal(node: ast.AST) -> str | None:
    """A literal path (or literal prefix of an f-string) that leaves the workdir."""
    value = fold(node)
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if value is None and isinstance(node, ast.JoinedStr) and node.values:
        head = node.values[0]
        value = head.value if isinstance(head, ast.Constant) else None
    if not isinstance(value, str):
        return None
    if value.startswith(("/", "~", "\\")) or ".." in PurePosixPath(value).parts:
        return value
    return None
