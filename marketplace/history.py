"""Each plugin's history as a real git repository: one commit per published version.

A bare repository per plugin, settings.VAR_DIR / "git" / "<plugin id>.git", written with the
`git` binary and nothing else (no home-made format): a published version becomes one commit of
exactly its files, authored by the person who asked for it (the run's requester, else who
submitted it), committed by the portal, with the changelog as its message, and an annotated
tag v<version>. Versions are recorded in version order on `main`; one recorded late (a backfill
after a newer one) is committed on top of the version before it and tagged, and `main` stays
on the newest. Recording is idempotent: a version whose tag exists is left alone.

git runs with a fixed environment (no system or user configuration, a private HOME, no hooks,
no prompts), never through a shell, and only on paths this module builds from ids. After each
write `git update-server-info` refreshes info/refs and objects/info/packs, so the repository is
cloneable over git's dumb HTTP protocol as it is (marketplace/views/history.py serves it).
docs/marketplace.md ("Taking your code with you") describes it for people.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import shutil
import subprocess
import tempfile
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.utils import timezone
from packaging.version import InvalidVersion, Version

from marketplace.build import declared_dependencies, pyproject_for
from marketplace.models import Plugin, PluginVersion
from marketplace.validation import PackageError, parse_manifest

logger = logging.getLogger(__name__)

PORTAL_NAME = "Autocoder portal"
BRANCH = "main"
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's empty tree (SHA-1)
GIT_TIMEOUT_S = 60
MARKER = "autocoder-plugin"  # in the repository: which plugin row it belongs to
_ZERO = "0" * 40
# What git's dumb HTTP protocol reads from a bare repository, and nothing else.
_SERVED = re.compile(
    r"(HEAD|info/refs|objects/info/packs|objects/info/alternates|objects/info/http-alternates"
    r"|objects/[0-9a-f]{2}/[0-9a-f]{38}|objects/pack/pack-[0-9a-f]{40}\.(pack|idx))")
_CONFIG = ("-c", "core.hooksPath=/dev/null", "-c", "core.quotePath=false",
           "-c", "gc.autoDetach=false", "-c", f"user.name={PORTAL_NAME}",
           "-c", "init.defaultBranch=main", "-c", "protocol.file.allow=never")


class HistoryError(Exception):
    """git refused or failed; the message is git's own words."""


@dataclass(frozen=True)
class FileChange:
    path: str
    added: int | None  # None for a binary file
    removed: int | None


@dataclass(frozen=True)
class HistoryEntry:
    version: str
    tag: str
    commit: str
    author: str
    author_email: str
    date: datetime
    committer: str
    message: str
    files: tuple[FileChange, ...] = field(default_factory=tuple)

    @property
    def subject(self) -> str:
        return self.message.splitlines()[0] if self.message else ""

    @property
    def body(self) -> str:
        """What follows the subject line and its blank line ("" for a message of one line)."""
        return self.message.partition("\n\n")[2].strip()

    @property
    def added(self) -> int:
        return sum(change.added or 0 for change in self.files)

    @property
    def removed(self) -> int:
        return sum(change.removed or 0 for change in self.files)


def git_root() -> Path:
    return Path(settings.VAR_DIR) / "git"


def repo_path(plugin_id: int) -> Path:
    return git_root() / f"{int(plugin_id)}.git"


def tag_of(version: str) -> str:
    return f"v{version}"


def _env(**extra: str) -> dict[str, str]:
    home = git_root() / ".home"
    home.mkdir(parents=True, exist_ok=True)
    return {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"), "HOME": str(home),
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_TERMINAL_PROMPT": "0", "LANG": "C", "LC_ALL": "C", "TZ": "UTC", **extra}


def _git(repo: Path | None, *args: str, data: bytes | None = None,
         env: dict[str, str] | None = None, check: bool = True) -> bytes:
    command = ["git", *_CONFIG, *((f"--git-dir={repo}",) if repo else ()), *args]
    done = subprocess.run(command, input=data, capture_output=True, env=_env(**(env or {})),  # noqa: S603
                          timeout=GIT_TIMEOUT_S, check=False)
    if check and done.returncode != 0:
        raise HistoryError(f"git {args[0]}: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout if done.returncode == 0 else b""


def _text(repo: Path | None, *args: str, data: bytes | None = None,
          env: dict[str, str] | None = None, check: bool = True) -> str:
    return _git(repo, *args, data=data, env=env, check=check).decode(errors="replace").strip()


def _marker_of(plugin: Plugin) -> str:
    return f"{plugin.pk} {plugin.normalized_name} {plugin.created_at.isoformat()}\n"


def readable_repo(plugin: Plugin) -> Path | None:
    """The plugin's repository when it exists and belongs to this plugin row (a directory
    left from another database with the same id is not this plugin's history)."""
    repo = repo_path(plugin.pk)
    try:
        if (repo / MARKER).read_text() != _marker_of(plugin):
            return None
    except OSError:
        return None
    return repo


@contextmanager
def _locked(plugin: Plugin) -> Iterator[Path]:
    """The plugin's repository, created if needed, under a lock held while writing."""
    root = git_root()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{int(plugin.pk)}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        repo = repo_path(plugin.pk)
        if repo.exists() and readable_repo(plugin) is None:
            aside = repo.with_name(f"{repo.name}.orphaned-{timezone.now():%Y%m%d%H%M%S%f}")
            logger.warning("git history %s belongs to another plugin row; moved to %s",
                           repo, aside.name)
            repo.rename(aside)
        if not repo.exists():
            _repo_init(plugin, repo)
        yield repo


def _repo_init(plugin: Plugin, repo: Path) -> None:
    incoming = Path(tempfile.mkdtemp(dir=repo.parent, prefix=".init-"))
    try:
        _git(None, "init", "--quiet", "--bare", f"--initial-branch={BRANCH}", str(incoming))
        _git(incoming, "config", "core.logAllRefUpdates", "true")
        (incoming / "description").write_text(f"{plugin.name}: published versions\n")
        shutil.rmtree(incoming / "hooks", ignore_errors=True)
        (incoming / MARKER).write_text(_marker_of(plugin))
        incoming.rename(repo)
    except BaseException:
        shutil.rmtree(incoming, ignore_errors=True)
        raise


def recorded_tags(repo: Path) -> dict[str, str]:
    """{version: commit} of every version tag in the repository."""
    out = _text(repo, "for-each-ref", "--format=%(refname:strip=2) %(*objectname) %(objectname)",
                "refs/tags/v*")
    recorded = {}
    for line in out.splitlines():
        tag, *objects = line.split()
        recorded[tag.removeprefix("v")] = objects[0]  # the commit an annotated tag points at
    return recorded


def _version_key(version: str) -> Version:
    try:
        return Version(version)
    except InvalidVersion:
        return Version("0")


def site_host() -> str:
    hosts = [h.lstrip(".") for h in settings.ALLOWED_HOSTS if h not in ("*", "")]
    return hosts[0] if hosts else "autocoder.invalid"


def author_of(version: PluginVersion) -> tuple[str, str]:
    """(name, email) of who asked for `version`: the run's requester, else who submitted it,
    else who approved it; a user without an email gets username@users.noreply.<site>."""
    user = None
    if version.run_id and version.run is not None:
        user = version.run.project.requester
    user = user or version.submitted_by
    if user is None:
        decision = version.decisions.filter(approved=True).select_related("user").first()
        user = decision.user if decision else None
    if user is None:
        return PORTAL_NAME, f"portal@{site_host()}"
    name = (user.get_full_name() or user.get_username()).replace("<", "").replace(">", "")
    return name, user.email or f"{user.get_username()}@users.noreply.{site_host()}"


SUBJECT_CHARS = 72  # git's own advice for a commit's first line
BODY_WIDTH = 72


def message_of(version: PluginVersion) -> str:
    """A commit message as git reads it: a subject line ("1.0.1: Names like McCarthy lose
    their capitals"), a blank line, then the whole text, wrapped at 72 columns. The text is the
    changelog; else, for a generated version, what its requester asked for (a change run's
    spec summary is the change request: "What to change: ..."); else none ("Version X.Y.Z")."""
    text = version.changelog.strip()
    if not text and version.run_id:
        text = str((version.spec or {}).get("summary", "")).strip()
    if not text:
        return f"Version {version.version}"
    first = text.splitlines()[0].removeprefix("What to change:").strip()
    sentence = re.split(r"(?<=[.!?])\s", first, maxsplit=1)[0].rstrip(".")
    subject = _shortened(f"{version.version}: {sentence}", SUBJECT_CHARS)
    body = "\n".join(textwrap.fill(line, BODY_WIDTH, break_long_words=False,
                                   break_on_hyphens=False) if line.strip() else ""
                     for line in text.splitlines())
    return f"{subject}\n\n{body}"


def _shortened(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit - 1].rsplit(" ", 1)[0].rstrip(" ,;:-(") + "\u2026"


def repo_files(version: PluginVersion) -> dict[str, str]:
    """What a version's commit holds: its files, and the pyproject.toml its source package
    has (the portal writes it, marketplace/build.py), so a clone builds as the sdist does."""
    files = dict(version.files)
    try:
        manifest = parse_manifest(files.get("plugin.toml", ""))
    except PackageError:
        return files
    files["pyproject.toml"] = pyproject_for(manifest, files,
                                            declared_dependencies(files, manifest))
    return files


def _safe_path(path: str) -> str:
    parts = PurePosixPath(path).parts
    if (not parts or path.startswith("/") or any(p in ("..", ".", ".git") for p in parts)
            or any(c in path for c in "\0\n\t")):
        raise HistoryError(f"a file path git cannot record: {path!r}")
    return path


def _tree_of(repo: Path, files: dict[str, str]) -> str:
    """The tree of exactly `files`, built in a private index (no work tree anywhere)."""
    entries = []
    for path in sorted(files):
        content = files[path]
        data = content.encode() if isinstance(content, str) else bytes(content)
        blob = _text(repo, "hash-object", "-w", "--stdin", data=data)
        entries.append(f"100644 {blob}\t{_safe_path(path)}\0")
    with tempfile.TemporaryDirectory(dir=git_root(), prefix=".index-") as scratch:
        env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        _git(repo, "update-index", "-z", "--add", "--index-info",
             data="".join(entries).encode(), env=env)
        return _text(repo, "write-tree", env=env)


def _identity_env(kind: str, name: str, email: str, when: datetime) -> dict[str, str]:
    return {f"GIT_{kind}_NAME": name, f"GIT_{kind}_EMAIL": email,
            f"GIT_{kind}_DATE": f"@{int(when.timestamp())} +0000"}


def record_version(version: PluginVersion) -> str | None:
    """Commit and tag published `version`; its commit, or None when it was recorded already
    (or is not published)."""
    if version.status != PluginVersion.Status.PUBLISHED:
        return None
    plugin = version.plugin
    with _locked(plugin) as repo:
        recorded = recorded_tags(repo)
        if version.version in recorded:
            return None
        when = version.published_at or version.created_at or timezone.now()
        portal = _identity_env("COMMITTER", PORTAL_NAME, f"portal@{site_host()}", when)
        name, email = author_of(version)
        head = _text(repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{BRANCH}",
                     check=False)
        key = _version_key(version.version)
        older = [v for v in recorded if _version_key(v) < key]
        newest = all(_version_key(v) < key for v in recorded)
        parent = head if newest else (recorded[max(older, key=_version_key)] if older else "")
        commit = _text(repo, "commit-tree", _tree_of(repo, repo_files(version)),
                       *(("-p", parent) if parent else ()), "-F", "-",
                       data=(message_of(version) + "\n").encode(),
                       env={**portal, **_identity_env("AUTHOR", name, email, when)})
        _git(repo, "tag", "-a", "-F", "-", tag_of(version.version), commit,
             data=f"{plugin.name} {version.version}\n".encode(), env=portal)
        if newest:
            _git(repo, "update-ref", "-m", f"publish {version.version}",
                 f"refs/heads/{BRANCH}", commit, head or _ZERO)
        _git(repo, "gc", "--auto", "--quiet")
        _git(repo, "update-server-info")
        return commit


def record_version_safe(version_id: int) -> str | None:
    """`record_version` for publishing: a failure is logged (the backfill records it later),
    never raised into the publication."""
    try:
        version = (PluginVersion.objects.select_related("plugin", "run__project__requester",
                                                        "submitted_by").get(pk=version_id))
        return record_version(version)
    except Exception:
        logger.exception("git history: version %s was not recorded; run"
                         " `manage.py plugin_history_backfill`", version_id)
        return None


def published_in_order(plugin_id: int | None = None) -> list[PluginVersion]:
    """Published versions (yanked ones too: they were published) in version order."""
    versions = (PluginVersion.objects.filter(status=PluginVersion.Status.PUBLISHED)
                .select_related("plugin", "run__project__requester", "submitted_by"))
    if plugin_id is not None:
        versions = versions.filter(plugin_id=plugin_id)
    return sorted(versions, key=lambda v: (v.plugin_id, _version_key(v.version)))


def unrecorded_versions(plugin: Plugin) -> list[str]:
    """Published versions that are not in the repository yet (the backfill adds them)."""
    repo = readable_repo(plugin)
    recorded = recorded_tags(repo) if repo else {}
    return [v.version for v in published_in_order(plugin.pk) if v.version not in recorded]


def history_entries(plugin: Plugin) -> list[HistoryEntry]:
    """Every recorded version, newest first, with its files changed since its parent."""
    repo = readable_repo(plugin)
    if repo is None:
        return []
    tags = recorded_tags(repo)
    if not tags:
        return []
    commits = {commit: version for version, commit in tags.items()}
    out = _git(repo, "log", "--no-walk=unsorted", "--root", "--numstat", "--no-renames",
               "--format=%x1e%H%x00%an%x00%ae%x00%at%x00%cn%x00%B%x00", *commits)
    entries = {}
    for chunk in out.decode(errors="replace").split("\x1e")[1:]:
        commit, author, email, stamp, committer, message, numstat = chunk.split("\0", 6)
        entries[commit] = HistoryEntry(
            version=commits[commit], tag=tag_of(commits[commit]), commit=commit, author=author,
            author_email=email, date=datetime.fromtimestamp(int(stamp), tz=UTC),
            committer=committer, message=message.strip(), files=_numstat(numstat))
    return sorted(entries.values(), key=lambda e: _version_key(e.version), reverse=True)


def _numstat(text: str) -> tuple[FileChange, ...]:
    changes = []
    for line in text.strip().splitlines():
        added, removed, path = line.split("\t", 2)
        changes.append(FileChange(path, None if added == "-" else int(added),
                                  None if removed == "-" else int(removed)))
    return tuple(changes)


def version_diff(plugin: Plugin, version: str) -> tuple[str | None, str] | None:
    """(the previous recorded version or None, the unified diff from it to `version`), or
    None when `version` is not recorded."""
    repo = readable_repo(plugin)
    tags = recorded_tags(repo) if repo else {}
    if repo is None or version not in tags:
        return None
    key = _version_key(version)
    older = [v for v in tags if _version_key(v) < key]
    previous = max(older, key=_version_key) if older else None
    base = tags[previous] if previous else EMPTY_TREE
    diff = _git(repo, "diff", "--no-color", "--no-ext-diff", "--no-renames", base, tags[version])
    return previous, diff.decode(errors="replace")


def bundle_create(plugin: Plugin, directory: Path) -> Path | None:
    """A git bundle of every branch and tag in `directory`, or None without any history."""
    repo = readable_repo(plugin)
    if repo is None or not recorded_tags(repo):
        return None
    bundle = directory / f"{plugin.normalized_name}.bundle"
    _git(repo, "bundle", "create", "--quiet", str(bundle), "--all")
    return bundle


def served_file(plugin: Plugin, relpath: str) -> Path | None:
    """The repository file git's dumb HTTP protocol asks for, or None: only the names that
    protocol reads, resolved inside the repository (so no other file is ever served)."""
    repo = readable_repo(plugin)
    if repo is None or not _SERVED.fullmatch(relpath):
        return None
    root = repo.resolve()
    path = (root / relpath).resolve()
    if root not in path.parents or not path.is_file():
        return None
    return path
