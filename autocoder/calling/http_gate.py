"""The host side of a plugin's `api.http`: one request, checked and carried out by the portal
(docs/safety.md, "Plugins that reach other services"; docs/plugins.md, "Declaring the hosts a
plugin reaches").

The sandbox has no network. A plugin's `api.http` hands the host a JSON request; the host runs
it through `HttpGate(policy).perform(request)` and hands back a JSON answer:

    request  {"method", "url", "params"?, "headers"?, "json"? | "data"? | "body_b64"?,
              "timeout"?, "auth"?, "sign"?, "follow_redirects"?}
    answer   {"ok": True, "status", "headers", "body_b64", "url"}
             {"ok": False, "error": <a sentence>, "error_kind": refused|limit|timeout|
                                                                 unreachable|too_large}

The rules: only the hosts of `[permissions] hosts` and the hosts of address settings a team
admin approved at activation (`HttpPolicy.approved`; docs/safety.md, "Hosts a version may
reach"), matched on scheme, host and port; the name is
resolved here and every address must be public (loopback, private, link-local, CGNAT,
multicast, reserved, metadata addresses and their IPv6 disguises are refused) unless a site
admin listed the host in TOOLS_INTERNAL_HOSTS; the connection goes to the address checked
(DNS rebinding cannot swap it) with the name's Host header, SNI and certificate check;
redirects (at most 5) meet the same rules at every hop; limits on requests, time and bytes.

Secrets are referenced, never read: `{NAME}` in a header value, a `params` value or the URL's
path, `auth = {"secret": NAME}` (Bearer), `auth = {"basic": [user, {"secret": NAME}]}` and
`sign = {"secret": NAME, "header", "algorithm", "prefix"}` (an HMAC of the body) are filled in
here, only on a request to a declared host, and dropped on a redirect to another host. In
what comes back, every secret value and everything the host wrote from one (a filled-in
header value or path, basic auth's base64, a signature), as it is, JSON-escaped, URL-encoded
or in base64, is replaced by [secret]; the records hold no query values and no secrets.

A ground module: it imports the plugin contract, the standard library and httpx only.
"""

from __future__ import annotations

import base64
import ipaddress
import logging
import math
import socket
import ssl
import threading
import time
import zlib
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode, urljoin, urlsplit

import httpx

from autocoder.calling import http_watchdog
from autocoder.calling.http_addresses import (
    address_problem,
    internal_set,
    may_be_internal,
    private_sentence,
)
from autocoder.calling.http_records import HttpRecord
from autocoder.calling.http_request import (
    PATH_SAFE,
    REDACTED,
    Outgoing,
    Refused,
    Secrets,
    outgoing,
)
from autocoder.plugins.hosts import (
    DEFAULT_PORTS,
    HostError,
    HostRule,
    is_ip,
    normalise_host,
    split_host_port,
)
from autocoder.runtime.storable import storable_text

__all__ = ["REDACTED", "HttpGate", "HttpPolicy", "Refused"]

MAX_REDIRECTS = 5
REDIRECTS = (301, 302, 303, 307, 308)
_RESOLVER = ThreadPoolExecutor(max_workers=4, thread_name_prefix="http-gate-dns")
_SSL_CONTEXT: list[ssl.SSLContext] = []
# httpx logs each request's full URL (query values, secrets in them) at INFO, and httpcore the
# response headers at DEBUG: nothing of a plugin's request goes to the portal's log that way.
_QUIET = threading.local()
_CHATTY_LOGGERS = ("httpx", "httpcore.connection", "httpcore.http11", "httpcore.http2",
                   "httpcore.connection_pool", "httpcore.proxy")


class _GateRequestsFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(_QUIET, "on", False)


for _name in _CHATTY_LOGGERS:
    logging.getLogger(_name).addFilter(_GateRequestsFilter())


@dataclass(frozen=True)
class HttpPolicy:
    """What one call's `api.http` may do: the declared hosts, the site's internal hosts, the
    plugin's secret settings (name -> value) and the limits."""

    hosts: tuple[HostRule, ...]
    internal_hosts: frozenset[str]  # settings.TOOLS_INTERNAL_HOSTS: names or IP addresses
    # The hosts of address settings the team's admin approved for this activation (each an
    # exact host, never a wildcard), and what a refusal adds about the ones not approved yet.
    approved: tuple[HostRule, ...] = ()
    address_note: str = ""
    secrets: Mapping[str, str] = field(default_factory=dict, repr=False)
    max_requests: int = 20
    max_response_bytes: int = 5 * 1024 * 1024
    timeout_s: float = 10.0
    # Where a team admin enters a secret that has no value yet, and the secrets' descriptions:
    # api.http's refusal says so in the words of a refused call (setting_words.py).
    settings_url: str = ""
    described: Mapping[str, str] = field(default_factory=dict)


@dataclass
class _Target:
    """One hop: where it goes (as checked) and what it carries."""

    scheme: str
    host: str  # normalised
    port: int
    path: str  # percent-encoded, secrets filled in
    query: str  # raw query of the URL plus the params, secrets filled in
    shown_path: str  # for the records and sentences: templates as written, no query values

    @property
    def origin(self) -> tuple[str, str, int]:
        return (self.scheme, self.host, self.port)

    def name_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = "" if self.port == DEFAULT_PORTS[self.scheme] else f":{self.port}"
        return f"{self.scheme}://{host}{port}{self.path}" + (f"?{self.query}" if self.query else "")


class HttpGate:
    """One plugin call's `api.http`: `perform` carries out one request under `policy`;
    `records` keeps one entry per HTTP request sent or refused (a redirect hop is its own)."""

    def __init__(self, policy: HttpPolicy, *, deadline: float | None = None) -> None:
        self.policy = policy
        self.deadline = deadline
        self.records: list[HttpRecord] = []
        self.performed = 0
        self._internal = internal_set(policy.internal_hosts)
        self.secrets = Secrets(policy.secrets, settings_url=policy.settings_url,
                               described=policy.described)
        self.blank = self.secrets.blank

    def perform(self, request: dict[str, Any]) -> dict[str, Any]:
        """The answer to one request from inside the sandbox (never raises for its content)."""
        self.performed += 1
        try:
            if self.performed > self.policy.max_requests:
                raise Refused("limit", f"api.http: this call already made its"
                                       f" {self.policy.max_requests} requests, the most one"
                                       " call may make; make fewer (one request for many"
                                       " items) or split the work over several calls")
            return self._perform(request)
        except Refused as refused:
            sentence = self.blank(str(refused))
            if not refused.recorded:
                self._record(_method_of(request), _host_of(request), "", 0, 0, 0.0, sentence)
            return {"ok": False, "error": sentence, "error_kind": refused.kind}
        except Exception as exc:  # the plugin gets an answer, never the host's error
            sentence = (f"api.http: the request could not be carried out"
                        f" ({type(exc).__name__}); check its url, headers and body")
            self._record(_method_of(request), _host_of(request), "", 0, 0, 0.0, sentence)
            return {"ok": False, "error": sentence, "error_kind": "unreachable"}

    # The request, step by step.

    def _perform(self, request: dict[str, Any]) -> dict[str, Any]:
        started = time.monotonic()
        if not isinstance(request, dict):
            raise Refused("refused", "api.http: the request must be a JSON object")
        target = self._target(request.get("url"), request.get("params"))
        sending = outgoing(request, self.secrets, self.policy.max_response_bytes)
        method, headers, body = sending.method, sending.headers, sending.body
        ends = started + self._budget(request, started)
        follow = request.get("follow_redirects", True) is not False
        previous = ""
        for hop in range(MAX_REDIRECTS + 1):
            try:
                status, response_headers, content = self._send(method, target, headers, body,
                                                                ends)
            except Refused as refused:
                if not previous or refused.kind != "refused":
                    raise
                raise self._not_followed(previous, refused) from None
            location = response_headers.get("location", "")
            if not (follow and status in REDIRECTS and location):
                return {"ok": True, "status": status,
                        "headers": {k: self.blank(v) for k, v in response_headers.items()},
                        "body_b64": base64.b64encode(self.secrets.blank_bytes(content)).decode(),
                        "url": self.blank(target.name_url())}
            if hop == MAX_REDIRECTS:
                raise Refused("limit", f"api.http: {self.blank(target.name_url())} redirected"
                                       f" more than {MAX_REDIRECTS} times; ask for the final"
                                       " address instead")
            following = self._redirect_target(target, location, method)
            previous = target.name_url()
            method, headers, body = _next_hop(sending, status, target, following, method,
                                              headers, body)
            target = following
        raise AssertionError("unreachable")  # pragma: no cover

    def _budget(self, request: Mapping[str, Any], now: float) -> float:
        budget = self.policy.timeout_s
        asked = request.get("timeout")
        if asked is not None:
            if isinstance(asked, bool) or not isinstance(asked, int | float) or not (
                    math.isfinite(asked) and asked > 0):
                raise Refused("refused", "api.http: timeout must be a number of seconds above 0"
                                         f" (got {asked!r})")
            budget = min(budget, float(asked))
        if self.deadline is not None:
            budget = min(budget, self.deadline - now)
        if budget <= 0:
            raise Refused("timeout", "api.http: the call has no time left for another request;"
                                     " make fewer requests or ask for less")
        return budget

    def _target(self, url: object, params: object) -> _Target:
        if not isinstance(url, str) or not url:
            raise Refused("refused", "api.http: the url must be text like"
                                     " \"https://api.example.com/v1/items\"")
        target = self._parse_url(url, first=True)
        if params not in (None, {}):
            if not isinstance(params, dict):
                raise Refused("refused", "api.http: params must be an object of name -> text")
            pairs: list[tuple[str, str]] = []
            for name, value in params.items():
                values = value if isinstance(value, list) else [value]
                for item in values:
                    if isinstance(item, bool) or not isinstance(item, str | int | float):
                        raise Refused("refused", f"api.http: the query parameter {name!r} must"
                                                 " be text, a number or a list of them")
                    pairs.append((str(name),
                                  self.secrets.fill(str(item), f"query parameter {name!r}")))
            added = urlencode(pairs)
            target.query = f"{target.query}&{added}" if target.query else added
            names = list(dict.fromkeys(name for name, _ in pairs))
            shown = target.shown_path.partition("?")
            known = [n for n in shown[2].split("&") if n]
            target.shown_path = shown[0] + "?" + "&".join(dict.fromkeys(known + names))
        return target

    def _parse_url(self, url: str, *, first: bool) -> _Target:
        """The hop a URL names, checked against the declared hosts; `first`: the plugin's own
        URL, whose path may hold `{NAME}` secrets."""
        if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in url):
            raise Refused("refused", "api.http: the url must not contain spaces or control"
                                     " characters (encode them, e.g. %20)")
        try:
            parts = urlsplit(url)
        except ValueError:
            raise Refused("refused", f"api.http: {url[:60]!r} is not a URL") from None
        scheme = parts.scheme.lower()
        if scheme not in DEFAULT_PORTS:
            raise Refused("refused", f"api.http: the url must start with https:// (or http://"
                                     f" for a host declared so), not {url[:40]!r}")
        netloc = parts.netloc
        if "@" in netloc:
            raise Refused("refused", "api.http: a user name or password in the url is not"
                                     " allowed; use auth= with a secret setting")
        host, port = _host_port(netloc)
        try:
            name = normalise_host(host)
        except HostError as exc:
            raise Refused("refused", f"api.http: the url's host cannot be used: {exc}") from None
        shown_host = f"[{name}]" if ":" in name else name
        effective = port if port is not None else DEFAULT_PORTS[scheme]
        path = parts.path or "/"
        reachable = self.policy.hosts + self.policy.approved
        if not any(rule.matches(scheme, name, effective) for rule in reachable):
            raise Refused("refused", self._not_reachable(scheme, shown_host, port))
        filled = self.secrets.fill(path, "url's path") if first else path
        return _Target(scheme=scheme, host=name, port=effective,
                       path=quote(filled, safe=PATH_SAFE), query=parts.query,
                       shown_path=_shown_path(path, parts.query))

    def _not_reachable(self, scheme: str, shown_host: str, port: int | None) -> str:
        declared = ", ".join(f'"{rule.text()}"' for rule in self.policy.hosts)
        where = (f"{scheme}://{shown_host}" if scheme == "http" else shown_host) + (
            "" if port in (None, DEFAULT_PORTS[scheme]) else f":{port}")
        hint = " (plain http only when declared as \"http://...\")" if scheme == "http" else ""
        if not (self.policy.approved or self.policy.address_note):
            return (f"api.http: {where} is not one of the hosts this plugin declared in"
                    f" plugin.toml ([permissions] hosts = [{declared}]); add it there{hint}")
        approved = ", ".join(rule.text() for rule in self.policy.approved) or "none yet"
        note = f" {self.policy.address_note}" if self.policy.address_note else ""
        return (f"api.http: {where} is neither one of the hosts this plugin declared in"
                f" plugin.toml ([permissions] hosts = [{declared}]) nor an address a team admin"
                f" approved for it (approved: {approved}){hint}.{note}")

    def _redirect_target(self, current: _Target, location: str, method: str) -> _Target:
        url = urljoin(current.name_url(), location)
        try:
            return self._parse_url(url, first=False)
        except Refused as refused:
            parts = urlsplit(url)
            self._record(method, _host_of({"url": url}), self.blank(_shown_path(parts.path,
                         parts.query)), 0, 0, 0.0, "")
            raise self._not_followed(current.name_url(), refused) from None

    def _not_followed(self, previous: str, refused: Refused) -> Refused:
        """The refusal of a redirect's hop, saying where it came from (in its record too)."""
        sentence = self.blank(f"api.http: {previous} redirected elsewhere, and the redirect"
                              f" was not followed: {str(refused).removeprefix('api.http: ')}")
        self.records[-1]["refused"] = sentence
        failure = Refused(refused.kind, sentence)
        failure.recorded = True
        return failure

    # The network.

    def _addresses(self, target: _Target, ends: float) -> list[str]:
        """The checked addresses of the hop's host: all of them public, or the host internal."""
        internal = target.host in self._internal
        if is_ip(target.host):
            problem = address_problem(target.host)
            if problem and not (internal and may_be_internal(target.host)):
                raise Refused("refused", private_sentence(target.host, target.host, problem))
            if not internal:
                raise Refused("refused", f"api.http: {target.host} is an IP address; the portal"
                                         " connects to an IP address only when a site admin"
                                         " lists it in TOOLS_INTERNAL_HOSTS; use the service's"
                                         " host name")
            return [target.host]
        addresses = self._resolve(target, ends)
        for address in addresses:
            problem = address_problem(address)
            allowed = (internal or address in self._internal) and may_be_internal(address)
            if problem and not allowed:
                raise Refused("refused", private_sentence(target.host, address, problem))
        return addresses

    def _resolve(self, target: _Target, ends: float) -> list[str]:
        future = _RESOLVER.submit(socket.getaddrinfo, target.host, target.port,
                                  type=socket.SOCK_STREAM)
        try:
            infos = future.result(timeout=max(0.0, ends - time.monotonic()))
        except FutureTimeout:
            raise Refused("timeout", f"api.http: looking up {target.host} took too long") from None
        except (OSError, UnicodeError):
            raise Refused("unreachable", f"api.http: the host name {target.host} could not be"
                                         " found (DNS); check the address") from None
        found = [str(ipaddress.ip_address(str(info[4][0]).partition("%")[0])) for info in infos
                 if info[0] in (socket.AF_INET, socket.AF_INET6)]
        if not found:
            raise Refused("unreachable", f"api.http: {target.host} has no address")
        return list(dict.fromkeys(found))

    def _send(self, method: str, target: _Target, headers: Mapping[str, str], body: bytes,
              ends: float) -> tuple[int, dict[str, str], bytes]:
        started = time.monotonic()
        record = self._record(method, target.host, self.blank(target.shown_path), 0, 0, 0.0, "")
        try:
            status, response_headers, content = self._exchange(method, target, headers, body,
                                                               ends)
        except Refused as refused:
            record.update({"refused": self.blank(str(refused)),
                           "ms": round((time.monotonic() - started) * 1000, 1)})
            refused.recorded = True
            raise
        record.update({"status": status, "bytes": len(content),
                       "ms": round((time.monotonic() - started) * 1000, 1)})
        return status, response_headers, content

    def _exchange(self, method: str, target: _Target, headers: Mapping[str, str], body: bytes,
                  ends: float) -> tuple[int, dict[str, str], bytes]:
        addresses = self._addresses(target, ends)
        host_header = target.host if ":" not in target.host else f"[{target.host}]"
        if target.port != DEFAULT_PORTS[target.scheme]:
            host_header += f":{target.port}"
        extensions = {} if is_ip(target.host) else {"sni_hostname": target.host}
        _QUIET.on = True
        try:
            return self._connect(method, target, headers, body, ends, addresses, host_header,
                                 extensions)
        finally:
            _QUIET.on = False

    def _connect(self, method: str, target: _Target, headers: Mapping[str, str], body: bytes,
                 ends: float, addresses: list[str], host_header: str,
                 extensions: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        last: Exception | None = None
        with httpx.Client(transport=httpx.HTTPTransport(verify=_ssl_context(), retries=0),
                          trust_env=False, follow_redirects=False) as client:
            for address in addresses:
                left = ends - time.monotonic()
                if left <= 0:
                    break
                pinned = f"[{address}]" if ":" in address else address
                url = f"{target.scheme}://{pinned}:{target.port}{target.path}"
                url += f"?{target.query}" if target.query else ""
                built = client.build_request(
                    method, url, headers={**headers, "Host": host_header}, content=body or None,
                    extensions=extensions, timeout=httpx.Timeout(left))
                try:
                    response = client.send(built, stream=True)
                except httpx.ConnectError as exc:
                    last = exc
                    if isinstance(exc.__context__, ssl.SSLError) or "SSL" in str(exc):
                        break
                    continue
                except httpx.TimeoutException:
                    raise Refused("timeout", self._slow(target)) from None
                except httpx.HTTPError as exc:
                    raise Refused("unreachable", f"api.http: {target.host} did not answer"
                                                 f" properly ({type(exc).__name__})") from None
                try:
                    return self._read(response, target, ends)
                finally:
                    response.close()
        if last is not None and ("SSL" in str(last) or "certificate" in str(last).lower()):
            raise Refused("unreachable", f"api.http: the secure connection to {target.host}"
                                         " failed (its certificate could not be verified)")
        if time.monotonic() >= ends:
            raise Refused("timeout", self._slow(target))
        raise Refused("unreachable", f"api.http: could not connect to {target.host}"
                                     f" (port {target.port}); is the address right?")

    def _read(self, response: httpx.Response, target: _Target, ends: float
              ) -> tuple[int, dict[str, str], bytes]:
        """Status, headers and body, read as a stream and cut at the limit; past the time left
        the connection is shut, so a server that trickles bytes cannot hold the call."""
        limit = self.policy.max_response_bytes
        watching = http_watchdog.watch(ends, lambda: _shut(response))
        headers: dict[str, str] = {}
        for key, value in response.headers.multi_items():
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        try:
            content = _bounded(response.iter_raw(), headers, limit)
        except OverflowError:
            raise Refused("too_large", f"api.http: the answer from {target.host} is larger"
                                       f" than {limit // 1024} KB, the most a request may"
                                       " bring back; ask for less (a page, a filter)") from None
        except (httpx.HTTPError, zlib.error) as exc:
            if time.monotonic() >= ends or isinstance(exc, httpx.TimeoutException):
                raise Refused("timeout", self._slow(target)) from None
            raise Refused("unreachable", f"api.http: the answer from {target.host} was cut"
                                         f" off ({type(exc).__name__})") from None
        finally:
            http_watchdog.cancel(watching)
        if time.monotonic() > ends:
            raise Refused("timeout", self._slow(target))
        return response.status_code, headers, content

    def _slow(self, target: _Target) -> str:
        return (f"api.http: {target.host} did not answer in time (a request may take at most"
                f" {self.policy.timeout_s:g} seconds, within the call's own time limit)")

    # Records.

    def _record(self, method: str, host: str, path: str, status: int, size: int, ms: float,
                refused: str) -> HttpRecord:
        # Words the plugin chose (a method, a parameter's name) go on the call's log: made
        # storable here (autocoder/runtime/storable.py), as all that comes from a sandbox.
        record: HttpRecord = {"method": storable_text(method), "host": storable_text(host),
                  "path": storable_text(path), "status": status, "bytes": size, "ms": ms,
                  "refused": storable_text(refused)}
        self.records.append(record)
        return record


def _shut(response: httpx.Response) -> None:
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _bounded(chunks: Iterator[bytes], headers: dict[str, str], limit: int) -> bytes:
    """The body, decoded from gzip or deflate if the server used them (then the headers no
    longer say so); OverflowError past `limit` bytes, raw or decoded."""
    encoding = headers.get("content-encoding", "").strip().lower()
    decoder = None
    if encoding in ("gzip", "x-gzip", "deflate"):
        decoder = zlib.decompressobj(47 if encoding != "deflate" else 15)
        headers.pop("content-encoding")
        headers.pop("content-length", None)
    raw = 0
    out = bytearray()
    for chunk in chunks:
        raw += len(chunk)
        if raw > limit:
            raise OverflowError
        if decoder is None:
            out += chunk
        else:
            out += decoder.decompress(chunk, limit + 1 - len(out))
            if decoder.unconsumed_tail:
                raise OverflowError
        if len(out) > limit:
            raise OverflowError
    if decoder is not None:
        out += decoder.flush()
        if len(out) > limit:
            raise OverflowError
    return bytes(out)


def _ssl_context() -> ssl.SSLContext:
    """One verifying context for the process (making one reads the CA bundle: milliseconds)."""
    if not _SSL_CONTEXT:
        _SSL_CONTEXT.append(httpx.create_ssl_context())
    return _SSL_CONTEXT[0]


def _next_hop(sending: Outgoing, status: int, current: _Target, following: _Target,
              method: str, headers: dict[str, str], body: bytes
              ) -> tuple[str, dict[str, str], bytes]:
    """The method, headers and body a redirect is followed with: a secret stays with the
    host it was for; a 303 (and a 301/302 after a POST) becomes a GET without the body."""
    if following.origin != current.origin:
        headers = {k: v for k, v in headers.items() if k.lower() not in sending.secret_headers}
    if status == 303 or (status in (301, 302) and method not in ("GET", "HEAD")):
        method, body = ("HEAD" if method == "HEAD" else "GET"), b""
        dropped = ("content-type", sending.signed_header)
        headers = {k: v for k, v in headers.items() if k.lower() not in dropped}
    return method, headers, body


def _host_port(netloc: str) -> tuple[str, int | None]:
    """The URL's host and port, by the rule of plugin.toml's hosts (plugins/hosts.py); an
    empty port (`host:`) is the scheme's, as in any URL."""
    if "{" in netloc or "}" in netloc:
        raise Refused("refused", "api.http: the url's host must be written out, not a {NAME}")
    try:
        return split_host_port(netloc.removesuffix(":"))
    except HostError as exc:
        raise Refused("refused", f"api.http: the url's host cannot be used: {exc}") from None


def _shown_path(path: str, query: str) -> str:
    """The path with the names of its query parameters, never their values."""
    names = [part.partition("=")[0] for part in query.split("&") if part]
    return path + ("?" + "&".join(dict.fromkeys(names)) if names else "")


def _method_of(request: object) -> str:
    method = request.get("method") if isinstance(request, dict) else None
    return method.upper()[:10] if isinstance(method, str) else ""


def _host_of(request: object) -> str:
    url = request.get("url") if isinstance(request, dict) else None
    try:
        host = urlsplit(url).hostname if isinstance(url, str) else None
        return normalise_host(host) if host else ""
    except (HostError, ValueError):
        return ""

