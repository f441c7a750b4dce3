"""Pure checks of what a team hands the marketplace: plugin.toml, the file tree, zips and wheels.

Nothing here touches the database, the disk or the sandbox, so every rule is cheap to test and
runs before anything is created. Errors are collected and reported together, each naming the
file (and line, for TOML) so the person fixing the package fixes it in one go.

- manifest.py: plugin.toml, read by the plugin contract (autocoder/plugins/), and PackageError;
- tree.py: the file tree's layout, archive member names, text files, a directory on disk;
- archives.py: zip archives and wheels, unpacked;
- artifacts.py: the wheel and sdist the portal serves, against the reviewed files;
- readme.py: version order, the source hash and the README's HTML.
"""

from marketplace.validation.archives import PURE_TAGS, files_from_wheel, files_from_zip, read_zip
from marketplace.validation.artifacts import (
    WHEEL_DIST_INFO_FILES,
    ArtifactLike,
    check_served_artifacts,
    sdist_served_errors,
    wheel_served_errors,
)
from marketplace.validation.manifest import (
    COMMAND_KEYS,
    FILESYSTEM_MODES,
    MANIFEST_KEYS,
    MAX_SUMMARY_CHARS,
    MAX_TAGS,
    TAG_PATTERN,
    CommandInfo,
    Manifest,
    PackageError,
    canonical_version,
    clean_tags,
    normalize_name,
    parse_manifest,
)
from marketplace.validation.readme import (
    check_version_order,
    render_readme,
    source_sha256,
)
from marketplace.validation.tree import (
    EXTRA_DIRS,
    FORBIDDEN_SUFFIXES,
    JUNK_PARTS,
    JUNK_TOP,
    MAX_ARCHIVE_BYTES,
    MAX_COMPRESSION_RATIO,
    MAX_ENTRIES,
    MAX_FILE_BYTES,
    MAX_FILES,
    MAX_TOTAL_BYTES,
    ROOT_FILES,
    check_path,
    check_plugin_files,
    files_from_directory,
    text_files,
)

__all__ = [
    "COMMAND_KEYS", "EXTRA_DIRS", "FILESYSTEM_MODES", "FORBIDDEN_SUFFIXES", "JUNK_PARTS",
    "JUNK_TOP", "MANIFEST_KEYS", "MAX_ARCHIVE_BYTES", "MAX_COMPRESSION_RATIO", "MAX_ENTRIES",
    "MAX_FILES", "MAX_FILE_BYTES", "MAX_SUMMARY_CHARS", "MAX_TAGS", "MAX_TOTAL_BYTES",
    "PURE_TAGS", "ROOT_FILES", "TAG_PATTERN", "WHEEL_DIST_INFO_FILES",
    "ArtifactLike", "CommandInfo", "Manifest", "PackageError", "canonical_version",
    "check_path", "check_plugin_files", "check_served_artifacts", "check_version_order",
    "clean_tags", "files_from_directory", "files_from_wheel", "files_from_zip",
    "normalize_name", "parse_manifest", "read_zip", "render_readme", "sdist_served_errors",
    "source_sha256", "text_files", "wheel_served_errors",
]
