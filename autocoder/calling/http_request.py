"""What a plugin's `api.http` request asks to send, checked, with its secrets filled in
(autocoder/calling/http_gate.py carries it out; docs/plugins.md, "Secrets in requests").

The forms a secret setting may take, all filled in on the host, never inside the sandbox:

- `{NAME}` in a header value, a `params` value or the URL's path (`{{` and `}}` are braces);
- `auth = {"secret": NAME}`: `Authorization: Bearer <value>`;
- `auth = {"basic": [user, {"secret": NAME}]}`: HTTP basic auth (the user may be a secret too);
- `sign = {"secret": NAME, "header": "X-Signature", "algorithm": "sha256", "prefix": "sha256="}`:
  an HMAC of the request's body with the secret as key, hex, after the prefix, in the header
  (algorithm sha256, sha512 or sha1; only `secret` is required).

A secret anywhere else (the body, the URL's host or query) is not filled in.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, quote_plus, urlencode

from autocoder.calling.setting_words import settings_missing_words

REDACTED = "[secret]"
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
REQUEST_KEYS = ("method", "url", "params", "headers", "json", "data", "body_b64", "timeout",
                "auth", "sign", "follow_redirects")
SIGN_ALGORITHMS = ("sha256", "sha512", "sha1")
# Set by the portal, never by a plugin: they decide where and how the bytes go.
RESERVED_HEADERS = ("host", "content-length", "transfer-encoding", "connection", "upgrade",
                    "te", "trailer", "keep-alive", "proxy-authorization", "proxy-connection")
# What a URL's path keeps as it is (the gate quotes the rest): a secret in the path goes out so.
PATH_SAFE = "/%:@!$&'()*+,;=-._~"
_TEMPLATE = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}|[{}]")
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


class Refused(Exception):
    """The request ends with this answer: `kind` is its error_kind, the message its sentence."""

    def __init__(self, kind: str, sentence: str) -> None:
        super().__init__(sentence)
        self.kind = kind
        self.recorded = False  # True once a record of the hop says it was refused


@dataclass
class Outgoing:
    """A request's method, headers (secrets filled in) and body."""

    method: str
    headers: dict[str, str]
    body: bytes
    secret_headers: frozenset[str]  # lower-case names of the headers that carry a secret
    signed_header: str  # lower-case name of the signature's header, "" without one


class Secrets:
    """The plugin's secret settings (name -> value): filled into a request, blanked out of
    whatever comes back, in every form the host wrote them in (docs/safety.md, "Secrets in
    what comes back")."""

    def __init__(self, values: Mapping[str, str], *, settings_url: str = "",
                 described: Mapping[str, str] | None = None) -> None:
        self.values = values
        # Where a team admin enters a missing one, and each one's description: the words a
        # call refused before it runs uses too (autocoder/calling/setting_words.py).
        self.settings_url = settings_url
        self.described = dict(described or {})

        # Made from a secret and blanked like one: this call's signatures.
        self._derived: list[str] = []
        # Texts the host wrote into this call's requests around a secret (a filled-in header
        # value or path, basic auth's `user:password`): blanked in base64 too, whole.
        self._written: list[str] = []
        self._blanked: tuple[str, ...] | None = None

    def secret(self, name: object) -> str:
        """The value of a secret setting the plugin declared; Refused names the ones it has."""
        value = self.values.get(name) if isinstance(name, str) else None
        if value is None:
            names = ", ".join(sorted(self.values)) or "none"
            raise Refused("refused", f"api.http: {name!r} is not a secret setting of this"
                                     f" plugin (its secret settings: {names}); declare it in"
                                     " plugin.toml as [[settings]] with secret = true")
        if not value:
            words = settings_missing_words([(str(name), self.described.get(str(name), ""))],
                                           self.settings_url)
            raise Refused("refused", f"api.http: {words}")
        return value

    def wrote(self, text: str) -> str:
        """Note `text`, which the host wrote into a request around a secret, so that an answer
        that gives it back encoded whole (basic auth's base64) is blanked too; returns it.
        As it is, or JSON-escaped or URL-encoded, it holds the secret's own form already."""
        return self._note(self._written, text)

    def derived(self, text: str) -> str:
        """Note `text`, made from a secret (a signature), to be blanked as a secret is."""
        return self._note(self._derived, text)

    def _note(self, into: list[str], text: str) -> str:
        if text and text not in into:
            into.append(text)
            self._blanked = None
        return text

    def fill(self, text: str, where: str) -> str:
        """`text` with each `{NAME}` replaced by that secret's value (`{{` and `}}` are braces);
        a text that got a secret is noted (`wrote`), surrounding words and all."""
        filled_in = False

        def one(match: re.Match[str]) -> str:
            nonlocal filled_in
            token = match.group(0)
            if token in ("{{", "}}"):
                return token[0]
            if match.group(1) is None:
                raise Refused("refused", f"api.http: the {where} has a lone {token!r}; write"
                                         f" {token * 2} for a brace, {{NAME}} for a secret")
            filled_in = True
            return self.secret(match.group(1))
        filled = _TEMPLATE.sub(one, text)
        return self.wrote(filled) if filled_in else filled

    def blank(self, text: str) -> str:
        for form in self._forms():
            text = text.replace(form, REDACTED)
        return text

    def blank_bytes(self, data: bytes) -> bytes:
        for form in self._forms():
            data = data.replace(form.encode(), REDACTED.encode())
        return data

    def _forms(self) -> tuple[str, ...]:
        """Every form to blank, longest first (a longer one may hold a shorter one)."""
        if self._blanked is None:
            texts = [v for v in self.values.values() if v] + self._derived
            forms = {form for text in texts for form in _forms(text)}
            forms |= {form for text in self._written for form in _base64_forms(text)}
            self._blanked = tuple(sorted(forms, key=lambda form: (-len(form), form)))
        return self._blanked


def outgoing(request: Mapping[str, Any], secrets: Secrets, limit: int) -> Outgoing:
    """The checked method, headers and body of a request (its URL is the gate's to check);
    Refused for one that breaks a rule. `limit`: the most bytes a body may have."""
    unknown = sorted(str(k) for k in request if k not in REQUEST_KEYS)
    if unknown:
        raise Refused("refused", f"api.http: unknown request key(s) {', '.join(unknown)}"
                                 f" (it takes {', '.join(REQUEST_KEYS)})")
    method = request.get("method")
    if not isinstance(method, str) or method.upper() not in METHODS:
        raise Refused("refused", f"api.http: the method must be one of {', '.join(METHODS)}"
                                 f" (got {method!r})")
    headers, secret_headers = _headers(request, secrets)
    body = _body(request, headers, limit)
    _auth(request.get("auth"), headers, secret_headers, secrets)
    signed = _sign(request.get("sign"), body, headers, secret_headers, secrets)
    if "accept-encoding" not in {k.lower() for k in headers}:
        headers["Accept-Encoding"] = "identity"  # no compressed bombs unless asked for
    return Outgoing(method=method.upper(), headers=headers, body=body,
                    secret_headers=frozenset(secret_headers), signed_header=signed)


def _forms(value: str) -> tuple[str, ...]:
    """The ways a secret may come back from a service that echoes it: as it is, JSON-escaped,
    URL-encoded (as a query value or as the gate writes a path), and in base64
    (`_base64_forms`)."""
    forms = (value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1],
             quote(value, safe=""), quote(value, safe=PATH_SAFE), quote_plus(value),
             *_base64_forms(value))
    return tuple(dict.fromkeys(form for form in forms if form))


def _base64_forms(value: str) -> tuple[str, ...]:
    """`value` in base64, standard or URL-safe, with or without its padding (basic auth's own
    encoding, and what echo services use for binary), also inside a longer base64 text."""
    encoded = value.encode()
    whole = [base64.b64encode(encoded).decode(), base64.urlsafe_b64encode(encoded).decode()]
    return (*whole, *(form.rstrip("=") for form in whole), *_base64_cores(encoded))


def _base64_cores(encoded: bytes) -> tuple[str, ...]:
    """What base64 of a longer text holds of `encoded` wherever it falls in it: base64 turns
    3 bytes into 4 characters, so one of `encoded`'s first three bytes starts a group, and
    the whole groups from there on come out the same whatever surrounds them. Those of at least
    6 bytes (8 characters: nothing else looks like them) are blanked; at most two bytes at each
    end of the text stay readable."""
    cores = []
    for start in range(3):
        whole = encoded[start:]
        whole = whole[:len(whole) - len(whole) % 3]
        if len(whole) >= 6:
            cores += [base64.b64encode(whole).decode(), base64.urlsafe_b64encode(whole).decode()]
    return tuple(cores)


def _headers(request: Mapping[str, Any], secrets: Secrets) -> tuple[dict[str, str], set[str]]:
    raw = request.get("headers") or {}
    if not isinstance(raw, dict):
        raise Refused("refused", "api.http: headers must be an object of name -> text")
    headers: dict[str, str] = {}
    secret_headers: set[str] = set()
    for name, value in raw.items():
        if not isinstance(name, str) or not _TOKEN.fullmatch(name):
            raise Refused("refused", f"api.http: {name!r} is not a header name")
        if name.lower() in RESERVED_HEADERS:
            raise Refused("refused", f"api.http: the header {name!r} is set by the portal,"
                                     " not by the plugin")
        if not isinstance(value, str) or any(ch in value for ch in "\r\n\0"):
            raise Refused("refused", f"api.http: the header {name!r} must be one line of"
                                     " text")
        filled = secrets.fill(value, f"header {name!r}")
        if not filled.isascii():
            raise Refused("refused", f"api.http: the header {name!r} must be ASCII text"
                                     " (encode other characters, e.g. as %XX or base64)")
        if filled != value.replace("{{", "{").replace("}}", "}"):
            secret_headers.add(name.lower())
        headers[name] = filled
    return headers, secret_headers

def _body(request: Mapping[str, Any], headers: dict[str, str], limit: int) -> bytes:
    given = [k for k in ("json", "data", "body_b64") if request.get(k) is not None]
    if len(given) > 1:
        raise Refused("refused", f"api.http: give one body, not {' and '.join(given)}")
    lower = {k.lower() for k in headers}
    body = b""
    if "json" in given:
        try:
            body = json.dumps(request["json"], ensure_ascii=False, allow_nan=False,
                              separators=(",", ":")).encode()
        except (TypeError, ValueError) as exc:
            raise Refused("refused", f"api.http: json= is not JSON ({exc})") from None
        if "content-type" not in lower:
            headers["Content-Type"] = "application/json"
    elif "data" in given:
        data = request["data"]
        if not isinstance(data, dict) or not all(
                isinstance(v, str | int | float) and not isinstance(v, bool)
                for v in data.values()):
            raise Refused("refused", "api.http: data= must be an object of name -> text")
        body = urlencode({str(k): str(v) for k, v in data.items()}).encode()
        if "content-type" not in lower:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
    elif "body_b64" in given:
        try:
            body = base64.b64decode(str(request["body_b64"]), validate=True)
        except (binascii.Error, ValueError):
            raise Refused("refused", "api.http: body_b64 is not base64") from None
    if len(body) > limit:
        raise Refused("too_large", f"api.http: the request body is {len(body)} bytes; the"
                                   f" limit is {limit} bytes")
    return body

def _auth(auth: object, headers: dict[str, str], secret_headers: set[str],
          secrets: Secrets) -> None:
    if auth is None:
        return
    if isinstance(auth, dict) and set(auth) == {"secret"}:
        headers["Authorization"] = secrets.wrote(f"Bearer {secrets.secret(auth['secret'])}")
    elif (isinstance(auth, dict) and set(auth) == {"basic"}
          and isinstance(auth["basic"], list) and len(auth["basic"]) == 2):
        user, password = (_text_or_secret(part, secrets) for part in auth["basic"])
        pair = secrets.wrote(f"{user}:{password}")  # its base64 is the token
        token = base64.b64encode(pair.encode()).decode()
        headers["Authorization"] = secrets.wrote(f"Basic {token}")
    else:
        raise Refused("refused", "api.http: auth must be api.secret(NAME) or"
                                 " (user, api.secret(NAME)) for basic auth")
    secret_headers.add("authorization")

def _text_or_secret(part: object, secrets: Secrets) -> str:
    if isinstance(part, str):
        return part
    if isinstance(part, dict) and set(part) == {"secret"}:
        return secrets.secret(part["secret"])
    raise Refused("refused", "api.http: basic auth takes a user name (text) and a secret")

def _sign(sign: object, body: bytes, headers: dict[str, str], secret_headers: set[str],
          secrets: Secrets) -> str:
    if sign is None:
        return ""
    keys = {"secret", "header", "algorithm", "prefix"}
    if not isinstance(sign, dict) or "secret" not in sign or not set(sign) <= keys:
        raise Refused("refused", "api.http: sign must be {secret, header, algorithm,"
                                 " prefix} (only secret is required)")
    header = sign.get("header", "X-Signature")
    algorithm = sign.get("algorithm", "sha256")
    prefix = sign.get("prefix", "")
    if not isinstance(header, str) or not _TOKEN.fullmatch(header) or (
            header.lower() in RESERVED_HEADERS):
        raise Refused("refused", f"api.http: sign's header {header!r} is not a header name")
    if algorithm not in SIGN_ALGORITHMS:
        raise Refused("refused", f"api.http: sign's algorithm must be one of"
                                 f" {', '.join(SIGN_ALGORITHMS)} (got {algorithm!r})")
    if not isinstance(prefix, str) or any(ch in prefix for ch in "\r\n\0"):
        raise Refused("refused", "api.http: sign's prefix must be one line of text")
    key = secrets.secret(sign["secret"]).encode()
    signature = secrets.derived(hmac.new(key, body, getattr(hashlib, algorithm)).hexdigest())
    headers[header] = prefix + signature
    secret_headers.add(header.lower())
    return header.lower()
