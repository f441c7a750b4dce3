"""The "Try it" button: one command of a plugin run in the sandbox, queued for a worker
(the `plugin_try_run` actor), rate limited per user.

A worker running a try names itself on it (claimed_by, its heartbeat, as for the upload checks).
A worker killed mid-try leaves the try "running": the watchdog sees its heartbeat gone and sends
the try again once (`plugin_tries_orphaned_kick`); a try whose worker dies again ends with a
plain-words error. Whatever is left waiting or running past TRY_STALL_S (a lost message, an
in-process caller that died) ends the same way (`plugin_tries_stalled_end`), so the page never
waits forever.

A try of a plugin that talks to other services (hosts declared in plugin.toml, or address
settings, `kind = "address"`) is a **rehearsal** unless asked otherwise: its api.http keeps
every rule of a tool call's (the hosts the reviewed plugin.toml declares, the forms a secret
takes, the limits) but sends nothing; each request is recorded with what it would send and
answered from the sample answers of the version's examples
(autocoder/calling/http_rehearsal.py), the settings are the examples' values, an address
setting's example value lets it reach that host (nothing is sent there either), and a secret's
place shows `[secret NAME]`. **Sending for real** is for a trier whose current team uses this
very version as a tool: the try then gets that team's settings and secrets, and reaches the
hosts of the address settings the team's admin approved, exactly as a tool call would (the
tools app provides them through the "try_settings" hook, autocoder/hooks.py: the marketplace
does not import the tools app), only after the trier confirmed it, and the confirmation is in
the team's audit log (`marketplace.try_sent`).
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
from autocoder.calling.http_records import HttpRecord
from autocoder.calling.invoke import CallOutcome, InvokeLimits
from autocoder.calling.team_call import Rehearsal, TeamSettings, call_as_team, rehearsal_of
from marketplace.models import PluginVersion, TryRequest
from marketplace.validation import PackageError
from teams.services.audit import audit_record

logger = logging.getLogger(__name__)


TRY_PER_MINUTE = 10
TRY_WINDOW_S = 60
# A try is an invocation like a tool's (one runner for both: autocoder/calling/invoke.py), with
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
SEND_NEEDS_TOOL = ("Sending for real uses the settings of a team that uses this version as a"
                   " tool, and your current team does not use {plugin}: rehearse instead"
                   " (nothing is sent), or activate it for your team first.")
SEND_OTHER_VERSION = ("Sending for real uses your team's settings, which belong to the version"
                      " your team uses as a tool ({version}): rehearse this one instead, or"
                      " try version {version}.")
SEND_UNCONFIRMED = ("Sending for real makes real requests to {hosts} with your team's settings:"
                    " tick the box to confirm it, or rehearse instead (nothing is sent).")
SEND_NO_LONGER = ("Not sent, nothing was run: your team no longer uses this version as a tool,"
                  " so its settings cannot be used. Rehearse it instead.")
SEND_NOWHERE = ("Sending for real reaches only the addresses {team}'s admins approved for"
                " {plugin}, and none is approved yet: {note} Rehearse instead (nothing is"
                " sent).")
# In words where the host is not known before a team enters it (templates/marketplace/_network.html
# says it so too).
ADDRESS_WORDS = "the address your team enters as “{name}”"


@dataclass(frozen=True)
class TrySettings(TeamSettings):
    """What a team has entered for the plugin, as a tool call of it gets it (TeamSettings:
    secrets unsealed, the Settings page, the approved addresses). `other_version`: the team
    uses another version of the plugin, so its values are not given to this one (empty)."""

    other_version: str = ""
    team_name: str = ""


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
    http_requests: list[HttpRecord] = field(default_factory=list)


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
                       payload: Any, team_id: int | None = None, send: bool = False,
                       confirmed: bool = False) -> TryRequest:
    """Queue one try for a worker (PackageError, TryRateLimited at once); the page shows it
    pending and fills it in when `plugin_try_perform` has stored the result. Old tries are
    deleted here, so the table stays small. `team_id`: the user's current team. A plugin that
    talks to other services is rehearsed (nothing sent) unless `send`: then the team must use
    this version as a tool (its settings are used) and the user must have `confirmed` it,
    which the team's audit log records."""
    _try_validate(version, command, payload)
    send = send and bool(try_hosts(version))  # a plugin that talks to nothing sends nothing
    hosts = _send_check(version, user, team_id, confirmed) if send else []
    try_rate_limit_hit(user_id=user.pk)
    with transaction.atomic():
        TryRequest.objects.filter(created_at__lt=timezone.now() - timedelta(
            seconds=TRY_KEEP_S)).delete()
        asked = TryRequest.objects.create(version=version, user=user, team_id=team_id,
                                          command=command, payload=payload, send=send)
        if send:
            audit_record(actor=user, action="marketplace.try_sent", team=asked.team,
                         target=version, after={"plugin": version.plugin.name,
                                                "version": version.version, "command": command,
                                                "hosts": hosts, "try": asked.pk})
        durable.outbox_message_queue(actor=TRY_ACTOR, args=[asked.pk])
    return asked


def try_hosts(version: PluginVersion) -> list[str]:
    """Where the version's requests go, in words: the hosts its reviewed plugin.toml declares,
    then each address setting's "the address your team enters as “NAME”" ([] : it talks to
    nothing)."""
    manifest = version.reviewed_manifest
    if manifest is None:
        return []
    return [rule.text() for rule in manifest.hosts] + [
        ADDRESS_WORDS.format(name=item.name) for item in manifest.address_settings]


def try_send_terms(*, version: PluginVersion, user_id: int,
                   team_id: int | None) -> tuple[str, list[str]]:
    """Why this user cannot send a try of `version` for real from `team_id` ("" : they can):
    only from a team that uses this very version as a tool, and only where it reaches a host;
    and the hosts a real send reaches (declared, and the addresses the team approved)."""
    team = try_team_settings(user_id=user_id, team_id=team_id, version=version)
    if team is None:
        return SEND_NEEDS_TOOL.format(plugin=version.plugin.name), []
    if team.other_version:
        return SEND_OTHER_VERSION.format(version=team.other_version), []
    manifest = version.reviewed_manifest
    hosts = [rule.text() for rule in (manifest.hosts if manifest else ())]
    hosts += [text for text in (rule.text() for rule in team.approved) if text not in hosts]
    if not hosts:
        return SEND_NOWHERE.format(team=team.team_name or "your team",
                                   plugin=version.plugin.name, note=team.address_note), []
    return "", hosts


def _send_check(version: PluginVersion, user: User, team_id: int | None,
                confirmed: bool) -> list[str]:
    refusal, hosts = try_send_terms(version=version, user_id=user.pk, team_id=team_id)
    if not refusal and not confirmed:
        refusal = SEND_UNCONFIRMED.format(hosts=", ".join(hosts))
    if refusal:
        raise PackageError([refusal])
    return hosts


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
    if len(json.dumps(stored)) > TRY_MAX_RESULT_CHARS:  # what a rehearsal would send goes first
        for record in stored["http_requests"]:
            if isinstance(record, dict) and isinstance(record.get("sent"), dict):
                record["sent"]["body"] = str(record["sent"].get("body", ""))[:80]
    if len(json.dumps(stored)) > TRY_MAX_RESULT_CHARS:
        stored["output"] = None
        stored["error"] = stored["error"] or "The output was too large to show here."
        stored["ok"] = False
    _try_finish(TryRequest.objects.filter(pk=try_id), stored)
    asked.refresh_from_db()
    return asked


def _try_finish(guard: QuerySet[TryRequest], stored: dict[str, object]) -> int:
    return durable.release(guard.exclude(status=TryRequest.Status.DONE),
                           status=TryRequest.Status.DONE, result=stored,
                           finished_at=timezone.now())


def _try_failed(error: str) -> dict[str, object]:
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
    manifest = version.reviewed_manifest
    names = [item.name for item in manifest.commands] if manifest is not None else []
    if command not in names:
        raise PackageError([f"command: {command!r} is not one of {', '.join(map(str, names))}"])
    if len(json.dumps(payload)) > TRY_MAX_PAYLOAD_CHARS:
        raise PackageError([f"payload: at most {TRY_MAX_PAYLOAD_CHARS} characters of JSON"])


def _try_execute(asked: TryRequest) -> TryResult:
    version = asked.version
    manifest = version.reviewed_manifest
    team = try_team_settings(user_id=asked.user_id, team_id=asked.team_id, version=version)
    ours = team is not None and not team.other_version
    if manifest is None or not (manifest.hosts or manifest.address_settings):
        # it talks to nothing: the team's settings
        return _try_result(_try_call(asked, team if team is not None and ours
                                     else TeamSettings()))
    if not asked.send:
        rehearsing, rehearsal = rehearsal_of(manifest=manifest, commands=version.commands,
                                             command=asked.command)
        return _try_result(_try_call(asked, rehearsing, rehearsal))
    if team is None or not ours:  # asked while the team used it; it no longer does
        return TryResult(ok=False, error=SEND_NO_LONGER)
    return _try_result(_try_call(asked, team))


def _try_call(asked: TryRequest, team: TeamSettings,
              rehearsal: Rehearsal | None = None) -> CallOutcome:
    """A tool call's road (autocoder/calling/team_call.py), with a try's limits."""
    version = asked.version
    return call_as_team(files=version.files, manifest=version.reviewed_manifest,
                        command=asked.command, payload=asked.payload, team=team,
                        internal_hosts=settings.TOOLS_INTERNAL_HOSTS, limits=TRY_LIMITS,
                        rehearsal=rehearsal)


def _try_result(outcome: CallOutcome) -> TryResult:
    return TryResult(ok=outcome.ok, output=outcome.output, error=outcome.error,
                     log="\n".join(outcome.log_lines), detail=outcome.detail,
                     duration_ms=outcome.duration_ms, http_requests=outcome.http_requests)


def try_team_settings(*, user_id: int, team_id: int | None,
                      version: PluginVersion) -> TrySettings | None:
    """The settings of the user's team for this version, from the app that keeps them (None:
    no team, the team does not use the plugin, or no app answers)."""
    if team_id is None:
        return None
    for provide in hooks.get(TRY_SETTINGS_HOOK):
        found: TrySettings | None = provide(user_id=user_id, team_id=team_id, version=version)
        if found is not None:
            return found
    return None
