"""The phases where a model writes: plan (the architect), implement (the implementer's code) and
test_write (the tester's extra tests); and the plugin.toml permissions a reply may ask for.
"""

from __future__ import annotations

import ast
import dataclasses
from typing import Any

from autocoder.engine import lessons_port
from autocoder.engine.change_words import words_request
from autocoder.engine.changing import (
    base_of,
    change_protected,
    keep_base_tests,
    tests_may_change,
)
from autocoder.engine.llm_port import SHORTER as ASKED_SHORTER
from autocoder.engine.llm_port import reply_hash
from autocoder.engine.pending import WordsChange
from autocoder.engine.prompting import build_messages, plan_from_reply
from autocoder.engine.replies import EDIT_MISSED, apply_edits, merge_files
from autocoder.engine.reply_formats import as_text, ask, read_files
from autocoder.engine.scaffold import plugin_toml
from autocoder.engine.spec import Spec
from autocoder.engine.states import Autonomy, GateKind, Phase
from autocoder.engine.steps import (
    Step,
    budget_chars,
    current_files,
    failures_for_prompt,
    latest_checkpoint,
    prompt_context,
)
from autocoder.engine.transitions import Approval, RunUpdates, Transition
from autocoder.engine.verifying import services_for_review
from autocoder.llm.types import Message
from autocoder.plugins import permissions_or_none, read_manifest
from autocoder.plugins.render import render_manifest

GENERATED_TESTS_PREFIX = "tests/test_generated_"
# Added to the implementer's prompt when its reply stopped at the length limit with no file.
SHORTER = ("Your last reply stopped at its length limit before any file was complete, so "
           "nothing could be used. Answer again with only the file blocks: the shortest code "
           "that does the job, no explanation, no comments, and no file you do not change.")


def plan_phase(step: Step) -> Transition:
    run, spec, pending = step.run, step.spec, step.pending
    if run.use_lessons and "lesson_ids" not in pending:
        found = lessons_port.retrieve(team_id=step.team_id,
                                      query=f"{spec.name}: {spec.summary}")
        pending["lesson_ids"], pending["lessons"] = found.ids, found.block
    latest = latest_checkpoint(step)
    files = current_files(step)
    ctx = prompt_context(step, files=files, failures=failures_for_prompt(latest),
                         replanning=bool(run.plan))
    answer = ask(step.llm, "architect", build_messages(
        "architect", ctx, budget_chars=budget_chars(step, "architect")))
    plan = plan_from_reply(as_text("architect", answer.text), cut=answer.cut)
    approaches = [*run.approaches, run.plan] if run.plan and run.plan != plan else run.approaches
    updates: RunUpdates = {"plan": plan, "approaches": approaches}
    transition = Transition(phase=Phase.IMPLEMENT, pending=pending, updates=updates,
                            notes=[{"kind": "run.plan", "plan": plan}])
    if _plan_needs_approval(step):
        transition.approval = Approval(GateKind.PLAN, {
            "plan": plan, "earlier_approaches": approaches, "lessons": pending.get("lessons", ""),
            "guidance": run.guidance, "plan_cut": answer.cut,
            "services": services_for_review(spec, files.get("plugin.toml", "")),
            "reasoning": f"Plan for attempt {step.number}; the loop starts implementing it "
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


def edits_offered(step: Step) -> bool:
    """From its first reply on, the implementer may answer with edits instead of whole files,
    unless edits it sent in the last attempt did not apply (docs/engine.md)."""
    latest = latest_checkpoint(step)
    return latest is None or not any(EDIT_MISSED in str(failure) for failure in latest.failures)


def implement_phase(step: Step) -> Transition:
    spec, pending = step.spec, step.pending
    base = current_files(step)
    ctx = prompt_context(step, files=base, failures=failures_for_prompt(latest_checkpoint(step)))
    ctx.edits = edits_offered(step)
    messages = build_messages("implementer", ctx,
                              budget_chars=budget_chars(step, "implementer"))
    # Held to a JSON schema, the first reply sends whole files: a small model editing the
    # stub through the schema sends edits of files that do not exist (docs/engine.md).
    json_edits = ctx.edits and step.number > 1
    answer = ask(step.llm, "implementer", messages, package=spec.package, edits=json_edits)
    parsed = read_files(answer.text)
    if not parsed.files and not parsed.edits and answer.cut:
        # Still cut, continued, before a file was whole: not the iteration's fault yet. Asked
        # once more, shorter (docs/engine.md, "The loop, step by step").
        answer = ask(step.llm, "implementer", [*messages[:-1], Message(
            "user", messages[-1].content + "\n\n" + SHORTER)], package=spec.package,
            edits=json_edits, purpose=ASKED_SHORTER)
        parsed = read_files(answer.text)
    text = answer.text
    changes, missed = apply_edits(base, parsed.files, parsed.edits)
    protected = change_protected(step.run, spec, base)
    files, rejected = merge_files(base, changes, protected=protected)
    rejected_list = [{"path": r.path, "reason": r.reason}
                     for r in (*parsed.rejected, *missed, *rejected)]
    files, kept = keep_base_tests(base_of(step.run), base, files,  # a change run's tests stay
                                  may_change=tests_may_change(step.run))
    rejected_list += kept
    files, rejected_list, permissions, words = _manifest_request(
        spec, base, changes, files, rejected_list, change=bool(base_of(step.run)))
    # A file one of whose edits missed is still changed by those that applied.
    refused = {r["path"] for r in rejected_list if not r["reason"].startswith(EDIT_MISSED)}
    nothing = not [path for path in changes if path not in refused]
    pending.update({
        "files": files, "rejected": rejected_list, "prose": parsed.prose[:4000],
        "reply_hash": reply_hash(text), "permissions_change": permissions,
        "cut_replies": ["implementer"] if answer.cut else [], "words_change": words,
        "no_code": ("the reply contained no file blocks" if not changes and not parsed.edits
                    else "no file of the reply could be applied" if nothing else ""),
    })
    next_phase = Phase.VERIFY if nothing else Phase.TEST_WRITE
    return Transition(phase=next_phase, pending=pending)


def _manifest_request(spec: Spec, base: dict[str, str], proposed: dict[str, str],
                      files: dict[str, str], rejected: list[dict[str, str]], *, change: bool,
                      ) -> tuple[dict[str, str], list[dict[str, str]], dict[str, Any] | None,
                                 WordsChange | None]:
    """plugin.toml is read-only except its [permissions] and, in a change run, the plugin's
    summary and its commands' descriptions (change_words.py): a reply that changes those is a
    request, applied here; a permissions request is a major change for a person to see.
    Returns the files, the refusals, the permissions change and the words change."""
    if "plugin.toml" not in proposed:
        return files, rejected, None, None
    words = words_request(base.get("plugin.toml", ""), proposed["plugin.toml"]) \
        if change else None
    if words is not None:
        files = {**files, "plugin.toml": words[0]}
        rejected = [r for r in rejected if r["path"] != "plugin.toml"]
    old = permissions_or_none(base.get("plugin.toml", ""))
    new = permissions_or_none(proposed["plugin.toml"])
    if new is None or old is None or new == old:  # unreadable, or against the rule: no request
        return files, rejected, None, words[1] if words else None
    # Re-rendered by the host from what was asked (network, files, hosts): the rest of the
    # manifest (name, commands, settings) stays the spec's (a change run's: the version's).
    current = read_manifest(files.get("plugin.toml", "")) if change else None
    files = {**files, "plugin.toml": render_manifest(dataclasses.replace(current, permissions=new))
             if current is not None else plugin_toml(spec, permissions=new)}
    rejected = [r for r in rejected if r["path"] != "plugin.toml"]
    return files, rejected, {"from": old.as_dict(), "to": new.as_dict()}, \
        words[1] if words else None


def manifest_permissions(text: str) -> dict[str, Any] | None:
    """The [permissions] a plugin.toml grants, {network, filesystem} (None when it cannot be
    read or breaks the rule of autocoder/plugins/permissions.py)."""
    permissions = permissions_or_none(text)
    return permissions.as_dict() if permissions is not None else None


def test_write_phase(step: Step) -> Transition:
    spec, pending = step.spec, step.pending
    files = dict(pending["files"])
    ctx = prompt_context(step, files=files)
    answer = ask(step.llm, "tester", build_messages(
        "tester", ctx, budget_chars=budget_chars(step, "tester")), package=spec.package)
    parsed = read_files(answer.text)
    tests = {p: c for p, c in parsed.files.items()
             if p.startswith(GENERATED_TESTS_PREFIX) and p.endswith(".py")}
    refused = [{"path": p, "reason": "the tester may only add tests/test_generated_*.py files"}
               for p in parsed.files if p not in tests]
    # Extra tests are the tester's help, not the candidate: one that does not parse is left
    # out (and said so), so the code is still tested, instead of failing the safety gate.
    for path, problem in [(p, _syntax_problem(c)) for p, c in tests.items()]:
        if problem:
            del tests[path]
            refused.append({"path": path, "reason": f"the extra tests do not parse ({problem}); "
                                                    "they were left out"})
    files, rejected = merge_files(files, tests, protected=change_protected(step.run, spec, files))
    pending["files"] = files
    if answer.cut:
        pending["cut_replies"] = [*pending.get("cut_replies", []), "tester"]
    pending["rejected"] = [*pending.get("rejected", []), *refused,
                           *({"path": r.path, "reason": r.reason} for r in rejected)]
    return Transition(phase=Phase.GATE, pending=pending)


def _syntax_problem(source: str) -> str:
    """"line N: what is wrong" when `source` is not valid Python, else ""."""
    try:
        ast.parse(source)
    except SyntaxError as error:
        return f"line {error.lineno}: {error.msg}"
    except ValueError as error:  # a NUL byte
        return str(error)
    return ""
