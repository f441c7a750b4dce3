"""The files a prompt shows (docs/llm.md, "What each role is told"): the plugin's files as fenced
blocks, most important first, and trimmed to a budget by listing the least important by name.

Files the host wrote from the request and nobody changed (plugin.toml, the acceptance tests
built from the examples, the test harness, the README while it is the host's) are not shown:
the request section says what they hold, once. Only the reviewer always reads the README, as
the plugin's users will.
"""

from __future__ import annotations

import re

from autocoder.engine.scaffold import ACCEPTANCE_TEST_PATH, regression_tests, scaffold_files
from autocoder.engine.spec import Spec

README = "README.md"
MIN_TRIMMED_SECTION = 160  # below this a trimmed section says too little to be worth sending
MAX_HIDDEN_NAMES = 30
_HIDDEN_NOTE = "Not shown, to save space (they exist and stay as they are unless you send them): "
# The files the host writes from the request (the README: the request's words, and how to
# install, call and schedule the plugin), named instead of shown while nobody changed them.
_HOST_WRITTEN = ("plugin.toml", ACCEPTANCE_TEST_PATH, README, "tests/conftest.py",
                 "tests/__init__.py")


def host_written(spec: Spec, files: dict[str, str], *, examples_path: str = "",
                 stub: bool = False, change: bool = False) -> dict[str, str]:
    """{path: how it is named} of the files in `files` the host wrote from the request and
    that are unchanged: they need not be shown. `examples_path`: a change run's regression
    tests (the request's examples); `stub`: the package's plugin.py while it is the
    scaffold's too; `change`: a change run, whose model reads the version's plugin.toml (it
    may rewrite its summary and descriptions)."""
    scaffold = scaffold_files(spec)
    found: dict[str, str] = {}
    for path in _HOST_WRITTEN:
        # plugin.toml is the host's whatever it holds (permissions, the libraries' pins).
        host = path == "plugin.toml" and not change
        if path in files and (host or files[path] == scaffold.get(path)):
            found[path] = path
    if examples_path and examples_path != ACCEPTANCE_TEST_PATH and \
            files.get(examples_path) == regression_tests(spec):
        found[examples_path] = examples_path
    init = f"{spec.package}/__init__.py"
    if files.get(init) == scaffold.get(init):
        found[init] = init
    main = f"{spec.package}/plugin.py"
    if stub and files.get(main) == scaffold.get(main):
        found[main] = (f"{main} (the host's stub: `on_command` dispatches to one method per"
                       " command, each raising NotImplementedError)")
    return found


class FileSection:
    """The files section: blocks in order of importance; some listed by name only."""

    def __init__(self, files: dict[str, str], main_path: str, *,
                 host: dict[str, str] | None = None, readme_first: bool = False) -> None:
        self.host = dict(host or {})
        self.files = {p: c for p, c in files.items() if p not in self.host}
        self.main_path = main_path
        self.readme_first = readme_first
        self.paths = sorted(self.files, key=lambda p: (self._rank(p), p))
        self.blocks = {path: file_block(path, self.files[path]) for path in self.paths}
        self.hidden: list[str] = []

    @property
    def shown(self) -> bool:
        return bool(self.paths or self.host)

    def render(self) -> str:
        shown = [self.blocks[p] for p in self.paths if p in self.blocks]
        parts = ["# Current files", *shown, *self._notes()]
        return "\n\n".join(parts)

    def size(self) -> int:
        parts = [len("# Current files"), *(len(b) for b in self.blocks.values()),
                 *(len(n) for n in self._notes())]
        return sum(parts) + 2 * (len(parts) - 1)

    def _notes(self) -> list[str]:
        notes = []
        if self.host:
            notes.append("Written by the host from the request, so not shown: "
                         + ", ".join(self.host.values()) + ".")
        if self.hidden:
            names = sorted(self.hidden)
            more = len(names) - MAX_HIDDEN_NAMES
            notes.append(_HIDDEN_NOTE + ", ".join(names[:MAX_HIDDEN_NAMES])
                         + (f" and {more} more" if more > 0 else ""))
        return notes

    def drop_order(self) -> list[str]:
        """Files whose bodies may be replaced by their names: least important, largest first.
        The package's plugin.py is never among them."""
        candidates = [p for p in self.paths if p != self.main_path]
        return sorted(candidates, key=lambda p: (-self._rank(p), -len(self.blocks[p])))

    def hide(self, path: str) -> None:
        if self.blocks.pop(path, None) is not None:
            self.hidden.append(path)

    def squeeze_main(self, excess: int) -> None:
        if self.main_path not in self.blocks:
            return
        content = self.files[self.main_path]
        shorter = squeeze(content, max(0, len(content) - excess), minimum=0)
        self.blocks[self.main_path] = file_block(self.main_path, shorter)

    def _rank(self, path: str) -> int:
        # Lower ranks matter more to the model and are shown first, dropped last.
        package = self.main_path.split("/", 1)[0] + "/"
        if path == self.main_path:
            return 0
        if path.startswith(package) and path.endswith(".py"):
            return 1
        if path == README and self.readme_first:
            return 1
        if path.startswith("tests/test_generated_"):
            return 2
        if path == ACCEPTANCE_TEST_PATH:
            return 3
        if path.endswith(".py"):
            return 4
        return 5


_LANGS = {".py": "python", ".md": "markdown", ".toml": "toml", ".json": "json", ".txt": "text"}


def file_block(path: str, content: str) -> str:
    lang = next((lang for ext, lang in _LANGS.items() if path.endswith(ext)), "text")
    runs = [len(m.group(0)) for m in re.finditer(r"^ {0,3}`{3,}", content, re.M)]
    fence = "`" * max([3, *(r + 1 for r in runs)])
    body = content if content.endswith("\n") or not content else content + "\n"
    return f"{fence}{lang} path={path}\n{body}{fence}"


def squeeze(text: str, limit: int, *, minimum: int = MIN_TRIMMED_SECTION) -> str:
    """`text` in at most `limit` characters, keeping its first and last lines and cutting the
    middle (a traceback's start says where, its end says what). "" when too little fits."""
    if len(text) <= limit:
        return text
    if limit < max(minimum, 60):
        return ""
    lines = text.split("\n")
    marker = "[... {} lines cut to fit ...]"
    room = limit - len(marker) - 12
    head: list[str] = []
    tail: list[str] = []
    used = 0
    i, j = 0, len(lines) - 1
    while i <= j:
        take_head = len(head) <= len(tail)
        line = lines[i] if take_head else lines[j]
        if used + len(line) + 1 > room:
            break
        used += len(line) + 1
        if take_head:
            head.append(line)
            i += 1
        else:
            tail.insert(0, line)
            j -= 1
    if not head and not tail:
        half = max(0, room // 2)
        return text[:half] + "\n" + marker.format("some") + "\n" + text[-half:] if half else ""
    return "\n".join([*head, marker.format(j - i + 1), *tail])
