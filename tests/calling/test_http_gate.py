"""The host side of `api.http` (autocoder/calling/http_gate.py): only declared hosts, never the
portal's own network, secrets filled in only for declared hosts and blanked out of answers,
limits, records without query values or secrets.

These tests reach only loopback addresses. A threaded `http.server` on 127.0.0.1 (port 0)
stands in for a team's service; it is reachable only because the tests list its name in the
policy's `internal_hosts` (TOOLS_INTERNAL_HOSTS). Host names such as `svc.test` are resolved
by a fake `socket.getaddrinfo`, patched at the boundary the gate resolves through: names that
"resolve" to 10.x or 169.254.169.254 are refused before any connection is tried, and every
connection the gate makes goes to 127.0.0.1.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import hmac
import ipaddress
import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, unquote, unquote_plus, urlsplit

import pytest

from autocoder.calling.http_addresses import address_problem, internal_set
from autocoder.calling.http_gate import HttpGate, HttpPolicy
from autocoder.calling.http_request import PATH_SAFE, Secrets
from autocoder.plugins import parse_host_rule

SECRET = "s3cr3t-TOKEN-value/+="
OTHER_SECRET = "hmac-key-123456"


class Service(BaseHTTPRequestHandler):
    """A loopback service: /echo says what it received (secrets included, on purpose), /b64...
    says it in base64, /headers-b64 each header's value in base64; /redirect?to=URL redirects,
    /big, /gzip-bomb, /slow and /trickle misbehave."""

    received: list[dict[str, Any]]

    def log_message(self, *args: Any) -> None:
        pass

    def _answer(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        seen = {"method": self.command, "path": parts.path, "query": query,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body.decode("latin-1")}
        self.server.received.append(seen)  # type: ignore[attr-defined]
        if parts.path == "/redirect":
            status = int(query.get("status", ["302"])[0])
            self._answer(status, b"", {"Location": query["to"][0]})
        elif parts.path == "/loop":
            self._answer(302, b"", {"Location": "/loop"})
        elif parts.path == "/big":
            self._answer(200, b"x" * int(query["n"][0]))
        elif parts.path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for _ in range(int(query["n"][0]) // 1000):
                self.wfile.write(b"3e8\r\n" + b"y" * 1000 + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
        elif parts.path == "/gzip-bomb":
            self._answer(200, gzip.compress(b"\0" * 10_000_000), {"Content-Encoding": "gzip"})
        elif parts.path == "/gzip":
            self._answer(200, gzip.compress(b"hello " * 10), {"Content-Encoding": "gzip"})
        elif parts.path == "/slow":
            time.sleep(float(query.get("s", ["3"])[0]))
            self._answer(200, b"late")
        elif parts.path == "/trickle":
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            for _ in range(1000):
                try:
                    self.wfile.write(b"z")
                    self.wfile.flush()
                except OSError:
                    return
                time.sleep(0.05)
        elif parts.path.startswith("/b64"):  # the whole request, in base64
            self._answer(200, base64.b64encode(json.dumps(seen).encode()))
        elif parts.path == "/headers-b64":  # each header's value, in base64
            self._answer(200, json.dumps({k.lower(): base64.b64encode(v.encode()).decode()
                                          for k, v in self.headers.items()}).encode())
        else:
            echoed = json.dumps(seen).encode()
            self._answer(200, echoed, {"Content-Type": "application/json",
                                       "X-Echo-Auth": self.headers.get("Authorization", "")})

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _handle


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client the gate cut off (too large, too slow) is expected here


@pytest.fixture
def service() -> Iterator[ThreadingHTTPServer]:
    server = QuietServer(("127.0.0.1", 0), Service)
    server.daemon_threads = True
    server.received = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                              daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Fake DNS, patched where the gate resolves (`socket.getaddrinfo`): a name maps to the
    addresses in this dict; IP literals (the pinned connection) pass through as numbers only;
    any other name fails. `dns["_lookups"]` lists the names looked up."""
    table: dict[str, list[str]] = {"_lookups": []}
    real = socket.getaddrinfo

    def fake(host: Any, port: Any, family: int = 0, type: int = 0, proto: int = 0,
             flags: int = 0) -> list[Any]:
        name = host.decode() if isinstance(host, bytes) else str(host)
        try:
            return real(name, port, family, type, proto, flags | socket.AI_NUMERICHOST)
        except socket.gaierror:
            pass
        table["_lookups"].append(name)
        if name not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "",
                 (a, int(port))) for a in table[name]]

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    table["svc.test"] = ["127.0.0.1"]
    return table


def gate(server: ThreadingHTTPServer, *, hosts: tuple[str, ...] = (),
         internal: tuple[str, ...] = ("svc.test",), **limits: Any) -> HttpGate:
    port = server.server_address[1]
    rules = tuple(parse_host_rule(h.format(port=port)) for h in (hosts or (
        "http://svc.test:{port}",)))
    return HttpGate(HttpPolicy(hosts=rules, internal_hosts=frozenset(internal),
                               secrets={"api_key": SECRET, "signing_key": OTHER_SECRET},
                               **limits))


def url(server: ThreadingHTTPServer, path: str = "/echo", host: str = "svc.test") -> str:
    return f"http://{host}:{server.server_address[1]}{path}"


def body(answer: dict[str, Any]) -> bytes:
    return base64.b64decode(answer["body_b64"])


def refused(answer: dict[str, Any], kind: str = "refused") -> str:
    assert answer["ok"] is False, answer
    assert answer["error_kind"] == kind, answer
    assert answer["error"].startswith("api.http: ")
    return str(answer["error"])


# Only declared hosts.

def test_a_declared_internal_host_is_reached_pinned_with_its_name(service, dns) -> None:
    http = gate(service)
    answer = http.perform({"method": "GET", "url": url(service), "params": {"q": "1"}})
    assert answer["ok"] is True and answer["status"] == 200
    seen = json.loads(body(answer))
    assert seen["headers"]["host"] == f"svc.test:{service.server_address[1]}"
    assert seen["query"] == {"q": ["1"]}
    assert answer["url"] == url(service) + "?q=1"
    assert dns["_lookups"] == ["svc.test"]  # resolved once, by the gate; connected by number


def test_an_undeclared_host_is_refused_in_words_the_author_can_act_on(service, dns) -> None:
    dns["example.org"] = ["127.0.0.1"]
    answer = gate(service).perform({"method": "GET", "url": "https://example.org/x"})
    error = refused(answer)
    port = service.server_address[1]
    assert error == ("api.http: example.org is not one of the hosts this plugin declared in"
                     f' plugin.toml ([permissions] hosts = ["http://svc.test:{port}"]);'
                     " add it there")
    assert service.received == []  # type: ignore[attr-defined]


@pytest.mark.parametrize(("request_url", "words"), [
    ("https://svc.test:{port}/echo", "svc.test:{port} is not one of"),  # https, not declared
    ("http://svc.test/echo", "http://svc.test is not one of"),  # another port
    ("http://other.svc.test:{port}/echo", "other.svc.test:{port} is not one of"),
    ("ftp://svc.test:{port}/", "must start with https://"),
    ("http://user:pw@svc.test:{port}/", "a user name or password in the url"),
    ("http://svc.test:{port}/a b", "must not contain spaces"),
])
def test_scheme_host_and_port_must_all_be_declared(service, dns, request_url: str,
                                                   words: str) -> None:
    port = service.server_address[1]
    answer = gate(service).perform({"method": "GET", "url": request_url.format(port=port)})
    assert words.format(port=port) in refused(answer)
    assert service.received == []  # type: ignore[attr-defined]


def test_trailing_dots_and_mixed_case_are_the_same_host(service, dns) -> None:
    http = gate(service, hosts=("http://SVC.Test.:{port}",))
    for host in ("SVC.TEST", "svc.test.", "Svc.Test."):
        answer = http.perform({"method": "GET", "url": url(service, host=host)})
        assert answer["ok"] is True, answer
    assert [r["host"] for r in http.records] == ["svc.test"] * 3


def test_a_wildcard_reaches_sub_domains_only(service, dns) -> None:
    dns["a.svc.test"] = ["127.0.0.1"]
    http = gate(service, hosts=("http://*.svc.test:{port}",), internal=("a.svc.test",))
    assert http.perform({"method": "GET", "url": url(service, host="a.svc.test")})["ok"]
    assert "is not one of" in refused(http.perform({"method": "GET", "url": url(service)}))


# Never the portal's own network.

@pytest.mark.parametrize(("address", "kind"), [
    ("127.0.0.1", "a loopback address"),
    ("10.1.2.3", "a private address"),
    ("192.168.1.10", "a private address"),
    ("172.16.0.1", "a private address"),
    ("169.254.169.254", "a cloud metadata address"),
    ("169.254.1.1", "a link-local address"),
    ("100.64.0.1", "a shared (carrier-grade NAT) address"),
    ("0.0.0.0", "the unspecified address"),
    ("224.0.0.1", "a multicast address"),
    ("::1", "a loopback address"),
    ("fd00:ec2::254", "a cloud metadata address"),
    ("fc00::1", "a private address"),
    ("fe80::1", "a link-local address"),
    ("::ffff:127.0.0.1", "a loopback address"),  # IPv4-mapped
    ("::ffff:169.254.169.254", "a cloud metadata address"),
    ("::127.0.0.1", "a loopback address"),  # IPv4-compatible
    ("2002:7f00:1::", "a loopback address"),  # 6to4 of 127.0.0.1
    ("2002:a00:1::", "a private address"),  # 6to4 of 10.0.0.1
    ("64:ff9b::a00:1", "a private address"),  # NAT64 of 10.0.0.1
    ("64:ff9b::a9fe:a9fe", "a cloud metadata address"),  # NAT64 of 169.254.169.254
])
def test_a_name_that_resolves_into_the_portals_network_is_refused(service, dns, address: str,
                                                                   kind: str) -> None:
    dns["api.example.com"] = ["93.184.215.14", address]  # one bad address is enough
    http = gate(service, hosts=("api.example.com",))
    error = refused(http.perform({"method": "GET", "url": "https://api.example.com/x"}))
    shown = ipaddress.ip_address(address)  # in its canonical form
    assert error.startswith(f"api.http: api.example.com ({shown}) is {kind}")
    assert "TOOLS_INTERNAL_HOSTS" in error
    assert service.received == []  # type: ignore[attr-defined]


def test_public_addresses_have_no_problem() -> None:
    for address in ("93.184.215.14", "1.1.1.1", "2606:4700:4700::1111"):
        assert address_problem(address) == ""


def test_the_allowlist_opens_a_private_address_but_never_a_metadata_one(service, dns) -> None:
    dns["api.example.com"] = ["169.254.169.254"]
    http = gate(service, hosts=("api.example.com",), internal=("api.example.com",))
    error = refused(http.perform({"method": "GET", "url": "https://api.example.com/x"}))
    assert "a cloud metadata address" in error
    assert internal_set(["SVC.Test.", "[::1]", "not a host!"]) == {"svc.test", "::1"}


def test_without_the_allowlist_the_loopback_service_is_refused(service, dns) -> None:
    answer = gate(service, internal=()).perform({"method": "GET", "url": url(service)})
    assert "svc.test (127.0.0.1) is a loopback address" in refused(answer)
    assert service.received == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("literal", ["[::1]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]",
                                     "[0:0:0:0:0:ffff:7f00:1]", "127.0.0.1"])
def test_ip_literals_of_loopback_are_refused(service, dns, literal: str) -> None:
    http = gate(service, hosts=(f"http://{literal}:{{port}}",), internal=())
    error = refused(http.perform({"method": "GET", "url": url(service, host=literal)}))
    assert "a loopback address" in error
    assert service.received == []  # type: ignore[attr-defined]


def test_an_ip_literal_is_reached_only_when_the_site_lists_it(service, dns) -> None:
    http = gate(service, hosts=("http://127.0.0.1:{port}",), internal=("127.0.0.1",))
    assert http.perform({"method": "GET", "url": url(service, host="127.0.0.1")})["ok"]
    public = gate(service, hosts=("93.184.215.14",), internal=())
    error = refused(public.perform({"method": "GET", "url": "https://93.184.215.14/"}))
    assert "is an IP address" in error and "TOOLS_INTERNAL_HOSTS" in error


def test_a_redirect_to_a_private_address_is_not_followed(service, dns) -> None:
    dns["evil.test"] = ["127.0.0.1"]  # declared, but not on the allowlist
    http = gate(service, hosts=("http://svc.test:{port}", "http://evil.test:{port}"))
    target = url(service, "/echo", host="evil.test")
    answer = http.perform({"method": "GET", "url": url(service, "/redirect"),
                           "params": {"to": target}})
    error = refused(answer)
    assert "redirected elsewhere, and the redirect was not followed" in error
    assert "evil.test (127.0.0.1) is a loopback address" in error
    assert len(service.received) == 1  # type: ignore[attr-defined]  # the redirect only
    assert [(r["host"], r["status"], bool(r["refused"])) for r in http.records] == [
        ("svc.test", 302, False), ("evil.test", 0, True)]


def test_a_redirect_to_a_metadata_address_literal_is_not_followed(service, dns) -> None:
    http = gate(service)
    answer = http.perform({"method": "GET", "url": url(service, "/redirect"),
                           "params": {"to": "http://169.254.169.254/latest/meta-data/"}})
    assert "169.254.169.254 is not one of the hosts" in refused(answer)


def test_a_redirect_to_an_undeclared_host_is_not_followed(service, dns) -> None:
    dns["elsewhere.test"] = ["127.0.0.1"]
    http = gate(service)
    answer = http.perform({"method": "GET", "url": url(service, "/redirect"),
                           "params": {"to": url(service, host="elsewhere.test")}})
    assert "elsewhere.test:" in refused(answer)
    assert "is not one of the hosts this plugin declared" in answer["error"]


def test_redirects_are_followed_to_declared_hosts_and_at_most_five(service, dns) -> None:
    http = gate(service)
    answer = http.perform({"method": "POST", "url": url(service, "/redirect"),
                           "params": {"to": "/echo", "status": "303"}, "json": {"a": 1}})
    assert answer["ok"] and json.loads(body(answer))["method"] == "GET"
    deep = http.perform({"method": "GET", "url": url(service, "/loop")})
    assert "redirected more than 5 times" in refused(deep, "limit")
    assert len(service.received) == 2 + 6  # type: ignore[attr-defined]


# Secrets.

def test_a_header_template_and_bearer_auth_reach_the_service_with_the_value(service,
                                                                            dns) -> None:
    http = gate(service)
    answer = http.perform({"method": "POST", "url": url(service),
                           "headers": {"X-Api-Key": "key={api_key}", "X-Brace": "{{x}}"},
                           "params": {"token": "{api_key}"},
                           "auth": {"secret": "api_key"}, "json": {"n": 1}})
    assert answer["ok"], answer
    [seen] = service.received  # type: ignore[attr-defined]
    assert seen["headers"]["x-api-key"] == f"key={SECRET}"
    assert seen["headers"]["x-brace"] == "{x}"
    assert seen["headers"]["authorization"] == f"Bearer {SECRET}"
    assert seen["query"] == {"token": [SECRET]}
    assert seen["body"] == '{"n":1}'


def test_basic_auth_and_an_hmac_signature(service, dns) -> None:
    http = gate(service)
    answer = http.perform({"method": "POST", "url": url(service), "data": {"a": "b"},
                           "auth": {"basic": ["bot", {"secret": "api_key"}]},
                           "sign": {"secret": "signing_key", "header": "X-Hub-Signature-256",
                                    "prefix": "sha256="}})
    assert answer["ok"], answer
    [seen] = service.received  # type: ignore[attr-defined]
    token = base64.b64encode(f"bot:{SECRET}".encode()).decode()
    assert seen["headers"]["authorization"] == f"Basic {token}"
    expected = hmac.new(OTHER_SECRET.encode(), b"a=b", hashlib.sha256).hexdigest()
    assert seen["headers"]["x-hub-signature-256"] == f"sha256={expected}"


def test_an_answer_that_echoes_the_secret_comes_back_blanked(service, dns) -> None:
    http = gate(service)
    answer = http.perform({"method": "GET", "url": url(service), "auth": {"secret": "api_key"},
                           "params": {"token": "{api_key}"}})
    text = json.dumps(answer) + body(answer).decode()
    for form in (SECRET, "s3cr3t-TOKEN-value%2F%2B%3D", "s3cr3t-TOKEN-value\\/+="):
        assert form not in text
    assert answer["headers"]["x-echo-auth"] == "Bearer [secret]"
    assert json.loads(body(answer))["headers"]["authorization"] == "Bearer [secret]"
    assert "[secret]" in answer["url"]


_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{4,}={0,2}")


def recoverable(text: str, secret: str = SECRET) -> list[str]:
    """The pieces of `secret` (4 characters or more) that can be read in `text`: as it is,
    URL-decoded, or base64-decoded from any of its runs at any offset."""
    readings = [text, unquote(text), unquote_plus(text)]
    for run in _BASE64_RUN.findall(text):
        for start in range(4):
            chunk = run.rstrip("=")[start:]
            chunk = chunk[:len(chunk) - len(chunk) % 4]
            for decode in (base64.b64decode, base64.urlsafe_b64decode):
                try:
                    readings.append(decode(chunk).decode("latin-1"))
                except ValueError:
                    pass
    pieces = {secret[i:i + 4] for i in range(len(secret) - 3)}
    return sorted(piece for piece in pieces if any(piece in reading for reading in readings))


def answer_text(answer: dict[str, Any]) -> str:
    return json.dumps(answer) + body(answer).decode("latin-1")


def test_an_echo_of_basic_auth_gives_back_nothing_of_the_secret(service, dns) -> None:
    """The issue's case: ("bot", api.secret(...)) sent to a service that echoes its headers."""
    http = gate(service)
    answer = http.perform({"method": "GET", "url": url(service),
                           "auth": {"basic": ["bot", {"secret": "api_key"}]}})
    assert answer["ok"], answer
    assert answer["headers"]["x-echo-auth"] == "Basic [secret]"
    assert json.loads(body(answer))["headers"]["authorization"] == "Basic [secret]"
    token = base64.b64encode(f"bot:{SECRET}".encode()).decode()
    assert token not in answer_text(answer) and recoverable(answer_text(answer)) == []


def test_a_template_and_its_surrounding_words_echoed_in_base64_are_blanked(service,
                                                                           dns) -> None:
    http = gate(service)
    answer = http.perform({"method": "GET", "url": url(service, "/headers-b64"),
                           "headers": {"X-Api-Key": "key={api_key};v=1", "X-Plain": "kept"},
                           "auth": {"secret": "api_key"}})
    echoed = json.loads(body(answer))
    assert echoed["x-api-key"] == "[secret]" and echoed["authorization"] == "[secret]"
    assert base64.b64decode(echoed["x-plain"]) == b"kept"  # nothing else is touched
    assert recoverable(answer_text(answer)) == []


def test_an_echo_of_the_whole_request_in_base64_gives_back_nothing_of_a_secret(service,
                                                                                dns) -> None:
    """Wherever a secret falls in a longer base64 text, its whole groups are blanked: at most
    two bytes at each end stay readable, never four in a row."""
    http = gate(service)
    for auth in ({"basic": ["bot", {"secret": "api_key"}]}, {"secret": "api_key"}):
        answer = http.perform({
            "method": "POST", "url": url(service, "/b64/{api_key}"), "auth": auth,
            "params": {"t": "{api_key}"}, "headers": {"X-K": "a{api_key}", "X-L": "ab{api_key}"},
            "sign": {"secret": "signing_key"}, "data": {"a": "b"}})
        assert answer["ok"], answer
        assert "[secret]" in body(answer).decode()
        assert recoverable(answer_text(answer)) == []
        assert recoverable(answer_text(answer), OTHER_SECRET) == []
    # what the service was sent held the secret, in each of those places
    assert all(recoverable(json.dumps(seen)) for seen in service.received)  # type: ignore[attr-defined]


def test_a_signature_echoed_back_is_blanked(service, dns) -> None:
    http = gate(service)
    answer = http.perform({"method": "POST", "url": url(service), "data": {"a": "b"},
                           "sign": {"secret": "signing_key", "header": "X-Sig",
                                    "prefix": "sha256="}})
    expected = hmac.new(OTHER_SECRET.encode(), b"a=b", hashlib.sha256).hexdigest()
    assert json.loads(body(answer))["headers"]["x-sig"] == "sha256=[secret]"
    assert expected not in answer_text(answer)


def test_a_secret_in_the_path_is_blanked_as_the_gate_writes_it() -> None:
    secrets = Secrets({"k": "a b/c?d=e"})
    sent = quote(secrets.fill("/v1/{k}/items", "url's path"), safe=PATH_SAFE)
    assert sent == "/v1/a%20b/c%3Fd=e/items"
    assert secrets.blank(sent) == "/v1/[secret]/items"
    assert secrets.blank(base64.b64encode(b"/v1/a b/c?d=e/items").decode()) == "[secret]"


def test_a_secret_for_an_undeclared_host_is_refused(service, dns) -> None:
    dns["collector.evil"] = ["127.0.0.1"]
    http = gate(service, internal=("svc.test", "collector.evil"))
    answer = http.perform({"method": "GET", "url": url(service, host="collector.evil"),
                           "headers": {"Authorization": "Bearer {api_key}"}})
    assert "collector.evil:" in refused(answer)
    assert service.received == []  # type: ignore[attr-defined]


def test_secrets_are_dropped_on_a_redirect_to_another_declared_host(service, dns) -> None:
    dns["b.svc.test"] = ["127.0.0.1"]
    http = gate(service, hosts=("http://svc.test:{port}", "http://b.svc.test:{port}"),
                internal=("svc.test", "b.svc.test"))
    answer = http.perform({"method": "GET", "url": url(service, "/redirect"),
                           "params": {"to": url(service, host="b.svc.test")},
                           "auth": {"secret": "api_key"}, "headers": {"X-K": "{api_key}",
                                                                      "X-Plain": "kept"}})
    assert answer["ok"], answer
    first, second = service.received  # type: ignore[attr-defined]
    assert first["headers"]["authorization"] == f"Bearer {SECRET}"
    assert "authorization" not in second["headers"] and "x-k" not in second["headers"]
    assert second["headers"]["x-plain"] == "kept"


def test_an_unknown_secret_names_the_ones_the_plugin_declared(service, dns) -> None:
    http = gate(service)
    error = refused(http.perform({"method": "GET", "url": url(service),
                                  "headers": {"X-K": "{apikey}"}}))
    assert "'apikey' is not a secret setting of this plugin" in error
    assert "(its secret settings: api_key, signing_key)" in error
    assert "lone '{'" in refused(http.perform({"method": "GET", "url": url(service),
                                               "headers": {"X-K": "{"}}))
    assert service.received == []  # type: ignore[attr-defined]


def test_records_hold_no_query_values_and_no_secrets(service, dns) -> None:
    http = gate(service)
    http.perform({"method": "GET", "url": url(service) + "?page=page-value-7",
                  "params": {"token": "{api_key}", "q": "query-value-9"},
                  "headers": {"X-K": "{api_key}"}})
    http.perform({"method": "GET", "url": "https://nowhere.example/?k=query-value-8"})
    [sent, refusal] = http.records
    assert sent == {"method": "GET", "host": "svc.test", "path": "/echo?page&token&q",
                    "status": 200, "bytes": sent["bytes"], "ms": sent["ms"], "refused": ""}
    assert sent["bytes"] > 0 and refusal["refused"].startswith("api.http: nowhere.example")
    text = json.dumps(http.records)
    for value in (SECRET, "query-value", "page-value"):
        assert value not in text


def test_records_of_words_the_plugin_chose_are_storable(service, dns) -> None:
    """A plugin that writes to the channel itself can send any method or parameter name: what
    goes on the call's log holds no NUL and no lone surrogate (PostgreSQL keeps neither)."""
    http = gate(service)
    http.perform({"method": "G\x00\ud800", "url": url(service)})
    http.perform({"method": "GET", "url": url(service), "params": {"a\x00b": "1"}})
    text = json.dumps(http.records, ensure_ascii=False)
    assert "\x00" not in text and "\ud800" not in text
    assert http.records[0]["method"] == "G\ufffd\ufffd" and http.records[1]["status"] == 200
    assert http.records[1]["path"] == "/echo?a\ufffdb"


# Limits.

def test_too_many_requests(service, dns) -> None:
    http = gate(service, max_requests=2)
    assert http.perform({"method": "GET", "url": url(service)})["ok"]
    assert http.perform({"method": "GET", "url": url(service)})["ok"]
    error = refused(http.perform({"method": "GET", "url": url(service)}), "limit")
    assert "already made its 2 requests" in error
    assert len(service.received) == 2  # type: ignore[attr-defined]
    assert len(http.records) == 3 and http.records[-1]["refused"] == error


@pytest.mark.parametrize("path", ["/big?n=5000", "/chunked?n=5000", "/gzip-bomb"])
def test_an_oversized_answer_is_cut(service, dns, path: str) -> None:
    http = gate(service, max_response_bytes=4000)
    error = refused(http.perform({"method": "GET", "url": url(service, path)}), "too_large")
    assert "larger than 3 KB" in error
    assert http.perform({"method": "GET", "url": url(service, "/big?n=4000")})["ok"]


def test_a_gzip_answer_is_decoded_within_the_limit(service, dns) -> None:
    answer = gate(service).perform({"method": "GET", "url": url(service, "/gzip")})
    assert body(answer) == b"hello " * 10
    assert "content-encoding" not in answer["headers"]


def test_a_slow_answer_times_out(service, dns) -> None:
    http = gate(service, timeout_s=0.5)
    started = time.monotonic()
    error = refused(http.perform({"method": "GET", "url": url(service, "/slow?s=3")}),
                    "timeout")
    assert time.monotonic() - started < 1.5
    assert "did not answer in time" in error


def test_a_trickling_answer_is_stopped_at_the_time_limit(service, dns) -> None:
    http = gate(service, timeout_s=10)
    started = time.monotonic()
    answer = http.perform({"method": "GET", "url": url(service, "/trickle"), "timeout": 0.6})
    refused(answer, "timeout")
    assert time.monotonic() - started < 1.5


def test_the_calls_deadline_bounds_every_request(service, dns) -> None:
    port = service.server_address[1]
    policy = HttpPolicy(hosts=(parse_host_rule(f"http://svc.test:{port}"),),
                        internal_hosts=frozenset({"svc.test"}), secrets={})
    late = HttpGate(policy, deadline=time.monotonic() - 1)
    assert "no time left" in refused(late.perform({"method": "GET", "url": url(service)}),
                                     "timeout")
    soon = HttpGate(policy, deadline=time.monotonic() + 0.4)
    started = time.monotonic()
    refused(soon.perform({"method": "GET", "url": url(service, "/slow?s=3")}), "timeout")
    assert time.monotonic() - started < 1.2


# The request's shape.

@pytest.mark.parametrize(("request_", "words"), [
    ({"method": "TRACE", "url": "http://svc.test/"}, "the method must be one of"),
    ({"method": "GET", "url": "http://svc.test/", "cookies": {}}, "unknown request key"),
    ({"method": "GET", "url": "http://svc.test/", "headers": {"Host": "x"}},
     "is set by the portal"),
    ({"method": "GET", "url": "http://svc.test/", "headers": {"X": "a\r\nB: c"}},
     "must be one line"),
    ({"method": "POST", "url": "http://svc.test/", "json": {}, "data": {}}, "give one body"),
    ({"method": "GET", "url": "http://svc.test/", "timeout": -1}, "timeout must be a number"),
    ({"method": "GET", "url": "http://svc.test/", "auth": {"password": "x"}}, "auth must be"),
    ({"method": "GET", "url": "http://svc.test/", "headers": {"X": "café"}}, "must be ASCII"),
    ({"method": "GET", "url": "http://[::1/"}, "is not a URL"),
])
def test_a_malformed_request_is_refused(service, dns, request_: dict[str, Any],
                                        words: str) -> None:
    request_["url"] = request_["url"].replace("svc.test/", f"svc.test:{service.server_address[1]}/")
    assert words in refused(gate(service).perform(request_))
    assert service.received == []  # type: ignore[attr-defined]


def test_an_unexpected_failure_is_an_answer_not_a_crash(service, dns,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    http = gate(service)

    def broken(*args: Any) -> Any:
        raise RuntimeError(SECRET)

    monkeypatch.setattr(http, "_exchange", broken)
    answer = http.perform({"method": "GET", "url": url(service)})
    assert answer == {"ok": False, "error_kind": "unreachable",
                      "error": "api.http: the request could not be carried out (RuntimeError);"
                               " check its url, headers and body"}
    assert http.records[-1]["refused"] == answer["error"]


def test_the_portals_log_never_sees_a_request_url_or_its_secrets(
        service, dns, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("DEBUG"):
        answer = gate(service).perform({"method": "GET", "url": url(service),
                                        "params": {"token": "{api_key}"}})
    assert answer["ok"]
    assert SECRET not in caplog.text and "token=" not in caplog.text


def test_proxy_settings_of_the_environment_are_ignored(service, dns,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("ALL_PROXY", "http://127.0.0.1:9")
    assert gate(service).perform({"method": "GET", "url": url(service)})["ok"]


# TLS: the connection goes to 127.0.0.1, the certificate is checked for the name.

def _certificates(name: str) -> tuple[bytes, bytes, bytes]:
    """A test CA (PEM) and a certificate for `name` it signed, with its key (PEM)."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "http gate test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(1)
          .not_valid_before(now - datetime.timedelta(hours=1))
          .not_valid_after(now + datetime.timedelta(hours=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(2)
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    return (ca.public_bytes(pem), leaf.public_bytes(pem),
            key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


@pytest.fixture
def tls_service(tmp_path: Any) -> Iterator[tuple[ThreadingHTTPServer, bytes, list[str]]]:
    """The loopback service over TLS with a certificate for svc.test; the SNI names it saw."""
    import ssl

    ca, leaf, key = _certificates("svc.test")
    (tmp_path / "leaf.pem").write_bytes(leaf + key)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "leaf.pem")
    seen_sni: list[str] = []
    context.sni_callback = lambda sock, name, ctx: seen_sni.append(str(name))
    server = QuietServer(("127.0.0.1", 0), Service)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.daemon_threads = True
    server.received = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                              daemon=True)
    thread.start()
    yield server, ca, seen_sni
    server.shutdown()
    server.server_close()


def _trusting(monkeypatch: pytest.MonkeyPatch, ca: bytes) -> None:
    import ssl

    from autocoder.calling import http_gate

    monkeypatch.setattr(http_gate, "_SSL_CONTEXT", [ssl.create_default_context(
        cadata=ca.decode())])


def test_https_is_pinned_to_the_address_and_verified_for_the_name(tls_service, dns,
                                                                   monkeypatch) -> None:
    server, ca, seen_sni = tls_service
    _trusting(monkeypatch, ca)
    http = gate(server, hosts=("svc.test:{port}",))
    port = server.server_address[1]
    answer = http.perform({"method": "GET", "url": f"https://svc.test:{port}/echo"})
    assert answer["ok"], answer
    assert seen_sni == ["svc.test"]
    assert json.loads(body(answer))["headers"]["host"] == f"svc.test:{port}"
    assert dns["_lookups"] == ["svc.test"]


def test_a_certificate_for_another_name_is_refused(tls_service, dns, monkeypatch) -> None:
    server, ca, _ = tls_service
    _trusting(monkeypatch, ca)
    dns["other.test"] = ["127.0.0.1"]  # the same server, which has no certificate for it
    http = gate(server, hosts=("other.test:{port}",), internal=("other.test",))
    answer = http.perform({"method": "GET",
                           "url": f"https://other.test:{server.server_address[1]}/echo"})
    assert "certificate could not be verified" in refused(answer, "unreachable")
    assert server.received == []  # type: ignore[attr-defined]


def test_a_certificate_nobody_trusts_is_refused(tls_service, dns) -> None:
    server, _, _ = tls_service
    http = gate(server, hosts=("svc.test:{port}",))
    port = server.server_address[1]
    answer = http.perform({"method": "GET", "url": f"https://svc.test:{port}/"})
    assert "certificate could not be verified" in refused(answer, "unreachable")
