"""The reviewing model's opinion on a candidate a person is about to judge (a change to approve,
or the publish request of a run that succeeded). Advice only: it never fails or stops a run.
"""

from __future__ import annotations

import logging
from typing import Any

from autocoder.engine.prompting import build_messages, review_opinion
from autocoder.engine.steps import Step, budget_chars, prompt_context
from autocoder.installation import InstallationFault
from autocoder.llm.types import LLMError

logger = logging.getLogger(__name__)

MAX_CHECKS_CHARS = 4000
MAX_CHECKS_FINDINGS = 10


def second_opinion(step: Step, *, files: dict[str, str], result: dict[str, Any],
                   reasons: list[str]) -> dict[str, Any] | None:
    """The reviewing model's verdict on a candidate a person is about to judge:
    {"verdict": approve|request_changes|unsure, "remarks", "iteration"}.

    None when it gives none: an empty or unusable reply, a failed call, no tokens left. The
    opinion is advice for a person, never worth failing or stopping the run for.
    """
    run = step.run
    if run.max_tokens and run.tokens_total >= run.max_tokens:
        return None
    ctx = prompt_context(step, files=files)
    ctx.checks = _checks_text(result, reasons)
    try:
        text = step.llm.complete("reviewer", build_messages("reviewer", ctx,
                                                            budget_chars=budget_chars()))
    except (LLMError, InstallationFault) as error:  # on record with its error; the run goes on
        logger.warning("run %s: no second opinion, the reviewer's call failed: %s", run.id, error)
        return None
    opinion = review_opinion(text)
    return {**opinion, "iteration": step.number} if opinion is not None else None


def _checks_text(result: dict[str, Any], reasons: list[str]) -> str:
    """What the reviewer is told about the candidate besides its code."""
    report, safety = result["test_report"] or {}, result["safety_report"] or {}
    if result["tests_ran"]:
        examples = "all pass" if result["acceptance_passed"] else "do not all pass"
        lines = [f"Tests: {report.get('passed', 0)} passed, {report.get('failed', 0)} failed, "
                 f"{report.get('errors', 0)} errors (pass rate {result['pass_rate']:.0%}); the "
                 f"requester's examples {examples}."]
    else:
        lines = ["The tests did not run."]
    findings = safety.get("findings", [])
    lines.append(f"Safety gate: {safety.get('verdict') or 'not run'}, "
                 f"{len(findings)} finding(s).")
    lines += [f"- {f.get('file')}:{f.get('line')} [{f.get('tool')} {f.get('rule')}] "
              f"{f.get('message')}" for f in findings[:MAX_CHECKS_FINDINGS]]
    if reasons:
        lines.append("Why a person is asked: " + "; ".join(reasons))
    lines += result["failures"]
    return "\n".join(lines)[:MAX_CHECKS_CHARS]
