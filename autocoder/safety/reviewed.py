"""The reviewed part of the standard library: what plugin code may use, by name.

The gate used to block what was known to be bad and let the rest through, so every module
nobody had thought of (posix, _posixsubprocess, _socket, pydoc, ...) was a side door. Now the
standard library is allowed only where it was reviewed: whole modules that hold no route to
processes, the network, native code or dynamic imports, and, for broad modules that do hold
such routes (os, sys, io, ...), a list of names. Everything else in the standard library, and
every private `_module`, is refused. The runtime's libraries are judged by imports.py.
Every entry and its reason are in docs/safety.md ("The reviewed standard library").
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase

# Modules reviewed as a whole: every public name in them (and in their submodules) is fine.
# The file-touching ones (pathlib, shutil, tempfile, glob) are governed by the filesystem rule.
REVIEWED_MODULES: frozenset[str] = frozenset({
    "__future__", "abc", "array", "base64", "binascii", "bisect", "calendar", "cmath",
    "collections", "colorsys", "contextlib", "copy", "csv", "dataclasses", "datetime",
    "decimal", "difflib", "enum", "errno", "fnmatch", "fractions", "functools", "glob",
    "graphlib", "hashlib", "heapq", "hmac", "html", "ipaddress", "itertools", "json",
    "keyword", "math", "numbers", "os.path", "pathlib", "posixpath", "pprint", "random", "re",
    "reprlib", "secrets", "shutil", "statistics", "string", "struct", "tempfile", "textwrap",
    "time", "tomllib", "typing", "unicodedata", "urllib.parse", "uuid", "warnings", "zlib",
    "zoneinfo",
})

# Names inside otherwise reviewed modules that are not reviewed: they turn text into code or
# into attribute lookups that the gate cannot see.
NOT_REVIEWED: frozenset[str] = frozenset({
    "typing.get_type_hints",  # evaluates string annotations with eval()
    "string.Formatter",  # get_field("0.__globals__", ...) returns the object, not its text
})

_OS_FILES = ("listdir", "scandir", "walk", "mkdir", "makedirs", "remove", "unlink", "rmdir",
             "removedirs", "rename", "renames", "replace", "DirEntry")

# Broad modules: only these names (the filesystem ones are governed by the filesystem rule).
REVIEWED_NAMES: dict[str, frozenset[str]] = {
    "os": frozenset({
        "path", "sep", "altsep", "extsep", "pathsep", "linesep", "curdir", "pardir", "devnull",
        "name", "fspath", "fsencode", "fsdecode", "PathLike", "getcwd", "urandom", "cpu_count",
        "strerror", "SEEK_SET", "SEEK_CUR", "SEEK_END", *_OS_FILES,
    }),
    "sys": frozenset({
        "argv", "byteorder", "exc_info", "exception", "exit", "float_info", "float_repr_style",
        "getdefaultencoding", "getfilesystemencoding", "getrecursionlimit", "getsizeof",
        "hash_info", "hexversion", "int_info", "maxsize", "maxunicode", "platform", "stderr",
        "stdin", "stdout", "version", "version_info",
    }),
    "io": frozenset({
        "StringIO", "BytesIO", "TextIOWrapper", "BufferedReader", "BufferedWriter", "IOBase",
        "RawIOBase", "BufferedIOBase", "TextIOBase", "UnsupportedOperation", "SEEK_SET",
        "SEEK_CUR", "SEEK_END", "DEFAULT_BUFFER_SIZE", "text_encoding", "open", "FileIO",
    }),
    "operator": frozenset({
        "abs", "add", "and_", "attrgetter", "call", "concat", "contains", "countOf", "delitem",
        "eq", "floordiv", "ge", "getitem", "gt", "iadd", "iand", "iconcat", "ifloordiv",
        "ilshift", "imatmul", "imod", "imul", "index", "indexOf", "inv", "invert", "ior", "ipow",
        "irshift", "is_", "is_not", "isub", "itemgetter", "itruediv", "ixor", "le",
        "length_hint", "lshift", "lt", "matmul", "methodcaller", "mod", "mul", "ne", "neg",
        "not_", "or_", "pos", "pow", "rshift", "setitem", "sub", "truediv", "truth", "xor",
    }),
    "inspect": frozenset({
        "signature", "Signature", "Parameter", "BoundArguments", "isclass", "isfunction",
        "ismethod", "isroutine", "iscoroutinefunction", "isgeneratorfunction",
        "isasyncgenfunction", "isawaitable", "isabstract", "getdoc", "cleandoc",
    }),
    "types": frozenset({
        "SimpleNamespace", "MappingProxyType", "NoneType", "EllipsisType", "NotImplementedType",
        "GeneratorType", "AsyncGeneratorType", "CoroutineType", "GenericAlias", "UnionType",
    }),
    "logging": frozenset({
        "getLogger", "Logger", "LoggerAdapter", "Handler", "NullHandler", "StreamHandler",
        "FileHandler", "Formatter", "Filter", "LogRecord", "getLevelName", "debug", "info",
        "warning", "error", "exception", "critical", "log", "DEBUG", "INFO", "WARNING", "ERROR",
        "CRITICAL", "NOTSET",
    }),
    # The builtins that are always there; eval/exec/compile/__import__ are the dynamic-code
    # rule's, globals/locals/vars the namespace rule's, open the filesystem rule's.
    "builtins": frozenset({
        "abs", "aiter", "all", "anext", "any", "ascii", "bin", "bool", "bytearray", "bytes",
        "callable", "chr", "classmethod", "complex", "delattr", "dict", "dir", "divmod",
        "enumerate", "filter", "float", "format", "frozenset", "getattr", "globals", "hasattr",
        "hash", "hex", "id", "input", "int", "isinstance", "issubclass", "iter", "len", "list",
        "locals", "map", "max", "memoryview", "min", "next", "object", "oct", "open", "ord",
        "pow", "print", "property", "range", "repr", "reversed", "round", "set", "setattr",
        "slice", "sorted", "staticmethod", "str", "sum", "super", "tuple", "type", "vars", "zip",
        "Ellipsis", "NotImplemented", "None", "True", "False",
    }),
}

# Exceptions and warnings are all fine; listing ~70 class names by hand adds nothing.
_BUILTIN_EXCEPTIONS = frozenset(
    name for name, value in vars(__import__("builtins")).items()
    if isinstance(value, type) and issubclass(value, BaseException))
REVIEWED_NAMES["builtins"] = REVIEWED_NAMES["builtins"] | _BUILTIN_EXCEPTIONS

# Only a plugin's tests may use these: tests run in the sandbox and nowhere else, and the
# scaffolded tests/conftest.py puts the plugin root on sys.path.
TEST_ONLY_MODULES: frozenset[str] = frozenset({"unittest"})
TEST_ONLY_NAMES: frozenset[str] = frozenset({"sys.path"})

# With `network = true`, the network rule decides about these (and only these) modules.
NETWORK_MODULES: frozenset[str] = frozenset({
    "socket", "ssl", "urllib.request", "urllib.error", "urllib.response", "urllib.robotparser",
    "http.client", "http.cookiejar", "ftplib", "smtplib", "poplib", "imaplib",
})


@dataclass(frozen=True)
class Verdict:
    """Why a qualified name is not on the reviewed list ("" when it is)."""

    rule: str
    message: str


def is_stdlib(qualname: str) -> bool:
    """Whether the gate's reviewed list decides about this name: the standard library and
    anything private (`_socket`, `_io`), whatever it is called."""
    top = qualname.split(".", 1)[0]
    return top in sys.stdlib_module_names or top.startswith("_")


def unreviewed(qualname: str, *, in_tests: bool = False, network: bool = False) -> Verdict | None:
    """A finding's rule and message when `qualname` (a module, or a name in one) is outside
    the reviewed standard library; None when it is reviewed."""
    name = canonical(qualname)
    if network and _under(name, NETWORK_MODULES):
        return None
    if in_tests and (_under(name, TEST_ONLY_MODULES) or _under(name, TEST_ONLY_NAMES)):
        return None
    if _under(name, NOT_REVIEWED):
        return _name_verdict(qualname, name)
    parts = name.split(".")
    for size in range(len(parts), 0, -1):
        prefix = ".".join(parts[:size])
        if prefix in REVIEWED_MODULES:
            return _private_verdict(qualname, parts[size:])
        if prefix in REVIEWED_NAMES:
            return _broad_verdict(qualname, prefix, parts[size:])
    if _is_package_of_reviewed(name):
        return None  # `import urllib`: only the names reached through it are judged
    module = _module_of(parts)
    private = "; private modules are never reviewed" if module.startswith("_") else ""
    shown = f"the module `{module}`" if module == qualname else f"`{qualname}`: the module " \
        f"`{module}`"
    return Verdict("unreviewed-module", f"{shown} is not on the gate's reviewed list of "
                   f"standard-library modules (see docs/safety.md){private}")


def _broad_verdict(qualname: str, module: str, rest: list[str]) -> Verdict | None:
    if not rest or _is_plain_dunder(rest[0]):
        return None
    if rest[0] in REVIEWED_NAMES[module]:
        return _private_verdict(qualname, rest[1:])
    return _name_verdict(qualname, f"{module}.{rest[0]}")


def _private_verdict(qualname: str, rest: list[str]) -> Verdict | None:
    """A private name (`_exit`, `_os`) inside a reviewed module was not reviewed with it."""
    if any(part.startswith("_") and not _is_plain_dunder(part) for part in rest):
        return _name_verdict(qualname, qualname)
    return None


def _name_verdict(qualname: str, name: str) -> Verdict:
    shown = f"`{name}`" if name == qualname else f"`{qualname}` is `{name}`, which"
    return Verdict("unreviewed-name", f"{shown} is not on the gate's reviewed list of "
                   "standard-library names (see docs/safety.md)")


def _module_of(parts: list[str]) -> str:
    """The module to name in a message: `urllib.request` rather than `urllib`, whose other
    submodule is reviewed; otherwise the top-level module."""
    if len(parts) > 1 and _is_package_of_reviewed(parts[0]):
        return ".".join(parts[:2])
    return parts[0]


def _is_package_of_reviewed(name: str) -> bool:
    return any(entry.startswith(name + ".") for entry in REVIEWED_MODULES | NETWORK_MODULES)


def _is_plain_dunder(part: str) -> bool:
    return len(part) > 4 and part.startswith("__") and part.endswith("__")


def _under(name: str, entries: Iterable[str]) -> bool:
    return any(name == entry or name.startswith(entry + ".") for entry in entries)


def canonical(qualname: str) -> str:
    """`pathlib.os.system` is `os.system`: a reviewed module's attribute that is itself a
    module (pathlib imports os) is judged as that module, not as part of the reviewed one."""
    parts = qualname.split(".")
    for size in range(len(parts), 0, -1):
        prefix = ".".join(parts[:size])
        if prefix in REVIEWED_MODULES or prefix in REVIEWED_NAMES:
            return _follow_modules(prefix, parts[size:])
    return qualname


def _follow_modules(prefix: str, rest: list[str]) -> str:
    try:  # only reviewed standard-library modules are ever imported here
        current: object = importlib.import_module(prefix)
    except ImportError:
        return ".".join([prefix, *rest])
    for index, part in enumerate(rest):
        try:
            current = getattr(current, part)
        except Exception:  # noqa: BLE001 - a missing name is judged by its name
            break
        if not isinstance(current, types.ModuleType):
            break
        walked = ".".join([prefix, *rest[:index + 1]])
        if current.__name__ != walked:  # a module imported by the reviewed one, not a part
            return canonical(".".join([current.__name__, *rest[index + 1:]]))
    return ".".join([prefix, *rest])


def is_module_value(qualname: str) -> bool:
    """Whether a reviewed name is a module object (`os`, `pathlib`, `os.path`, `pathlib.os`)."""
    name = canonical(qualname)
    if name in REVIEWED_NAMES or name in REVIEWED_MODULES:
        return True
    parts = name.split(".")
    for size in range(len(parts) - 1, 0, -1):
        prefix = ".".join(parts[:size])
        if prefix in REVIEWED_MODULES or prefix in REVIEWED_NAMES:
            return isinstance(_lookup(prefix, parts[size:]), types.ModuleType)
    return False


def _lookup(prefix: str, rest: list[str]) -> object:
    try:
        current: object = importlib.import_module(prefix)
        for part in rest:
            current = getattr(current, part)
    except Exception:  # noqa: BLE001 - not found: not a module
        return None
    return current


def sensitive_attribute(name: str, denied: frozenset[str]) -> str | None:
    """Why an attribute name given as text (to getattr, attrgetter or methodcaller, whose
    object the gate cannot see) is dangerous on some object; None when it is not.

    `denied` holds plain names and shell-style patterns (`exec*`); a pattern counts only for
    names `os` really has, so `execute` on a plugin's own object stays fine."""
    for part in name.split("."):
        if _is_plain_dunder(part) and part in denied:
            return f"`{part}` reaches interpreter internals"
        if part in denied:
            return f"`{part}` is a name the gate denies on modules"
        if part in _os_names() and any(fnmatchcase(part, leaf) for leaf in denied if "*" in leaf):
            return f"`{part}` is a name the gate denies on modules"
    return None


_OS_NAMES: set[str] = set()


def _os_names() -> set[str]:
    if not _OS_NAMES:
        _OS_NAMES.update(dir(importlib.import_module("os")), dir(importlib.import_module("posix")))
    return _OS_NAMES


# --- the runtime's libraries ---------------------------------------------------------------
# Most of the runtime's libraries hold no route to code the gate cannot see, and are reviewed
# whole (but for their private names and the standard-library modules they import). Two are
# not: Jinja2's ordinary Environment and Template evaluate attribute lookups written inside
# template text (`{{ cycler.__init__.__globals__.os }}`), and PyYAML's full and unsafe loaders
# build arbitrary objects. Only these names of them were reviewed.
LIBRARY_NAMES: dict[str, frozenset[str]] = {
    "jinja2": frozenset({
        "sandbox", "StrictUndefined", "Undefined", "ChainableUndefined", "DebugUndefined",
        "DictLoader", "BaseLoader", "FunctionLoader", "TemplateError", "TemplateSyntaxError",
        "TemplateNotFound", "TemplatesNotFound", "TemplateRuntimeError", "UndefinedError",
        "TemplateAssertionError", "select_autoescape", "pass_context", "pass_environment",
        "pass_eval_context", "__version__",
    }),
    "jinja2.sandbox": frozenset({
        "SandboxedEnvironment", "ImmutableSandboxedEnvironment", "SecurityError",
    }),
    "yaml": frozenset({
        "safe_load", "safe_load_all", "safe_dump", "safe_dump_all", "dump", "dump_all",
        "SafeLoader", "CSafeLoader", "SafeDumper", "CSafeDumper", "Dumper", "CDumper",
        "YAMLError", "MarkedYAMLError", "__version__",
    }),
}
# Attributes of a Jinja2 sandbox that decide what templates may reach: replacing one (on the
# class, an instance or a subclass) turns the sandbox off.
SANDBOX_HOOKS: frozenset[str] = frozenset({
    "is_safe_attribute", "is_safe_callable", "call", "getattr", "getitem", "call_binop",
    "call_unop", "intercept_unop", "intercepted_binops", "intercepted_unops",
    "unsafe_undefined", "binop_table", "unop_table", "default_binop_table",
    "default_unop_table",
})
# Module dunders that only describe a module; every other one reaches its namespace or loader.
SAFE_MODULE_DUNDERS: frozenset[str] = frozenset({"__name__", "__doc__", "__all__",
                                                 "__version__"})


def library_of(qualname: str) -> str | None:
    """The runtime library (its top-level module) a name belongs to, else None."""
    from autocoder.runtime import plugin_modules

    top = qualname.split(".", 1)[0]
    return top if top in plugin_modules() else None


def unreviewed_library(qualname: str) -> Verdict | None:
    """Why a name in one of the runtime's libraries is refused; None when it is fine."""
    parts = qualname.split(".")
    through = _library_path_to_stdlib(parts)
    if through:
        return Verdict("module-through-module", through_message(qualname, through))
    if any(part.startswith("_") and not _is_plain_dunder(part) for part in parts[1:]):
        return Verdict("unreviewed-name", f"`{qualname}` is a private name of the library "
                       f"`{parts[0]}`, which the gate does not review (see docs/safety.md)")
    for size in range(len(parts) - 1, 0, -1):
        module = ".".join(parts[:size])
        if module in LIBRARY_NAMES:
            if parts[size] in LIBRARY_NAMES[module] or _is_plain_dunder(parts[size]):
                return None
            return Verdict("unreviewed-name", f"`{module}.{parts[size]}` is not on the gate's "
                           f"reviewed list for `{parts[0]}` (see docs/safety.md: "
                           f"{_LIBRARY_ADVICE.get(parts[0], 'use its reviewed names')})")
    return None


_LIBRARY_ADVICE = {
    "jinja2": "render templates with jinja2.sandbox.SandboxedEnvironment",
    "yaml": "read YAML with yaml.safe_load",
}


def _library_path_to_stdlib(parts: list[str]) -> str | None:
    """A standard-library module reached through a library's attribute (`dateutil.tz.os`)."""
    for part in parts[1:]:
        if part in sys.stdlib_module_names and part not in REVIEWED_MODULES:
            return part
    return None


def through_module(qualname: str) -> str | None:
    """The module a name reaches through another module's attribute, where that module is not
    a part of the one it is read from (`shutil.os` -> `os`, `pathlib.os.system` -> `os`)."""
    if library_of(qualname):
        return _library_path_to_stdlib(qualname.split("."))
    if not is_stdlib(qualname):
        return None
    name = canonical(qualname)
    if name == qualname:
        return None
    return name


def through_message(qualname: str, module: str) -> str:
    top = module.split(".", 1)[0]
    return (f"`{qualname}` reaches `{module}` through another module's attribute; the gate "
            f"judges a module only where it is imported by its own name (`import {top}`, "
            f"then `{top}.name`)")


def is_library_module(qualname: str) -> bool:
    """Whether a name in one of the runtime's libraries is a module: the library itself, a
    module the reviewed list names, or a file of the library in the plugin runtime."""
    if qualname in LIBRARY_NAMES or "." not in qualname:
        return library_of(qualname) is not None
    return qualname.replace(".", "/") in _library_module_paths()


def _library_module_paths() -> frozenset[str]:
    global _LIBRARY_PATHS
    if _LIBRARY_PATHS is None:
        _LIBRARY_PATHS = _scan_library_modules()
    return _LIBRARY_PATHS


_LIBRARY_PATHS: frozenset[str] | None = None


def _scan_library_modules() -> frozenset[str]:
    """Every module path (`dateutil/parser`) of the runtime's libraries, read from the plugin
    runtime's site-packages; empty where no runtime is built (then only a library's top-level
    module is known to be a module)."""
    from autocoder.runtime import plugin_modules, runtime_dir

    found: set[str] = set()
    for site in runtime_dir().glob("lib/python3*/site-packages"):
        for top in plugin_modules():
            base = site / top
            if not base.is_dir():
                continue
            for path in base.rglob("*.py"):
                relative = path.relative_to(site).with_suffix("")
                if relative.name == "__init__":
                    relative = relative.parent
                found.add(relative.as_posix())
    return frozenset(found)


def star_imports_modules(module: str) -> bool:
    """Whether `from module import *` binds a module object (`from uuid import *` binds `os`
    and `sys`, which the gate would then not know as modules). A module that cannot be
    imported here binds nothing the gate could judge either, so it counts."""
    if not is_stdlib(module) or unreviewed(module) is not None:
        return False  # never imported here: not reviewed, and refused as such already
    try:
        loaded = importlib.import_module(module)
    except Exception:  # noqa: BLE001 - not importable: its names are out of sight
        return True
    names = getattr(loaded, "__all__", None)
    if names is None:
        names = [name for name in vars(loaded) if not name.startswith("_")]
    return any(isinstance(getattr(loaded, name, None), types.ModuleType) for name in names)


def module_and_its_namesake(name: str, bound: set[str]) -> bool:
    """`import datetime` beside `from datetime import datetime` (common in ordinary code): a
    module and its reviewed member of the same name, which the gate judges alike."""
    return bound == {name, f"{name}.{name}"} and unreviewed(f"{name}.{name}") is None
