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
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import PurePosixPath

from autocoder.runtime import plugin_modules, test_modules
from autocoder.safety.reviewed import (
    REVIEWED_NAMES,
    is_module_value,
    is_stdlib,
    sensitive_attribute,
    unreviewed,
)
from autocoder.safety.types import Finding, Permissions


@dataclass(frozen=True)
class Rule:
    name: str
    severity: str
    reason: str
    patterns: tuple[str, ...]  # qualified names; a plain name also covers its submodules


PROCESS = Rule("process", "HIGH", "starts or controls other processes", (
    "subprocess", "multiprocessing", "pty", "os.system", "os.popen", "os.fork", "os.forkpty",
    "os.exec*", "os.spawn*", "os.posix_spawn*", "os.kill", "os.killpg", "os.startfile",
    "os.chroot", "asyncio.create_subprocess_exec", "asyncio.create_subprocess_shell",
    "asyncio.subprocess", "concurrent.futures.ProcessPoolExecutor",
    "concurrent.futures.process", "signal.pthread_kill",
))
NETWORK = Rule("network", "HIGH", "uses the network, which the plugin's permissions do not "
               "allow (plugin.toml [permissions] network = false)", (
    "socket", "ssl", "urllib.request", "urllib.robotparser", "http.client", "http.server",
    "http.cookiejar", "requests", "httpx", "aiohttp", "urllib3", "ftplib", "smtplib", "poplib",
    "imaplib", "nntplib", "telnetlib", "xmlrpc", "socketserver", "websocket", "websockets",
    "paramiko", "pycurl", "webbrowser", "asyncio.open_connection", "asyncio.start_server",
    "asyncio.open_unix_connection", "asyncio.start_unix_server",
))
DYNAMIC_CODE = Rule("dynamic-code", "HIGH", "runs code that is not in the plugin's source", (
    "builtins.eval", "builtins.exec", "builtins.compile", "builtins.__import__", "importlib",
    "runpy", "code", "codeop", "imp", "zipimport",
))
NATIVE_CODE = Rule("native-code", "HIGH", "calls native code, outside Python's safety net", (
    "ctypes", "_ctypes", "cffi",
))
DESERIALIZATION = Rule("deserialization", "HIGH", "unpickling runs arbitrary code", (
    "pickle", "_pickle", "cPickle", "marshal", "shelve", "dill", "cloudpickle", "joblib",
))
INTROSPECTION = Rule("introspection", "HIGH", "reaches into interpreter frames and objects "
                     "(a classic sandbox escape)", (
    "sys._getframe", "sys._current_frames", "sys.settrace", "sys.setprofile",
    "inspect.currentframe", "inspect.stack", "inspect.trace", "inspect.getouterframes",
    "inspect.getinnerframes", "gc.get_referrers", "gc.get_referents", "gc.get_objects",
))
NAMESPACE = Rule("namespace-access", "MEDIUM", "reads namespaces by name, which can reach "
                 "anything; needs a human look", (
    "builtins.globals", "builtins.locals", "builtins.vars", "sys.modules",
))
MODULE_RULES = (PROCESS, NETWORK, DYNAMIC_CODE, NATIVE_CODE, DESERIALIZATION, INTROSPECTION,
                NAMESPACE)

# Attributes that lead from any object to globals, builtins or code objects.
DUNDER_ESCAPES = frozenset({
    "__globals__", "__subclasses__", "__builtins__", "__code__", "__mro__", "__bases__",
    "__base__", "__closure__", "__getattribute__", "__loader__", "__spec__", "__import__",
    "__reduce__", "__reduce_ex__", "__self__", "__func__", "__wrapped__",
    "f_globals", "f_locals", "f_builtins", "f_back", "f_code", "gi_frame", "gi_code",
    "cr_frame", "cr_code", "ag_frame", "ag_code", "tb_frame", "co_code", "func_globals",
    # typing.get_type_hints and functools.singledispatch eval() the strings stored here.
    "__annotations__",
})
# Method names that only event loops have; caught whatever the loop object is called.
LOOP_PROCESS_METHODS = frozenset({"subprocess_exec", "subprocess_shell"})
LOOP_NETWORK_METHODS = frozenset({
    "create_connection", "create_server", "create_datagram_endpoint", "sock_connect",
    "create_unix_connection", "create_unix_server", "open_connection", "start_server",
})
ATTRIBUTE_BUILTINS = frozenset({"getattr", "setattr", "delattr", "hasattr"})
# Built-in names flagged wherever they are loaded, even if a local name shadows them
# (shadowing is how one would smuggle them past a smarter-looking check).
WATCHED_BUILTINS = frozenset({"eval", "exec", "compile", "__import__", "globals", "locals",
                              "vars", "open"})

FS_FUNCTIONS = (
    "builtins.open", "io.open", "io.FileIO", "os.open", "os.fdopen", "codecs.open",
    "os.remove", "os.unlink", "os.rmdir", "os.removedirs", "os.mkdir", "os.makedirs",
    "os.rename", "os.renames", "os.replace", "os.chmod", "os.chown", "os.lchown", "os.link",
    "os.symlink", "os.truncate", "os.utime", "os.mkfifo", "os.mknod", "os.listdir",
    "os.scandir", "os.walk", "os.chdir", "shutil", "tempfile", "glob", "fileinput",
    "tarfile.open", "zipfile.ZipFile", "gzip.open", "bz2.open", "lzma.open", "sqlite3.connect",
    "dbm", "logging.FileHandler", "logging.handlers",
)
PATH_CONSTRUCTORS = ("pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath",
                     "pathlib.PurePosixPath", "os.path.join")
PATH_METHODS = frozenset({"open", "write_text", "write_bytes", "read_text", "read_bytes",
                          "touch", "mkdir", "unlink", "rmdir", "symlink_to", "hardlink_to",
                          "chmod", "lchmod", "iterdir", "glob", "rglob"})
ESCAPE_CALLS = ("pathlib.Path.home", "os.path.expanduser", "os.path.expandvars")
TEMPFILE = ("tempfile",)
# Functions that look attributes up by a name given as text; the gate cannot see the object.
NAMED_LOOKUPS = frozenset({"operator.attrgetter", "operator.methodcaller"})
LOOKUP_FUNCTIONS = NAMED_LOOKUPS | {f"builtins.{name}" for name in ("getattr", "setattr",
                                                                     "delattr")}
# Names that, given as text to getattr/attrgetter/methodcaller, reach what a rule denies
# (`methodcaller("system", "ls")(os)`), whatever object they end up applied to.
SENSITIVE_NAMES = frozenset(
    {pattern.rsplit(".", 1)[1] for rule in (PROCESS, DYNAMIC_CODE, NAMESPACE)
     for pattern in rule.patterns if "." in pattern}
    | LOOP_PROCESS_METHODS | DUNDER_ESCAPES
)
FS_NAMES = frozenset({name.rsplit(".", 1)[1] for name in FS_FUNCTIONS if "." in name}
                     | PATH_METHODS)
# Builtins, by name, for the names a plugin loads without importing anything.
BUILTIN_NAMES = frozenset(dir(__import__("builtins"))) | {"exit", "quit", "copyright",
                                                          "credits", "license", "help"}
# Node types a string annotation may hold: a type is names, attributes, subscripts and `|`.
MAX_ANNOTATION_DEPTH = 5  # strings in strings in annotations; deeper ones block outright
ANNOTATION_NODES = (ast.Expression, ast.Name, ast.Attribute, ast.Subscript, ast.Tuple,
                    ast.List, ast.Constant, ast.BinOp, ast.BitOr, ast.Load)


def matches(qualname: str, patterns: Iterable[str]) -> bool:
    for pattern in patterns:
        if "*" in pattern:  # compare as many dotted parts as the pattern has
            head = ".".join(qualname.split(".")[:pattern.count(".") + 1])
            if fnmatchcase(head, pattern):
                return True
        elif qualname == pattern or qualname.startswith(pattern + "."):
            return True
    return False


def is_test_file(path: str) -> bool:
    parts = PurePosixPath(path).parts
    name = parts[-1] if parts else ""
    return ("tests" in parts[:-1] or "test" in parts[:-1] or name == "conftest.py"
            or name.startswith("test_") or name.endswith("_test.py"))


def check_source(path: str, source: str, permissions: Permissions,
                 local_modules: frozenset[str] = frozenset()) -> list[Finding]:
    """Findings of the AST policy for one file (a syntax error is a finding too).

    `local_modules` are the plugin's own top-level modules, which the reviewed list of the
    standard library does not judge (a plugin package may be called `_tools`)."""
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as exc:
        return [Finding("syntax", "syntax-error", "HIGH", path, exc.lineno or 1,
                        f"the file does not parse: {exc.msg}")]
    except (ValueError, RecursionError, MemoryError) as exc:
        return [Finding("syntax", "unparsable", "HIGH", path, 1,
                        f"the file cannot be parsed: {type(exc).__name__}: {exc}")]
    return _Checker(path, permissions, is_test_file(path), tree, local_modules).run()


class _Checker:
    def __init__(self, path: str, permissions: Permissions, is_test: bool,
                 tree: ast.Module, local_modules: frozenset[str] = frozenset()) -> None:
        self.path = path
        self.permissions = permissions
        self.is_test = is_test
        self.tree = tree
        self.aliases: dict[str, str] = {}
        self.findings: dict[tuple[str, int, str], Finding] = {}
        self.not_stdlib = local_modules | (test_modules() if is_test else plugin_modules())
        self.parents: dict[ast.AST, ast.AST] = {}
        self.bound: set[str] = set()
        self.ambiguous: dict[str, list[str]] = {}

    def run(self) -> list[Finding]:
        nodes = list(ast.walk(self.tree))  # iterative: deep nesting cannot overflow the stack
        self._collect_aliases(nodes)
        self._collect_structure(nodes)
        for node in nodes:
            self._check(node)
        return sorted(self.findings.values(), key=lambda f: (f.line, f.rule))

    # --- name resolution ---------------------------------------------------------

    def _collect_aliases(self, nodes: list[ast.AST]) -> None:
        targets: dict[str, set[str]] = {}  # every module or name each alias is bound to
        for node in nodes:
            for name, target in _import_bindings(node):
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
                          and not _module_and_its_namesake(name, bound)}

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
        if self._check_name(qualname, node, shown) != "HIGH":
            self._check_reviewed(qualname, node)

    def _check_name(self, qualname: str, node: ast.AST, shown: str) -> str | None:
        for rule in MODULE_RULES:
            if rule is NETWORK and self.permissions.network:
                continue
            if matches(qualname, rule.patterns):
                self._add(rule.name, rule.severity, node, f"`{shown}` {rule.reason}")
                return rule.severity
        return None

    def _check_reviewed(self, qualname: str, node: ast.AST) -> None:
        if not is_stdlib(qualname) or qualname.split(".", 1)[0] in self.not_stdlib:
            return
        verdict = unreviewed(qualname, in_tests=self.is_test,
                             network=self.permissions.network)
        if verdict is not None:
            self._add(verdict.rule, "HIGH", node, verdict.message)

    def _check_module_value(self, node: ast.expr, qualname: str) -> None:
        """A standard-library module handed around as a value (`run(os)`, `[os][0]`) can
        only be judged where its names are written out, so it may not leave `os.name`."""
        if qualname.split(".", 1)[0] in self.not_stdlib or not is_module_value(qualname):
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

    def _is_alias_assignment(self, parent: ast.AST | None, node: ast.expr) -> bool:
        """`o = os`, `g = getattr`: an alias, resolved like the import itself."""
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
        problem = _annotation_problem(annotation)
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

    def _check_attribute(self, node: ast.Attribute) -> None:
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

    def _check_string(self, node: ast.AST) -> None:
        value = fold(node)
        if isinstance(value, str) and value in DUNDER_ESCAPES:
            how = "" if isinstance(node, ast.Constant) else " (built from pieces)"
            self._add("dunder-escape", "HIGH", node,
                      f"the string {value!r}{how} names interpreter internals")

    def _check_call(self, node: ast.Call) -> None:
        func_name = self.qualname(node.func)
        if func_name in {f"builtins.{name}" for name in ATTRIBUTE_BUILTINS}:
            self._check_attribute_builtin(node, func_name.split(".", 1)[1])
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
        if not isinstance(attribute, str):
            self._add("dynamic-attribute", "MEDIUM", node,
                      f"`{name}()` with a computed attribute name cannot be checked statically")
            return
        base = self.qualname(node.args[0])
        if base:
            self._judge(f"{base}.{attribute}", node, f"{name}({base}, {attribute!r})")
        elif name == "getattr":
            self._check_attribute_text(node, attribute, "getattr()")

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


def _annotation_problem(annotation: ast.expr) -> str | None:
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


def _import_bindings(node: ast.AST) -> list[tuple[str, str]]:
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


def _module_and_its_namesake(name: str, bound: set[str]) -> bool:
    """`import datetime` beside `from datetime import datetime` (common in ordinary code): a
    module and its reviewed member of the same name, which the gate judges alike."""
    return bound == {name, f"{name}.{name}"} and unreviewed(f"{name}.{name}") is None

