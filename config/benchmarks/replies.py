"""Do a model's replies parse, with constrained replies and without? (`manage.py bench_replies`,
docs/llm.md "Constrained replies").

N implementer calls on the bundled demo spec, each asked twice in turn: held to the
implementer's schema (the first form the server takes) and as the fenced protocol. A reply
counts as parsed when it yields at least one Python file that `ast.parse` accepts, read by the
loop's own reader (engine/reply_formats.py); as code when such a file also defines a function
or a class (a tiny model's "content": "2" parses, and is no plugin). Two one-token calls first
measure whether the server reads system messages; when it drops them, the prompt is sent as the
product sends it to such a model (autocoder.llm.system_role). No database is needed: nothing is
remembered.

With `second_iteration`, N more pairs of calls ask for the demo's second iteration (its first
attempt's code and what went wrong, from docs/examples/weekly-scheduler.script.json): whole
files, and edits offered. Tokens per reply show what edits save; an edit reply counts as parsed
when its edits apply and the changed Python files parse.
"""

from __future__ import annotations

import ast
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from autocoder.engine.prompting import PromptContext, build_messages
from autocoder.engine.replies import apply_edits
from autocoder.engine.reply_formats import read_files, schema_for
from autocoder.engine.scaffold import scaffold_files
from autocoder.engine.spec import Spec, spec_from_json
from autocoder.llm import system_role
from autocoder.llm.openai_compat import OpenAICompatibleProvider
from autocoder.llm.structured import with_hint
from autocoder.llm.types import (
    CAPPED,
    Completion,
    LLMBadRequest,
    Message,
    ProviderConfig,
    ReplyFormat,
    ReplySchema,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
DEMO_SPEC = EXAMPLES / "weekly-scheduler.spec.json"
DEMO_SCRIPT = EXAMPLES / "weekly-scheduler.script.json"


class TallySummary(TypedDict):
    form: str
    calls: int
    failed_calls: int
    parse_share: float
    code_share: float
    capped_share: float
    tokens_p50: float | None
    seconds_p50: float | None
    errors: list[str]
    refused_forms: list[str]


class SecondIteration(TypedDict):
    whole_files: TallySummary
    edits: TallySummary


class RepliesFigures(TypedDict, total=False):
    """What `bench_replies` prints (second_iteration: with --edits only)."""

    model: str
    calls: int
    max_tokens: int | None
    prompt_chars: int
    system_messages: str
    constrained: TallySummary
    unconstrained: TallySummary
    second_iteration: SecondIteration


@dataclass
class Tally:
    """What one mode's replies came to."""

    form: str = ""
    parsed: int = 0
    code: int = 0  # of the parsed: a file defines a function or a class
    capped: int = 0
    tokens: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # forms the server would not take

    def add(self, completion: Completion, seconds: float, base: dict[str, str]) -> str:
        """"code", "parses" or "" (no usable file)."""
        found = python_files(completion.text, base)
        code = any(defines_code(tree) for tree in found)
        self.parsed += bool(found)
        self.code += code
        self.capped += completion.finish_reason == CAPPED
        self.tokens.append(completion.completion_tokens)
        self.seconds.append(round(seconds, 2))
        return "code" if code else "parses" if found else ""

    def summary(self) -> TallySummary:
        calls = len(self.tokens)
        return {
            "form": self.form, "calls": calls, "failed_calls": len(self.errors),
            "parse_share": round(self.parsed / calls, 3) if calls else 0.0,
            "code_share": round(self.code / calls, 3) if calls else 0.0,
            "capped_share": round(self.capped / calls, 3) if calls else 0.0,
            "tokens_p50": statistics.median(self.tokens) if calls else None,
            "seconds_p50": round(statistics.median(self.seconds), 2) if calls else None,
            "errors": self.errors[:3], "refused_forms": self.refused,
        }


def python_files(text: str, base: dict[str, str] | None = None) -> list[ast.Module]:
    """The reply's Python files (with its edits applied to `base`) that ast.parse accepts."""
    parsed = read_files(text)
    changed, _ = apply_edits(base or {}, parsed.files, parsed.edits)
    trees = []
    for path, content in changed.items():
        if not path.endswith(".py") or not content.strip():
            continue
        try:
            trees.append(ast.parse(content))
        except (SyntaxError, ValueError):
            continue
    return trees


def defines_code(tree: ast.Module) -> bool:
    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
               for node in ast.walk(tree))


def implementer_messages(spec: Spec, *, prompt_chars: int, files: dict[str, str],
                         iteration: int = 1, failures: str = "", edits: bool = False,
                         fold: bool = False) -> list[Message]:
    """The implementer's prompt for `spec`, as the loop builds it (no lessons, no reference
    entries: what a fresh install without them sends); `fold`: for a server that drops system
    messages, as the product sends it to one (autocoder.llm.system_role)."""
    ctx = PromptContext(spec=spec, iteration=iteration, files=files, failures=failures,
                        reference="", edits=edits)
    messages = build_messages("implementer", ctx, budget_chars=prompt_chars)
    return system_role.folded(messages) if fold else messages


def second_iteration(spec: Spec) -> tuple[dict[str, str], str]:
    """The demo's files after its first attempt, and what went wrong with it."""
    script = json.loads(DEMO_SCRIPT.read_text())
    files = {**scaffold_files(spec), **read_files(script["implementer"][0]).files}
    return files, f"Reflection on attempt 1:\n{script['reflector'][0]}"


def run(config: ProviderConfig, *, calls: int, prompt_chars: int, edits: bool = False,
        progress: Callable[[str], None] | None = None) -> RepliesFigures:
    provider = OpenAICompatibleProvider(config)
    spec = spec_from_json(DEMO_SPEC.read_text())
    say = progress or (lambda line: print(line, file=sys.stderr))
    held = _Held(provider)
    system = system_role.measure(lambda messages: provider.complete(
        messages, role="analyst", max_tokens=1))
    first = implementer_messages(spec, prompt_chars=prompt_chars, files=scaffold_files(spec),
                                 fold=system == system_role.DROPPED)
    implementer = _shape(spec)
    constrained, unconstrained = Tally(), Tally(form="fenced")
    for number in range(1, calls + 1):  # in turn, so both modes meet the same machine
        _measure(say, number, "constrained", constrained,
                 lambda: held.call(first, implementer, constrained), {})
        _measure(say, number, "unconstrained", unconstrained,
                 lambda: provider.complete(first, role="implementer"), {})
    result: RepliesFigures = {
        "model": config.model, "calls": calls, "max_tokens": config.max_tokens,
        "prompt_chars": sum(len(m.content) for m in first), "system_messages": system,
        "constrained": constrained.summary(), "unconstrained": unconstrained.summary()}
    if edits:
        result["second_iteration"] = _second_iteration(
            provider, held, spec, calls=calls, prompt_chars=prompt_chars, say=say,
            fold=system == system_role.DROPPED)
    return result


def _second_iteration(provider: OpenAICompatibleProvider, held: _Held, spec: Spec, *,
                      calls: int, prompt_chars: int,
                      say: Callable[[str], None], fold: bool) -> SecondIteration:
    """Tokens per reply for the second iteration: whole files, and edits offered (each held
    to its schema where the server allows)."""
    files, failures = second_iteration(spec)
    whole_messages = implementer_messages(spec, prompt_chars=prompt_chars, files=files,
                                          iteration=2, failures=failures, fold=fold)
    edit_messages = implementer_messages(spec, prompt_chars=prompt_chars, files=files,
                                         iteration=2, failures=failures, edits=True, fold=fold)
    whole, edited = Tally(), Tally()
    for number in range(1, calls + 1):
        _measure(say, number, "iteration 2, whole files", whole, lambda: held.call(
            whole_messages, _shape(spec), whole), files)
        _measure(say, number, "iteration 2, edits offered", edited, lambda: held.call(
            edit_messages, _shape(spec, edits=True),
            edited), files)
    return {"whole_files": whole.summary(), "edits": edited.summary()}


def _shape(spec: Spec, *, edits: bool = False) -> ReplySchema:
    """The implementer's schema as the loop sends it for `spec`."""
    shape = schema_for("implementer", package=spec.package, edits=edits)
    assert shape is not None  # the implementer always has one
    return shape


class _Held:
    """Constrained calls: the form the server took, or the next one it may take."""

    def __init__(self, provider: OpenAICompatibleProvider) -> None:
        self.provider = provider
        self.form = ""
        self.untried = list(provider.reply_forms)

    def call(self, messages: list[Message], schema: ReplySchema, tally: Tally) -> Completion:
        while True:
            if not self.form and not self.untried:
                raise LLMBadRequest("the server refused every form of constrained reply")
            form = self.form or self.untried[0]
            try:
                completion = self.provider.complete(
                    with_hint(messages, schema), role="implementer",
                    reply_format=ReplyFormat(form, schema))
            except LLMBadRequest as error:
                if self.form:
                    raise
                tally.refused.append(f"{form}: {error}"[:300])
                self.untried.pop(0)
                continue
            self.form = tally.form = form
            return completion


def _measure(say: Callable[[str], None], number: int, mode: str, tally: Tally,
             call: Callable[[], Completion], base: dict[str, str]) -> None:
    try:
        completion, seconds = _timed(call)
    except Exception as error:  # noqa: BLE001 - a failed call is counted, the bench goes on
        tally.errors.append(f"{type(error).__name__}: {error}"[:300])
        say(f"call {number} {mode}: failed: {error}")
        return
    found = tally.add(completion, seconds, base)
    words = {"code": "parses, defines code", "parses": "parses, defines nothing"}
    say(f"call {number} {mode} ({tally.form or 'no form'}): "
        f"{words.get(found, 'no usable file')}, {completion.completion_tokens} tokens "
        f"({completion.finish_reason}), {seconds:.1f} s")


def _timed(call: Callable[[], Completion]) -> tuple[Completion, float]:
    started = time.monotonic()
    completion = call()
    return completion, time.monotonic() - started
