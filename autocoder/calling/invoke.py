"""One invocation of an activated plugin, in the sandbox, with the host API.

The portal (the form, the HTTP API, schedules, events) calls `call_plugin` with the reviewed
files of a plugin version, the team's settings (secrets already unsealed) and the team's
storage as loaded; it gets a `CallOutcome` back and saves `outcome.storage` when it is not
None. Inside the sandbox `host_runner.py` imports the plugin, builds its `api`, calls
`on_initialize(api)` (when the plugin has it), then `on_command(name, payload)` or
`on_event(event, data)`; the plugin's `api.http` requests reach the caller's `http` handler
over the call's channel while it runs. See docs/plugins.md, "Host API".

Nothing the plugin hands back is trusted: its answer, its storage and its log lines are
checked again here (JSON, types, sizes, depth), the values of secret settings are blanked out
of every text the outcome carries, and so are the NUL characters and lone surrogates that
PostgreSQL would refuse to save (storable.py).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import json
import marshal
import re
import sys
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict, cast

from autocoder import sandbox
from autocoder.calling.http_records import HttpRecord
from autocoder.runtime import runtime_dir
from autocoder.runtime.storable import storable_json, storable_text
from autocoder.sandbox import SandboxError
from autocoder.sandbox.channel import Channel, inside_path
from autocoder.sandbox.runner import default_backend
from autocoder.sandbox.warm import WarmKey

# Events the portal delivers to on_event(event, data); docs/plugins.md lists their data.
EVENTS = ("activated", "deactivated", "settings_changed", "schedule")
ERROR_KINDS = ("plugin_error", "timeout", "cpu_limit", "memory_limit", "output_too_large",
               "storage_too_large", "bad_output", "sandbox_unavailable", "payload_too_large")
# What the runner inside may report (the others are the host's to find): a plugin that
# rewrites its answer cannot make its failure look like the installation's.
RUNNER_ERROR_KINDS = ("plugin_error", "storage_too_large", "bad_output", "output_too_large")
REDACTED = "[secret]"
# Why a plugin that gave no answer was stopped, in words (the sandbox's killed_reason).
STOP_REASONS = {"output_limit": "it printed far too much",
                "workdir_full": "it filled its working space",
                "file_size_limit": "it wrote a file larger than allowed",
                "signal:SIGSEGV": "it crashed",
                "signal:SIGKILL": "it was killed"}
ENTRY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*")

RUNNER = Path(__file__).with_name("host_runner.py").read_text(encoding="utf-8")
# api.http's client, imported by the runner at its first use (plugin_http.py)
HTTP_CLIENT = Path(__file__).with_name("plugin_http.py").read_text(encoding="utf-8")
HTTP_CLIENT_PATH = "_autocoder_http.py"
RUNNER_PATH = ".autocoder/host.py"
RUNNER_PYC_PATH = ".autocoder/host.pyc"
WORKDIR = "/workdir"  # where the bwrap sandbox puts the job's files
CALL_PATH = ".autocoder/call.json"
RESULT_PATH = ".autocoder/result.json"
# api.http's requests, carried out by the host while the call runs (sandbox/channel.py)
HttpHandler = Callable[[dict[str, Any]], dict[str, Any]]
Records = list[HttpRecord] | Callable[[], list[HttpRecord]]


@dataclass(frozen=True)
class InvokeLimits:
    """What one invocation may use. Shown to admins (`described()`)."""

    timeout_s: float = 15  # wall time of the whole call
    cpu_s: int = 10  # CPU seconds
    memory_mb: int = 512  # all of the plugin's processes together
    output_kb: int = 256  # the command's answer, as JSON
    storage_kb: int = 64  # the whole api.storage, as JSON
    payload_kb: int = 1024  # the command's payload (or the event's data), as JSON
    log_lines: int = 100  # api.log lines kept per call
    log_line_chars: int = 1000  # characters kept of each line
    pids: int = 32  # processes and threads

    def __post_init__(self) -> None:
        for name in ("timeout_s", "cpu_s", "memory_mb", "output_kb", "storage_kb", "payload_kb",
                     "log_lines", "log_line_chars", "pids"):
            if getattr(self, name) <= 0:
                raise ValueError(f"InvokeLimits.{name} must be positive")

    def sandbox_limits(self) -> sandbox.Limits:
        # workdir_mb stays the sandbox's default so that a worker's prepared sandbox fits
        # both its generation runs and its invocations (standby.py).
        log_kb = self.log_lines * (self.log_line_chars * 4 + 16) // 1024
        return sandbox.Limits(timeout_s=self.timeout_s, memory_mb=self.memory_mb, pids=self.pids,
                              cpu_s=self.cpu_s, output_kb=64,
                              collect_kb=self.output_kb + self.storage_kb + log_kb + 64)

    def described(self) -> list[tuple[str, str]]:
        """The limits in words, for the admin's pages."""
        from autocoder.calling.http_gate import HttpPolicy  # httpx: only where it is shown

        http = HttpPolicy(hosts=(), internal_hosts=frozenset())
        return [
            ("Time", f"{self.timeout_s:g} seconds per call"),
            ("CPU", f"{self.cpu_s} seconds of processor time per call"),
            ("Memory", f"{self.memory_mb} MB"),
            ("Input", f"{self.payload_kb} KB of JSON per call"),
            ("Answer", f"{self.output_kb} KB of JSON per call"),
            ("Storage", f"{self.storage_kb} KB of JSON per team"),
            ("Log", f"{self.log_lines} lines of at most {self.log_line_chars} characters"
                    " per call"),
            # Not "Network: none": it would read as a contradiction of "sends data to ..."
            ("Requests to other services", f"at most {http.max_requests} per call, made by the"
                                           " portal (api.http) and only to the hosts it"
                                           " declares or a team admin approved; each answer"
                                           " up to"
                                           f" {http.max_response_bytes // 2**20} MB and"
                                           f" {http.timeout_s:g} seconds"),
        ]


INVOKE_LIMITS = InvokeLimits()


@dataclass(frozen=True)
class PluginCall:
    files: Mapping[str, str]  # the version's reviewed files (PluginVersion.files)
    entry: str  # "pkg.plugin:Plugin", from plugin.toml
    command: str | None  # None when delivering an event
    payload: Mapping[str, Any]  # the command's payload, or the event's data
    event: str | None = None  # one of EVENTS, delivered to on_event
    settings: Mapping[str, str] = field(default_factory=dict)  # secrets unsealed
    storage: Mapping[str, Any] = field(default_factory=dict)  # as the caller loaded it
    secret_settings: Collection[str] = ()  # names in `settings` whose values are secret
    # a warm sandbox of this team's version may run it (sandbox/warm.py); None: one of its own
    warm: WarmKey | None = None


@dataclass(frozen=True)
class CallOutcome:
    ok: bool
    output: Any  # on_command's JSON answer (None for events and failures)
    error: str  # plain words for a person ("" when ok)
    error_kind: str  # "" or one of ERROR_KINDS
    storage: dict[str, object] | None  # the store to save; None: keep the old one
    log_lines: list[str]  # api.log(...) lines, capped
    duration_ms: int  # wall time of the whole call
    plugin_ms: int  # inside on_initialize + on_command/on_event
    detail: str = ""  # for the plugin's author: the end of its traceback, its stderr
    http_requests: list[HttpRecord] = field(default_factory=list)  # api.http's records

    @property
    def overhead_ms(self) -> int:
        return max(0, self.duration_ms - self.plugin_ms)


def call_plugin(call: PluginCall, limits: InvokeLimits = INVOKE_LIMITS, *,
                backend: str | None = None, http: HttpHandler | None = None,
                records: Records | None = None) -> CallOutcome:
    """Run one command (or deliver one event) in the sandbox.

    `http` carries out the plugin's `api.http` requests while the call runs (the message
    format is in host_runner.py; autocoder.calling.http_gate's HttpGate(...).perform is
    one); None: `api.http` answers that the plugin declared no hosts. It is called in the
    channel's thread (sandbox/channel.py), one request at a time, each request's "timeout" cut
    to what is left of the call's time. `records` (a list, or a callable returning one) is
    read when the call has ended, into `outcome.http_requests` (secret values blanked).

    Raises ValueError only for a malformed `call` (the caller's mistake: a bad entry, both or
    neither of command and event, values that are not JSON); whatever the plugin or the
    sandbox does is in the outcome.
    """
    outcome = _call(call, limits, backend, http)
    if records is None:
        return outcome
    found = records() if callable(records) else records
    secrets = _secret_values(call)
    return dataclasses.replace(outcome, http_requests=[
        cast(HttpRecord, redact_json(dict(record), secrets)) for record in found])


def _call(call: PluginCall, limits: InvokeLimits, backend: str | None,
          http: HttpHandler | None) -> CallOutcome:
    started = time.monotonic()
    chosen = backend or default_backend()
    # bwrap: the runtime's own interpreter, started without `site` (faster) and told where
    # its libraries are; docker: the image's Python is the runtime, `site` finds them.
    site = _site_packages(str(runtime_dir())) if chosen == "bwrap" else ""
    request = _request(call, limits, site, None if http is None else inside_path(chosen))
    payload_bytes = len(request["payload_text"].encode())
    if payload_bytes > limits.payload_kb * 1024:
        return _outcome(call, started, ok=False, error_kind="payload_too_large",
                        error=f"The input is {_kb(payload_bytes)} of JSON;"
                              f" the limit is {limits.payload_kb} KB.")
    files: dict[str, str | bytes] = {
        path: text for path, text in call.files.items()
        if not path.startswith(("tests/", ".autocoder/"))}
    runner = RUNNER_PATH
    files[HTTP_CLIENT_PATH] = HTTP_CLIENT
    if site and _same_python(str(runtime_dir())):
        files.update(_bytecode({**call.files, HTTP_CLIENT_PATH: HTTP_CLIENT}))
        files[RUNNER_PYC_PATH] = _runner_pyc()
        runner = RUNNER_PYC_PATH
    else:
        files[RUNNER_PATH] = RUNNER
    channel = None if http is None else Channel(_within_call(http, started + limits.timeout_s))
    try:
        result = _warm_run(call, files, site, runner, request["text"], limits, channel)
        if result is None:
            files[CALL_PATH] = request["text"]
            # bwrap: the prepared sandbox's interpreter runs the runner itself (in_process)
            result = sandbox.run(files, ["python", "-I", *(["-S"] if site else []), "-B",
                                         runner], limits.sandbox_limits(), backend=chosen,
                                 collect=[RESULT_PATH], in_process=bool(site), channel=channel)
    except SandboxError as exc:
        return _outcome(call, started, ok=False, error_kind="sandbox_unavailable",
                        error=f"The plugin could not be run: the sandbox is not working ({exc}).")
    return _read_result(call, limits, result, started)


def _warm_run(call: PluginCall, files: dict[str, str | bytes], site: str, runner: str,
              text: str, limits: InvokeLimits, channel: Channel | None) -> sandbox.RunResult | None:
    """The call in a warm sandbox of its team's version (bwrap with the runtime's own
    interpreter only); None: it runs in a sandbox of its own (docs/sandbox.md)."""
    if call.warm is None or not site:
        return None
    from autocoder.sandbox import warm_pool

    return warm_pool.run(call.warm, files, entry=call.entry, site=site, runner=runner,
                         call_text=text, limits=limits.sandbox_limits(), channel=channel)


def _within_call(http: HttpHandler, deadline: float) -> HttpHandler:
    """`http`, each request's timeout cut to what is left of the call's time."""

    def serve(request: dict[str, Any]) -> dict[str, Any]:
        left = deadline - time.monotonic()
        if left <= 0.05:
            return {"ok": False, "error": "the call's time is up", "error_kind": "timeout"}
        asked = request.get("timeout")
        if not isinstance(asked, int | float) or isinstance(asked, bool) or asked <= 0 \
                or asked > left:
            request["timeout"] = round(left, 3)
        return http(request)

    return serve


def _request(call: PluginCall, limits: InvokeLimits, site: str,
             channel: str | None = None) -> dict[str, str]:
    if not isinstance(call.entry, str) or not ENTRY.fullmatch(call.entry):
        raise ValueError(f"entry must look like 'package.plugin:Plugin' (got {call.entry!r})")
    if (call.command is None) == (call.event is None):
        raise ValueError("a call has either a command or an event, not both or neither")
    if call.event is not None and call.event not in EVENTS:
        raise ValueError(f"unknown event {call.event!r} (expected one of {', '.join(EVENTS)})")
    if not isinstance(call.payload, Mapping):
        raise ValueError("payload must be a JSON object")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in call.settings.items()):
        raise ValueError("settings must map names to strings")
    if not all(isinstance(k, str) for k in call.storage):
        raise ValueError("storage keys must be strings")
    try:
        payload = json.dumps(dict(call.payload), allow_nan=False, ensure_ascii=False)
        rest = json.dumps({
            "entry": call.entry, "command": call.command, "event": call.event,
            # A secret's value stays on the host: the plugin names it (api.secret) and the
            # host fills it in on a request to a declared host (http_gate.py).
            "settings": {name: value for name, value in call.settings.items()
                         if name not in call.secret_settings},
            "secret_names": sorted(call.secret_settings),
            "storage": dict(call.storage), "site": site,
            "storage_max_bytes": limits.storage_kb * 1024,
            "output_max_bytes": limits.output_kb * 1024,
            "log_max_lines": limits.log_lines, "log_max_chars": limits.log_line_chars,
            "channel": channel,
        }, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"the payload and the storage must be JSON: {exc}") from None
    # the payload, the largest part, is serialised once
    return {"text": f'{rest[:-1]}, "payload": {payload}}}', "payload_text": payload}


@functools.cache
def _site_packages(runtime: str) -> str:
    """The runtime's libraries, for its interpreter started with -S (no `site`: faster)."""
    found = sorted((Path(runtime) / "lib").glob("python3*/site-packages"))
    return str(found[-1]) if found else ""


# -- compiled once, not at every call -------------------------------------------------------
# Compiling is the larger part of starting a plugin (about 6 ms for 500 lines, 4 ms for the
# runner) and the sandbox's workdir is new at every call. So the runner and the plugin's
# modules are compiled here, once per content, and shipped as unchecked hash-based .pyc
# files next to their sources (PEP 552), which the sandbox's interpreter loads as they are.
# Only when that interpreter is this Python's version: the bytecode format is per version.


@functools.cache
def _same_python(runtime: str) -> bool:
    try:
        config = (Path(runtime) / "pyvenv.cfg").read_text()
    except OSError:
        return False
    found = re.search(r"^version(?:_info)?\s*=\s*(\d+)\.(\d+)", config, re.M)
    return found is not None and (int(found[1]), int(found[2])) == sys.version_info[:2]


def _pyc(source: str, path: str) -> bytes:
    code = compile(source, f"{WORKDIR}/{path}", "exec", dont_inherit=True)
    flags = (0b01).to_bytes(4, "little")  # hash-based, source not checked
    return (importlib.util.MAGIC_NUMBER + flags
            + importlib.util.source_hash(source.encode("utf-8")) + marshal.dumps(code))


@functools.cache
def _runner_pyc() -> bytes:
    return _pyc(RUNNER, RUNNER_PATH)


@functools.lru_cache(maxsize=512)
def _module_pyc(path: str, source: str) -> tuple[str, bytes] | None:
    directory, _, name = path.rpartition("/")
    try:
        compiled = _pyc(source, path)
    except (SyntaxError, ValueError):  # left to the sandbox, which reports it as usual
        return None
    cached = f"{directory}/__pycache__/" if directory else "__pycache__/"
    return f"{cached}{name[:-3]}.{sys.implementation.cache_tag}.pyc", compiled


def _bytecode(files: Mapping[str, str]) -> dict[str, str | bytes]:
    found: dict[str, str | bytes] = {}
    for path, source in files.items():
        if (path.endswith(".py") and isinstance(source, str)
                and not path.startswith(("tests/", ".autocoder/"))):
            compiled = _module_pyc(path, source)
            if compiled is not None:
                found[compiled[0]] = compiled[1]
    return found


def _read_result(call: PluginCall, limits: InvokeLimits, result: sandbox.RunResult,
                 started: float) -> CallOutcome:
    stderr = (result.stderr or "")[-2000:]
    if result.timed_out:
        return _outcome(call, started, ok=False, error_kind="timeout", detail=stderr,
                        error=f"The plugin took longer than {_seconds(limits.timeout_s)} and"
                              " was stopped.")
    if result.killed_reason == "cpu_limit":
        return _outcome(call, started, ok=False, error_kind="cpu_limit", detail=stderr,
                        error=f"The plugin used all of its {_seconds(limits.cpu_s)} of"
                              " processor time and was stopped.")
    if result.oom:
        return _outcome(call, started, ok=False, error_kind="memory_limit", detail=stderr,
                        error=f"The plugin needed more than {limits.memory_mb} MB of memory"
                              " and was stopped.")
    raw = result.files.get(RESULT_PATH)
    if raw is None:
        if any(name.startswith(RESULT_PATH) for name in result.files_omitted):
            return _outcome(call, started, ok=False, error_kind="output_too_large",
                            error=f"The plugin's answer is larger than {limits.output_kb} KB,"
                                  " the limit for one answer.")
        why = STOP_REASONS.get(result.killed_reason or "", result.killed_reason or
                               f"exit code {result.exit_code}")
        return _outcome(call, started, ok=False, error_kind="plugin_error", detail=stderr,
                        error=f"The plugin stopped without giving an answer ({why}).")
    try:
        answer = json.loads(raw)
        if not isinstance(answer, dict):
            raise ValueError("not an object")
        return _checked(call, limits, answer, started, stderr)
    except (ValueError, RecursionError):  # a forged answer nested thousands deep, say
        return _outcome(call, started, ok=False, error_kind="bad_output", detail=stderr,
                        error="The plugin's answer could not be read.")


class _Common(TypedDict):
    """What every outcome of a call that ran carries: its log lines and its time."""

    log_lines: list[str]
    plugin_ms: int


def _checked(call: PluginCall, limits: InvokeLimits, answer: dict[str, object], started: float,
             stderr: str) -> CallOutcome:
    """The runner's answer, trusting none of it (the plugin ran in the same process)."""
    logs = answer.get("log")
    lines = [str(line)[:limits.log_line_chars + 3] for line in logs[:limits.log_lines + 1]] \
        if isinstance(logs, list) else []
    plugin_ms = answer.get("plugin_ms")
    common: _Common = {
        "log_lines": lines,
        "plugin_ms": int(plugin_ms) if isinstance(plugin_ms, int | float) and plugin_ms >= 0
        else 0}
    kind = answer.get("error_kind")
    if answer.get("ok") is not True:
        kind = kind if kind in RUNNER_ERROR_KINDS else "plugin_error"
        error = str(answer.get("error") or "")[:3000]
        if kind == "output_too_large":
            error = (f"The plugin's answer is {_kb(answer.get('size'))} of JSON; the limit for"
                     f" one answer is {limits.output_kb} KB.")
        error = error or "The plugin failed without saying why."
        if kind == "storage_too_large":
            error += ". Nothing it changed in its storage was kept."
        detail = str(answer.get("detail") or "")[-4000:] or stderr
        return _outcome(call, started, ok=False, error_kind=kind, error=error, detail=detail,
                        **common)
    storage = answer.get("storage")
    saved: dict[str, object] | None = None
    if answer.get("storage_changed") is True and storage is not None:
        if not isinstance(storage, dict):
            return _outcome(call, started, ok=False, error_kind="bad_output",
                            error="The plugin's storage could not be read.", **common)
        try:
            storage = storable_json(storage)
        except ValueError as exc:
            return _outcome(call, started, ok=False, error_kind="bad_output",
                            error=f"The plugin's storage could not be kept: {exc}. Nothing it"
                                  " changed in its storage was kept.", **common)
        size = storage_size(storage)
        if size > limits.storage_kb * 1024:
            return _outcome(call, started, ok=False, error_kind="storage_too_large",
                            error=f"The plugin tried to keep {_kb(size)} in its storage; the"
                                  f" limit is {limits.storage_kb} KB. Nothing it changed in"
                                  " its storage was kept.", **common)
        if storage != dict(call.storage):
            saved = storage
    try:
        output = storable_json(answer.get("output") if call.event is None else None)
    except ValueError as exc:
        return _outcome(call, started, ok=False, error_kind="bad_output",
                        error=f"The plugin's answer could not be kept: {exc}.", **common)
    size = len(json.dumps(output, ensure_ascii=False).encode())
    if size > limits.output_kb * 1024:
        return _outcome(call, started, ok=False, error_kind="output_too_large",
                        error=f"The plugin's answer is {_kb(size)} of JSON; the limit for one"
                              f" answer is {limits.output_kb} KB.", **common)
    return _outcome(call, started, ok=True, output=output, storage=saved, **common)


def storage_size(storage: Mapping[str, Any]) -> int:
    """Bytes of the store as JSON, as the limit counts them."""
    return len(json.dumps(storage, separators=(",", ":"), ensure_ascii=False).encode())


def _seconds(value: float) -> str:
    return f"{value:g} second{'' if value == 1 else 's'}"


def _kb(size: object) -> str:
    if not isinstance(size, int):
        return "too much"
    return f"{size / 1024:.0f} KB" if size >= 1024 else f"{size} bytes"


def _outcome(call: PluginCall, started: float, *, ok: bool, error_kind: str = "",
             error: str = "", output: Any = None, storage: dict[str, object] | None = None,
             log_lines: list[str] | None = None, plugin_ms: int = 0,
             detail: str = "") -> CallOutcome:
    secrets = _secret_values(call)
    return CallOutcome(
        ok=ok, output=redact_json(output, secrets), error=storable_text(redact(error, secrets)),
        error_kind=error_kind, storage=storage,
        log_lines=[storable_text(redact(line, secrets)) for line in log_lines or []],
        duration_ms=int((time.monotonic() - started) * 1000), plugin_ms=plugin_ms,
        detail=storable_text(redact(detail, secrets)))


def _secret_values(call: PluginCall) -> list[str]:
    return sorted({call.settings[name] for name in call.secret_settings
                   if call.settings.get(name)}, key=len, reverse=True)


def redact(text: str, secrets: list[str]) -> str:
    """`text` with every secret value (and its JSON-escaped form) replaced by [secret]."""
    for secret in secrets:
        text = text.replace(secret, REDACTED)
        escaped = json.dumps(secret)[1:-1]
        if escaped != secret:
            text = text.replace(escaped, REDACTED)
    return text


def redact_json(value: Any, secrets: list[str]) -> Any:
    if not secrets:
        return value
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, list):
        return [redact_json(item, secrets) for item in value]
    if isinstance(value, dict):
        return {redact(key, secrets): redact_json(item, secrets) for key, item in value.items()}
    return value
