"""An HNSW index of its own for each big team's lessons (a partial index, `WHERE team_id = N`).

The shared index filters after it searches: for a team holding a small share of a big table,
even pgvector 0.8's iterative scan reads far into the graph to find ten of its lessons, and
the graph's recall over a million clustered rows caps what it finds. A partial index per big
team is what pgvector advises for filtering on a few values: the team's search is then an
unfiltered search of a graph of its own lessons. PostgreSQL picks the team's index by itself
for a query that says `team_id = N` (autocoder/lessons/selectors.py asks that way).

The slow watchdog sweep (`team_indexes_sweep`, every minute in one worker) looks for teams of
TEAM_INDEX_MIN_ROWS lessons or more without a usable index and sends `lesson_team_index_build`
for each; the build runs in a worker (`CREATE INDEX CONCURRENTLY`: lessons go on being written
and read meanwhile). An index whose team fell below half the threshold, or is gone, is
dropped. See docs/lessons.md ("An index per big team").
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

import dramatiq
from django.db import connection

from autocoder.lessons.models import HNSW_EF_CONSTRUCTION, HNSW_M, Lesson

logger = logging.getLogger(__name__)

# From this many lessons a team gets an index of its own. lessons_bench --teams measured the
# exact scan (what smaller teams get) at a p95 of about 8 ms up to 999 lessons among a million,
# and 45-96 ms for teams of 1,000-9,999, whose rows are scattered over the whole table.
TEAM_INDEX_MIN_ROWS = 1000
# An index is dropped only when its team falls below half the threshold, so a team around the
# threshold does not have its index built and dropped over and over.
TEAM_INDEX_DROP_BELOW = TEAM_INDEX_MIN_ROWS // 2
INDEX_PREFIX = "lesson_team_"
_INDEX_NAME = re.compile(rf"^{INDEX_PREFIX}(\d+)_hnsw$")
# Two builds of one team's index never run at once: a session-level advisory lock, keyed by
# this class and the team id.
_LOCK_CLASS = 7_310_551
BUILD_ACTOR = "lesson_team_index_build"


def index_name(team_id: int) -> str:
    return f"{INDEX_PREFIX}{int(team_id)}_hnsw"


@dataclass(frozen=True)
class TeamIndex:
    team_id: int
    name: str
    valid: bool  # False while it is being built, or when a build was cut short


def indexes_by_team(team_id: int | None = None) -> dict[int, TeamIndex]:
    """The teams' indexes on the lessons table (or only `team_id`'s), by team id, as the
    catalog has them: a look well under a millisecond."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, i.indisvalid FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE i.indrelid = %s::regclass AND c.relname LIKE %s",
            [Lesson._meta.db_table,
             f"{INDEX_PREFIX}%" if team_id is None else index_name(team_id)])
        rows = cursor.fetchall()
    found: dict[int, TeamIndex] = {}
    for name, valid in rows:
        match = _INDEX_NAME.match(name)
        if match:
            found[int(match.group(1))] = TeamIndex(int(match.group(1)), name, bool(valid))
    return found


def team_index_ready(team_id: int) -> bool:
    """Whether the team's own index is built and usable."""
    index = indexes_by_team(team_id).get(int(team_id))
    return bool(index and index.valid)


def team_sizes(*, at_least: int = 1) -> dict[int, int]:
    """Lessons per team, for the teams with at least `at_least` (from the team index)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT team_id, count(*) FROM {Lesson._meta.db_table} "  # noqa: S608
            "WHERE team_id IS NOT NULL GROUP BY team_id HAVING count(*) >= %s", [at_least])
        return {int(team): int(rows) for team, rows in cursor.fetchall()}


@dataclass
class SweepReport:
    build: list[int]
    dropped: list[int]


def team_indexes_plan() -> SweepReport:
    """Which teams need an index built (none yet, or a build that was cut short) and which
    indexes go (their team is below TEAM_INDEX_DROP_BELOW lessons, or gone); drops those."""
    sizes = team_sizes(at_least=TEAM_INDEX_DROP_BELOW)
    existing = indexes_by_team()
    build = sorted(team for team, rows in sizes.items()
                   if rows >= TEAM_INDEX_MIN_ROWS
                   and (team not in existing or not existing[team].valid))
    dropped = [team for team, index in sorted(existing.items())
               if team not in sizes and _drop_unless_building(team, index.name)]
    return SweepReport(build=build, dropped=dropped)


def team_indexes_sweep() -> list[int]:
    """The slow watchdog sweep: drop what is no longer needed, and send a build for each big
    team without a usable index (the build is a worker's job: it can take minutes)."""
    if not _may_index():
        return []
    plan = team_indexes_plan()
    build = dramatiq.get_broker().get_actor(BUILD_ACTOR)  # autocoder/lessons/tasks.py
    for team in plan.build:
        build.send(team)
    return plan.build


def team_index_build(team_id: int) -> bool:
    """Build the team's index unless it is there or being built; True when built now.

    Needs the connection in autocommit (as in a worker): `CREATE INDEX CONCURRENTLY` cannot
    run in a transaction. A build cut short leaves an invalid index behind; it is dropped and
    built again."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [_LOCK_CLASS, int(team_id)])
        if not cursor.fetchone()[0]:
            return False  # another worker is building it
        try:
            existing = indexes_by_team(team_id).get(int(team_id))
            if existing and existing.valid:
                return False
            if existing:
                _drop(existing.name)
            rows = Lesson.objects.filter(team_id=team_id).count()
            if rows < TEAM_INDEX_MIN_ROWS:
                return False
            # Enough memory for the whole graph (about 2.4 KB per lesson): a build that
            # spills to disk is several times slower. Only this build uses it.
            cursor.execute(f"SET maintenance_work_mem = '{max(64, rows * 2400 // 2**20)}MB'")
            cursor.execute(
                f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {index_name(team_id)} "
                f"ON {Lesson._meta.db_table} USING hnsw (embedding vector_cosine_ops) "
                f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION}) "
                f"WHERE team_id = {int(team_id)}")
            logger.info("built the lessons index of team %s (%s lessons)", team_id, rows)
            return True
        finally:
            cursor.execute("RESET maintenance_work_mem")
            cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [_LOCK_CLASS, int(team_id)])


_told_not_owner = False


def _may_index() -> bool:
    """Whether this database role may create indexes on the lessons table (it owns it when it
    ran the migrations); said once per process in the log when not."""
    global _told_not_owner
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_has_role(current_user, relowner, 'USAGE') FROM pg_class "
                       "WHERE oid = %s::regclass", [Lesson._meta.db_table])
        row = cursor.fetchone()
    if row and row[0]:
        return True
    if not _told_not_owner:
        _told_not_owner = True
        logger.warning("big teams' lessons get no index of their own: the database role does "
                       "not own the lessons table (docs/lessons.md, \"An index per big team\")")
    return False


def _drop_unless_building(team_id: int, name: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [_LOCK_CLASS, int(team_id)])
        if not cursor.fetchone()[0]:
            return False
        try:
            _drop(name)
            return True
        finally:
            cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [_LOCK_CLASS, int(team_id)])


def _drop(name: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f'DROP INDEX CONCURRENTLY IF EXISTS "{name}"')
