"""Which addresses a plugin's `api.http` may reach (autocoder/calling/http_gate.py; docs/safety.md,
"Plugins that reach other services").

Every address a host name resolves to must be public. Loopback, private, link-local, CGNAT
(100.64/10), multicast, reserved, unspecified and other non-global addresses are refused, as
are the IPv6 forms that carry such an IPv4 address (mapped, compatible, 6to4, Teredo, NAT64),
unless a site admin listed the host (or the address) in TOOLS_INTERNAL_HOSTS. Cloud metadata
services and the unspecified address are refused even then.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from autocoder.plugins.hosts import HostError, normalise_host

METADATA = frozenset(ipaddress.ip_address(a) for a in (
    "169.254.169.254", "169.254.170.2", "100.100.100.200", "fd00:ec2::254"))
CGNAT = ipaddress.ip_network("100.64.0.0/10")
NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
NEVER = ("a cloud metadata address", "the unspecified address")


def internal_set(entries: Iterable[str]) -> frozenset[str]:
    """TOOLS_INTERNAL_HOSTS as the gate compares it: names and IP addresses normalised; an
    entry that is neither is left out."""
    found = set()
    for entry in entries:
        try:
            found.add(normalise_host(entry.strip()))
        except HostError:
            continue
    return frozenset(found)


def address_problem(address: str) -> str:
    """What makes an address one a plugin must not reach ("" for a public address): its kind in
    words. IPv6 forms that carry an IPv4 address (mapped, compatible, 6to4, Teredo, NAT64) are
    judged by the IPv4 address they carry."""
    ip = ipaddress.ip_address(address)
    if ip in METADATA:
        return "a cloud metadata address"
    if isinstance(ip, ipaddress.IPv6Address):
        carried = _carried_ipv4(ip)
        if carried is not None:
            problem = address_problem(str(carried))
            return problem or "an IPv6 form of an IPv4 address"
    kinds = (("is_unspecified", "the unspecified address"), ("is_loopback", "a loopback address"),
             ("is_link_local", "a link-local address"), ("is_multicast", "a multicast address"),
             ("is_private", "a private address"), ("is_reserved", "a reserved address"))
    for attribute, words in kinds:
        if getattr(ip, attribute):
            return words
    if isinstance(ip, ipaddress.IPv4Address) and ip in CGNAT:
        return "a shared (carrier-grade NAT) address"
    if not ip.is_global:
        return "not a public address"
    return ""


def _carried_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if any(ip in network for network in NAT64):
        return ipaddress.IPv4Address(ip.packed[-4:])
    if ip.packed[:12] == bytes(12) and int(ip) > 1:  # IPv4-compatible ::a.b.c.d (deprecated)
        return ipaddress.IPv4Address(ip.packed[-4:])
    return None


def may_be_internal(address: str) -> bool:
    """Whether TOOLS_INTERNAL_HOSTS can open an address: never a metadata service or the
    unspecified address (in any of its forms)."""
    return address_problem(address) not in NEVER


def private_sentence(host: str, address: str, problem: str) -> str:
    shown = host if host == address else f"{host} ({address})"
    return (f"api.http: {shown} is {problem}, which plugins may not reach: the portal's own"
            " network is off limits unless a site admin lists the host in"
            " TOOLS_INTERNAL_HOSTS")
