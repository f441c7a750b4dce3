"""The AST policy: what generated plugin code may not do, depending on its permissions.

Every rule here is listed, with its reason, in docs/safety.md. Names are resolved through
imports and simple assignments (`import os as o`, `from os import system`, `o = os`,
`getattr(os, "sys" + "tem")`), so renaming a module does not hide a call. Besides the named
rules, the standard library is allowed only where it was reviewed (reviewed.py): a module or
name outside that list is blocked, so a module nobody thought of is not a side door. What
cannot be resolved statically (`getattr(x, name)` with a computed name, `globals()`) goes to
a human (MEDIUM: review) rather than through.
"""

from __future__ import annotations

import ast

from autocoder.runtime import plugin_modules, test_modules
from autocoder.safety.local_modules import LocalModuleChecks
from autocoder.safety.reviewed import (
    REVIEWED_NAMES,
    SAFE_MODULE_DUNDERS,
    SANDBOX_HOOKS,
    is_library_module,
    is_module_value,
    is_stdlib,
    library_of,
    module_and_its_namesake,
    sensitive_attribute,
    star_imports_modules,
    through_message,
    through_module,
    unreviewed,
    unreviewed_library,
)
from autocoder.safety.rules import (
    ATTRIBUTE_BUILTINS,
    BUILTIN_NAMES,
    DUNDER_ESCAPES,
    DYNAMIC_CODE,
    ESCAPE_CALLS,
    FS_FUNCTIONS,
    FS_NAMES,
    LOOKUP_FUNCTIONS,
    LOOP_NETWORK_METHODS,
    LOOP_PROCESS_METHODS,
    MODULE_HOLDERS,
    MODULE_RULES,
    NAMED_LOOKUPS,
    NAMEDTUPLE_API,
    NAMESPACE,
    NETWORK,
    PATH_CONSTRUCTORS,
    PATH_METHODS,
    PROCESS,
    SENSITIVE_NAMES,
    TEMPFILE,
    WATCHED_BUILTINS,
    is_test_file,
    matches,
)
from autocoder.safety.source import (
    Exports,
    annotation_problem,
    binding_scope,
    escaping_literal,
    fold,
    import_bindings,
    is_dunder,
    module_exports,
)
from autocoder.safety.types import Finding, Permissions

__all__ = ["check_source", "is_test_file", "module_exports"]


def check_source(path: str, source: str, permissions: Permissions,
                 local_modules: frozenset[str] = frozenset(),
                 exports: Exports | None = None) -> list[Finding]:
    """Findings of the AST policy for one file (a syntax error is a finding too).

    `local_modules` are the plugin's own top-level modules, which the reviewed list of the
    standard library does not judge (a plugin package may be called `_tools`); `exports`
    are the modules each of the plugin's own modules binds (module_exports), which another
    file may not take from it."""
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as exc:
        return [Finding("syntax", "syntax-error", "HIGH", path, exc.lineno or 1,
                        f"the file does not parse: {exc.msg}")]
    except (ValueError, RecursionError, MemoryError) as exc:
        return [Finding("syntax", "unparsable", "HIGH", path, 1,
                        f"the file cannot be parsed: {type(exc).__name__}: {exc}")]
    checker = _Checker(path, permissions, is_test_file(path), tree, local_modules)
    checker.exports = exports or {}
    return checker.run()


class _Checker(LocalModuleChecks):
    def __init__(self, path: str, permissions: Permissions, is_test: bool,
                 tree: ast.Module, local_modules: frozenset[str] = frozenset()) -> None:
        self.path = path
        self.permissions = permissions
        self.is_test = is_test
        self.tree = tree
        self.aliases: dict[str, str] = {}
        self.findings: dict[tuple[str, int, str], Finding] = {}
        self.local = local_modules
        self.not_stdlib = local_modules | (test_modules() if is_test else plugin_modules())
        self.exports: Exports = {}
        self.local_names: dict[str, str] = {}
        self.parents: dict[ast.AST, ast.AST] = {}
        self.bound: set[str] = set()
        self.ambiguous: dict[str, list[str]] = {}

    def run(self) -> list[Finding]:
        nodes = list(ast.walk(self.tree))  # iterative: deep nesting cannot overflow the stack
        self._collect_aliases(nodes)
        self._collect_structure(nodes)
        self._collect_local_names(nodes)
        for node in nodes:
            self._check(node)
        return sorted(self.findings.values(), key=lambda f: (f.line, f.rule))

    # --- name resolution ---------------------------------------------------------

    def _collect_aliases(self, nodes: list[ast.AST]) -> None:
        targets: dict[str, set[str]] = {}  # every module or name each alias is bound to
        for node in nodes:
            for name, target in import_bindings(node):
                targets.setdefault(name, set()).add(target)
                if not target.startswith("."):
                    self.aliases[name] = target
        assignments = [(target.id, node.value) for node in nodes if isinstance(node, ast.Assign)
                       for target in node.targets if isinstance(target, ast.Name)]
        assignments += [(node.target.id, node.value) for node in nodes
                        if isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name)]
        for _ in range(3):  # `a = os; b = a` needs two rounds
            for name, value in assignments:
                resolved = self.qualname(value)
                if resolved and name not in self.aliases:
                    self.aliases[name] = resolved
        for name, value in assignments:
            resolved = self.qualname(value)
            if resolved:
                targets.setdefault(name, set()).add(resolved)
        # One name for two modules (`import os as json` here, `import json` there): the gate
        # would judge every use as one of them while the other may be what runs.
        self.ambiguous = {name: sorted(bound) for name, bound in targets.items()
                          if len(bound) > 1 and any(is_stdlib(t.lstrip(".")) for t in bound)
                          and not module_and_its_namesake(name, bound)}

    def _collect_structure(self, nodes: list[ast.AST]) -> None:
        """Parents (to tell `os.name` from passing `os` around) and every name the file binds
        (a plugin's own `help()` is not the builtin)."""
        for node in nodes:
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.bound.add(node.name)
            elif isinstance(node, ast.arg):
                self.bound.add(node.arg)
            elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                self.bound.add(node.id)
            elif isinstance(node, ast.alias):
                self.bound.add(node.asname or node.name.split(".")[0])
            elif isinstance(node, ast.ExceptHandler) and node.name:
                self.bound.add(node.name)

    def qualname(self, node: ast.AST) -> str | None:
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Call) and self._is_attribute_call(node, "getattr"):
            base, name = self.qualname(node.args[0]), fold(node.args[1])
            if base and isinstance(name, str):
                return ".".join([base, name, *reversed(parts)])
            return None
        if not isinstance(node, ast.Name):
            return None
        base = self.aliases.get(node.id)
        if base is None and node.id in WATCHED_BUILTINS | ATTRIBUTE_BUILTINS:
            base = f"builtins.{node.id}"
        return ".".join([base, *reversed(parts)]) if base else None

    def _is_attribute_call(self, node: ast.Call, name: str) -> bool:
        func = node.func
        return (isinstance(func, ast.Name) and func.id == name and len(node.args) >= 2)

    # --- checks -----------------------------------------------------------------

    def _check(self, node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                self._judge(alias.name, node, f"import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            self._check_import_from(node)
        if isinstance(node, ast.Import | ast.ImportFrom):
            self._check_import_scope(node)
        if isinstance(node, ast.ImportFrom):
            self._check_local_import(node)
        elif isinstance(node, ast.ClassDef):
            self._check_class(node)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            self._check_name_load(node)
        elif isinstance(node, ast.Attribute):
            self._check_attribute(node)
        elif isinstance(node, ast.arg | ast.AnnAssign) and node.annotation is not None:
            self._check_annotation(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns:
            self._check_annotation(node.returns)
        elif isinstance(node, ast.Constant | ast.BinOp | ast.JoinedStr):
            self._check_string(node)
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
                self._check_path_join(node)
        if isinstance(node, ast.Call):
            self._check_call(node)

    def _check_name_load(self, node: ast.Name) -> None:
        if node.id in DUNDER_ESCAPES:
            self._add("dunder-escape", "HIGH", node,
                      f"`{node.id}` reaches interpreter internals (a sandbox escape route)")
        if node.id in self.ambiguous:
            shown = ", ".join(f"`{target}`" for target in self.ambiguous[node.id])
            self._add("ambiguous-name", "HIGH", node,
                      f"`{node.id}` stands for different things in this file ({shown}); the "
                      "gate cannot tell which one this use means: give each its own name")
        if node.id in self.local_names:
            self._check_local_module_value(node)
        if node.id in self.aliases:
            self._check_module_value(node, self.aliases[node.id])
            self._check_lookup_value(node, self.aliases[node.id])
        elif node.id in ATTRIBUTE_BUILTINS:
            self._check_lookup_value(node, f"builtins.{node.id}")
        elif node.id in WATCHED_BUILTINS:
            self._judge(f"builtins.{node.id}", node, node.id)
            if node.id == "open":
                self._check_fs_reference(node)
        elif node.id in BUILTIN_NAMES and node.id not in self.bound:
            self._check_reviewed(f"builtins.{node.id}", node)  # breakpoint(), help(), ...

    def _judge(self, qualname: str, node: ast.AST, shown: str) -> None:
        """The named rules first (their message says why); then the reviewed list, which
        also turns a MEDIUM (`sys.modules`) into a block where the name was never reviewed."""
        if self._check_name(qualname, node, shown) == "HIGH":
            return
        if not self._check_module_path(qualname, node):
            self._check_reviewed(qualname, node)

    def _check_module_path(self, qualname: str, node: ast.AST) -> bool:
        """A module may be used only as `module.name`: not reached through another module's
        attribute (`shutil.os`), and not opened up by its dunders (`os.__dict__`)."""
        if qualname.split(".", 1)[0] in self.local:
            return False
        module = through_module(qualname)
        if module:
            self._add("module-through-module", "HIGH", node, through_message(qualname, module))
            return True
        parts = qualname.split(".")
        for index in range(1, len(parts)):
            part = parts[index]
            if (is_dunder(part) and part not in SAFE_MODULE_DUNDERS
                    and self._is_module(".".join(parts[:index]))):
                self._add("module-internals", "HIGH", node,
                          f"`{qualname}` opens up the module `{'.'.join(parts[:index])}` "
                          f"through `{part}`; use its names where they are written out")
                return True
        return False

    def _is_module(self, qualname: str) -> bool:
        """Whether a resolved name is a module object of the standard library or of one of
        the runtime's libraries (the plugin's own modules are judged where they are)."""
        if qualname.split(".", 1)[0] in self.local:
            return False
        if library_of(qualname):
            return is_library_module(qualname)
        return is_stdlib(qualname) and is_module_value(qualname)

    def _check_name(self, qualname: str, node: ast.AST, shown: str) -> str | None:
        for rule in MODULE_RULES:
            if rule is NETWORK and self.permissions.network:
                continue
            if matches(qualname, rule.patterns):
                self._add(rule.name, rule.severity, node, f"`{shown}` {rule.reason}")
                return rule.severity
        return None

    def _check_reviewed(self, qualname: str, node: ast.AST) -> None:
        if qualname.split(".", 1)[0] in self.local:
            return
        if library_of(qualname):
            library_verdict = unreviewed_library(qualname)
            if library_verdict is not None:
                self._add(library_verdict.rule, "HIGH", node, library_verdict.message)
            return
        if not is_stdlib(qualname) or qualname.split(".", 1)[0] in self.not_stdlib:
            return
        verdict = unreviewed(qualname, in_tests=self.is_test,
                             network=self.permissions.network)
        if verdict is not None:
            self._add(verdict.rule, "HIGH", node, verdict.message)

    def _check_module_value(self, node: ast.expr, qualname: str) -> None:
        """A module handed around as a value (`run(os)`, `[os][0]`, `{"m": getattr(shutil,
        "os")}`) can only be judged where its names are written out, so it may not leave
        `os.name`: stored, passed, returned, unpacked or compared, it is refused."""
        if not self._is_module(qualname):
            return
        parent = self.parents.get(node)
        if isinstance(parent, ast.Attribute) and parent.value is node:
            return
        if self._is_alias_assignment(parent, node):
            return
        if (isinstance(parent, ast.Call) and parent.args and parent.args[0] is node
                and self.qualname(parent.func) in {"builtins.getattr", "builtins.hasattr"}):
            return  # `getattr(os, "name")` is judged as `os.name`
        self._add("module-as-value", "HIGH", node,
                  f"the module `{qualname}` is used as a value; the gate can only judge its "
                  f"names where they are written out (`{qualname}.name`)")

    def _check_lookup_value(self, node: ast.expr, qualname: str) -> None:
        """`getattr` or `attrgetter` handed on (`[getattr][0](f, name)`, `map(getattr, ...)`):
        the names it will look up are out of sight, like a computed name."""
        if qualname not in LOOKUP_FUNCTIONS:
            return
        parent = self.parents.get(node)
        if isinstance(parent, ast.Call) and parent.func is node:
            return
        if self._is_alias_assignment(parent, node):
            return
        self._add("dynamic-attribute", "MEDIUM", node,
                  f"`{qualname.removeprefix('builtins.')}` is passed on as a value; the "
                  "names it will look up cannot be checked statically")

    def _scope(self, node: ast.AST) -> ast.AST | None:
        return binding_scope(node, self.parents)

    def _check_import_scope(self, node: ast.Import | ast.ImportFrom) -> None:
        """An import in a class body (or in any block inside one) binds a class attribute:
        `class K: import os` and then `K.os.system(...)` from anywhere, where the gate cannot
        follow the name (docs/safety.md, "Modules are used only as `module.name`")."""
        scope = self._scope(node)
        if isinstance(scope, ast.ClassDef):
            names = ", ".join(f"`{name}`" for name, _ in import_bindings(node)) or "names"
            self._add("import-in-class", "HIGH", node,
                      f"an import inside `class {scope.name}` makes {names} attributes of the "
                      "class, where the gate cannot follow them; import at the top of the "
                      "module (or inside a function) instead")

    def _is_alias_assignment(self, parent: ast.AST | None, node: ast.expr) -> bool:
        """`o = os`, `g = getattr`: an alias, resolved like the import itself (not in a class
        body, nor in any block inside one, where it would become an attribute: `C.m.system`)."""
        if parent is None or isinstance(self._scope(parent), ast.ClassDef):
            return False
        if isinstance(parent, ast.Assign):
            targets: list[ast.expr] = parent.targets
        elif isinstance(parent, ast.NamedExpr):
            targets = [parent.target]
        else:
            return False
        return parent.value is node and all(isinstance(t, ast.Name) for t in targets)

    def _check_annotation(self, annotation: ast.expr) -> None:
        """String annotations are code to typing.get_type_hints and functools.singledispatch,
        which eval() them, strings inside them too (`list['...']`); a type never needs a call."""
        problem = annotation_problem(annotation)
        if problem:
            self._add(DYNAMIC_CODE.name, "HIGH", annotation,
                      f"the string annotation {problem!r} is more than a type: annotations "
                      "are evaluated as code (typing.get_type_hints)")

    def _check_import_from(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        for alias in node.names:
            if alias.name == "*":
                self._check_star_import(node, module)
            else:
                self._judge(f"{module}.{alias.name}", node,
                            f"from {module} import {alias.name}")

    def _check_star_import(self, node: ast.ImportFrom, module: str) -> None:
        for rule in MODULE_RULES:
            if rule is NETWORK and self.permissions.network:
                continue
            if any(p == module or p.startswith(module + ".") for p in rule.patterns):
                self._add(rule.name, rule.severity, node,
                          f"`from {module} import *` brings in names that {rule.reason}")
                return
        self._check_reviewed(module, node)
        if module in REVIEWED_NAMES:  # only some of its names were reviewed
            self._add("unreviewed-name", "HIGH", node,
                      f"`from {module} import *` brings in names of `{module}` that are not "
                      "on the gate's reviewed list (see docs/safety.md); import names one by one")
        elif library_of(module) or star_imports_modules(module):
            self._add("module-through-module", "HIGH", node,
                      f"`from {module} import *` brings in names the gate cannot see (modules "
                      f"among them, such as the ones `{module}` imports); import names one by "
                      "one")

    def _check_attribute(self, node: ast.Attribute) -> None:
        if node.attr in SANDBOX_HOOKS and not isinstance(node.ctx, ast.Load):
            self._add_sandbox_hook(node, node.attr)
        self._check_reexported(node)
        if node.attr in MODULE_HOLDERS or self._is_foreign_private(node):
            self._add("private-attribute", "HIGH", node,
                      f"`.{node.attr}` is a private attribute of an object from the standard "
                      "library or a library; private names were not reviewed (use its "
                      "public interface)")
        if node.attr in DUNDER_ESCAPES:
            self._add("dunder-escape", "HIGH", node,
                      f"`.{node.attr}` reaches interpreter internals (a sandbox escape route)")
            return
        if node.attr in LOOP_PROCESS_METHODS:
            self._add(PROCESS.name, "HIGH", node, f"`.{node.attr}` {PROCESS.reason}")
        if node.attr in LOOP_NETWORK_METHODS and not self.permissions.network:
            self._add(NETWORK.name, "HIGH", node, f"`.{node.attr}` {NETWORK.reason}")
        qualname = self.qualname(node)
        if qualname is None:
            return
        if node.attr == "__dict__":
            self._add(NAMESPACE.name, "MEDIUM", node,
                      f"`{qualname}` {NAMESPACE.reason}")
        self._judge(qualname, node, qualname)
        if isinstance(node.ctx, ast.Load):
            self._check_module_value(node, qualname)
            self._check_lookup_value(node, qualname)

    def _is_foreign_private(self, node: ast.Attribute) -> bool:
        """`warnings.catch_warnings()._x`: a private name of an object made by a module that
        is not the plugin's own (namedtuple's `_replace`, `_asdict`, ... are public API)."""
        if not node.attr.startswith("_") or is_dunder(node.attr) or node.attr in NAMEDTUPLE_API:
            return False
        base: ast.AST = node.value
        while isinstance(base, ast.Attribute | ast.Call | ast.Subscript):
            base = base.func if isinstance(base, ast.Call) else base.value
        if not isinstance(base, ast.Name):
            return False
        qualname = self.aliases.get(base.id, "")
        return bool(qualname) and qualname.split(".", 1)[0] not in self.local

    def _check_template_extensions(self, node: ast.Call, func_name: str | None) -> None:
        """Jinja2 imports its extensions by the names it is given (`extensions=["os.x"]`,
        `env.add_extension("...")`): any importable callable, called with the environment."""
        by_keyword = (func_name and library_of(func_name) == "jinja2"
                      and any(keyword.arg in {"extensions", None} for keyword in node.keywords))
        by_method = isinstance(node.func, ast.Attribute) and node.func.attr == "add_extension"
        if by_keyword or by_method:
            self._add("sandbox-off", "HIGH", node,
                      "Jinja2 extensions are imported by name, which the gate cannot judge; "
                      "render templates without extensions")

    def _add_sandbox_hook(self, node: ast.AST, name: str) -> None:
        self._add("sandbox-off", "HIGH", node,
                  f"replacing `{name}` can turn a Jinja2 sandbox off; templates are rendered "
                  "only by jinja2.sandbox.SandboxedEnvironment as it is")

    def _check_class(self, node: ast.ClassDef) -> None:
        """A subclass of a library's class can override what its sandbox checks."""
        for base in node.bases:
            qualname = self.qualname(base)
            if qualname and library_of(qualname) == "jinja2":
                self._add("sandbox-off", "HIGH", node,
                          f"`class {node.name}({qualname.split('.')[-1]})`: a subclass of a "
                          "Jinja2 class can turn its sandbox off; use the sandbox as it is")

    def _check_string(self, node: ast.AST) -> None:
        value = fold(node)
        if isinstance(value, str) and value in DUNDER_ESCAPES:
            how = "" if isinstance(node, ast.Constant) else " (built from pieces)"
            self._add("dunder-escape", "HIGH", node,
                      f"the string {value!r}{how} names interpreter internals")

    def _check_call(self, node: ast.Call) -> None:
        func_name = self.qualname(node.func)
        self._check_template_extensions(node, func_name)
        if func_name == "builtins.vars" and not node.args:  # vars() is locals()
            self._add("namespace-access", "HIGH", node,
                      "`vars()` without an argument reads every local name by name, the "
                      "modules the file imported included")
        if func_name in {f"builtins.{name}" for name in ATTRIBUTE_BUILTINS}:
            self._check_attribute_builtin(node, func_name.split(".", 1)[1])
        if func_name == "builtins.getattr":
            value = self.qualname(node)  # `getattr(os, "path")` is the module `os.path`
            if value:
                self._check_module_value(node, value)
        if func_name in NAMED_LOOKUPS:
            self._check_named_lookup(node, func_name)
        if func_name and matches(func_name, ESCAPE_CALLS):
            self._add("filesystem-escape", "HIGH", node,
                      f"`{func_name}` points outside the plugin's workdir")
        if self._is_fs_call(node, func_name):
            self._check_fs_call(node, func_name)
        elif func_name and matches(func_name, PATH_CONSTRUCTORS):
            self._check_path_literals(node)

    def _check_attribute_builtin(self, node: ast.Call, name: str) -> None:
        if len(node.args) < 2:
            return
        attribute = fold(node.args[1])
        if not isinstance(attribute, str) and self._is_module(self.qualname(node.args[0]) or ""):
            self._add("module-as-value", "HIGH", node,
                      f"`{name}()` looks up a computed name on a module; the gate can only "
                      "judge a module's names where they are written out (`module.name`)")
            return
        if not isinstance(attribute, str):
            self._add("dynamic-attribute", "MEDIUM", node,
                      f"`{name}()` with a computed attribute name cannot be checked statically")
            return
        base = self.qualname(node.args[0])
        if base:
            self._judge(f"{base}.{attribute}", node, f"{name}({base}, {attribute!r})")
        elif name == "getattr":
            self._check_attribute_text(node, attribute, "getattr()")
        if name in {"setattr", "delattr"} and attribute in SANDBOX_HOOKS:
            self._add_sandbox_hook(node, attribute)

    def _check_named_lookup(self, node: ast.Call, func_name: str) -> None:
        """`operator.attrgetter("a.b")` and `operator.methodcaller("name", ...)` are getattr
        by another name: a computed name goes to review, a denied one blocks."""
        shown = f"{func_name}()"
        names = node.args if func_name == "operator.attrgetter" else node.args[:1]
        for arg in names:
            text = fold(arg)
            if not isinstance(text, str):
                self._add("dynamic-attribute", "MEDIUM", node,
                          f"`{shown}` with a computed attribute name cannot be checked "
                          "statically")
            else:
                self._check_attribute_text(node, text, shown)

    def _check_attribute_text(self, node: ast.Call, text: str, shown: str) -> None:
        denied = SENSITIVE_NAMES
        if self._fs_mode() == "none":
            denied = denied | FS_NAMES
        if not self.permissions.network:
            denied = denied | LOOP_NETWORK_METHODS
        why = sensitive_attribute(text, denied)
        if why:
            self._add("sensitive-attribute", "HIGH", node,
                      f"`{shown}` looks up {text!r} by name: {why}; write the attribute out "
                      "(`obj.name`) so the gate can see what it is used on")

    # --- filesystem ---------------------------------------------------------------

    def _is_fs_call(self, node: ast.Call, func_name: str | None) -> bool:
        if func_name is not None:
            return matches(func_name, FS_FUNCTIONS)
        func = node.func
        return isinstance(func, ast.Attribute) and func.attr in PATH_METHODS

    def _fs_mode(self) -> str:
        if self.is_test:  # tests run only in the sandbox; pytest's tmp_path is fine there
            return "tests"
        return self.permissions.filesystem

    def _check_fs_reference(self, node: ast.Name) -> None:
        if self._fs_mode() == "none":
            self._add("filesystem", "HIGH", node, "`open` touches files, which the plugin's "
                      "permissions do not allow (filesystem = \"none\")")

    def _check_fs_call(self, node: ast.Call, func_name: str | None) -> None:
        mode = self._fs_mode()
        shown = func_name or f".{getattr(node.func, 'attr', '?')}()"
        if mode == "none":
            self._add("filesystem", "HIGH", node, f"`{shown}` touches files, which the "
                      "plugin's permissions do not allow (filesystem = \"none\")")
            return
        if mode == "workdir" and func_name and matches(func_name, TEMPFILE):
            self._add("filesystem-escape", "HIGH", node,
                      f"`{func_name}` writes outside the plugin's workdir")
        self._check_path_literals(node)

    def _check_path_literals(self, node: ast.Call) -> None:
        for arg in [*node.args, *(keyword.value for keyword in node.keywords)]:
            escaping = escaping_literal(arg)
            if escaping is not None:
                self._add("filesystem-escape", "HIGH", node,
                          f"the path {escaping!r} is outside the plugin's workdir "
                          "(absolute, home-relative or with '..')")

    def _check_path_join(self, node: ast.BinOp) -> None:
        """`Path(...) / '..'`: the division operator joins paths too."""
        if self._fs_mode() == "none":
            return
        for side in (node.left, node.right):
            escaping = escaping_literal(side)
            if escaping is not None:
                self._add("filesystem-escape", "HIGH", node,
                          f"the path part {escaping!r} leads outside the plugin's workdir")

    def _add(self, rule: str, severity: str, node: ast.AST, message: str) -> None:
        line = getattr(node, "lineno", 1)
        key = (rule, line, message)
        if not any(k[0] == rule and k[1] == line for k in self.findings):
            self.findings[key] = Finding("ast", rule, severity, self.path, line, message)
