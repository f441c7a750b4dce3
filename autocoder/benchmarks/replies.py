"""Do a model's replies parse, with constrained replies and without? (`manage.py bench_replies`,
docs/llm.md "Constrained replies").

N implementer calls on the bundled demo spec, each asked twice in turn: held to the
implementer's schema (the first form the server takes) and as the fenced protocol. A reply
counts as parsed when it yields at least one Python file that `ast.parse` accepts, read by the
loop's own reader (engine/reply_formats.py). No database is needed: nothing is remembered.
"""

from __future__ import annotations

import ast
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autocoder.engine.prompting import PromptContext, build_messages
from autocoder.engine.reply_formats import SCHEMAS, read_files
from autocoder.engine.scaffold import scaffold_files
from autocoder.engine.spec import Spec, spec_from_json
from autocoder.llm.openai_compat import OpenAICompatibleProvider
from autocoder.llm.structured import with_hint
from autocoder.llm.types import (
    CAPPED,
    Completion,
    LLMBadRequest,
    Message,
    ProviderConfig,
    ReplyFormat,
)

DEMO_SPEC = Path(__file__).resolve().parents[2] / "docs" / "examples" / "weekly-scheduler.spec.json"


@dataclass
class Tally:
    """What one mode's replies came to."""

    form: str = ""
    parsed: int = 0
    capped: int = 0
    tokens: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # forms the server would not take

    def add(self, completion: Completion, seconds: float) -> bool:
        ok = parses(completion.text)
        self.parsed += ok
        self.capped += completion.finish_reason == CAPPED
        self.tokens.append(completion.completion_tokens)
        self.seconds.append(round(seconds, 2))
        return ok

    def summary(self) -> dict[str, Any]:
        calls = len(self.tokens)
        return {
            "form": self.form, "calls": calls, "failed_calls": len(self.errors),
            "parse_share": round(self.parsed / calls, 3) if calls else 0.0,
            "capped_share": round(self.capped / calls, 3) if calls else 0.0,
            "tokens_p50": statistics.median(self.tokens) if calls else None,
            "seconds_p50": round(statistics.median(self.seconds), 2) if calls else None,
            "errors": self.errors[:3], "refused_forms": self.refused,
        }


def parses(text: str) -> bool:
    """At least one Python file of the reply that ast.parse accepts."""
    for path, content in read_files(text).files.items():
        if not path.endswith(".py") or not content.strip():
            continue
        try:
            ast.parse(content)
        except (SyntaxError, ValueError):
            continue
        return True
    return False


def implementer_messages(spec: Spec, *, prompt_chars: int) -> list[Message]:
    """The implementer's first prompt for `spec`, as the loop builds it (no lessons, no
    reference entries: what a fresh install without them sends)."""
    ctx = PromptContext(spec=spec, iteration=1, files=scaffold_files(spec), reference="")
    return build_messages("implementer", ctx, budget_chars=prompt_chars)


def run(config: ProviderConfig, *, calls: int, prompt_chars: int,
        progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    provider = OpenAICompatibleProvider(config)
    spec = spec_from_json(DEMO_SPEC.read_text())
    messages = implementer_messages(spec, prompt_chars=prompt_chars)
    schema = SCHEMAS["implementer"]
    constrained, unconstrained = Tally(), Tally(form="fenced")
    untried = list(provider.reply_forms)
    say = progress or (lambda line: print(line, file=sys.stderr))

    def held_to_schema() -> Completion:
        """A constrained call: the form that worked, or the next one the server may take."""
        while True:
            if not constrained.form and not untried:
                raise LLMBadRequest("the server refused every form of constrained reply")
            form = constrained.form or untried[0]
            try:
                completion = provider.complete(with_hint(messages, schema), role="implementer",
                                               reply_format=ReplyFormat(form, schema))
            except LLMBadRequest as error:
                if constrained.form:
                    raise
                constrained.refused.append(f"{form}: {error}"[:300])
                untried.pop(0)
                continue
            constrained.form = form
            return completion

    for number in range(1, calls + 1):  # in turn, so both modes meet the same machine
        _measure(say, number, "constrained", constrained, held_to_schema)
        _measure(say, number, "unconstrained", unconstrained,
                 lambda: provider.complete(messages, role="implementer"))
    return {"model": config.model, "calls": calls, "max_tokens": config.max_tokens,
            "prompt_chars": sum(len(m.content) for m in messages),
            "constrained": constrained.summary(), "unconstrained": unconstrained.summary()}


def _measure(say: Callable[[str], None], number: int, mode: str, tally: Tally,
             call: Callable[[], Completion]) -> None:
    try:
        completion, seconds = _timed(call)
    except Exception as error:  # noqa: BLE001 - a failed call is counted, the bench goes on
        tally.errors.append(f"{type(error).__name__}: {error}"[:300])
        say(f"call {number} {mode}: failed: {error}")
        return
    say(f"call {number} {mode}: {_line(tally, completion, seconds)}")


def _timed(call: Callable[[], Completion]) -> tuple[Completion, float]:
    started = time.monotonic()
    completion = call()
    return completion, time.monotonic() - started


def _line(tally: Tally, completion: Completion, seconds: float) -> str:
    ok = tally.add(completion, seconds)
    return (f"{'parses' if ok else 'no usable file'}, {completion.completion_tokens} tokens "
            f"({completion.finish_reason}), {seconds:.1f} s")
