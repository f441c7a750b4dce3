"""The reviewing model's opinion on a candidate a person is about to judge (a change to approve,
or the publish request of a run that succeeded), and what the loop does with a verdict of
"changes needed" (docs/engine.md, "The reviewer model"): under full autonomy its reasons go back
into the loop as findings, at most MAX_SEND_BACKS times a run; under semi and guided autonomy a
person sees them at a change request and may send the work back with them. A reply that cannot
be read, a failed call or a verdict without reasons is advice at most: it never sends work back,
fails or stops a run.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from autocoder.engine.budgets import budget_exhausted
from autocoder.engine.change_words import words_lines, words_request
from autocoder.engine.changing import base_of
from autocoder.engine.judging import quality_lines
from autocoder.engine.pending import Opinion
from autocoder.engine.prompting import build_messages, review_opinion
from autocoder.engine.reply_formats import as_text, ask
from autocoder.engine.spec import Spec
from autocoder.engine.states import Autonomy, RunHistory
from autocoder.engine.steps import Step, budget_chars, prompt_context
from autocoder.engine.transitions import LoopEventRow
from autocoder.installation import InstallationFault
from autocoder.llm.types import LLMError

logger = logging.getLogger(__name__)

MAX_CHECKS_CHARS = 4000
MAX_CHECKS_FINDINGS = 10
# How often a run under full autonomy sends work back on the reviewer's word; then a person
# decides at the publish request, as without a reviewer.
MAX_SEND_BACKS = 2
# The start of the finding a send-back adds to the iteration's failures (what the implementer
# reads next, like failing tests); counting them counts the round-trips.
REVIEW_FINDING = "The reviewing model asked for changes"
# Why a change request is made under semi and guided autonomy when the reviewer asks for changes.
REVIEW_REASON = ("the reviewing model asks for changes: you may send the work back with its "
                 "reasons")
EVENT_TYPE = "reviewer"  # the LoopEvent type of the exchange (shown on the run page)


def second_opinion(step: Step, *, files: dict[str, str], result: dict[str, Any],
                   reasons: list[str]) -> Opinion | None:
    """The reviewing model's verdict on a candidate a person is about to judge:
    {"verdict": approve|request_changes|unsure, "remarks", "iteration"}.

    None when it gives none: an empty or unusable reply, a failed call, no tokens left. The
    opinion is advice for a person, never worth failing or stopping the run for.
    """
    run = step.run
    if run.max_tokens and run.tokens_total >= run.max_tokens:
        return None
    ctx = prompt_context(step, files=files)
    ctx.checks = "\n".join([_checks_text(step.spec, result, reasons),
                            *_rewritten_words(step, files)])
    try:
        answer = ask(step.llm, "reviewer", build_messages(
            "reviewer", ctx, budget_chars=budget_chars(step, "reviewer")))
    except (LLMError, InstallationFault) as error:  # on record with its error; the run goes on
        logger.warning("run %s: no second opinion, the reviewer's call failed: %s", run.id, error)
        return None
    opinion = review_opinion(as_text("reviewer", answer.text), cut=answer.cut)
    if opinion is None:
        return None
    return {"verdict": opinion["verdict"], "remarks": opinion["remarks"], "iteration": step.number}


def _checks_text(spec: Spec, result: dict[str, Any], reasons: list[str]) -> str:
    """What the reviewer is told about the candidate besides its code: the tests, the quality
    score and coverage against the bar, the safety gate, why a person is asked."""
    report, safety = result["test_report"] or {}, result["safety_report"] or {}
    if result["tests_ran"]:
        examples = "all pass" if result["acceptance_passed"] else "do not all pass"
        lines = [f"Tests: {report.get('passed', 0)} passed, {report.get('failed', 0)} failed, "
                 f"{report.get('errors', 0)} errors (pass rate {result['pass_rate']:.0%}); the "
                 f"requester's examples {examples}."]
    else:
        lines = ["The tests did not run."]
    lines += quality_lines(spec, result.get("quality") or {})
    findings = safety.get("findings", [])
    lines.append(f"Safety gate: {safety.get('verdict') or 'not run'}, "
                 f"{len(findings)} finding(s).")
    lines += [f"- {f.get('file')}:{f.get('line')} [{f.get('tool')} {f.get('rule')}] "
              f"{f.get('message')}" for f in findings[:MAX_CHECKS_FINDINGS]]
    if reasons:
        lines.append("Why a person is asked: " + "; ".join(reasons))
    lines += result["failures"]
    return "\n".join(lines)[:MAX_CHECKS_CHARS]


def _rewritten_words(step: Step, files: dict[str, str]) -> list[str]:
    """In a change run, the plugin's own words the change rewrote (its summary, a command's
    description), against the version in use (change_words.py)."""
    base = base_of(step.run)
    if not base:
        return []
    changed = words_request(base.get("plugin.toml", ""), files.get("plugin.toml", ""))
    return words_lines(changed[1] if changed else None)


def asks_for_changes(opinion: Opinion | None) -> bool:
    """A verdict of "changes needed" with reasons: the only opinion that may send work back."""
    return (opinion is not None and opinion.get("verdict") == "request_changes"
            and bool(str(opinion.get("remarks") or "").strip()))


def review_finding(remarks: str) -> str:
    """The reviewer's reasons as a finding of the iteration, for the next implementer prompt."""
    return (f"{REVIEW_FINDING} before this code is accepted (every test passed). Make these "
            f"changes and keep every test passing:\n{remarks.strip()}")


def send_backs(history: RunHistory) -> int:
    """How many times this run's work went back on the reviewer's word so far."""
    return sum(any(str(text).startswith(REVIEW_FINDING) for text in it.failures or [])
               for it in history.checkpoints())


def review_event(iteration: int, action: str, remarks: str, occurrences: int = 1,
                 ) -> LoopEventRow:
    """A LoopEvent row of the exchange: `action` send_back (the loop sent it back), to_person
    (it may not send back again: a person decides), satisfied (approved after a send-back),
    sent_back_by_person (a person sent it back from a change request)."""
    return {"iteration": iteration, "type": EVENT_TYPE, "signature": "", "confidence": 1.0,
            "occurrences": occurrences, "action": action, "reason": remarks[:4000]}


@dataclass
class Review:
    """What the verify step does with the reviewer's opinion: `send_back` with `finding`
    (full autonomy), the change request's `reasons` (semi, guided), the `events` to record."""

    reasons: list[str]
    send_back: bool = False
    finding: str = ""
    events: list[LoopEventRow] = field(default_factory=list)


def review_outcome(step: Step, opinion: Opinion | None, *, succeeded: bool,
                   reasons: list[str]) -> Review:
    """Where the reviewer's opinion on iteration `step.number` leads (docs/engine.md, "The
    reviewer model"). Only a candidate that passed the quality gate is sent back by the loop:
    one that failed goes back anyway, with its failing tests."""
    number, review = step.number, Review(reasons=list(reasons))
    if step.run.autonomy != Autonomy.FULL:
        if asks_for_changes(opinion) and succeeded and not reasons:
            review.reasons = [REVIEW_REASON]
        return review
    if not succeeded or opinion is None:
        return review
    done = send_backs(step.history)
    remarks = str(opinion.get("remarks") or "").strip()
    if not asks_for_changes(opinion):
        if done and opinion.get("verdict") == "approve":
            review.events.append(review_event(number, "satisfied", remarks, done))
        return review
    if done >= MAX_SEND_BACKS or budget_exhausted(step.run, number):
        review.events.append(review_event(number, "to_person", remarks, done))
        return review
    review.send_back, review.finding = True, review_finding(remarks)
    review.events.append(review_event(number, "send_back", remarks, done + 1))
    return review


def sent_back_with_review(payload: dict[str, Any], comment: str) -> str:
    """The reviewer's reasons when a person's "request changes" sends them back as they are
    (the change request's button "Send back with the reviewer's reasons"), else ""."""
    opinion = payload.get("second_opinion")
    if not asks_for_changes(opinion):
        return ""
    remarks = str(opinion["remarks"]).strip()  # type: ignore[index]
    return remarks if " ".join(remarks.split()) == " ".join(comment.split()) else ""
