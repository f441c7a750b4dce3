"""Extract the API reference of what plugins may import; run by the runtime's own Python.

`python3 -I reference_extract.py OUT.json < WHAT.json` where WHAT.json says which libraries
(distribution, version, import names) and which reviewed standard-library modules and names to
read (autocoder/runtime/build.py writes it from LIBRARIES and the safety gate's reviewed list).
Every public module, class, function and method becomes one entry: its dotted name, kind,
signature and the first paragraph of its docstring, with the library and version it belongs to.
Private names and test modules are skipped; a name re-exported elsewhere (openpyxl's
`load_workbook`) is one entry with the other names as aliases. This file uses only the
standard library: it runs inside the plugin runtime, which holds none of the portal's packages.
See docs/engine.md ("Reference docs").
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import sys
import warnings
from typing import Any

FORMAT = 1
MAX_DOC_CHARS = 600
MAX_SIGNATURE_CHARS = 300
_SKIP_PARTS = {"tests", "test", "testing", "conftest", "compat"}
# How a library's objects are used (`wb["Sheet"]`), kept when they have a docstring of their own.
_KEPT_DUNDERS = {"__getitem__", "__setitem__", "__iter__", "__contains__", "__call__"}


def first_paragraphs(obj: Any) -> str:
    try:
        # A class's own docstring only: one inherited from a base (ZoneInfo's from tzinfo,
        # "Abstract base class ...") says the wrong thing. Methods keep the base's.
        own = obj.__doc__ if inspect.isclass(obj) else None
        doc = (inspect.cleandoc(own) if isinstance(own, str) else "") if inspect.isclass(obj) \
            else inspect.getdoc(obj) or ""
    except Exception:
        return ""
    # The first paragraphs, as many as fit: the first often says what, the next ones how
    # (relativedelta's "years, months, weeks, days" are in its second).
    paragraphs = [" ".join(p.split()) for p in doc.strip().split("\n\n") if p.strip()]
    text = ""
    for paragraph in paragraphs:
        if text and len(text) + len(paragraph) + 1 > MAX_DOC_CHARS:
            break
        text = f"{text}\n{paragraph}" if text else paragraph
    if len(text) > MAX_DOC_CHARS:
        text = text[: MAX_DOC_CHARS - 3].rstrip() + "..."
    return text


def signature_of(obj: Any) -> str:
    try:
        text = str(inspect.signature(obj))
    except (TypeError, ValueError):
        text = ""
        doc = getattr(obj, "__doc__", None) or ""
        line = doc.strip().split("\n", 1)[0] if isinstance(doc, str) else ""
        name = getattr(obj, "__name__", "")
        if name and line.startswith(name + "("):
            text = line[len(name):]
    return text if len(text) <= MAX_SIGNATURE_CHARS else text[: MAX_SIGNATURE_CHARS - 3] + "..."


def _public(name: str) -> bool:
    return not name.startswith("_")


class Extractor:
    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        self.by_id: dict[int, dict[str, Any]] = {}
        self.keep: list[Any] = []  # ids stay unique while the objects live

    def add(self, name: str, kind: str, obj: Any, library: str, version: str,
            *, signature: str = "") -> dict[str, Any] | None:
        known = self.by_id.get(id(obj)) if kind != "module" else None
        if known is not None:
            if name != known["name"] and name not in known["aliases"]:
                known["aliases"].append(name)
            return None
        entry = {"name": name, "kind": kind, "signature": signature,
                 "doc": first_paragraphs(obj), "library": library, "version": version,
                 "aliases": []}
        self.entries.append(entry)
        if kind != "module":
            self.by_id[id(obj)] = entry
            self.keep.append(obj)
        return entry

    def module(self, module: Any, library: str, version: str, *, shown: str = "",
               names: frozenset[str] | None = None,
               exclude: frozenset[str] = frozenset()) -> None:
        """Entries for `module`'s public names, as `shown` (`os.path`, not `posixpath`)."""
        shown = shown or module.__name__
        prefix = f"{shown}." if shown != "builtins" else ""
        if shown != "builtins":
            self.add(shown, "module", module, library, version)
        exported = getattr(module, "__all__", None)
        if names is not None:
            candidates = sorted(names)
        elif isinstance(exported, (list, tuple)):
            candidates = [n for n in exported if isinstance(n, str) and _public(n)]
        else:
            candidates = sorted(n for n in vars(module) if _public(n))
        own = module.__name__
        for attr in candidates:
            qualified = prefix + attr
            if qualified in exclude:
                continue
            try:
                value = getattr(module, attr)
            except AttributeError:
                continue
            if inspect.ismodule(value):
                continue
            origin = getattr(value, "__module__", None) or ""
            if (names is None and exported is None
                    and origin != own and not origin.startswith(own + ".")):
                continue  # imported from elsewhere, not part of this module's API
            if inspect.isclass(value):
                self.cls(qualified, value, library, version)
            elif callable(value) and (inspect.isroutine(value) or hasattr(value, "__wrapped__")):
                self.add(qualified, "function", value, library, version,
                         signature=signature_of(value))

    def cls(self, name: str, value: type, library: str, version: str) -> None:
        entry = self.add(name, "class", value, library, version, signature=signature_of(value))
        if entry is None or issubclass(value, BaseException):
            return
        for attr, member in sorted(vars(value).items()):
            if not _public(attr) and not (
                    attr in _KEPT_DUNDERS and library != "python"
                    and isinstance(getattr(member, "__doc__", None), str)):
                continue
            if isinstance(member, (staticmethod, classmethod)):
                member = member.__func__
            if isinstance(member, property):
                kind, signature = "property", ""
            elif inspect.isroutine(member):
                kind, signature = "method", signature_of(member)
            else:
                continue
            self.add(f"{name}.{attr}", kind, member, library, version, signature=signature)


def walk(top: str) -> list[str]:
    found = [top]
    package = importlib.import_module(top)
    path = getattr(package, "__path__", None)
    if path is None:
        return found
    for info in pkgutil.walk_packages(path, prefix=top + "."):
        parts = info.name.split(".")
        if any(p.startswith("_") or p in _SKIP_PARTS for p in parts[1:]):
            continue
        found.append(info.name)
    return sorted(found, key=lambda name: (name.count("."), name))


def extract(what: dict[str, Any]) -> dict[str, Any]:
    extractor = Extractor()
    problems: list[str] = []
    stdlib = what.get("stdlib", {})
    version = sys.version.split()[0]
    exclude = frozenset(stdlib.get("exclude", ()))
    # The builtins first: `str` is `str`, not `typing.Text`.
    names = stdlib.get("names", {})
    for modname in sorted(names, key=lambda name: (name != "builtins", name)):
        extractor.module(importlib.import_module(modname), "python", version, shown=modname,
                         names=frozenset(names[modname]), exclude=exclude)
    for modname in stdlib.get("modules", []):
        try:
            module = importlib.import_module(modname)
        except Exception as exc:
            problems.append(f"{modname}: {type(exc).__name__}")
            continue
        extractor.module(module, "python", version, shown=modname, exclude=exclude)
    for lib in what.get("libraries", []):
        for top in lib["modules"]:
            try:
                modules = walk(top)
            except Exception as exc:
                problems.append(f"{top}: {exc}")
                continue
            for modname in modules:
                try:
                    module = importlib.import_module(modname)
                except Exception as exc:  # optional dependencies the runtime does not hold
                    problems.append(f"{modname}: {type(exc).__name__}")
                    continue
                extractor.module(module, lib["distribution"], lib["version"])
    return {"extractor": what.get("extractor", ""), "format": FORMAT, "python": version,
            "entries": extractor.entries, "problems": problems}


def main(argv: list[str]) -> int:
    what = json.load(sys.stdin)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = extract(what)
    with open(argv[1], "w", encoding="utf-8") as out:
        json.dump(result, out, ensure_ascii=False, separators=(",", ":"))
    print(f"{len(result['entries'])} reference entries")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
