"""The named rules of the AST policy and the names they deny (docs/safety.md, "The
deny-list"); policy.py applies them."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import PurePosixPath


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
# globals() and locals() hold every module the file imported, reachable by a computed name.
WHOLE_NAMESPACE = Rule("namespace-access", "HIGH", "reads every name of the file by name, the "
                       "modules it imported included", (
    "builtins.globals", "builtins.locals",
))
NAMESPACE = Rule("namespace-access", "MEDIUM", "reads namespaces by name, which can reach "
                 "anything; needs a human look", (
    "builtins.vars", "sys.modules",
))
MODULE_RULES = (PROCESS, NETWORK, DYNAMIC_CODE, NATIVE_CODE, DESERIALIZATION, INTROSPECTION,
                WHOLE_NAMESPACE, NAMESPACE)

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
# Private attributes through which standard-library objects hold modules
# (`warnings.catch_warnings()._module` is `warnings`, whose `sys` is `sys`).
MODULE_HOLDERS = frozenset({"_module", "_os", "_sys", "_subprocess", "_socket", "_builtins",
                            "_imp", "_importlib", "_posix", "_mod"})
# The public API of collections.namedtuple, private-looking by design.
NAMEDTUPLE_API = frozenset({"_replace", "_asdict", "_fields", "_make", "_field_defaults"})
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
    {pattern.rsplit(".", 1)[1] for rule in (PROCESS, DYNAMIC_CODE, WHOLE_NAMESPACE, NAMESPACE)
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
