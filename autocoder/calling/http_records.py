"""What the call's log keeps of each request a plugin's `api.http` made or was refused
(`Invocation.http_requests`, a try's result, the tool page's list): never a secret's value,
never a query value (http_gate.py writes them, invoke.py blanks them once more)."""

from __future__ import annotations

from typing import TypedDict


class RehearsedSend(TypedDict):
    """What a rehearsed request would have carried (http_rehearsal.py): nothing was sent."""

    headers: dict[str, str]
    body: str  # the start of the body, as text


class HttpRecord(TypedDict, total=False):
    method: str
    host: str
    path: str  # with the names of its query parameters, never their values
    status: int  # 0: no answer
    bytes: int
    ms: float
    refused: str  # why the host refused it or it failed, in words ("" when it was answered)
    rehearsal: bool  # a rehearsal's request: not sent
    sent: RehearsedSend
