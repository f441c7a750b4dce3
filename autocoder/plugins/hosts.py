"""`[permissions] hosts` of plugin.toml: where a plugin's `api.http` may connect (docs/plugins.md,
"Declaring the hosts a plugin reaches"; docs/safety.md, "Plugins that reach other services").

```toml
[permissions]
hosts = ["hooks.slack.com", "*.example.com", "api.example.com:8443", "http://intranet.corp"]
```

Each entry is one `HostRule`:

- `hooks.slack.com`: exactly that host name, https, port 443;
- `*.example.com`: any sub-domain of example.com (`a.example.com`, `a.b.example.com`), not
  example.com itself; the suffix has at least two labels (`*.com` is refused);
- `api.example.com:8443`: another port (without one: 443 for https, 80 for http);
- `http://intranet.corp`: plain http, only when written so (the default is https only);
- an IP address (`10.0.0.5`, `[fd00::5]`): accepted here, but the HTTP gate connects to an IP
  address only when a site admin listed it in TOOLS_INTERNAL_HOSTS (autocoder/calling/http_gate.py).

Names are normalised: lower case, a trailing dot removed, international names in their IDNA
(xn--) form. A path, a query, a user name, a wildcard anywhere but in front, or a name that is
not a DNS name is refused with a sentence naming the entry.

Standard library only besides `idna` (and without it, see `_ascii`): the plugins' test harness
ships this very file into the sandbox, so a plugin's tests meet the host's rule.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

try:
    import idna
except ImportError:  # the plugins' test harness: this file runs in the sandbox, stdlib only
    idna = None  # type: ignore[assignment]

SCHEMES = ("https", "http")
DEFAULT_PORTS = {"https": 443, "http": 80}
MAX_HOSTS = 50
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")


class HostError(ValueError):
    """A host entry or a URL's host that breaks the rule; the message says why, in words."""


@dataclass(frozen=True)
class HostRule:
    """One entry of `[permissions] hosts`: a scheme, a host (a name, a `*.` suffix or an IP
    address) and a port (None: the scheme's default port)."""

    host: str  # normalised: a DNS name in ASCII, the suffix of a wildcard, or an IP address
    scheme: str = "https"
    port: int | None = None
    wildcard: bool = False  # True: sub-domains of `host` match, `host` itself does not

    def __post_init__(self) -> None:
        if self.scheme not in SCHEMES:
            raise ValueError(f"HostRule.scheme must be https or http, not {self.scheme!r}")
        if self.port is not None and not (isinstance(self.port, int) and 0 < self.port < 65536):
            raise ValueError(f"HostRule.port must be 1-65535 or None, not {self.port!r}")
        if normalise_host(self.host) != self.host:
            raise ValueError(f"HostRule.host must be normalised, not {self.host!r}")
        if self.wildcard and (is_ip(self.host) or self.host.count(".") < 1):
            raise ValueError(f"HostRule: *.{self.host} is not a suffix a plugin may declare")

    @property
    def effective_port(self) -> int:
        return self.port if self.port is not None else DEFAULT_PORTS[self.scheme]

    @property
    def is_ip(self) -> bool:
        return is_ip(self.host)

    def matches(self, scheme: str, host: str, port: int | None) -> bool:
        """Whether a request to scheme://host:port is one this rule allows (port None: the
        scheme's default). `host` is normalised first; a host that is not valid never matches."""
        scheme = scheme.lower()
        if scheme != self.scheme:
            return False
        if (port if port is not None else DEFAULT_PORTS.get(scheme)) != self.effective_port:
            return False
        try:
            name = normalise_host(host)
        except HostError:
            return False
        if self.wildcard:
            return not is_ip(name) and name.endswith("." + self.host)
        return name == self.host

    def text(self) -> str:
        """The entry as plugin.toml writes it (`parse_host_rule(rule.text()) == rule`)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        host = f"*.{host}" if self.wildcard else host
        port = f":{self.port}" if self.port is not None else ""
        scheme = "http://" if self.scheme == "http" else ""
        return f"{scheme}{host}{port}"

    def __str__(self) -> str:
        return self.text()


def is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def normalise_host(host: str) -> str:
    """A host as the rules compare it: an IP address in its canonical form (IPv6 without
    brackets), or a DNS name in lower-case ASCII (IDNA) without a trailing dot; HostError says
    why it is neither."""
    if not isinstance(host, str) or not host:
        raise HostError("the host is empty")
    if host.startswith("[") and host.endswith("]"):
        return str(_ipv6(host[1:-1]))
    if ":" in host:
        return str(_ipv6(host))
    name = host[:-1] if host.endswith(".") else host
    if re.fullmatch(r"[0-9.]+", name):
        try:
            return str(ipaddress.IPv4Address(name))
        except ValueError:
            raise HostError(f"{host!r} is neither a host name nor an IPv4 address written as"
                            " four numbers (like 10.0.0.5)") from None
    try:
        ascii_name = _ascii(name)
    except (UnicodeError, ValueError):  # idna.IDNAError is a UnicodeError
        raise HostError(f"{host!r} is not a valid host name") from None
    labels = ascii_name.split(".")
    if (len(ascii_name) > 253 or not all(_LABEL.fullmatch(label) for label in labels)
            or labels[-1].isdigit()):
        raise HostError(f"{host!r} is not a valid host name (letters, digits and -"
                        " between dots)")
    return ascii_name


def _ascii(name: str) -> str:
    """The name in IDNA's ASCII form: IDNA 2008 with the UTS 46 mapping, as browsers write it.
    Without the idna package (in the sandbox, where the plugins' test harness uses this rule:
    autocoder/sandbox/pytest_runner.py) the standard library's IDNA 2003 codec, which differs
    only for a few rare characters."""
    if idna is None:
        return name.encode("idna").decode("ascii").lower()
    return str(idna.encode(name, uts46=True).decode("ascii"))


def _ipv6(text: str) -> ipaddress.IPv6Address:
    if "%" in text:
        raise HostError(f"{text!r}: an IPv6 address with a zone (%...) cannot be used")
    try:
        return ipaddress.IPv6Address(text)
    except ValueError:
        raise HostError(f"{text!r} is not an IPv6 address (write one in brackets, like"
                        " [fd00::5])") from None


def parse_host_rule(entry: str) -> HostRule:
    """The rule an entry of `[permissions] hosts` declares; HostError says why it cannot be one."""
    if not isinstance(entry, str):
        raise HostError("must be a string")
    text = entry.strip()
    scheme = "https"
    if "://" in text:
        scheme, _, text = text.partition("://")
        scheme = scheme.lower()
        if scheme not in SCHEMES:
            raise HostError(f"the scheme {scheme!r} is not allowed (https, or http:// written"
                            " in front)")
    if not text:
        raise HostError("has no host")
    if any(char in text for char in "/?#\\"):
        raise HostError("must be a host only, without a path or query (write"
                        " \"api.example.com\", not a URL)")
    if "@" in text:
        raise HostError("must not contain a user name or password (user@...)")
    if any(char.isspace() or ord(char) < 32 for char in text):
        raise HostError("must not contain spaces")
    host, port = split_host_port(text)
    wildcard = host.startswith("*.")
    if wildcard:
        host = host[2:]
    if "*" in host:
        raise HostError("may use * only as a whole first label (\"*.example.com\")")
    name = normalise_host(host)
    if wildcard and is_ip(name):
        raise HostError("an IP address cannot have a *. in front")
    if wildcard and "." not in name:
        raise HostError(f"*.{name} covers too much: write at least two labels after *."
                        " (like \"*.example.com\")")
    if port == DEFAULT_PORTS[scheme]:
        port = None  # the same rule as without the port
    return HostRule(host=name, scheme=scheme, port=port, wildcard=wildcard)


def split_host_port(text: str) -> tuple[str, int | None]:
    """`host`, `host:port`, `[v6]` or `[v6]:port` as its host (as written, brackets kept) and
    port (None: none written); HostError says why it is none of them. The one rule for a
    plugin.toml entry, an address setting's value and a URL's host (autocoder/calling/
    http_gate.py; the plugins' test harness, autocoder/sandbox/plugin_testing.py)."""
    if text.startswith("["):
        host, bracket, rest = text.partition("]")
        if not bracket:
            raise HostError("an IPv6 address in brackets is missing its ]")
        host += "]"
        if rest and not rest.startswith(":"):
            raise HostError("has something after the IPv6 address that is not a :port")
        port_text = rest[1:] if rest else None
    elif text.count(":") > 1:
        raise HostError("an IPv6 address must be written in brackets, like [fd00::5]")
    else:
        host, colon, port_text_ = text.partition(":")
        port_text = port_text_ if colon else None
    if port_text is None:
        return host, None
    if not port_text.isdigit() or not 0 < int(port_text) < 65536 or port_text.startswith("0"):
        raise HostError(f"the port {port_text!r} must be a number from 1 to 65535")
    return host, int(port_text)


def host_rules(value: object, errors: list[str]) -> tuple[HostRule, ...]:
    """The rules of a `[permissions] hosts` value; each problem is appended to `errors` in the
    manifest's words, and the entry is left out (nothing is reachable that was not declared)."""
    where = "plugin.toml: [permissions] hosts"
    if not isinstance(value, list):
        errors.append(f"{where} must be a list of strings, like [\"hooks.slack.com\"]")
        return ()
    if len(value) > MAX_HOSTS:
        errors.append(f"{where} may list at most {MAX_HOSTS} hosts (got {len(value)})")
        return ()
    rules: list[HostRule] = []
    for entry in value:
        if not isinstance(entry, str):
            errors.append(f"{where} entries must be strings (got {entry!r})")
            continue
        try:
            rule = parse_host_rule(entry)
        except HostError as exc:
            errors.append(f"{where} entry {entry!r}: {exc}")
            continue
        if rule not in rules:
            rules.append(rule)
    return tuple(rules)



def address_rule(value: str) -> HostRule:
    """The one host an address setting's value lets api.http reach (docs/plugins.md, "Settings a
    plugin needs"): a host (`bookings.example.org`, `bookings.example.org:8443`) or a URL
    (`https://bookings.example.org/api`; `http://...` only when written so). Never a wildcard;
    HostError says why the value is not an address."""
    text = value.strip() if isinstance(value, str) else ""
    if not text:
        raise HostError("is empty: enter the web address, like https://bookings.example.org")
    if "://" in text:
        scheme, _, rest = text.partition("://")
        entry = f"{scheme}://{rest.split('/', 1)[0].split('?', 1)[0].split('#', 1)[0]}"
        entry = entry.removeprefix("https://") if scheme.lower() == "https" else entry
    else:
        entry = text.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    if "*" in entry:
        raise HostError("must name one host, not a *. pattern")
    rule = parse_host_rule(entry)
    if not rule.is_ip and "." not in rule.host and rule.scheme == "https" and "://" not in text:
        raise HostError(f"{text!r} is not a whole web address: write it with its dots, like"
                        " bookings.example.org")
    return rule


def address_url(value: str) -> str:
    """The base URL an address setting's value stands for (`bookings.example.org` ->
    `https://bookings.example.org`), as a plugin would use it; "" when it is no address."""
    try:
        rule = address_rule(value)
    except HostError:
        return ""
    text = value.strip()
    if "://" in text:
        return text.rstrip("/")
    rest = text.split("/", 1)[1] if "/" in text else ""
    host = f"[{rule.host}]" if ":" in rule.host else rule.host
    port = f":{rule.port}" if rule.port is not None else ""
    return f"{rule.scheme}://{host}{port}" + (f"/{rest}".rstrip("/") if rest else "")
