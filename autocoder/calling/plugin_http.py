"""The plugin's side of `api.http`, INSIDE the sandbox: the client a plugin's `api.http` is
(docs/plugins.md, "Host API"), shipped next to the runner (host_runner.py) as
`_autocoder_http.py` and imported at the first request only, so a call that never uses it
pays nothing for it. The plugins' test harness (autocoder/sandbox/plugin_testing.py) builds
on the same classes. Standard library only, like the runner.

The channel is a Unix socket the host serves while the call runs (autocoder/sandbox/
channel.py): one JSON request, framed by its length (4 bytes, big-endian), one answer.
Request: {"method", "url", "params", "headers", "json"?, "data"?, "body_b64"?, "timeout"?,
"auth"?, "sign"?, "follow_redirects"?}; answer: {"ok": true, "status", "headers",
"body_b64", "url"} or {"ok": false, "error", "error_kind"}. The host's side of it is
autocoder/calling/http_gate.py.
"""

from __future__ import annotations

import json as _json
from typing import Any

NO_HOSTS = ("this plugin declared no hosts, so api.http cannot reach any: list the hosts it"
            " needs in plugin.toml, [permissions] hosts = [\"api.example.com\"]")
MAX_REQUEST_BYTES = 8 * 1024 * 1024


class HttpError(Exception):
    """A request that was refused or failed; str(error) is the host's sentence. `kind` is
    the host's error_kind ("status" from raise_for_status), `response` the answer if any."""

    def __init__(self, message: str, kind: str = "", response: Response | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.response = response


class SecretRef:
    """api.secret(NAME): `auth=` it (a bearer token), `auth=(user, it)` (basic), or put it
    (or the text "{NAME}") in a header or parameter value."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return "{" + self.name + "}"

    def __format__(self, spec: str) -> str:
        return str(self)

    def __repr__(self) -> str:
        return f"api.secret({self.name!r})"


class Headers(dict):  # type: ignore[type-arg]
    """Response headers; names are lower case, and looked up in any case."""

    def __getitem__(self, name: str) -> str:
        return dict.__getitem__(self, name.lower())

    def get(self, name: str, default: object = None) -> object:  # type: ignore[override]
        return dict.get(self, name.lower(), default)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and dict.__contains__(self, name.lower())


class Response:
    """The answer to one api.http request."""

    def __init__(self, answer: dict[str, Any]) -> None:
        from binascii import a2b_base64

        self.status: int = answer.get("status", 0)
        self.url: str = answer.get("url", "")
        raw = answer.get("headers") or {}
        pairs = raw.items() if isinstance(raw, dict) else raw
        self.headers = Headers((str(k).lower(), str(v)) for k, v in pairs)
        self.content: bytes = a2b_base64(answer.get("body_b64") or "")

    @property
    def ok(self) -> bool:
        return self.status < 400

    @property
    def text(self) -> str:
        charset = "utf-8"
        for part in str(self.headers.get("content-type", "")).split(";")[1:]:
            key, _, value = part.strip().partition("=")
            if key.lower() == "charset" and value:
                charset = value.strip('"')
        try:
            return self.content.decode(charset, "replace")
        except LookupError:
            return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        return _loads(self.text)

    def raise_for_status(self) -> None:
        if self.status >= 400:
            raise HttpError(f"{self.url} answered {self.status}", "status", self)

    def __repr__(self) -> str:
        return f"<Response [{self.status}]>"


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _fields(values: object, what: str, lists: bool) -> dict[str, Any]:
    if values is None:
        return {}
    pairs = values.items() if isinstance(values, dict) else values
    found: dict[str, Any] = {}
    try:
        for key, value in pairs:  # type: ignore[attr-defined]
            if value is None:
                continue
            if lists and isinstance(value, list | tuple):
                found[_text(key)] = [_text(item) for item in value]
            else:
                found[_text(key)] = _text(value)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be a dict (or a list of (name, value) pairs)") from None
    return found


def _auth(auth: object) -> dict[str, Any]:
    if isinstance(auth, SecretRef):
        return {"secret": auth.name}
    if (isinstance(auth, tuple | list) and len(auth) == 2 and isinstance(auth[0], str)
            and isinstance(auth[1], SecretRef)):
        return {"basic": [auth[0], {"secret": auth[1].name}]}
    raise TypeError("auth= takes api.secret(\"NAME\") (a bearer token) or (\"user\","
                    " api.secret(\"NAME\")) (basic auth): the plugin never holds a secret's"
                    " value, the host fills it in")


def _sign(sign: object) -> dict[str, Any]:
    if isinstance(sign, SecretRef):
        return {"secret": sign.name}
    if not isinstance(sign, dict) or not isinstance(sign.get("secret"), SecretRef):
        raise TypeError("sign= takes api.secret(\"NAME\"), or {\"secret\":"
                        " api.secret(\"NAME\"), \"header\": ..., \"algorithm\": ...,"
                        " \"prefix\": ...}: an HMAC of the body, made by the host")
    return {**sign, "secret": sign["secret"].name}


def _message(method: str, url: str, params: object, headers: object, json: object,
             data: object, content: object, timeout: object, auth: object,
             extra: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(method, str) or not method.isalpha():
        raise TypeError("the method must be a word such as \"GET\" or \"POST\"")
    if not isinstance(url, str):
        raise TypeError("the url must be text")
    message: dict[str, Any] = {"method": method.upper(), "url": url,
                               "params": _fields(params, "params", True),
                               "headers": _fields(headers, "headers", False)}
    if sum(body is not None for body in (json, data, content)) > 1:
        raise TypeError("give one body: json=, data= or content=")
    if json is not None:
        message["json"] = json
    elif isinstance(data, dict | list | tuple):
        message["data"] = _fields(data, "data", False)
    elif data is not None or content is not None:
        body = data if data is not None else content
        if isinstance(body, str):
            body = body.encode("utf-8")
        if not isinstance(body, bytes | bytearray):
            raise TypeError("content= (or data=) must be bytes or text")
        from binascii import b2a_base64

        message["body_b64"] = b2a_base64(body, newline=False).decode("ascii")
    if timeout is not None:
        if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
            raise TypeError("timeout must be a number of seconds above 0")
        message["timeout"] = float(timeout)
    if auth is not None:
        message["auth"] = _auth(auth)
    if extra.get("sign") is not None:
        message["sign"] = _sign(extra["sign"])
    if extra.get("follow_redirects") is False:
        message["follow_redirects"] = False
    return message


class Http:
    """api.http: request(method, url, ...) and get/post/put/patch/delete. A request the host
    refuses, or that fails, raises api.http.HttpError."""

    HttpError = HttpError

    def __init__(self, channel: str | None) -> None:
        self._path = channel
        self._conn: Any = None
        self._lock: Any = None

    def request(self, method: str, url: str, *, params: object = None, headers: object = None,
                json: object = None, data: object = None, content: object = None,
                timeout: float | None = None, auth: object = None, sign: object = None,
                follow_redirects: bool = True) -> Response:
        message = _message(method, url, params, headers, json, data, content, timeout, auth,
                           {"sign": sign, "follow_redirects": follow_redirects})
        if self._path is None:
            raise HttpError(NO_HOSTS, "no_hosts")
        try:
            text = _dumps(message)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"json= must be a JSON value: {exc}") from None
        body = text.encode("utf-8", "backslashreplace")
        if len(body) > MAX_REQUEST_BYTES:
            raise HttpError(f"the request is {len(body)} bytes; the limit is"
                            f" {MAX_REQUEST_BYTES} bytes", "too_large")
        answer = self._exchange(len(body).to_bytes(4, "big") + body)
        if not isinstance(answer, dict):
            raise HttpError("the host's answer could not be read", "channel")
        if answer.get("ok") is not True:
            raise HttpError(str(answer.get("error") or "the host refused the request"),
                            str(answer.get("error_kind") or ""))
        return Response(answer)

    def _exchange(self, data: bytes) -> Any:
        if self._lock is None:
            from _thread import allocate_lock

            self._lock = allocate_lock()
        with self._lock:
            try:
                if self._conn is None:
                    import _socket

                    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
                    try:
                        conn.connect(str(self._path))
                    except OSError as exc:
                        conn.close()
                        raise HttpError(f"the portal's channel for api.http cannot be reached"
                                        f" ({exc}); this is the installation's fault, not the"
                                        " plugin's", "channel") from None
                    self._conn = conn
                self._conn.sendall(data)
                size = int.from_bytes(self._receive(4), "big")
                raw = self._receive(size)
            except OSError as exc:
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None
                raise HttpError(f"the connection to the host was lost ({exc})", "channel") \
                    from None
        try:
            return _loads(raw.decode("utf-8"))
        except (ValueError, RecursionError):
            return None

    def _receive(self, size: int) -> bytes:
        buffer = bytearray(size)
        view, got = memoryview(buffer), 0
        while got < size:
            count = self._conn.recv_into(view[got:])
            if not count:
                raise OSError("the host closed the channel")
            got += count
        return bytes(buffer)

    def get(self, url: str, **options: Any) -> Response:
        return self.request("GET", url, **options)

    def post(self, url: str, **options: Any) -> Response:
        return self.request("POST", url, **options)

    def put(self, url: str, **options: Any) -> Response:
        return self.request("PUT", url, **options)

    def patch(self, url: str, **options: Any) -> Response:
        return self.request("PATCH", url, **options)

    def delete(self, url: str, **options: Any) -> Response:
        return self.request("DELETE", url, **options)


def _dumps(value: object) -> str:
    return _json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not allowed in JSON")


def _loads(text: str) -> Any:
    return _json.loads(text, parse_constant=_no_constant)
