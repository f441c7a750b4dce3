"""verify: the iteration's checkpoint. The quality gate (every acceptance test passes and the
pass rate meets the spec), what went wrong in words for the next prompts, and whether a person
must look at the change before the loop builds on it.
"""

from __future__ import annotations

import re
from typing import Any, TypedDict

from autocoder.engine.change_words import words_lines
from autocoder.engine.changing import change_reasons
from autocoder.engine.detector import FAILING
from autocoder.engine.pending import Pending, carried
from autocoder.engine.quality_gate import quality_failure, quality_met
from autocoder.engine.replies import code_hash, diff_stats, unified_diff
from autocoder.engine.scaffold import (
    ACCEPTANCE_TEST_PATH,
    acceptance_nodeids,
    method_name,
    protected_paths,
)
from autocoder.engine.second_opinion import review_outcome, second_opinion
from autocoder.engine.spec import Spec
from autocoder.engine.spec_services import SettingDict, SystemDict
from autocoder.engine.states import Autonomy, GateKind, Phase, RunStatus, RunView
from autocoder.engine.steps import Step, current_files, diff_base, examples_path, setting
from autocoder.engine.transitions import Approval, RunUpdates, Transition, ending
from autocoder.plugins import permissions_or_none
from autocoder.signatures import normalize_error_signature

MAX_FAILURE_CHARS = 1500
MAX_FAILURES = 12


def verify_phase(step: Step) -> Transition:
    run, spec, pending = step.run, step.spec, step.pending
    previous = diff_base(step)  # a change run's first diff: against the version in use
    files = pending.get("files") or current_files(step)
    result = _evaluate(spec, pending, examples=examples_path(step))
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
    carry = carried(pending)
    reasons = change_approval_reasons(run, spec, previous, checkpoint, pending)
    # A person looks next (this change, or the publish request of a run that succeeded), so the
    # reviewing model reads the candidate first. Asked here, in the step: the publish request
    # is made inside the run's final transaction, where a slow model call must not hold locks.
    opinion = (second_opinion(step, files=files, result=result, reasons=reasons)
               if reasons or result["succeeded"] else None)
    # "Changes needed" goes back into the loop (full) or to a person (semi, guided).
    review = review_outcome(step, opinion, succeeded=result["succeeded"], reasons=reasons)
    reasons = review.reasons
    if opinion is not None and result["succeeded"]:
        carry["second_opinion"] = opinion
    updates: RunUpdates = {"escape_in_force": ""}
    if review.send_back:  # the implementer reads the reviewer's reasons like failing tests
        checkpoint["failures"] = [*checkpoint["failures"], review.finding]
        transition = Transition(phase=Phase.IMPLEMENT, pending=carry)
    elif result["succeeded"]:
        transition = ending(carry, RunStatus.SUCCEEDED,
                            f"attempt {step.number} passed every acceptance test with a pass "
                            f"rate of {result['pass_rate']:.0%}"
                            + (f" and a quality score of {result['quality_score']}/100"
                               if result["quality_score"] is not None else ""))
    else:
        transition = Transition(phase=Phase.REFLECT, pending=carry)
    transition.checkpoint = checkpoint
    transition.updates = updates
    transition.events = review.events
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
            "quality": result["quality"],
            "failures": result["failures"], "plan": run.plan,
            "reasoning": pending.get("prose", ""), "succeeded": result["succeeded"],
            "permissions_change": pending.get("permissions_change"),
            "cut_replies": pending.get("cut_replies", []),
            "services": services_for_review(spec, files.get("plugin.toml", "")),
            **({"second_opinion": opinion} if opinion is not None else {}),
        })
    return transition


def _evaluate(spec: Spec, pending: Pending, *,
              examples: str = ACCEPTANCE_TEST_PATH) -> dict[str, Any]:
    """Quality gate: every acceptance test passes and the overall pass rate meets the spec."""
    report = pending.get("report") or {}
    safety = pending.get("safety") or {}
    blocked = safety.get("verdict") == "block"
    tests_ran = bool(report) and not blocked and not pending.get("no_code")
    outcomes = report.get("outcomes", []) if tests_ran else []
    by_id = {o["nodeid"]: o["outcome"] for o in outcomes}
    required = pending.get("required_tests") or acceptance_nodeids(spec)  # see changing.py
    acceptance_passed = tests_ran and all(by_id.get(node) == "passed" for node in required)
    pass_rate = float(report.get("pass_rate") or 0.0) if tests_ran else 0.0
    quality = (pending.get("quality") or {}) if tests_ran else {}
    # The threshold is on the quality score (quality_gate.py); a candidate checked before the
    # pipeline existed (a run resumed across the upgrade) is held to its pass rate.
    meets = quality_met(spec, quality) if quality else pass_rate >= spec.quality_threshold
    succeeded = acceptance_passed and meets
    failures, signature = _failures(spec, pending, outcomes, tests_ran, pass_rate, succeeded,
                                    examples)
    if tests_ran and quality and not meets:
        failures.append(_cap(quality_failure(spec, quality)))
    return {
        "quality": quality, "quality_score": quality.get("score") if quality else None,
        "test_report": report if tests_ran else {}, "pass_rate": pass_rate,
        "acceptance_passed": acceptance_passed, "tests_ran": tests_ran, "succeeded": succeeded,
        "safety_report": safety, "safety_verdict": safety.get("verdict", ""),
        "failures": failures, "error_signature": signature,
    }


def _failures(spec: Spec, pending: Pending, outcomes: list[dict[str, Any]],
              tests_ran: bool, pass_rate: float, succeeded: bool,
              examples: str = ACCEPTANCE_TEST_PATH) -> tuple[list[str], str]:
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
        _test_failures(spec, report, outcomes, failures, signatures, examples)
        if (not succeeded and not pending.get("quality")
                and not any(o["outcome"] in FAILING for o in outcomes)):
            failures.append(f"The pass rate {pass_rate:.0%} is below the required "
                            f"{spec.quality_threshold:.0%}.")
    failures = [_cap(text) for text in failures[:MAX_FAILURES]]
    signature = next((s for s in signatures if s), "")
    return failures, normalize_error_signature(signature) if signature else ""


def _test_failures(spec: Spec, report: dict[str, Any], outcomes: list[dict[str, Any]],
                   failures: list[str], signatures: list[str],
                   examples: str = ACCEPTANCE_TEST_PATH) -> None:
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
    shown: dict[str, int] = {}  # a parametrized test's first case, by the test's own id
    for outcome in failing:
        test = outcome["nodeid"].split("[", 1)[0]
        signatures.append(_error_line(outcome["message"]) or outcome["nodeid"])
        if test in shown and "[" in outcome["nodeid"]:
            # Its other cases run the same code: their id and error line say the rest.
            failures[shown[test]] += (f"\nalso {outcome['outcome']}: {outcome['nodeid']}: "
                                      f"{_error_line(outcome['message'])}")
            continue
        shown[test] = len(failures)
        failures.append(f"{outcome['nodeid']} {outcome['outcome']}:\n"
                        f"{_told_once(spec, examples, outcome['nodeid'], outcome['message'])}")
    if not outcomes and not report.get("timed_out"):
        tail = report.get("output_tail", "").strip()
        failures.append("The tests could not run (no test result was collected):\n" + tail)
        signatures.append(tail or f"pytest exit code {report.get('exit_code')}")


def _told_once(spec: Spec, examples: str, nodeid: str, message: str) -> str:
    """A failing example's message (a test of `examples`, the tests built from the request)
    without the test's own source, which only says the example again: the request shows it
    once (docs/llm.md)."""
    found = re.match(rf"^{re.escape(examples)}::test_(.+)_example_(\d+)$", nodeid)
    command = next((c.name for c in spec.commands
                    if found and method_name(c.name) == found.group(1)), "")
    if not command or found is None:
        return message
    kept = [line for line in message.splitlines()
            if line.startswith("E ") or re.match(r"^\S+\.py:\d+: ", line)]
    return (f"(example {found.group(2)} of `{command}` in the request)\n"
            + "\n".join(kept or message.splitlines()[-3:]))


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
                            checkpoint: dict[str, Any], pending: Pending) -> list[str]:
    """Why a person must look at this change before the loop builds on it ([] = no need).

    Blocked code and replies that changed nothing are not changes: they are never accepted.
    """
    if run.autonomy == Autonomy.FULL:
        return []
    if checkpoint["safety_verdict"] == "block" or pending.get("no_code"):
        return []
    reasons = _major_reasons(spec, checkpoint, pending)
    reasons += change_reasons(run, previous, checkpoint["files"], pending.get("rejected", []))
    if run.autonomy == Autonomy.GUIDED and not reasons and previous != checkpoint["files"]:
        reasons = ["guided autonomy: every change is reviewed"]
    return reasons


def _major_reasons(spec: Spec, checkpoint: dict[str, Any], pending: Pending) -> list[str]:
    reasons = []
    change = pending.get("permissions_change")
    if change:
        reasons.append(permissions_request_words(change["from"], change["to"]))
    if checkpoint["safety_verdict"] == "review":
        reasons.append("the safety gate asks for a review")
    touched = {r["path"] for r in pending.get("rejected", [])} & protected_paths(spec)
    if touched:
        reasons.append("the reply tried to change the acceptance tests or the test harness "
                       f"({', '.join(sorted(touched))}); the change was refused")
    # A change run's rewritten summary or descriptions: what the tool page and the marketplace
    # will say (change_words.py).
    reasons += words_lines(pending.get("words_change"))
    limit = int(setting("ENGINE_MAJOR_DIFF_LINES", 400))
    size = checkpoint["diff_stats"]["added"] + checkpoint["diff_stats"]["removed"]
    if size > limit:
        reasons.append(f"a large change: {size} lines (over {limit})")
    return reasons


def permissions_request_words(before: dict[str, Any], after: dict[str, Any]) -> str:
    """A permissions request ({network, filesystem, hosts} before and after) in one line a
    reviewer reads without knowing plugin.toml: what is new first, what is given up after."""
    old_hosts, new_hosts = before.get("hosts") or [], after.get("hosts") or []
    added_hosts = [host for host in new_hosts if host not in old_hosts]
    dropped_hosts = [host for host in old_hosts if host not in new_hosts]
    more, fewer = [], []
    if added_hosts:
        more.append(f"to reach new hosts: {', '.join(added_hosts)}")
    if after.get("network") and not before.get("network"):
        more.append("network access")
    if after.get("filesystem") == "workdir" and before.get("filesystem") != "workdir":
        more.append("to write files in its working folder")
    if dropped_hosts:
        fewer.append(f"no longer reaches {', '.join(dropped_hosts)}")
    if before.get("network") and not after.get("network"):
        fewer.append("gives up network access")
    if before.get("filesystem") == "workdir" and after.get("filesystem") != "workdir":
        fewer.append("no longer writes files")
    if more:
        words = "The plugin asks for new permissions: " + "; ".join(more)
        return words + (f" (and {'; '.join(fewer)})" if fewer else "")
    return "The plugin asks to change its permissions: " + "; ".join(fewer or ["no difference"])


class ReviewServices(TypedDict):
    """The services a gate shows (services_for_review)."""
    hosts: list[str]
    settings: list[SettingDict]
    systems: list[SystemDict]


def services_for_review(spec: Spec, manifest_text: str) -> ReviewServices:
    """The other services the plugin reaches, for the person at a gate: the hosts its
    plugin.toml grants (the spec's when there is none to read yet), the settings the team
    enters when it activates the plugin (address settings marked), and the systems in the
    requester's words, as the spec declares them."""
    permissions = permissions_or_none(manifest_text) if manifest_text else None
    hosts = permissions.hosts if permissions is not None else spec.services.hosts
    described = spec.services.as_dict()
    return {"hosts": [rule.text() for rule in hosts], "settings": described["settings"],
            "systems": described.get("systems", [])}
