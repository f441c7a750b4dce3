"""Calling an activated plugin: checks, the call in the sandbox, storage and the log.

Three doors, one path (`_execute`):
- the form queues the call for a Dramatiq worker (`invocation_request`, then
  `invocation_perform`): a page never waits for a plugin, the person sees the call waiting,
  running, then its result (as "Try it" does);
- the HTTP API calls in the request (`invocation_call`), bounded by the invocation's wall time
  (INVOKE_LIMITS.timeout_s): an API client wants its answer in the response, and a queue would
  make it poll for it (`manage.py tool_call` calls the same way, as a member);
- schedules queue their call like the form (schedules.py).

Every call is checked at call time against the kill switch (a `VersionBlock` row) and the
activation still in force, so a disabled version is refused at its next call.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import DataError, transaction
from django.db.models import Exists
from django.urls import reverse
from django.utils import timezone

from autocoder import durable
from autocoder.calling.invoke import INVOKE_LIMITS, CallOutcome
from autocoder.calling.payload import payload_errors
from autocoder.calling.setting_words import settings_missing_words
from autocoder.calling.team_call import TeamSettings, call_as_team
from autocoder.plugins import SettingDecl
from tools.declared import command_names, declared_inputs, manifest_of
from tools.json_input import json_input_problem
from tools.models import Activation, Invocation, Schedule, ToolStorage, ToolToken, VersionBlock
from tools.selectors import missing_settings, settings_page
from tools.services.addresses import approved_hosts_for_call
from tools.services.events import INVOKE_ACTOR, json_size
from tools.services.schedule_notes import schedule_outcome_tell
from tools.services.schedule_owners import schedule_still_owned
from tools.services.tool_settings import settings_for_call
from tools.services.warm import warm_key

logger = logging.getLogger(__name__)

# A result is kept for the person (or the schedule's log) up to this size; larger outputs are
# answered but only their size is kept.
OUTPUT_KEEP_BYTES = 256 * 1024
MAX_PAYLOAD_BYTES = INVOKE_LIMITS.payload_kb * 1024
DISABLED = ("A site administrator disabled this version of the plugin everywhere; it cannot "
            "be used. Your team's admins have been told.")
NOT_IN_USE = "Your team no longer uses this version of the plugin; nothing was run."
OWNER_LEFT = ("Not run: whoever set up this schedule is no longer a member of the team. The "
              "schedule is paused; a reviewer or admin can resume it on the tool's page.")
# What each way a call fails means to an API client.
HTTP_STATUS = {"plugin_error": 422, "bad_output": 422, "memory_limit": 422,
               "output_too_large": 422, "storage_too_large": 422, "timeout": 504,
               "cpu_limit": 504, "payload_too_large": 413, "sandbox_unavailable": 503,
               "disabled": 403, "not_in_use": 409, "settings_missing": 409}


class InvocationRefused(Exception):
    """A call refused before anything ran; `status` is the HTTP status an API answers with.
    For settings still missing, `missing` names them and `url` is the (site-relative) page
    where a team admin enters them; `said_at(base)` gives the words with a full address."""

    def __init__(self, message: str, *, status: int, missing: tuple[str, ...] = (),
                 url: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.missing = missing
        self.url = url

    def said_at(self, base: str) -> str:
        """The words with `url` written in full (`base`: "https://portal.example.org")."""
        text = str(self)
        return text.replace(self.url, base.rstrip("/") + self.url) if self.url else text


@dataclass(frozen=True)
class Caller:
    kind: str
    user_id: int | None = None
    token: ToolToken | None = None
    schedule: Schedule | None = None


def invocation_check(*, activation: Activation, command: str, payload: Any,
                     settings_needed: bool = True) -> None:
    """InvocationRefused (with the HTTP status) unless the call may run as asked.
    `settings_needed=False` checks only the command and its input: for a schedule saved
    before an admin has entered the settings (it is refused when it comes due instead)."""
    version = activation.version
    if _blocked(activation):
        raise InvocationRefused(DISABLED, status=403)
    names = command_names(version)
    if command not in names:
        raise InvocationRefused(f"Unknown command {command!r}: this plugin has "
                                f"{', '.join(names) or 'no commands'}.", status=400)
    missing = missing_settings(activation) if settings_needed else []
    if missing:
        raise settings_missing_refusal(activation, missing)
    if not isinstance(payload, dict):
        raise InvocationRefused('The input must be a JSON object, like {"text": "hello"}.',
                                status=400)
    problem = json_input_problem(payload)  # a NUL, NaN, too deep: a service's caller too
    if problem is not None:
        raise InvocationRefused(problem, status=400)
    size = json_size(payload)
    if size > MAX_PAYLOAD_BYTES:
        raise InvocationRefused(f"The input is {size // 1024} KB of JSON; the limit is "
                                f"{INVOKE_LIMITS.payload_kb} KB.", status=413)
    problems = payload_errors(declared_inputs(version, command), payload)
    if problems:
        raise InvocationRefused("The input does not fit: " + "; ".join(problems) + ".",
                                status=400)


def _blocked(activation: Activation) -> bool:
    """Whether a site administrator disabled the activation's version: as read with it
    (`tools.selectors.tool_for_call`), or asked now."""
    read = getattr(activation, "blocked", None)
    if read is not None:
        return bool(read)
    return VersionBlock.objects.filter(version_id=activation.version_id).exists()


def settings_missing_refusal(activation: Activation,
                             missing: list[SettingDecl]) -> InvocationRefused:
    """The refusal of a call while settings are missing: which ones, and where an admin enters
    them (the words api.http uses too: autocoder/calling/setting_words.py)."""
    url = settings_page(activation)
    words = settings_missing_words([(item.name, item.description) for item in missing], url)
    return InvocationRefused(f"Not run: {words}.", status=409,
                             missing=tuple(item.name for item in missing), url=url)


def invocation_request(*, activation: Activation, user_id: int, command: str,
                       payload: dict[str, object]) -> Invocation:
    """Queue a call from the form (InvocationRefused at once); a worker runs it."""
    invocation_check(activation=activation, command=command, payload=payload)
    return invocation_queue(activation=activation, command=command, payload=payload,
                            caller=Caller(Invocation.Caller.USER, user_id=user_id))


def invocation_queue(*, activation: Activation, command: str, payload: dict[str, object],
                     caller: Caller) -> Invocation:
    """Store the call and send it to a worker once the transaction commits (the outbox: a
    Redis outage delays it, loses nothing)."""
    with transaction.atomic():
        invocation = Invocation.objects.create(
            team_id=activation.team_id, plugin_id=activation.plugin_id,
            version_id=activation.version_id, command=command, caller=caller.kind,
            user_id=caller.user_id, schedule=caller.schedule, payload=payload,
            input_bytes=json_size(payload))
        durable.outbox_message_queue(actor=INVOKE_ACTOR, args=[invocation.pk])
    return invocation


def invocation_perform(*, invocation_id: int) -> Invocation | None:
    """Run a queued call once (a guarded update: a message delivered twice runs nothing)."""
    if not durable.claim(Invocation.objects.filter(pk=invocation_id,
                                                   status=Invocation.Status.PENDING),
                         by=None, status=Invocation.Status.RUNNING):
        return None
    invocation = Invocation.objects.select_related("version", "schedule", "team", "plugin").get(
        pk=invocation_id)
    payload = invocation.payload
    if invocation.schedule is not None:
        if not _schedule_still_owned(invocation.schedule):
            Invocation.objects.filter(pk=invocation_id).update(payload={})
            return _finish(invocation, status=Invocation.Status.REFUSED,
                           error_kind="owner_left", error=OWNER_LEFT)
    missing = _missing_at_run(invocation)
    if missing is not None:  # queued before a setting lost its value, or a schedule come due
        if invocation.caller != Invocation.Caller.USER:
            Invocation.objects.filter(pk=invocation_id).update(payload={})
        return _finish(invocation, status=Invocation.Status.REFUSED,
                       error_kind="settings_missing", error=str(missing))
    if invocation.schedule is not None:
        _schedule_event(invocation)
    if invocation.caller != Invocation.Caller.USER:
        # Only the person's own results keep what went in; a schedule's payload is on it.
        Invocation.objects.filter(pk=invocation_id).update(payload={})
    return _execute(invocation, payload)


def _missing_at_run(invocation: Invocation) -> InvocationRefused | None:
    """The refusal of a queued call whose tool still lacks a needed setting (the portal's own
    events are delivered whatever is missing)."""
    if invocation.caller == Invocation.Caller.EVENT:
        return None
    activation = (Activation.objects.select_related("team", "plugin", "version")
                  .filter(team_id=invocation.team_id, plugin_id=invocation.plugin_id,
                          version_id=invocation.version_id, status=Activation.Status.ACTIVE)
                  .first())
    missing = missing_settings(activation) if activation is not None else []
    return settings_missing_refusal(activation, missing) if activation and missing else None


def _schedule_still_owned(schedule: Schedule) -> bool:
    """Queued before its owner left: checked again when it runs, and paused if not."""
    return schedule_still_owned(schedule)


def invocation_call(*, activation: Activation, token_id: int | None, command: str,
                    payload: Any, user_id: int | None = None,
                    via: str | None = None) -> Invocation:
    """Call now, for the HTTP API with its token (`token_id`), or for `manage.py tool_call`
    as the member `user_id` (token None: logged as that person's call); `via` names another
    caller kind with a token (Invocation.Caller.MCP: an assistant). InvocationRefused before
    anything runs. The payload is not stored: the log keeps its size.

    Its caller waits for the answer, so the log's row is written once, when the call ends
    (dated when it began): an `activation` read with `tools.selectors.tool_for_call` and that
    one write are all the call asks of the database (docs/tools.md, "Throughput")."""
    invocation_check(activation=activation, command=command, payload=payload)
    by_token = token_id is not None
    caller = via or (Invocation.Caller.TOKEN if by_token else Invocation.Caller.USER)
    invocation = Invocation(
        team_id=activation.team_id, plugin_id=activation.plugin_id,
        version_id=activation.version_id, command=command, caller=caller, token_id=token_id,
        user_id=None if by_token else user_id, status=Invocation.Status.RUNNING,
        input_bytes=json_size(payload), created_at=timezone.now())
    invocation.version = activation.version
    invocation.team, invocation.plugin = activation.team, activation.plugin
    return _execute(invocation, payload, activation)


def _execute(invocation: Invocation, payload: dict[str, object],
             activation: Activation | None = None) -> Invocation:
    """Run the call. `activation`: the one in force, read by the caller a moment ago; read
    with `tools.selectors.tool_for_call`, it also says whether the version is disabled and
    what the tool stores, and nothing more is asked of the database before the call."""
    fresh = activation is not None and hasattr(activation, "blocked")
    refusal = None if fresh else _refusal_at_call_time(invocation)
    if refusal:
        return _finish(invocation, status=Invocation.Status.REFUSED, error=refusal[1],
                       error_kind=refusal[0])
    version = invocation.version
    stored = _stored(invocation, activation if fresh else None)
    event = invocation.caller == Invocation.Caller.EVENT
    try:
        outcome = call_as_team(
            files=version.files, manifest=manifest_of(version),
            command=None if event else invocation.command,
            event=invocation.command if event else None, payload=payload,
            team=_team_settings(invocation, activation if fresh else None), storage=stored,
            internal_hosts=settings.TOOLS_INTERNAL_HOSTS, warm=warm_key(invocation, activation))
    except ValueError as exc:  # a malformed call (a bad entry): nothing of the plugin ran
        logger.exception("invocation %s could not be made", invocation.pk)
        return _finish(invocation, status=Invocation.Status.FAILED, error_kind="bad_call",
                       error=f"The plugin could not be called: {exc}")
    if outcome.storage is not None:
        _storage_save(invocation, outcome.storage)
    return _finish_outcome(invocation, outcome)


def _stored(invocation: Invocation, activation: Activation | None) -> dict[str, object]:
    """What the tool keeps between calls (api.storage), as read with `activation`, or now."""
    if activation is not None:
        read = getattr(activation, "stored", None)
        return read if isinstance(read, dict) else {}
    row = ToolStorage.objects.filter(team_id=invocation.team_id,
                                     plugin_id=invocation.plugin_id).first()
    return row.data if row is not None else {}


def _team_settings(invocation: Invocation, activation: Activation | None) -> TeamSettings:
    """What the team gives this call: its settings (secrets unsealed: the host's api.http
    fills them in, only on requests to the hosts the reviewed plugin.toml declares and the
    addresses a team admin approved for the activation, tools/services/addresses.py) and the
    Settings page a refusal names for a secret with no value yet. `activation`: read with
    tools.selectors.tool_for_call a moment ago, with the settings."""
    version = invocation.version
    values, secret_names = settings_for_call(
        team=invocation.team_id, plugin=invocation.plugin_id, version=version,
        entered=getattr(activation, "entered_settings", None))
    approved, note = approved_hosts_for_call(team_id=invocation.team_id,
                                             plugin_id=invocation.plugin_id,
                                             version=version, values=values)
    page = reverse("tools:settings", args=[invocation.team.slug,
                                           invocation.plugin.normalized_name])
    return TeamSettings(values=values, secret_names=tuple(secret_names), settings_url=page,
                        approved=approved, address_note=note)


def _refusal_at_call_time(invocation: Invocation) -> tuple[str, str] | None:
    # Checked just before the sandbox starts: a kill switch thrown a moment ago counts.
    blocked = VersionBlock.objects.filter(version_id=invocation.version_id)
    if invocation.caller != Invocation.Caller.EVENT:
        # one query for both: the activation in force, and whether its version is disabled
        in_use = (Activation.objects.filter(
            team_id=invocation.team_id, plugin_id=invocation.plugin_id,
            version_id=invocation.version_id, status=Activation.Status.ACTIVE)
            .annotate(blocked=Exists(blocked)).values_list("blocked", flat=True).first())
        if in_use is not None:
            return ("disabled", DISABLED) if in_use else None
    if blocked.exists():
        return "disabled", DISABLED
    # "deactivated" goes to a version no longer in use, by design
    return None if invocation.caller == Invocation.Caller.EVENT else ("not_in_use", NOT_IN_USE)


def _storage_save(invocation: Invocation, data: dict[str, object]) -> None:
    # Two calls of the same tool at once: the one that finishes last wins (documented).
    ToolStorage.objects.update_or_create(
        team_id=invocation.team_id, plugin_id=invocation.plugin_id,
        defaults={"data": data, "size": json_size(data)})


def _finish_outcome(invocation: Invocation, outcome: CallOutcome) -> Invocation:
    output, size = outcome.output, json_size(outcome.output) if outcome.ok else 0
    # A token's caller (the API, an assistant) has its answer: the log keeps only its size.
    by_token = invocation.caller in (Invocation.Caller.TOKEN, Invocation.Caller.MCP)
    keep = not by_token and size <= OUTPUT_KEEP_BYTES
    invocation.output = output  # the API's answer, whether or not the log keeps it
    return _finish(invocation, status=Invocation.Status.OK if outcome.ok
                   else Invocation.Status.FAILED, error=outcome.error,
                   error_kind=outcome.error_kind, output=output if keep else None,
                   output_text=_in_order(output) if keep and outcome.ok else "",
                   output_cut=outcome.ok and not keep and not by_token,
                   output_bytes=size, duration_ms=outcome.duration_ms,
                   plugin_ms=outcome.plugin_ms, log_lines=outcome.log_lines,
                   http_requests=outcome.http_requests)


def _in_order(output: Any) -> str:
    """The output as JSON text, its keys in the plugin's order (Invocation.output_in_order)."""
    return "" if output is None else json.dumps(output, ensure_ascii=False)


def _finish(invocation: Invocation, *, status: str, **fields: Any) -> Invocation:
    answer = invocation.output
    fields.setdefault("output", None)
    fields.setdefault("output_text", "")
    written = {"status": status, "finished_at": timezone.now(), **fields}
    try:
        _write_alone(invocation, written)
    except (DataError, ValueError):
        # Something PostgreSQL refuses got past the runtime's cleaning (storable.py): the
        # call still ends, as a failure that says so, rather than "running" for ever.
        logger.exception("invocation %s (%s): its outcome could not be saved",
                         invocation.pk or "not written yet", invocation.command)
        status = Invocation.Status.FAILED
        # Everything the outcome brought is left out, since a row not written yet would
        # carry it into its INSERT again.
        written = {"status": status, "finished_at": written["finished_at"], "output": None,
                   "output_text": "", "log_lines": [], "http_requests": [],
                   "error_kind": "bad_output",
                   "error": "The plugin's answer could not be saved (it holds text the"
                            " database cannot keep)."}
        _write_alone(invocation, written)
    for name, value in written.items():  # as saved: one query less than reading it back
        setattr(invocation, name, value)
    if status == Invocation.Status.OK:
        invocation.output = answer if answer is not None else invocation.output
    if invocation.schedule_id is not None:
        _schedule_outcome(invocation)
    return invocation


def _write_alone(invocation: Invocation, written: dict[str, object]) -> None:
    """The outcome in one statement (the row's INSERT for a call not yet written, else an
    UPDATE), which, refused, leaves the connection usable: in autocommit the statement is its
    own transaction; inside a transaction, a savepoint keeps the rest."""
    def write() -> None:
        if invocation.pk is None:
            for name, value in written.items():
                setattr(invocation, name, value)
            invocation.save(force_insert=True)
        else:
            Invocation.objects.filter(pk=invocation.pk).update(**written)
    if transaction.get_connection().in_atomic_block:
        with transaction.atomic():
            write()
    else:
        write()


def _schedule_event(invocation: Invocation) -> None:
    """The "schedule" event, delivered before the scheduled command runs (same worker)."""
    schedule = invocation.schedule
    if schedule is None:
        return
    event = Invocation.objects.create(
        team_id=invocation.team_id, plugin_id=invocation.plugin_id,
        version_id=invocation.version_id, command="schedule", caller=Invocation.Caller.EVENT,
        status=Invocation.Status.RUNNING,
        input_bytes=json_size({"schedule": schedule.name, "command": schedule.command}))
    event.version = invocation.version
    _execute(event, {"schedule": schedule.name, "command": schedule.command})


def _schedule_outcome(invocation: Invocation) -> None:
    """A schedule's owner hears about a failure once, until it works again."""
    schedule_outcome_tell(invocation)


def http_status(invocation: Invocation) -> int:
    """What an API client is answered for a finished call."""
    if invocation.status == Invocation.Status.OK:
        return 200
    return HTTP_STATUS.get(invocation.error_kind, 500)


# Far longer than a call may take (INVOKE_LIMITS.timeout_s, plus a busy queue's start).
STALLED_AFTER = timedelta(minutes=10)
WORKER_LOST = ("The worker running this call stopped before it finished; nothing was kept. "
               "Run it again.")


def invocations_prune(*, now: Any = None) -> list[int]:
    """Delete log entries older than TOOLS_LOG_RETENTION_DAYS (the slow watchdog sweep calls
    it about once a minute, in batches, so a large backlog never holds a long lock), and close
    calls a dead worker left running, so nobody waits on them for ever."""
    now = now or timezone.now()
    durable.stalled_sweep(
        Invocation.objects.filter(status=Invocation.Status.RUNNING),
        lambda stale: bool(stale.guard.update(
            status=Invocation.Status.FAILED, error_kind="worker_lost", finished_at=now,
            error=WORKER_LOST)),
        since="created_at", older_than_s=STALLED_AFTER.total_seconds(), now=now)
    cutoff = now - timedelta(days=settings.TOOLS_LOG_RETENTION_DAYS)
    old = list(Invocation.objects.filter(created_at__lt=cutoff)
               .exclude(status__in=[Invocation.Status.PENDING, Invocation.Status.RUNNING])
               .values_list("pk", flat=True)[:5000])
    Invocation.objects.filter(pk__in=old).delete()
    return []
