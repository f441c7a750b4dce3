"""The gate: AST policy + bandit over a plugin's Python files, one verdict."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from autocoder.plugins.permissions import permissions_from_text
from autocoder.safety.bandit_gate import bandit_findings
from autocoder.safety.imports import local_modules, unavailable_imports
from autocoder.safety.policy import check_source, module_exports
from autocoder.safety.types import (
    DEFAULT_PERMISSIONS,
    Finding,
    Permissions,
    SafetyReport,
    verdict_for,
)

MAX_FILE_BYTES = 1 << 20  # a generated source file beyond this is not reviewable anyway
SKIPPED_DIRS = frozenset({"__pycache__", ".git", ".venv", "venv", "build", "dist",
                          ".pytest_cache", ".mypy_cache", ".ruff_cache"})


def scan_files(
    files: dict[str, str], permissions: Permissions = DEFAULT_PERMISSIONS,
) -> SafetyReport:
    """Scan the *.py files among `files` (relative path -> source); other files are ignored."""
    findings: list[Finding] = []
    sources: dict[str, str] = {}
    local = local_modules({name: "" for name in files if name.endswith(".py")})
    exports = module_exports({name: source for name, source in files.items()
                              if isinstance(source, str)}, local)
    for name, source in sorted(files.items()):
        if not name.endswith(".py"):
            continue
        problem = _unscannable(name, source)
        if problem:
            findings.append(problem)
            continue
        findings += check_source(name, source, permissions, local, exports)
        sources[name] = source
    parseable = {name: text for name, text in sources.items()
                 if not any(f.tool == "syntax" and f.file == name for f in findings)}
    findings += unavailable_imports(parseable)
    findings += bandit_findings(parseable)
    findings.sort(key=lambda f: (f.file, f.line, f.tool, f.rule))
    return SafetyReport(verdict_for(findings), findings)


def _unscannable(name: str, source: object) -> Finding | None:
    if not isinstance(source, str):
        return Finding("syntax", "undecodable", "HIGH", name, 1,
                       "the file is not UTF-8 text")
    if len(source.encode("utf-8", "surrogatepass")) > MAX_FILE_BYTES:
        return Finding("syntax", "too-large", "HIGH", name, 1,
                       f"the file is larger than {MAX_FILE_BYTES // 1024} KB")
    return None


def scan_directory(path: Path) -> SafetyReport:
    """Scan a plugin directory, honouring plugin.toml [permissions] when present."""
    root = Path(path)
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a directory")
    try:
        permissions = read_permissions(root)
    except ValueError as exc:
        finding = Finding("syntax", "manifest-invalid", "HIGH", "plugin.toml", 1, str(exc))
        report = scan_files(_read_sources(root))
        return SafetyReport("block", [finding, *report.findings])
    return scan_files(_read_sources(root), permissions)


def read_permissions(root: Path) -> Permissions:
    manifest = root / "plugin.toml"
    if not manifest.is_file():
        return Permissions()
    try:
        text = manifest.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"plugin.toml is not valid TOML: {exc}") from exc
    # The contract's rule (autocoder/plugins/permissions.py); a ManifestError is a ValueError.
    return permissions_from_text(text)


def _read_sources(root: Path) -> dict[str, str]:
    sources: dict[str, str] = {}
    stack = [root]
    while stack:
        directory = stack.pop()
        for entry in sorted(directory.iterdir()):
            if entry.is_symlink():
                continue  # a link may point anywhere on the host; plugins ship real files
            if entry.is_dir() and entry.name not in SKIPPED_DIRS:
                stack.append(entry)
            elif entry.is_file() and entry.suffix == ".py":
                rel = str(PurePosixPath(entry.relative_to(root).as_posix()))
                raw = entry.read_bytes()
                try:
                    sources[rel] = raw.decode("utf-8")
                except UnicodeDecodeError:
                    sources[rel] = raw  # type: ignore[assignment]  # reported as undecodable
    return sources
