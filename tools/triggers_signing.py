"""Who sent a webhook: the signature each kind of sender puts on it, checked against the
trigger's secret (docs/tools.md, "Triggers", lists the headers).

- GitHub: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>`; the delivery's id in
  `X-GitHub-Delivery`. GitHub signs no time, so a replay is caught by that id alone.
- Slack: `X-Slack-Signature: v0=<hex HMAC of "v0:<timestamp>:<body>">` with the timestamp in
  `X-Slack-Request-Timestamp`.
- Stripe: `Stripe-Signature: t=<timestamp>,v1=<hex HMAC of "<timestamp>.<body>">` (several
  v1 entries while Stripe rolls a secret: one matching is enough).
- plain, for any other system: `X-Signature-256: sha256=<hex HMAC of the body>`, or with an
  `X-Signature-Timestamp: <unix seconds>` header the HMAC of "<timestamp>.<body>" (then the
  time is checked too); an optional `X-Delivery-Id` catches a replay.

A timestamp more than TOLERANCE_S from the portal's clock is refused like a wrong signature
(someone replaying an old request holds a valid one). Comparisons are constant-time.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass

TOLERANCE_S = 300

GITHUB, SLACK, STRIPE, PLAIN = "github", "slack", "stripe", "plain"
SCHEMES = (GITHUB, SLACK, STRIPE, PLAIN)

# The header each scheme's signature comes in, as the page and the docs name it.
SIGNATURE_HEADER = {GITHUB: "X-Hub-Signature-256", SLACK: "X-Slack-Signature",
                    STRIPE: "Stripe-Signature", PLAIN: "X-Signature-256"}
KEY_MISSING = ("This trigger has no signing secret yet: a team admin enters the sender's on the "
             "tool's Triggers page. Nothing was run.")


class SignatureRefused(Exception):
    """Not signed with the trigger's secret (or signed too long ago); `str()` says which,
    without anything of the secret or of the signature sent."""


@dataclass(frozen=True)
class Signed:
    """What a verified request's headers said: the sender's delivery id ("" if none) and the
    signed timestamp (None when the scheme signs none)."""

    delivery_id: str = ""
    timestamp: int | None = None


def hmac_hex(secret: str, message: bytes) -> str:
    return hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()


def signature_verify(*, scheme: str, secret: str, headers: Mapping[str, str], body: bytes,
                     now: float) -> Signed:
    """The request's `Signed` facts, or SignatureRefused. `headers` are read case-blind
    (Django's request.headers)."""
    if not secret:
        raise SignatureRefused(KEY_MISSING)
    if scheme == GITHUB:
        _matches(secret, body, _prefixed(headers, SIGNATURE_HEADER[GITHUB], "sha256="))
        return Signed(delivery_id=headers.get("X-GitHub-Delivery", "").strip())
    if scheme == SLACK:
        raw_stamp = headers.get("X-Slack-Request-Timestamp", "").strip()
        stamp = _timestamp(raw_stamp, "X-Slack-Request-Timestamp")
        given = _prefixed(headers, SIGNATURE_HEADER[SLACK], "v0=")
        _matches(secret, b"v0:" + raw_stamp.encode() + b":" + body, given)
        return Signed(timestamp=_fresh(stamp, now))
    if scheme == STRIPE:
        return _stripe(secret, headers.get(SIGNATURE_HEADER[STRIPE], ""), body, now)
    if scheme == PLAIN:
        given = _prefixed(headers, SIGNATURE_HEADER[PLAIN], "sha256=")
        delivery_id = headers.get("X-Delivery-Id", "").strip()
        raw_stamp = headers.get("X-Signature-Timestamp", "").strip()
        if not raw_stamp:
            _matches(secret, body, given)
            return Signed(delivery_id=delivery_id)
        stamp = _timestamp(raw_stamp, "X-Signature-Timestamp")
        _matches(secret, raw_stamp.encode() + b"." + body, given)
        return Signed(delivery_id=delivery_id, timestamp=_fresh(stamp, now))
    raise SignatureRefused(f"This trigger's kind of signature ({scheme!r}) is unknown.")


def _prefixed(headers: Mapping[str, str], name: str, prefix: str) -> str:
    value = headers.get(name, "").strip()
    if not value:
        raise SignatureRefused(f"The request is not signed: the {name} header is missing.")
    if not value.startswith(prefix):
        raise SignatureRefused(f"The {name} header must start with {prefix}")
    return value[len(prefix):]


def _matches(secret: str, message: bytes, given: str) -> None:
    if not hmac.compare_digest(hmac_hex(secret, message), given.strip().lower()):
        raise SignatureRefused("The signature does not match: the request was not signed with "
                               "this trigger's secret, or its body was changed on the way.")


def _timestamp(text: str, header: str) -> int:
    text = text.strip()
    if not text:
        raise SignatureRefused(f"The request is not signed: the {header} header is missing.")
    if not text.isdigit() or len(text) > 12:
        raise SignatureRefused(f"The {header} header must be a time in Unix seconds.")
    return int(text)


def _fresh(stamp: int, now: float) -> int:
    if abs(now - stamp) > TOLERANCE_S:
        raise SignatureRefused(f"The signed time is more than {TOLERANCE_S // 60} minutes from "
                               "the portal's clock: an old request sent again is not run.")
    return stamp


def _stripe(secret: str, header: str, body: bytes, now: float) -> Signed:
    if not header.strip():
        raise SignatureRefused("The request is not signed: the Stripe-Signature header is "
                               "missing.")
    stamps, signatures = [], []
    for part in header.split(","):
        key, _, value = part.strip().partition("=")
        if key == "t":
            stamps.append(value)
        elif key == "v1":
            signatures.append(value)
    if len(stamps) != 1 or not signatures:
        raise SignatureRefused("The Stripe-Signature header must hold t=<time> and v1=<hex>.")
    stamp = _timestamp(stamps[0], "Stripe-Signature t=")
    expected = hmac_hex(secret, stamps[0].strip().encode() + b"." + body)
    # every entry compared, so the time taken says nothing about which one matched
    matched = [hmac.compare_digest(expected, given.strip().lower()) for given in signatures]
    if not any(matched):
        raise SignatureRefused("The signature does not match: the request was not signed with "
                               "this trigger's secret, or its body was changed on the way.")
    return Signed(timestamp=_fresh(stamp, now))
