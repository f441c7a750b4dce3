"""Runs INSIDE the sandbox, on the plugin runtime: one invocation of one plugin.

invoke.py ships this file into the job's workdir, compiled (`.autocoder/host.pyc`) when the
runtime is the portal's Python version, and runs it as `python -I -S -B` would: on bwrap in
the prepared sandbox's own interpreter (`sandbox.run(..., in_process=True)`); on Docker as
`python -I -B .autocoder/host.py`, `site` finding the image's libraries. It must stay
standalone (the standard library only, nothing of ours is visible inside) and small: its
start is part of every invocation's overhead.

Protocol (files in the workdir, as the sandbox passes files in and collects them out):
* in, `.autocoder/call.json`: {"entry", "command", "event", "payload", "settings" (no secret's
  value: "secret_names" names those), "storage",
  "site", "storage_max_bytes", "output_max_bytes", "log_max_lines", "log_max_chars",
  "channel"}; read, then deleted before the plugin is imported;
* out, `.autocoder/result.json`: {"ok", "output", "error", "error_kind", "detail", "storage",
  "storage_changed", "log", "plugin_ms"}.
* while the call runs, `api.http` sends its requests to the host over the run's channel
  (`call["channel"]`, a Unix socket's path; None when the caller gave no handler): its client
  is plugin_http.py, shipped beside this file as `_autocoder_http.py` and imported at the
  first use of `api.http`.

The plugin runs in this process, so it could rewrite the result: the host trusts nothing in
it and checks every part again (types, sizes). What the sandbox protects is the host.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False  # typing costs milliseconds to import; mypy reads this as usual
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any, TypedDict

    from autocoder.calling.plugin_http import Http, SecretRef

    class Answer(TypedDict, total=False):
        """What this file writes to RESULT (invoke.py's `_checked` reads it, trusting none
        of it); `output` and `storage` are spliced in as text."""

        ok: bool
        output: object
        error_kind: str
        error: str
        detail: str
        plugin_ms: float
        size: int
        storage_changed: bool
        log: list[str]

CALL = ".autocoder/call.json"
RESULT = ".autocoder/result.json"


# JSON without the json package: importing it pulls in re and enum, about 10 ms of every
# call's start. The C accelerator behind json (in every CPython) is used directly, with the
# settings of json.dumps(separators=(",", ":"), ensure_ascii=False, allow_nan=False) and of
# json.loads.
from _json import encode_basestring, make_encoder, make_scanner  # noqa: E402


def _not_json(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not allowed in JSON")


class _Scanning:
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_no_constant)


_scan = make_scanner(_Scanning())  # type: ignore[arg-type]


def _dumps(value: object) -> str:
    encode = make_encoder({}, _not_json, encode_basestring, None, ":", ",", False, False, False)
    return "".join(encode(value, 0))


def _loads(text: str) -> Any:
    try:
        value, end = _scan(text, 0)
    except StopIteration as exc:
        raise ValueError(f"not JSON (at character {exc.value})") from None
    if end != len(text):
        raise ValueError(f"not JSON (extra data at character {end})")
    return value


def _size(key: str, text: str) -> int:
    """Bytes one entry adds to the store's JSON ({"k":v} with a comma): exact, so the
    running total equals len(dumps(store)) - 1, as the host measures it."""
    return len(_dumps(key).encode()) + 2 + len(text.encode())


class StorageFull(ValueError):
    pass


class SecretSettingError(KeyError):
    """A secret setting's value never enters the sandbox (docs/plugins.md)."""

    def __str__(self) -> str:
        name = self.args[0]
        return (f"{name!r} is a secret setting: its value never enters the sandbox. Send it"
                f" with api.http, as auth=api.secret({name!r}) or a \"{{{name}}}\" header"
                " template (docs/plugins.md, \"Secrets in requests\")")


class Settings(dict):
    """Read-only: a plugin reads its settings, the team admin writes them. A secret setting
    is named but holds no value: reading it raises SecretSettingError."""

    def __init__(self, values: dict, secret_names: list) -> None:  # type: ignore[type-arg]
        super().__init__(values)
        self.secret_names = frozenset(secret_names)

    def __contains__(self, name: object) -> bool:
        return name in self.secret_names or super().__contains__(name)

    def __missing__(self, name: str) -> str:
        raise SecretSettingError(name) if name in self.secret_names else KeyError(name)

    def get(self, name: str, default: object = None) -> object:  # type: ignore[override]
        return self[name] if name in self.secret_names else super().get(name, default)

    def _refuse(self, *args: object, **kwargs: object) -> None:
        raise TypeError("api.settings is read-only; the team admin changes settings")

    __setitem__ = __delitem__ = __ior__ = _refuse  # type: ignore[assignment]
    clear = pop = popitem = setdefault = update = _refuse  # type: ignore[assignment]


class Storage:
    """The team's key-value store for this plugin: JSON values, a size limit for the whole.

    Values are kept as JSON text: get() returns a fresh copy, so changing what it returned
    changes nothing until set() is called with it."""

    def __init__(self, data: dict[str, object], max_bytes: int) -> None:
        self._text = {key: _dumps(value) for key, value in data.items()}
        self._total = 1 + sum(_size(k, t) for k, t in self._text.items())
        self._max = max_bytes
        self.changed = False

    def get(self, key: str, default: object = None) -> object:
        text = self._text.get(key)
        return default if text is None else _loads(text)

    def set(self, key: str, value: object) -> None:
        if not isinstance(key, str) or not key:
            raise TypeError("api.storage keys must be non-empty strings")
        try:
            text = _dumps(value)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"api.storage can only keep JSON values (text, numbers, true/false,"
                            f" null, lists and objects): {exc}") from None
        old = self._text.get(key)
        total = self._total + _size(key, text) - (0 if old is None else _size(key, old))
        if total > self._max and total > self._total:
            raise StorageFull(f"api.storage is full: keeping {key!r} would make it {total} bytes"
                              f" of JSON; the limit is {self._max} bytes")
        self._text[key], self._total, self.changed = text, total, True

    def delete(self, key: str) -> None:
        text = self._text.pop(key, None)
        if text is not None:
            self._total -= _size(key, text)
            self.changed = True

    def keys(self) -> list[str]:
        return list(self._text)

    def items(self) -> list[tuple[str, object]]:
        return [(key, self.get(key)) for key in self._text]

    def __getitem__(self, key: str) -> object:
        if key not in self._text:
            raise KeyError(key)
        return self.get(key)

    def __setitem__(self, key: str, value: object) -> None:
        self.set(key, value)

    def __delitem__(self, key: str) -> None:
        if key not in self._text:
            raise KeyError(key)
        self.delete(key)

    def __contains__(self, key: object) -> bool:
        return key in self._text

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._text))

    def __len__(self) -> int:
        return len(self._text)

    def dump(self) -> str:
        return "{" + ",".join(_dumps(k) + ":" + t
                              for k, t in self._text.items()) + "}"


class Api:
    """What on_initialize(api) receives (docs/plugins.md, "Host API")."""

    def __init__(self, settings: Settings, storage: Storage, max_lines: int,
                 max_chars: int, channel: str | None = None) -> None:
        self.settings = settings
        self.storage = storage
        self.lines: list[str] = []
        self.dropped = 0
        self._max_lines, self._max_chars = max_lines, max_chars
        self._channel = channel
        self._http: Http | None = None

    def log(self, message: object) -> None:
        if len(self.lines) >= self._max_lines:
            self.dropped += 1
            return
        text = str(message)
        if len(text) > self._max_chars:
            text = text[:self._max_chars] + "..."
        self.lines.append(text)

    @property
    def http(self) -> Http:
        """The host-mediated HTTP client (built at first use: most calls never need it)."""
        if self._http is None:
            from _autocoder_http import Http  # plugin_http.py, shipped beside this file

            self._http = Http(self._channel)
        return self._http

    def secret(self, name: str) -> SecretRef:
        """A reference to the secret setting `name`: the host fills in its value, only on
        the outgoing request; the plugin never holds it."""
        if not isinstance(name, str) or not name or "{" in name or "}" in name:
            raise TypeError("api.secret takes the name of a secret setting, e.g."
                            " api.secret(\"api_key\")")
        from _autocoder_http import SecretRef

        return SecretRef(name)


def _failure(kind: str, error: str, exc: BaseException | None = None) -> Answer:
    detail = ""
    if exc is not None:
        import traceback

        frames = traceback.format_exception(type(exc), exc, exc.__traceback__)
        # the host's own frames say nothing to the plugin's author
        detail = "".join(f for f in frames if '.autocoder/host.py"' not in f)[-4000:]
    return {"ok": False, "error_kind": kind, "error": error, "detail": detail, "plugin_ms": 0}


def _describe(exc: BaseException) -> str:
    message = str(exc)
    if isinstance(exc, ValueError) and message:
        return message
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _invoke(call: dict[str, Any], api: Api) -> Answer:
    module_name, _, class_name = call["entry"].partition(":")
    try:
        module = __import__(module_name, fromlist=[class_name])
        plugin = getattr(module, class_name)()
    except BaseException as exc:  # noqa: BLE001 (the plugin's own failure, reported)
        return _failure("plugin_error", f"The plugin could not be loaded: {_describe(exc)}", exc)
    started = time.perf_counter()
    answer: Answer = {}
    try:
        initialize = getattr(plugin, "on_initialize", None)
        if initialize is not None:
            initialize(api)
        if call["event"] is not None:
            handler = getattr(plugin, "on_event", None)
            if handler is not None:
                handler(call["event"], call["payload"])
            answer = {"ok": True, "output": None}
        else:
            answer = {"ok": True, "output": plugin.on_command(call["command"], call["payload"])}
    except StorageFull as exc:
        plugin_ms = (time.perf_counter() - started) * 1000
        answer = _failure("storage_too_large", str(exc), exc)
    except BaseException as exc:  # noqa: BLE001 (SystemExit too: the plugin may not exit)
        plugin_ms = (time.perf_counter() - started) * 1000
        answer = _failure("plugin_error", f"The plugin reported an error: {_describe(exc)}", exc)
    else:
        plugin_ms = (time.perf_counter() - started) * 1000
    answer["plugin_ms"] = plugin_ms
    return answer


def main() -> None:
    with open(CALL, encoding="utf-8") as stream:
        call = _loads(stream.read())
    os.unlink(CALL)
    sys.path[:0] = [os.getcwd(), call["site"]] if call["site"] else [os.getcwd()]
    storage = Storage(call["storage"], call["storage_max_bytes"])
    settings = Settings(call["settings"], call.get("secret_names", []))
    api = Api(settings, storage, call["log_max_lines"], call["log_max_chars"], call.get("channel"))
    answer = _invoke(call, api)
    output = "null"
    if answer["ok"]:
        try:
            output = _dumps(answer["output"])
        except (TypeError, ValueError, RecursionError) as exc:
            answer = {**_failure("bad_output", f"The plugin's answer is not JSON: {exc}"),
                      "plugin_ms": answer["plugin_ms"]}
        else:
            size = len(output.encode(errors="surrogatepass"))  # a lone surrogate: 3 bytes
            if size > call["output_max_bytes"]:
                answer = {**_failure("output_too_large", ""), "size": size,
                          "plugin_ms": answer["plugin_ms"]}
                output = "null"
    answer.pop("output", None)
    answer["storage_changed"] = storage.changed
    answer["log"] = api.lines + (
        [f"... {api.dropped} more log lines were not kept"] if api.dropped else [])
    # output and storage are spliced in as the text already measured
    text = _dumps(answer)[:-1] + ',"output":' + output + ',"storage":' + (
        storage.dump() if answer["ok"] and storage.changed else "null") + "}"
    # A lone surrogate (not UTF-8) in the plugin's words is written as its JSON escape
    # (\ud800), which means the same; the host replaces it before anything is saved.
    with open(RESULT, "w", encoding="utf-8", errors="backslashreplace") as stream:
        stream.write(text)


if __name__ == "__main__":  # imported by the plugins' test harness (sandbox/plugin_testing.py)
    main()
    # The answer is written: threads the plugin left running, atexit hooks and the
    # interpreter's own finalisation would only delay the call (a thread that never ends).
    for _stream in (sys.stdout, sys.stderr):
        try:
            _stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(0)
