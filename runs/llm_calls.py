"""Model calls on behalf of a run: the provider for each role, and the record of every call
(LLMCall rows, the run's token counters, the reply streaming to the run page). The loop sees
only `complete` (autocoder/engine/llm_port.py, ModelCalls).

The scripted provider's position is part of the run's durable state, so a step resumed by
another worker continues the script where the last committed step left it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.utils import timezone

from autocoder import realtime
from autocoder.installation import InstallationFault
from autocoder.llm import structured
from autocoder.llm.config import (
    context_tokens,
    fitted_cap,
    prompt_room_chars,
    role_max_tokens,
)
from autocoder.llm.models import ModelPrice
from autocoder.llm.pricing import prices_for
from autocoder.llm.speed import speed_record
from autocoder.llm.types import (
    DEADLINE,
    CallRecord,
    Completion,
    LLMError,
    Message,
    Provider,
    ReplySchema,
)
from runs.budgets import spend_record
from runs.models import LLMCall, Run

logger = logging.getLogger(__name__)

# The run page shows a streaming reply live (templates/projects/run_detail.html, llm_stream):
# one event per half second at most, with the last characters of the text.
STREAM_EVENT = "run.llm_stream"
STREAM_INTERVAL_S = 0.5
STREAM_TAIL_CHARS = 600


ProviderFactory = Callable[[Run, str], Provider]


def run_provider_choice(chosen: str = "", *, script: object | None = None) -> str:
    """What a new run stores as its provider; the one place of the rule below.

    A provider chosen for the run (`generate --provider`, a script handed over) forces every
    role. Otherwise the run stores "" and each role resolves through role_config with the
    run's team, so per-role settings and team overrides apply. The globally configured
    scripted provider is the exception: its script belongs to the run, whose replayed position
    is durable state, so it is stored as a choice.
    """
    from django.conf import settings

    from autocoder.llm.env import normalize_provider

    if chosen:
        return normalize_provider(chosen)
    if script is not None or normalize_provider(settings.LLM_PROVIDER) == "scripted":
        return "scripted"
    return ""


def default_provider_factory(run: Run, role: str) -> Provider:
    """The provider for `role` in `run`: the run's forced choice, else what is configured for
    the role with the team's override on top."""
    from autocoder.llm import provider_for_role

    return provider_for_role(role, team_id=run.project.team_id, provider=run.provider or None)


@dataclass
class RunLLM:
    """Calls the model for one step of `run`; tokens spent are summed for the checkpoint."""

    run: Run
    iteration: int
    factory: ProviderFactory = default_provider_factory
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # How the last reply ended: "stop", "length" (at its cap) or "deadline" (autocoder.llm).
    last_finish_reason: str = ""
    _scripted: Any = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.run.provider == "scripted":
            from autocoder.llm import ScriptedProvider

            self._scripted = ScriptedProvider(self.run.script or {})
            if self.run.script_position:
                self._scripted.restore(self.run.script_position)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def script_position(self) -> dict[str, int]:
        return dict(self._scripted.position()) if self._scripted is not None else {}

    def provider(self, role: str) -> Provider:
        if self._scripted is not None:
            return self._scripted  # type: ignore[no-any-return]
        return self.factory(self.run, role)

    def complete(self, role: str, messages: list[Message],
                 schema: ReplySchema | None = None, *, purpose: str = "",
                 room: int = 1) -> str:
        """The reply text; every attempt is stored as an LLMCall row (costs are real even when
        the step later dies), and the run's token counters move at once. A failure that is
        the installation's (see readiness.call_fault) is raised as an InstallationFault.

        The reply streams to the run page as it is written. It may take as long as it keeps
        streaming, up to the end of the run's wall-time budget: there reading stops and the text
        so far is the reply (the next step then ends the run for its budget). With `schema`,
        the reply is held to it where the model's server allows (autocoder.llm.structured).
        Its cap is the role's (times `room`), fitted to the model's context window beside the
        prompt; `purpose` is kept on the call's record (autocoder/engine/llm_port.py).
        """
        records: list[CallRecord] = []
        # A scripted reply arrives whole and at once: there is nothing to watch.
        stream = None if self._scripted is not None else ReplyStream(
            run_id=self.run.id, role=role, iteration=self.iteration)
        if stream is not None:
            stream.start()
        provider = self.provider(role)
        cap = self._fitted(role, provider, messages, room)
        self.last_finish_reason = ""
        try:
            completion = structured.complete(
                provider, messages, role=role, schema=schema, record=records.append,
                on_text=stream, deadline=self.deadline(), max_tokens=cap)
        except LLMError as error:
            self._store(role, messages, records, reply="", failure=error, purpose=purpose)
            if stream is not None:
                stream.finish("failed")
            fault = self._installation_fault(error, provider)
            if fault is not None:
                raise fault from error  # the run is held, never failed (docs/llm.md)
            raise
        self.last_finish_reason = completion.finish_reason
        self._store(role, messages, records, reply=completion.text, completion=completion,
                    purpose=purpose)
        speed_record(provider, completion)  # the Model page's measured speed (docs/llm.md)
        if stream is not None:
            stream.finish("cut" if completion.finish_reason == DEADLINE else "done",
                          tokens=completion.completion_tokens)
        return completion.text

    def reply_cap(self, role: str, messages: list[Message], *, room: int = 1) -> int:
        return self._fitted(role, self.provider(role), messages, room)

    def _fitted(self, role: str, provider: Provider, messages: list[Message], room: int) -> int:
        return fitted_cap(self._role_cap(role, provider) * max(1, room),
                          context=self._context(provider),
                          prompt_chars=sum(len(m.content) for m in messages))

    def prompt_chars(self, role: str) -> int | None:
        """The most characters `role`'s prompt may have for its reply to keep its room in the
        model's context window (None: the window is not known)."""
        provider = self.provider(role)
        return prompt_room_chars(self._role_cap(role, provider),
                                 context=self._context(provider))

    def _role_cap(self, role: str, provider: Provider) -> int:
        # A real provider's configuration carries the role's cap (role_config, with the team's
        # override); the scripted one is held to the same cap, so a long scripted reply stops
        # as a model's would.
        config = getattr(provider, "config", None) if self._scripted is None else None
        return int(getattr(config, "max_tokens", 0) or role_max_tokens(role))

    def _context(self, provider: Provider) -> int:
        return context_tokens(getattr(provider, "config", None))

    def _installation_fault(self, error: LLMError, provider: Provider) -> InstallationFault | None:
        """The installation's fault in `error` (the model is unreachable, refuses the key, does
        not know the model, is rate limited or fails), None when the request itself failed."""
        if self._scripted is not None:
            return None
        from autocoder.llm.readiness import call_fault

        return call_fault(error, getattr(provider, "config", None))

    def deadline(self) -> float | None:
        """The end of the run's wall-time budget on this process's monotonic clock (time spent
        waiting for people does not count, as in loop.wall_time_exhausted)."""
        if not self.run.started_at or not self.run.max_wall_s:
            return None
        used = (timezone.now() - self.run.started_at).total_seconds() - self.run.waited_s
        return time.monotonic() + self.run.max_wall_s - used

    def _store(self, role: str, messages: list[Message], records: list[CallRecord], *,
               reply: str, completion: Completion | None = None,
               failure: LLMError | None = None, purpose: str = "") -> None:
        if not records:
            records = [_record_from(role, completion, failure)]
        sent = [{"role": m.role, "content": m.content} for m in messages]
        prices = prices_for(rec.model for rec in records
                            if rec.prompt_tokens or rec.completion_tokens)
        rows = [LLMCall(
            run=self.run, iteration=self.iteration, role=role, provider=rec.provider,
            model=rec.model, prompt_tokens=rec.prompt_tokens,
            completion_tokens=rec.completion_tokens, latency_ms=rec.latency_ms,
            attempts=rec.attempts, error=rec.error or "", messages=sent,
            reply=reply if rec.error is None else "",
            finish_reason=(completion.finish_reason if completion is not None
                           and rec.error is None else ""),
            reply_form=(completion.reply_form if completion is not None
                        and rec.error is None else ""),
            cost=_priced(prices, rec), purpose=purpose,
        ) for rec in records]
        LLMCall.objects.bulk_create(rows)
        prompt = sum(rec.prompt_tokens for rec in records)
        completion_tokens = sum(rec.completion_tokens for rec in records)
        cost = sum((row.cost for row in rows if row.cost is not None), Decimal(0))
        unpriced = sum(row.prompt_tokens + row.completion_tokens for row in rows
                       if row.cost is None)
        self.prompt_tokens += prompt
        self.completion_tokens += completion_tokens
        if prompt or completion_tokens:
            from django.db.models import F

            Run.objects.filter(id=self.run.id).update(
                tokens_prompt=F("tokens_prompt") + prompt,
                tokens_completion=F("tokens_completion") + completion_tokens,
                cost=F("cost") + cost, tokens_unpriced=F("tokens_unpriced") + unpriced,
            )
            spend_record(team_id=self.run.project.team_id, cost=cost)


@dataclass
class ReplyStream:
    """Shows a reply on the run page while the model writes it: events of kind
    `run.llm_stream` to the run's group with the role, the tokens so far and the tail of the
    text, at most one per `interval_s` (plus the first and the last).

    Best effort: these events are progress, not state (the page gets the reply from the
    database once the step commits), so a failure to publish is logged once and stops the
    publishing for this reply, never the call.
    """

    run_id: int
    role: str
    iteration: int
    interval_s: float = STREAM_INTERVAL_S
    chunks: int = 0
    text: str = ""
    _sent_at: float = field(default=float("-inf"), init=False)
    _broken: bool = field(default=False, init=False)

    def start(self) -> None:
        self._send("reading")  # the model reads the prompt before its first token

    def __call__(self, text: str) -> None:
        if len(text) < len(self.text):
            self.chunks = 0  # a retried attempt starts its text again
        self.chunks += 1
        self.text = text
        if time.monotonic() - self._sent_at >= self.interval_s:
            self._send("writing")

    def finish(self, state: str, *, tokens: int | None = None) -> None:
        self._send(state, tokens)

    def _send(self, state: str, tokens: int | None = None) -> None:
        if self._broken:
            return
        self._sent_at = time.monotonic()
        data = {"run_id": self.run_id, "iteration": self.iteration, "role": self.role,
                "state": state, "tokens": self.chunks if tokens is None else tokens,
                "tail": self.text[-STREAM_TAIL_CHARS:]}
        try:
            realtime.publish(realtime.run_group(self.run_id), {"kind": STREAM_EVENT,
                                                              "data": data})
        except Exception:  # the channel layer is a convenience; the call goes on without it
            self._broken = True
            logger.warning("could not publish the %s reply of run %s as it streams",
                           self.role, self.run_id, exc_info=True)


def _priced(prices: dict[str, ModelPrice], rec: CallRecord) -> Decimal | None:
    """The call's cost at its model's price; None for a model without a price (a call that
    spent no tokens costs nothing)."""
    if not (rec.prompt_tokens or rec.completion_tokens):
        return Decimal(0)
    price = prices.get(rec.model)
    if price is None:
        return None
    return price.cost(prompt_tokens=rec.prompt_tokens, completion_tokens=rec.completion_tokens)


def _record_from(role: str, completion: Completion | None, failure: LLMError | None) -> CallRecord:
    """A record for a provider that did not report through the callback."""
    if completion is not None:
        return CallRecord(role=role, provider=completion.provider, model=completion.model,
                          prompt_tokens=completion.prompt_tokens,
                          completion_tokens=completion.completion_tokens,
                          latency_ms=completion.latency_ms, error=None, attempts=1)
    return CallRecord(role=role, provider="unknown", model="", prompt_tokens=0,
                      completion_tokens=0, latency_ms=0,
                      error=f"{type(failure).__name__}: {failure}", attempts=1)
