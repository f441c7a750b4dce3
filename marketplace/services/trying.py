"""The "Try it" button: one command of a plugin run in the sandbox, queued for a worker
(the `plugin_try_run` actor), rate limited per user.

A worker running a try names itself on it (claimed_by, its heartbeat, as for the upload checks).
A worker killed mid-try leaves the try "running": the watchdog sees its heartbeat gone and sends
the try again once (`plugin_tries_orphaned_kick`); a try whose worker dies again ends with a
plain-words error. Whatever is left waiting or running past TRY_STALL_S (a lost message, an
in-process caller that died) ends the same way (`plugin_tries_stalled_end`), so the page never
waits forever.

A try reaches other services through the same api.http as a tool call (the host's HttpGate, only
the hosts the version's reviewed plugin.toml declares, TOOLS_INTERNAL_HOSTS for internal ones)
and keeps the requests it made. Settings and secrets are a team's: if the trier's current team
uses this very version as a tool, the try gets that team's values exactly as a tool call would
(the tools app provides them through the "try_settings" hook, autocoder/hooks.py: the
marketplace does not import the tools app). Otherwise a try has no settings, and a request that
names a secret is refused with a sentence that says where to enter it.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import redis
from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from autocoder import durable, hooks
from autocoder.plugins import read_manifest
from autocoder.runtime.http_gate import HttpGate, HttpPolicy
from autocoder.runtime.http_request import Refused, Secrets
from autocoder.runtime.invoke import InvokeLimits, PluginCall, call_plugin
from marketplace.models import PluginVersion, TryRequest
from marketplace.validation import PackageError

logger = logging.getLogger(__name__)


TRY_PER_MINUTE = 10
TRY_WINDOW_S = 60
# A try is an invocation like a tool's (one runner for both: autocoder/runtime/invoke.py), with
# a smaller answer: the page shows it.
TRY_LIMITS = InvokeLimits(timeout_s=15, memory_mb=512, cpu_s=10, output_kb=64)
TRY_MAX_PAYLOAD_CHARS = 20_000
TRY_ACTOR = "plugin_try_run"
TRY_KEEP_S = 24 * 60 * 60  # a try's result is kept for a day, then deleted
TRY_MAX_RESULT_CHARS = 16_000
# A try whose worker died is run again until it has been started this often (a try is a short
# sandboxed command with no effect outside the sandbox, so running it again is safe).
TRY_MAX_ATTEMPTS = 2
# Far longer than a try takes (TRY_LIMITS: 15 s) plus a busy queue.
TRY_STALL_S = 5 * 60
TRY_INTERRUPTED = ("The worker running your try stopped before it finished (it was restarted,"
                   " or ran out of memory), twice. Nothing was found wrong with your input:"
                   " try again, and tell your admin if this repeats.")
TRY_STALLED = ("Your try did not finish: no worker completed it within {minutes} minutes (the"
               " workers may be busy or stopped). Try again later.")


# The hook through which the tools app gives a try its team's settings: a callable
# (user_id=, team_id=, version=) -> TrySettings | None (tools/services/tool_settings.py).
TRY_SETTINGS_HOOK = "try_settings"
NO_VALUE = ("Try it has no value for the secret {name!r}: activate this plugin as a team tool"
             " and enter it there, then use it from Tools.")
OTHER_VERSION = ("Try it has no value for the secret {name!r} in this version: your team uses"
                 " version {version} of this plugin as a tool; try that version, or have the"
                 " team's tool upgraded and use it from Tools.")


@dataclass(frozen=True)
class TrySettings:
    """What a team has entered for the plugin (secrets unsealed: they go to the host's HttpGate
    and never into the sandbox) and the names of the secret ones. `other_version`: the team uses
    another version of the plugin, so its values are not given to this one (empty)."""

    values: dict[str, str]
    secret_names: tuple[str, ...]
    other_version: str = ""


class TryRateLimited(Exception):
    def __init__(self, retry_after: int) -> None:
        self.retry_after = max(1, retry_after)
        super().__init__(f"Too many tries: {TRY_PER_MINUTE} a minute. Try again in"
                         f" {self.retry_after} seconds.")


@dataclass(frozen=True)
class TryResult:
    ok: bool
    output: Any = None
    error: str = ""
    # What the plugin logged (api.log) and, on a failure, the end of its traceback.
    log: str = ""
    detail: str = ""
    duration_ms: int = 0
    # api.http's requests (method, host, path, status, bytes, ms, refused), as a tool call's.
    http_requests: list[dict[str, Any]] = field(default_factory=list)


def try_rate_limit_hit(*, user_id: int) -> None:
    """Count one try for the user; TryRateLimited (with seconds to wait) past the limit.

    A fixed one-minute window per user in Redis (INCR + EXPIRE), shared by every web process.
    """
    client = redis.Redis.from_url(settings.REDIS_URL)
    key = f"marketplace:try:{user_id}"
    pipe = client.pipeline()
    pipe.incr(key)
    pipe.ttl(key)
    count, ttl = pipe.execute()
    if int(ttl) < 0:  # a new window (EXPIRE NX needs Redis 7; the embedded one is 6.2)
        client.expire(key, TRY_WINDOW_S)
        ttl = TRY_WINDOW_S
    if int(count) > TRY_PER_MINUTE:
        raise TryRateLimited(retry_after=int(ttl) if int(ttl) > 0 else TRY_WINDOW_S)


def plugin_try_request(*, version: PluginVersion, user: User, command: str,
                       payload: Any, team_id: int | None = None) -> TryRequest:
    """Queue one try for a worker (PackageError, TryRateLimited at once); the page shows it
    pending and fills it in when `plugin_try_perform` has stored the result. Old tries are
    deleted here, so the table stays small. `team_id`: the user's current team, whose settings
    the try gets if the team uses this version as a tool."""
    _try_validate(version, command, payload)
    try_rate_limit_hit(user_id=user.pk)
    with transaction.atomic():
        TryRequest.objects.filter(created_at__lt=timezone.now() - timedelta(
            seconds=TRY_KEEP_S)).delete()
        asked = TryRequest.objects.create(version=version, user=user, team_id=team_id,
                                          command=command, payload=payload)
        durable.outbox_message_queue(actor=TRY_ACTOR, args=[asked.pk])
    return asked


def plugin_try_perform(*, try_id: int) -> TryRequest | None:
    """Run a queued try once (a guarded update: a duplicate message does nothing) and store
    its result, cut to a few KB. The worker's name goes on the try, so the watchdog can tell
    when it died."""
    if not durable.claim(TryRequest.objects.filter(pk=try_id, status=TryRequest.Status.PENDING),
                         attempts="attempts", started="started_at",
                         status=TryRequest.Status.RUNNING):
        return None
    asked = TryRequest.objects.select_related("version").get(pk=try_id)
    try:
        result = _try_execute(asked)
    except Exception as exc:
        logger.exception("try %s failed", try_id)
        result = TryResult(ok=False, error=f"The sandbox could not run the plugin: {exc}")
    stored = {"ok": result.ok, "output": result.output, "error": result.error[-3000:],
              "log": result.log[-4000:], "detail": result.detail[-3000:],
              "duration_ms": result.duration_ms, "http_requests": result.http_requests}
    if len(json.dumps(stored)) > TRY_MAX_RESULT_CHARS:
        stored["output"] = None
        stored["error"] = stored["error"] or "The output was too large to show here."
        stored["ok"] = False
    _try_finish(TryRequest.objects.filter(pk=try_id), stored)
    asked.refresh_from_db()
    return asked


def _try_finish(guard: QuerySet[TryRequest], stored: dict[str, Any]) -> int:
    return durable.release(guard.exclude(status=TryRequest.Status.DONE),
                           status=TryRequest.Status.DONE, result=stored,
                           finished_at=timezone.now())


def _try_failed(error: str) -> dict[str, Any]:
    return {"ok": False, "output": None, "error": error, "log": "", "detail": "", "duration_ms": 0}


def plugin_tries_orphaned_kick(*, live: set[str] | None = None) -> list[int]:
    """The watchdog's quick sweep: a try running on a worker whose heartbeat expired (killed
    mid-try) is sent again, or ends with TRY_INTERRUPTED once it was started TRY_MAX_ATTEMPTS
    times; one sweeper wins each (guarded update). Returns the tries moved on."""
    moved = durable.orphans_sweep(TryRequest.objects.filter(status=TryRequest.Status.RUNNING),
                                  _try_recover, live=live)
    if moved:
        logger.warning("tries %s: their worker died; sent again or ended", moved)
    return moved


def _try_recover(stale: durable.Stale[TryRequest]) -> bool:
    guard = stale.guard
    with transaction.atomic():
        asked = guard.select_for_update(skip_locked=True).first()
        if asked is None:
            return False
        if asked.attempts >= TRY_MAX_ATTEMPTS:
            return bool(_try_finish(guard, _try_failed(TRY_INTERRUPTED)))
        if not durable.release(guard, status=TryRequest.Status.PENDING):
            return False
        durable.outbox_message_queue(actor=TRY_ACTOR, args=[asked.pk])
    return True


def plugin_tries_stalled_end(*, stalled_for_s: float | None = None) -> list[int]:
    """The watchdog's slow sweep: a try still waiting or running TRY_STALL_S after it was asked
    for (a lost message, an in-process caller that died) ends with TRY_STALLED, so the page
    stops waiting. Returns the tries ended."""
    limit = stalled_for_s if stalled_for_s is not None else TRY_STALL_S
    error = TRY_STALLED.format(minutes=max(1, round(limit / 60)))
    ended = durable.stalled_sweep(
        TryRequest.objects.filter(status__in=[TryRequest.Status.PENDING,
                                              TryRequest.Status.RUNNING]),
        lambda stale: bool(_try_finish(stale.guard, _try_failed(error))),
        since="created_at", older_than_s=limit)
    if ended:
        logger.warning("tries %s did not finish in time; ended", ended)
    return ended


def _try_validate(version: PluginVersion, command: str, payload: Any) -> None:
    if version.status in (PluginVersion.Status.CHECKING, PluginVersion.Status.FAILED):
        raise PackageError(["this version has not passed its checks; it cannot be tried"])
    if not isinstance(payload, dict):
        raise PackageError(["payload: must be a JSON object, like {\"text\": \"hello\"}"])
    names = [c.get("name") for c in version.commands] or [
        c.get("name") for c in version.manifest.get("commands", [])]
    if command not in names:
        raise PackageError([f"command: {command!r} is not one of {', '.join(map(str, names))}"])
    if len(json.dumps(payload)) > TRY_MAX_PAYLOAD_CHARS:
        raise PackageError([f"payload: at most {TRY_MAX_PAYLOAD_CHARS} characters of JSON"])


def _try_execute(asked: TryRequest) -> TryResult:
    version = asked.version
    team = _try_settings(asked)
    values = dict(team.values) if team and not team.other_version else {}
    secret_names = tuple(team.secret_names) if team and not team.other_version else ()
    gate = _try_gate(version, values, secret_names, team)
    outcome = call_plugin(PluginCall(files=version.files,
                                     entry=str(version.manifest.get("entry", "")),
                                     command=asked.command, payload=asked.payload,
                                     settings=values, secret_settings=secret_names),
                          TRY_LIMITS, http=gate.perform if gate else None,
                          records=gate.records if gate else None)
    return TryResult(ok=outcome.ok, output=outcome.output, error=outcome.error,
                     log="\n".join(outcome.log_lines), detail=outcome.detail,
                     duration_ms=outcome.duration_ms, http_requests=outcome.http_requests)


def _try_settings(asked: TryRequest) -> TrySettings | None:
    """The settings of the trier's team for this version, from the app that keeps them (None:
    the team does not use the plugin, or no app answers)."""
    if asked.team_id is None:
        return None
    for provide in hooks.get(TRY_SETTINGS_HOOK):
        found: TrySettings | None = provide(user_id=asked.user_id, team_id=asked.team_id,
                                            version=asked.version)
        if found is not None:
            return found
    return None


def _try_gate(version: PluginVersion, values: dict[str, str], secret_names: tuple[str, ...],
              team: TrySettings | None) -> HttpGate | None:
    """The host's side of api.http for a try, as for a tool call: only the hosts the version's
    reviewed plugin.toml declares (None: it declares none, and api.http says so)."""
    manifest = read_manifest(version.files.get("plugin.toml", ""))
    if manifest is None or not manifest.hosts:
        return None
    secrets = {name: values[name] for name in secret_names if values.get(name)}
    gate = HttpGate(HttpPolicy(hosts=tuple(manifest.hosts), secrets=secrets,
                               internal_hosts=frozenset(settings.TOOLS_INTERNAL_HOSTS)))
    if not secret_names:  # no team's values: a secret the plugin names is refused in words
        declared = [item.name for item in manifest.settings if item.secret]
        gate.secrets = _NoSecrets(declared, other_version=team.other_version if team else "")
        gate.blank = gate.secrets.blank
    return gate


class _NoSecrets(Secrets):
    """A try's secrets when its team has entered none for this version: naming one of the
    declared secrets is refused with a sentence that says where its value is entered."""

    def __init__(self, names: list[str], *, other_version: str) -> None:
        super().__init__({name: "" for name in names})
        self.other_version = other_version

    def secret(self, name: object) -> str:
        if isinstance(name, str) and name in self.values:
            sentence = (OTHER_VERSION.format(name=name, version=self.other_version)
                        if self.other_version else NO_VALUE.format(name=name))
            raise Refused("refused", sentence)
        return super().secret(name)
