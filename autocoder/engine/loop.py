"""The generation loop as phases: each function performs one step of one iteration.

A phase reads the run (its plan, guidance, pending outputs of earlier phases of this iteration
and the checkpoints of earlier iterations), does the slow part (a model call, a safety scan, a
sandbox run) and returns a Transition: what to write and which phase comes next. Phases write
nothing themselves except the record of model calls, so the runs app (runs/services/
lifecycle.py) can commit a transition atomically and only if the step is still the current
one; a step that dies before its commit is simply performed again.

The loop does not import the runs app: it reads the run, its checkpoints and its model calls
through the protocols of autocoder/engine/states.py and llm_port.py.

Iteration n: plan (first iteration, after an escape or a human's answer) -> implement ->
test_write -> gate -> sandbox -> verify (writes checkpoint n) -> reflect (on failure: reflection,
loop detector, escapes, budgets) -> plan/implement of n+1. The run ends through `learn`, which
extracts lessons before the final status is set.
"""

from __future__ import annotations

import logging
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.utils import timezone

from autocoder.engine import lessons_port
from autocoder.engine.detector import IterationSnapshot, detect
from autocoder.engine.escapes import ESCAPES, choose_escape
from autocoder.engine.llm_port import ModelCalls, reply_hash
from autocoder.engine.prompting import (
    PromptContext,
    build_messages,
    plan_from_reply,
    review_opinion,
)
from autocoder.engine.replies import code_hash, diff_stats, merge_files, parse_reply, unified_diff
from autocoder.engine.scaffold import (
    acceptance_nodeids,
    plugin_toml,
    protected_paths,
    scaffold_files,
)
from autocoder.engine.spec import Spec
from autocoder.engine.states import (
    Autonomy,
    Checkpoint,
    GateKind,
    Phase,
    RunHistory,
    RunStatus,
    RunView,
)
from autocoder.installation import InstallationFault
from autocoder.llm.types import LLMError
from autocoder.sandbox.types import PluginRuntimeError, SandboxError
from autocoder.signatures import normalize_error_signature

logger = logging.getLogger(__name__)

GENERATED_TESTS_PREFIX = "tests/test_generated_"
MAX_FAILURE_CHARS = 1500
MAX_FAILURES = 12
FAILING = frozenset({"failed", "error"})


def setting(name: str, default: Any) -> Any:
    return getattr(settings, name, default)


@dataclass(frozen=True)
class Approval:
    kind: str
    payload: dict[str, Any]


@dataclass
class Transition:
    """What a step produced. `phase` is the next step (or the one to resume after approval)."""

    phase: str
    pending: dict[str, Any]
    updates: dict[str, Any] = field(default_factory=dict)
    checkpoint: dict[str, Any] | None = None
    reflection: str | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    approval: Approval | None = None
    status: str | None = None  # a final status, set only by `learn`
    notes: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Step:
    run: RunView
    team_id: int
    history: RunHistory
    spec: Spec
    llm: ModelCalls
    cancelled: Callable[[], bool]

    @property
    def number(self) -> int:
        """The iteration this step works on (checkpoints exist up to run.iteration)."""
        return self.run.iteration + 1

    @property
    def pending(self) -> dict[str, Any]:
        return dict(self.run.pending or {})


def perform(step: Step) -> Transition:
    return PHASES[step.run.phase](step)


def ending(pending: dict[str, Any], status: str, reason: str) -> Transition:
    """Go to `learn`, which records lessons and then gives the run `status`."""
    return Transition(phase=Phase.LEARN,
                      pending={**pending, "outcome": {"status": status, "reason": reason}})


# -- reads shared by the phases ------------------------------------------------------------------


def latest_checkpoint(step: Step) -> Checkpoint | None:
    return step.history.latest()


def current_files(step: Step) -> dict[str, str]:
    """The code the next change applies to: the latest checkpoint's, or after reset_context
    the best code so far (a fresh start should not inherit the state that got stuck)."""
    best = step.history.best() if step.run.escape_in_force == "reset_context" else None
    if best is not None:
        return dict(best.files)
    latest = latest_checkpoint(step)
    return dict(latest.files) if latest is not None else scaffold_files(step.spec)


def prompt_context(step: Step, *, files: dict[str, str], failures: str = "",
                   replanning: bool = False) -> PromptContext:
    """What a role is shown. When the architect re-plans, the plan in force is one of the
    approaches to move away from, not the plan to follow."""
    run, pending = step.run, step.pending
    escape = run.escape_in_force if run.escape_in_force in ESCAPES[:3] else ""
    approaches: list[str] = []
    if escape == "try_alternative":
        approaches = list(run.approaches)
        if replanning and run.plan and run.plan not in approaches:
            approaches.append(run.plan)
    return PromptContext(
        spec=step.spec, iteration=step.number, plan="" if approaches and replanning else run.plan,
        files=files,
        failures="" if escape == "reset_context" else failures,
        earlier_approaches=approaches,
        lessons=pending.get("lessons", "") if run.use_lessons else "",
        guidance=run.guidance, escape=escape,
    )


def failures_for_prompt(checkpoint: Checkpoint | None) -> str:
    """What went wrong last time, with its reflection, as one text for the next prompt."""
    if checkpoint is None:
        return ""
    text = "\n\n".join(checkpoint.failures)
    if checkpoint.reflection:
        text += f"\n\nReflection on iteration {checkpoint.number}:\n{checkpoint.reflection}"
    return text.strip()


def budget_chars() -> int:
    return int(setting("ENGINE_PROMPT_BUDGET_CHARS", 24000))


# -- plan ----------------------------------------------------------------------------------------


def plan_phase(step: Step) -> Transition:
    run, spec, pending = step.run, step.spec, step.pending
    if run.use_lessons and "lesson_ids" not in pending:
        found = lessons_port.retrieve(team_id=step.team_id,
                                      query=f"{spec.name}: {spec.summary}")
        pending.update(lesson_ids=found.ids, lessons=found.block)
    latest = latest_checkpoint(step)
    files = current_files(step)
    ctx = prompt_context(step, files=files, failures=failures_for_prompt(latest),
                         replanning=bool(run.plan))
    text = step.llm.complete("architect", build_messages("architect", ctx,
                                                         budget_chars=budget_chars()))
    plan = plan_from_reply(text)
    approaches = [*run.approaches, run.plan] if run.plan and run.plan != plan else run.approaches
    updates = {"plan": plan, "approaches": approaches}
    transition = Transition(phase=Phase.IMPLEMENT, pending=pending, updates=updates,
                            notes=[{"kind": "run.plan", "plan": plan}])
    if _plan_needs_approval(step):
        transition.approval = Approval(GateKind.PLAN, {
            "plan": plan, "earlier_approaches": approaches, "lessons": pending.get("lessons", ""),
            "guidance": run.guidance,
            "reasoning": f"Plan for iteration {step.number}; the loop starts implementing it "
                         "once approved.",
        })
    return transition


def _plan_needs_approval(step: Step) -> bool:
    if step.run.autonomy == Autonomy.GUIDED:
        return True
    if step.run.autonomy == Autonomy.SEMI:
        # Semi-automatic runs ask once: later re-plans (escapes) are the loop's own business.
        return not step.history.plan_approved()
    return False


# -- implement -----------------------------------------------------------------------------------


def implement_phase(step: Step) -> Transition:
    spec, pending = step.spec, step.pending
    base = current_files(step)
    ctx = prompt_context(step, files=base, failures=failures_for_prompt(latest_checkpoint(step)))
    text = step.llm.complete("implementer", build_messages("implementer", ctx,
                                                           budget_chars=budget_chars()))
    parsed = parse_reply(text)
    files, rejected = merge_files(base, parsed.files, protected=protected_paths(spec))
    rejected_list = [{"path": r.path, "reason": r.reason} for r in (*parsed.rejected, *rejected)]
    files, rejected_list, permissions = _permission_request(spec, base, parsed.files, files,
                                                            rejected_list)
    refused = {r["path"] for r in rejected_list}
    nothing = not [path for path in parsed.files if path not in refused]
    pending.update(
        files=files, rejected=rejected_list, prose=parsed.prose[:4000],
        reply_hash=reply_hash(text), permissions_change=permissions,
        no_code=("the reply contained no file blocks" if not parsed.files else
                 "no file of the reply could be applied" if nothing else ""),
    )
    next_phase = Phase.VERIFY if nothing else Phase.TEST_WRITE
    return Transition(phase=next_phase, pending=pending)


def _permission_request(spec: Spec, base: dict[str, str], proposed: dict[str, str],
                        files: dict[str, str], rejected: list[dict[str, str]],
                        ) -> tuple[dict[str, str], list[dict[str, str]], dict[str, Any] | None]:
    """plugin.toml is read-only except its [permissions]: a reply that changes only those is a
    permissions request, applied here and reported as a major change for a person to see."""
    if "plugin.toml" not in proposed:
        return files, rejected, None
    old = manifest_permissions(base.get("plugin.toml", ""))
    new = manifest_permissions(proposed["plugin.toml"])
    valid = (new is not None and isinstance(new.get("network"), bool)
             and new.get("filesystem") in ("none", "workdir"))
    if not valid or new == old or old is None:
        return files, rejected, None
    assert new is not None
    files = {**files, "plugin.toml": plugin_toml(spec, network=new["network"],
                                                 filesystem=new["filesystem"])}
    rejected = [r for r in rejected if r["path"] != "plugin.toml"]
    return files, rejected, {"from": old, "to": new}


def manifest_permissions(text: str) -> dict[str, Any] | None:
    """The [permissions] table of a plugin.toml (None when it cannot be read)."""
    try:
        table = tomllib.loads(text).get("permissions", {})
    except tomllib.TOMLDecodeError:
        return None
    if not isinstance(table, dict):
        return None
    return {"network": table.get("network", False), "filesystem": table.get("filesystem", "none")}


# -- tests written by the tester -----------------------------------------------------------------


def test_write_phase(step: Step) -> Transition:
    spec, pending = step.spec, step.pending
    files = dict(pending["files"])
    ctx = prompt_context(step, files=files)
    text = step.llm.complete("tester", build_messages("tester", ctx, budget_chars=budget_chars()))
    parsed = parse_reply(text)
    tests = {p: c for p, c in parsed.files.items()
             if p.startswith(GENERATED_TESTS_PREFIX) and p.endswith(".py")}
    refused = [{"path": p, "reason": "the tester may only add tests/test_generated_*.py files"}
               for p in parsed.files if p not in tests]
    files, rejected = merge_files(files, tests, protected=protected_paths(spec))
    pending["files"] = files
    pending["rejected"] = [*pending.get("rejected", []), *refused,
                           *({"path": r.path, "reason": r.reason} for r in rejected)]
    return Transition(phase=Phase.GATE, pending=pending)


# -- safety gate ---------------------------------------------------------------------------------


def gate_phase(step: Step) -> Transition:
    from autocoder.safety import Permissions, scan_files

    pending = step.pending
    files = pending["files"]
    granted = manifest_permissions(files.get("plugin.toml", "")) or {}
    permissions = Permissions(network=bool(granted.get("network", False)),
                              filesystem=str(granted.get("filesystem", "none")))
    report = scan_files(files, permissions)
    files = pending["files"] = _with_declared_libraries(step.spec, files, granted)
    pending["safety"] = {
        "verdict": report.verdict,
        "findings": [_finding_dict(f) for f in report.findings],
    }
    # Code the gate blocks never reaches the sandbox: the iteration fails on the findings.
    blocked = report.verdict == "block"
    return Transition(phase=Phase.VERIFY if blocked else Phase.SANDBOX, pending=pending,
                      notes=[{"kind": "run.safety", "verdict": report.verdict,
                              "findings": len(report.findings)}])


def _with_declared_libraries(spec: Spec, files: dict[str, str],
                             granted: dict[str, Any]) -> dict[str, str]:
    """plugin.toml lists the plugin runtime's libraries the code imports (the wheel declares
    them too); the manifest is the host's to write, so it is kept in step here."""
    from autocoder.safety.imports import used_libraries

    pins = [f"{lib.distribution}=={lib.version}" for lib in used_libraries(files)]
    manifest = plugin_toml(spec, network=bool(granted.get("network", False)),
                           filesystem=str(granted.get("filesystem", "none")), libraries=pins)
    return files if files.get("plugin.toml") == manifest else {**files, "plugin.toml": manifest}


def _finding_dict(finding: Any) -> dict[str, Any]:
    return {key: getattr(finding, key, "") for key in
            ("tool", "rule", "severity", "file", "line", "message")}


# -- sandbox -------------------------------------------------------------------------------------


def sandbox_phase(step: Step) -> Transition:
    from autocoder.sandbox import Limits
    from autocoder.sandbox.pytest_runner import run_pytest

    pending = step.pending
    limits = Limits(timeout_s=float(setting("ENGINE_SANDBOX_TIMEOUT_S", 60)),
                    memory_mb=int(setting("ENGINE_SANDBOX_MEMORY_MB", 512)))
    try:
        report = run_pytest(pending["files"], limits=limits, cancel_check=step.cancelled)
    except SandboxError as error:
        raise _installation_fault(error) from error
    if not report.outcomes or _runner_crashed(report):
        _raise_if_installation_broken()
    pending["report"] = report_dict(report)
    return Transition(phase=Phase.VERIFY, pending=pending,
                      notes=[{"kind": "run.tests", "passed": report.passed,
                              "failed": report.failed, "errors": report.errors,
                              "pass_rate": report.pass_rate}])


def _runner_crashed(report: Any) -> bool:
    """Only the runner's own "<session>" problem and no test outcome: nothing ran."""
    return all(o.nodeid == "<session>" for o in report.outcomes)


def _raise_if_installation_broken() -> None:
    """A test run that said nothing is the model's fault only if a known-good plugin's tests
    do run: otherwise the runtime or the sandbox is broken and the run must be held."""
    from autocoder.runtime.probe import runtime_fault

    fault = runtime_fault(fresh=True)
    if fault is not None:
        raise fault


def _installation_fault(error: SandboxError) -> InstallationFault:
    from autocoder.runtime import BUILD_FIX
    from autocoder.runtime.probe import SANDBOX_FIX

    if isinstance(error, PluginRuntimeError):
        return InstallationFault("runtime", error.problem, BUILD_FIX)
    return InstallationFault("sandbox", str(error), SANDBOX_FIX)


def report_dict(report: Any) -> dict[str, Any]:
    return dict(report.stored())


# -- verify: the checkpoint ----------------------------------------------------------------------


def verify_phase(step: Step) -> Transition:
    run, spec, pending = step.run, step.spec, step.pending
    previous = current_files(step)
    files = pending.get("files") or previous
    result = _evaluate(spec, pending)
    added, removed = diff_stats(previous, files)
    checkpoint = {
        "number": step.number, "files": files, "diff": unified_diff(previous, files),
        "diff_stats": {"added": added, "removed": removed,
                       "files": sum(previous.get(p) != files.get(p)
                                    for p in set(previous) | set(files))},
        "rejected_paths": pending.get("rejected", []), "plan": run.plan,
        "reply_prose": pending.get("prose", ""), "reply_hash": pending.get("reply_hash", ""),
        "lessons_used": pending.get("lesson_ids", []), "code_hash": code_hash(files),
        "tokens": int((pending.get("timings") or {}).get("tokens", 0)),
        "timings": {k: v for k, v in (pending.get("timings") or {}).items() if k != "tokens"},
        **result,
    }
    carry: dict[str, Any] = {key: pending[key] for key in ("lesson_ids", "lessons")
                             if key in pending}
    reasons = change_approval_reasons(run, spec, previous, checkpoint, pending)
    # A person looks next (this change, or the publish request of a run that succeeded), so the
    # reviewing model reads the candidate first. Asked here, in the step: the publish request
    # is made inside the run's final transaction, where a slow model call must not hold locks.
    opinion = (second_opinion(step, files=files, result=result, reasons=reasons)
               if reasons or result["succeeded"] else None)
    if opinion is not None and result["succeeded"]:
        carry["second_opinion"] = opinion
    updates: dict[str, Any] = {"escape_in_force": ""}
    if result["succeeded"]:
        transition = ending(carry, RunStatus.SUCCEEDED,
                            f"iteration {step.number} passed every acceptance test with a pass "
                            f"rate of {result['pass_rate']:.0%}")
    else:
        transition = Transition(phase=Phase.REFLECT, pending=carry)
    transition.checkpoint = checkpoint
    transition.updates = updates
    transition.notes = [{"kind": "run.iteration", "iteration": step.number,
                         "pass_rate": result["pass_rate"],
                         "acceptance_passed": result["acceptance_passed"],
                         "succeeded": result["succeeded"],
                         "safety_verdict": result["safety_verdict"],
                         "error_signature": result["error_signature"]}]
    if reasons:
        transition.approval = Approval(GateKind.CHANGE, {
            "reasons": reasons, "diff": checkpoint["diff"], "diff_stats": checkpoint["diff_stats"],
            "test_report": result["test_report"], "safety": result["safety_report"],
            "failures": result["failures"], "plan": run.plan,
            "reasoning": pending.get("prose", ""), "succeeded": result["succeeded"],
            "permissions_change": pending.get("permissions_change"),
            **({"second_opinion": opinion} if opinion is not None else {}),
        })
    return transition


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


def _evaluate(spec: Spec, pending: dict[str, Any]) -> dict[str, Any]:
    """Quality gate: every acceptance test passes and the overall pass rate meets the spec."""
    report = pending.get("report") or {}
    safety = pending.get("safety") or {}
    blocked = safety.get("verdict") == "block"
    tests_ran = bool(report) and not blocked and not pending.get("no_code")
    outcomes = report.get("outcomes", []) if tests_ran else []
    by_id = {o["nodeid"]: o["outcome"] for o in outcomes}
    acceptance_passed = tests_ran and all(by_id.get(node) == "passed"
                                          for node in acceptance_nodeids(spec))
    pass_rate = float(report.get("pass_rate") or 0.0) if tests_ran else 0.0
    succeeded = acceptance_passed and pass_rate >= spec.quality_threshold
    failures, signature = _failures(spec, pending, outcomes, tests_ran, pass_rate, succeeded)
    return {
        "test_report": report if tests_ran else {}, "pass_rate": pass_rate,
        "acceptance_passed": acceptance_passed, "tests_ran": tests_ran, "succeeded": succeeded,
        "safety_report": safety, "safety_verdict": safety.get("verdict", ""),
        "failures": failures, "error_signature": signature,
    }


def _failures(spec: Spec, pending: dict[str, Any], outcomes: list[dict[str, Any]],
              tests_ran: bool, pass_rate: float, succeeded: bool) -> tuple[list[str], str]:
    """What went wrong, for the next prompts, and the normalized signature of the main error."""
    failures: list[str] = []
    signatures: list[str] = []
    if pending.get("no_code"):
        failures.append(f"Your reply was not used: {pending['no_code']}. Send each whole file "
                        "in a fenced block whose opening fence has path=..., e.g. "
                        f"```python path={spec.package}/plugin.py")
        signatures.append(f"reply: {pending['no_code']}")
    for rejected in pending.get("rejected", []):
        failures.append(f"File {rejected['path']!r} was rejected: {rejected['reason']}.")
    safety = pending.get("safety") or {}
    if safety.get("verdict") == "block":
        blocking = [f for f in safety.get("findings", []) if f.get("severity") == "HIGH"]
        lines = [f"{f['file']}:{f['line']} [{f['tool']} {f['rule']}] {f['message']}"
                 for f in (blocking or safety.get("findings", []))]
        failures.append("The safety gate blocked the code, so no test ran. Remove these:\n"
                        + "\n".join(lines))
        signatures.append("safety blocked: " + ", ".join(sorted({
            str(f.get("rule", "")) for f in (blocking or safety.get("findings", []))})))
    report = pending.get("report") or {}
    if tests_ran:
        _test_failures(spec, report, outcomes, failures, signatures)
        if not succeeded and not any(o["outcome"] in FAILING for o in outcomes):
            failures.append(f"The pass rate {pass_rate:.0%} is below the required "
                            f"{spec.quality_threshold:.0%}.")
    failures = [_cap(text) for text in failures[:MAX_FAILURES]]
    signature = next((s for s in signatures if s), "")
    return failures, normalize_error_signature(signature) if signature else ""


def _test_failures(spec: Spec, report: dict[str, Any], outcomes: list[dict[str, Any]],
                   failures: list[str], signatures: list[str]) -> None:
    if report.get("timed_out"):
        failures.append("The tests did not finish in time and were killed: look for an "
                        "endless loop or a blocking call (input(), sleep, network).")
        signatures.append("sandbox: tests timed out")
    if report.get("oom"):
        failures.append("The tests ran out of memory and were killed.")
        signatures.append("sandbox: out of memory")
    acceptance = set(acceptance_nodeids(spec))
    failing = sorted((o for o in outcomes if o["outcome"] in FAILING),
                     key=lambda o: (o["nodeid"] not in acceptance, o["nodeid"]))
    for outcome in failing:
        failures.append(f"{outcome['nodeid']} {outcome['outcome']}:\n{outcome['message']}")
        signatures.append(_error_line(outcome["message"]) or outcome["nodeid"])
    if not outcomes and not report.get("timed_out"):
        tail = report.get("output_tail", "").strip()
        failures.append("The tests could not run (no test result was collected):\n" + tail)
        signatures.append(tail or f"pytest exit code {report.get('exit_code')}")


def _error_line(message: str) -> str:
    """The line that names the error: pytest's first `E` line, else the message's last line."""
    lines = [line for line in message.splitlines() if line.strip()]
    marked = [line[1:].strip() for line in lines if line.startswith("E ")]
    return marked[0] if marked else (lines[-1] if lines else "")


def _cap(text: str) -> str:
    if len(text) <= MAX_FAILURE_CHARS:
        return text
    half = MAX_FAILURE_CHARS // 2
    return text[:half] + "\n[...]\n" + text[-half:]


def change_approval_reasons(run: RunView, spec: Spec, previous: dict[str, str],
                            checkpoint: dict[str, Any], pending: dict[str, Any]) -> list[str]:
    """Why a person must look at this change before the loop builds on it ([] = no need).

    Blocked code and replies that changed nothing are not changes: they are never accepted.
    """
    if run.autonomy == Autonomy.FULL:
        return []
    if checkpoint["safety_verdict"] == "block" or pending.get("no_code"):
        return []
    reasons = _major_reasons(spec, checkpoint, pending)
    if run.autonomy == Autonomy.GUIDED and not reasons and previous != checkpoint["files"]:
        reasons = ["guided autonomy: every change is reviewed"]
    return reasons


def _major_reasons(spec: Spec, checkpoint: dict[str, Any], pending: dict[str, Any]) -> list[str]:
    reasons = []
    change = pending.get("permissions_change")
    if change:
        reasons.append(f"new permissions requested in plugin.toml: {change['from']} -> "
                       f"{change['to']}")
    if checkpoint["safety_verdict"] == "review":
        reasons.append("the safety gate asks for a review")
    touched = {r["path"] for r in pending.get("rejected", [])} & protected_paths(spec)
    if touched:
        reasons.append("the reply tried to change the acceptance tests or the test harness "
                       f"({', '.join(sorted(touched))}); the change was refused")
    limit = int(setting("ENGINE_MAJOR_DIFF_LINES", 400))
    size = checkpoint["diff_stats"]["added"] + checkpoint["diff_stats"]["removed"]
    if size > limit:
        reasons.append(f"a large change: {size} lines (over {limit})")
    return reasons


# -- reflect: reflection, loop detector, escapes, budgets ----------------------------------------


def reflect_phase(step: Step) -> Transition:
    run, spec = step.run, step.spec
    checkpoint = latest_checkpoint(step)
    assert checkpoint is not None, "reflect runs after a checkpoint"
    ctx = prompt_context(step, files=checkpoint.files, failures="\n\n".join(checkpoint.failures))
    ctx.iteration = checkpoint.number
    text = step.llm.complete("reflector", build_messages("reflector", ctx,
                                                         budget_chars=budget_chars()))
    reflection = text.strip()[:4000]
    pending = {k: v for k, v in step.pending.items() if k in ("lesson_ids", "lessons")}
    if run.use_lessons and checkpoint.failures:
        found = lessons_port.retrieve(team_id=step.team_id,
                                      query=f"{spec.summary}\n{checkpoint.failures[0]}")
        if found.ids:
            pending.update(lesson_ids=found.ids, lessons=found.block)
    transition = _after_failure(step, checkpoint, pending)
    transition.reflection = reflection
    return transition


def _after_failure(step: Step, checkpoint: Checkpoint, pending: dict[str, Any]) -> Transition:
    run = step.run
    decisions = _loop_decisions(step, checkpoint.number)
    events = [{"iteration": checkpoint.number, "type": d.type, "signature": d.signature,
               "confidence": d.confidence, "occurrences": d.occurrences,
               "action": e.action, "reason": e.reason} for d, e in decisions]
    tried = [*run.escapes_tried, *([d.signature, e.action] for d, e in decisions)]
    updates: dict[str, Any] = {"escapes_tried": tried}
    action, reason, detail = _strongest(decisions)
    if action == "reset_context":
        # A fresh context is judged on its own iterations; other escapes keep the window, so a
        # problem that survives them climbs the ladder instead of starting over.
        updates["since_iteration"] = checkpoint.number
    transition = _route(run, action, reason, checkpoint, pending, updates)
    if transition.approval is not None and detail:
        transition.approval.payload["details"] = detail
    transition.events = events
    transition.notes += [{"kind": "run.loop_event", **event} for event in events]
    return transition


def _loop_decisions(step: Step, number: int) -> list[tuple[Any, Any]]:
    run = step.run
    history = [snapshot(it) for it in step.history.checkpoints()]
    tried = [(s, a) for s, a in run.escapes_tried]
    return [(d, choose_escape(d, tried=tried, autonomy=run.autonomy,
                              escalations_answered=run.escalations_answered))
            for d in detect(history, since=run.since_iteration) if d.iteration == number]


def snapshot(it: Checkpoint) -> IterationSnapshot:
    outcomes = (it.test_report or {}).get("outcomes", [])
    return IterationSnapshot(
        number=it.number, code_hash=it.code_hash,
        pass_count=sum(o["outcome"] == "passed" for o in outcomes),
        failing=frozenset(o["nodeid"] for o in outcomes if o["outcome"] in FAILING),
        error_signature=it.error_signature, reply_hash=it.reply_hash, tests_ran=it.tests_ran,
    )


def _strongest(decisions: list[tuple[Any, Any]]) -> tuple[str, str, str]:
    if not decisions:
        return "", "", ""
    _, escape = max(decisions, key=lambda pair: ESCAPES.index(pair[1].action))
    return escape.action, escape.reason, escape.detail


def _route(run: RunView, action: str, reason: str, checkpoint: Checkpoint, pending: dict[str, Any],
           updates: dict[str, Any]) -> Transition:
    if action == "abort":
        transition = ending(pending, RunStatus.ABORTED, f"the loop detector stopped the run: "
                                                         f"{reason}")
    elif (exhausted := budget_exhausted(run, checkpoint.number)):
        transition = ending(pending, RunStatus.FAILED, exhausted)
    elif action == "escalate":
        transition = Transition(phase=Phase.PLAN, pending=pending)
        transition.approval = Approval(GateKind.ESCALATION, {
            "reason": reason, "iteration": checkpoint.number,
            "failures": checkpoint.failures, "reflection": checkpoint.reflection,
            "plan": run.plan, "earlier_approaches": run.approaches,
            "question": "The run is stuck. What should it do differently? Your answer is "
                        "given to the model as guidance.",
        })
    elif action in ("reset_context", "try_alternative"):
        transition = Transition(phase=Phase.PLAN, pending=pending)
        updates["escape_in_force"] = action
    else:
        transition = Transition(phase=Phase.IMPLEMENT, pending=pending)
    transition.updates = updates
    return transition


def budget_exhausted(run: RunView, completed: int) -> str:
    """Why the run may not start another iteration ("" when it may)."""
    if completed >= run.max_iterations:
        return f"iteration budget exhausted: {completed} of {run.max_iterations} iterations used"
    if run.max_tokens and run.tokens_total >= run.max_tokens:
        return f"token budget exhausted: {run.tokens_total} of {run.max_tokens} tokens used"
    return wall_time_exhausted(run)


def wall_time_exhausted(run: RunView) -> str:
    if not run.started_at or not run.max_wall_s:
        return ""
    elapsed = (timezone.now() - run.started_at).total_seconds() - run.waited_s
    if elapsed <= run.max_wall_s:
        return ""
    return f"wall-time budget exhausted: {int(elapsed)}s of {run.max_wall_s}s used"


# -- learn: the end of a run ---------------------------------------------------------------------


def learn_phase(step: Step) -> Transition:
    run, pending = step.run, step.pending
    outcome = pending.get("outcome") or {"status": RunStatus.FAILED, "reason": "no outcome"}
    written = 0
    if run.use_lessons:
        written = lessons_port.learn(run_outcome(step, outcome["status"]))
    return Transition(phase=Phase.DONE, pending=pending, status=outcome["status"],
                      updates={"lessons_written": written, "error": _error_text(outcome)})


def _error_text(outcome: dict[str, Any]) -> str:
    return "" if outcome["status"] == RunStatus.SUCCEEDED else outcome.get("reason", "")


def run_outcome(step: Step, status: str) -> lessons_port.RunSummary:
    """What the run learned, for lessons. A run may end before its first checkpoint (a model
    call that failed for good in the first plan step): then there is nothing to reflect on."""
    run, spec = step.run, step.spec
    iterations = list(step.history.checkpoints())
    reflections = []
    for index, it in enumerate(iterations):
        following = iterations[index + 1] if index + 1 < len(iterations) else None
        fixed = following is not None and _fixed_by(it, following)
        # Without a reflection the facts still teach: what failed, and the change that fixed it.
        if it.reflection or fixed:
            reflections.append(_reflection(it, following if fixed else None))
    used = sorted({lesson for it in iterations for lesson in it.lessons_used})
    return lessons_port.RunSummary(
        team_id=step.team_id, run_id=run.id, spec_name=spec.name,
        spec_summary=spec.summary, succeeded=status == RunStatus.SUCCEEDED,
        final_approach=run.plan, final_iteration=iterations[-1].number if iterations else 0,
        reflections=reflections, lessons_used=used,
    )


def _fixed_by(it: Checkpoint, following: Checkpoint) -> bool:
    """The next iteration cleared this one's error and did better."""
    return following.error_signature != it.error_signature and (
        following.succeeded or following.pass_rate > it.pass_rate)


def _reflection(it: Checkpoint, fix: Checkpoint | None) -> lessons_port.ReflectionNote:
    """One iteration's mistake and, when the next iteration fixed it, that fix."""
    outcomes = (it.test_report or {}).get("outcomes", [])
    return lessons_port.ReflectionNote(
        # The signature goes last: lessons key a mistake by the error text's last line.
        iteration=it.number, error_text="\n".join([*it.failures, it.error_signature])[-2000:],
        failed_approach=it.plan[:2000], reflection=it.reflection, fixed_by_next=fix is not None,
        fix_summary=(fix.reply_prose or fix.diff[:1500]) if fix is not None else "",
        failing_tests=tuple(o["nodeid"] for o in outcomes if o["outcome"] in FAILING),
        fix_diff=fix.diff if fix is not None else "",
    )


PHASES: dict[str, Callable[[Step], Transition]] = {
    Phase.PLAN: plan_phase,
    Phase.IMPLEMENT: implement_phase,
    Phase.TEST_WRITE: test_write_phase,
    Phase.GATE: gate_phase,
    Phase.SANDBOX: sandbox_phase,
    Phase.VERIFY: verify_phase,
    Phase.REFLECT: reflect_phase,
    Phase.LEARN: learn_phase,
}
