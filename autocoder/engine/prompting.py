"""Prompts for each role, built from the templates in prompts/ and kept within a size budget.

A prompt is a system message (the role's instructions, the plugin contract and, for roles that
write files, the reply protocol) and a user message made of sections. When the whole does not
fit in `budget_chars`, the least important material goes first: older earlier approaches (the
newest two stay longest), then the bodies of files other than the package's plugin.py (listed
by name instead), then the middle of the failures (down to FAILURES_FLOOR, keeping the first and
last lines), then reference docs and lessons (the least relevant, last, first), then the
second-newest approach where the failures would go otherwise, then the rest of the failures
and approaches, and as a last resort the middle of plugin.py. The request with
its examples, the person's guidance, the plan and the task are never dropped, so only they can
push a prompt over budget.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from string import Template

from autocoder.engine.host_api import host_api_lines
from autocoder.engine.judging import bar_text
from autocoder.engine.prompt_files import (
    MIN_TRIMMED_SECTION,
    FileSection,
    host_written,
    squeeze,
)
from autocoder.engine.replies import parse_reply
from autocoder.engine.scaffold import ACCEPTANCE_TEST_PATH, method_name
from autocoder.engine.spec import Spec
from autocoder.llm.config import REPLY_WORDS
from autocoder.llm.types import ROLES, Message

PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"
TASK_MARKER = "--- task ---"
PROMPT_ESCAPES = ("reset_context", "try_alternative", "escalate")
PLAN_MAX_CHARS = 6000
MAX_APPROACH_CHARS = 1500
KEEP_APPROACHES = 2  # the newest approaches stay until everything else has been trimmed
FAILURES_FLOOR = 2500

# Which optional sections each role sees; the request and the task are always there.
_ROLE_SECTIONS: dict[str, frozenset[str]] = {
    "analyst": frozenset({"guidance", "lessons"}),
    "architect": frozenset({"guidance", "plan", "escape", "approaches", "lessons", "files",
                            "failures"}),
    "implementer": frozenset({"guidance", "plan", "escape", "approaches", "lessons", "files",
                              "failures", "reference"}),
    "tester": frozenset({"guidance", "plan", "files", "failures"}),
    "reviewer": frozenset({"guidance", "plan", "files", "checks"}),
    "reflector": frozenset({"guidance", "plan", "escape", "files", "failures", "reference"}),
}


@dataclass
class PromptContext:
    spec: Spec
    iteration: int
    plan: str = ""
    files: dict[str, str] = field(default_factory=dict)
    failures: str = ""  # test output, safety findings, the last reflection: what went wrong
    earlier_approaches: list[str] = field(default_factory=list)  # oldest first
    lessons: str = ""  # lessons learned retrieved for this run, most relevant first
    guidance: str = ""  # a person's answer to an escalation or a plan review
    escape: str = ""  # "" or the escape in force (reset_context, try_alternative, escalate)
    checks: str = ""  # for the reviewer: what tests and safety gate found on the candidate
    reference: str | None = None  # API reference entries; None: retrieved for the plan+failures
    edits: bool = False  # the implementer may answer with edits instead of whole files
    # Where the request's examples are tests: the acceptance tests, or a change run's
    # regression tests (autocoder/engine/changing.py); the version a change run changes.
    examples_path: str = ACCEPTANCE_TEST_PATH
    base_version: str = ""


def build_messages(role: str, ctx: PromptContext, *, budget_chars: int = 24000) -> list[Message]:
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r} (expected one of {', '.join(ROLES)})")
    if ctx.escape and ctx.escape not in PROMPT_ESCAPES:
        raise ValueError(f"unknown escape {ctx.escape!r} (expected one of {PROMPT_ESCAPES})")
    system_text, task_text = _role_template(role, ctx)
    if role == "implementer" and ctx.edits:
        task_text += "\n\n" + Template(_template("_edits")).substitute(
            package=ctx.spec.package).strip()
    wanted = _ROLE_SECTIONS[role]
    if "reference" in wanted and ctx.reference is None:
        ctx.reference = _reference(ctx)
    user = _UserMessage(ctx, wanted, task_text, role=role)
    user.fit(budget_chars - len(system_text))
    return [Message("system", system_text), Message("user", user.render())]


# Added where a reply is still cut at its length limit after being continued: whoever reads
# it next (the implementer, a person at a gate) knows its end is missing.
CUT_NOTE = "\n[The reply stops here: it was cut at the model's length limit, its end is missing.]"


def plan_from_reply(text: str, *, cut: bool = False) -> str:
    """The architect's plan: the reply without file blocks, capped at PLAN_MAX_CHARS; a plan
    `cut` at the model's length limit says so at its end."""
    plan = parse_reply(text).prose.strip()
    note = CUT_NOTE if cut else ""
    if len(plan) + len(note) <= PLAN_MAX_CHARS:
        return plan + note
    marker = note or "\n[... plan shortened ...]"
    return plan[: PLAN_MAX_CHARS - len(marker)].rstrip() + marker


_VERDICT = re.compile(r"^\W*verdict\W*(approve|request[_ ]changes|unsure)\b", re.I | re.M)
MAX_REMARKS_CHARS = 3000


def review_verdict(text: str) -> str:
    """"approve", "request_changes", "unsure", or "" when the reviewer gave no verdict line."""
    found = _VERDICT.search(text or "")
    return found.group(1).lower().replace(" ", "_") if found else ""


def review_opinion(text: str, *, cut: bool = False) -> dict[str, str] | None:
    """The reviewer's reply as {"verdict", "remarks"}; None for a reply without a verdict
    line (empty, or not what was asked for), which is no opinion at all. Remarks `cut` at the
    model's length limit say so at their end."""
    found = _VERDICT.search(text or "")
    if found is None:
        return None
    # The whole verdict line goes, with any markdown around the verdict ("**VERDICT: ...**").
    end = text.find("\n", found.end())
    remarks = (text[:found.start()] + (text[end:] if end >= 0 else "")).strip()
    note = CUT_NOTE.strip() if cut else ""
    remarks = _cap(remarks, MAX_REMARKS_CHARS - len(note) - 1)
    return {"verdict": review_verdict(text),
            "remarks": f"{remarks}\n{note}".strip() if note else remarks}


# -- templates -----------------------------------------------------------------------------------


@cache
def _template(name: str) -> str:
    return (PROMPTS_DIR / f"{name}.md").read_text(encoding="utf-8")


def _role_template(role: str, ctx: PromptContext) -> tuple[str, str]:
    from autocoder.quality.strategies import strategy

    spec = ctx.spec
    values = {"plugin_name": spec.name, "package": spec.package, "iteration": str(ctx.iteration),
              "words": str(REPLY_WORDS.get(role, 0)),
              "judged": bar_text(spec, role, change=ctx.base_version,
                                 examples=ctx.examples_path),
              "read_only": _read_only(ctx),
              "change": _change_words(ctx) if role == "implementer" else "",
              "libraries": runtime_libraries_text(detail=role in _CHOOSE_LIBRARIES),
              "stdlib": ", ".join(CONTRACT_STDLIB),
              "services": services_text(spec, harness=_HARNESS_TOLD.get(role, "none")),
              "testing": testing_text(spec), "strategy": strategy(spec.testing_strategy).key}
    values["contract"] = Template(_template("_contract")).substitute(values).strip()
    values["protocol"] = Template(_template("_protocol")).substitute(values).strip()
    system, _, task = _template(role).partition(TASK_MARKER)
    system = Template(system).substitute(values).strip()
    if values["change"]:
        system += "\n\n" + values["change"]
    return system, Template(task).substitute(values).strip()


def _read_only(ctx: PromptContext) -> str:
    """The contract's line on the tests the model may not touch: the acceptance tests, or in
    a change run the change's regression tests (its acceptance tests) and the version's."""
    if not ctx.base_version:
        return (f"`{ACCEPTANCE_TEST_PATH}` (the requester's examples) and `tests/conftest.py`"
                " are read-only: never send them.")
    return (f"This run changes version {ctx.base_version}: `{ctx.examples_path}` (this change's"
            " examples, its acceptance tests) and `tests/conftest.py` are read-only (never"
            f" send them), and every test of version {ctx.base_version} keeps passing.")


def _change_words(ctx: PromptContext) -> str:
    if not ctx.base_version:
        return ""
    return ("When the change makes the plugin's summary or a command's description untrue, send"
            " `plugin.toml` with only those words rewritten (the host keeps the rest of it), and"
            " README.md with its words made true too.")


# The roles that choose libraries are told what each is for; the roles that write tests or
# explain their failures, how the tests' harness answers and records; the reviewer, its
# fixture (engine/host_api.py).
_CHOOSE_LIBRARIES = frozenset({"architect", "implementer"})
_HARNESS_TOLD = {"implementer": "all", "tester": "all", "reflector": "all",
                 "reviewer": "fixture"}
# The reviewed standard library as the contract names it: what plugins use most; the safety
# gate allows each (autocoder/safety/reviewed.py; tests/engine/test_lean_prompts.py checks it).
CONTRACT_STDLIB = (
    "json", "csv", "io.StringIO", "io.BytesIO", "re", "datetime", "zoneinfo", "math", "decimal",
    "statistics", "collections", "itertools", "functools", "dataclasses", "typing", "enum",
    "textwrap", "hashlib", "base64", "urllib.parse",
)


def services_text(spec: Spec, *, harness: str = "all") -> str:
    """What the contract says about other services: how this plugin reaches the ones its spec
    names (docs/plugins.md, "Host API"), or that it reaches none; and, for a plugin that runs
    on a schedule, the period each run covers."""
    services = spec.services
    if not services:
        return "\n".join(["- This plugin talks to no other service: it works only on the payload"
                          " it is given.", *_schedule_lines(spec)])
    lines = [
        "- This plugin talks to other services only through the host's API, which",
        "  `on_initialize(self, api)` receives: keep it (`self.api = api`); never socket,",
        "  urllib.request, http.client or requests.",
        # Each fact checked on the real classes (engine/host_api.py).
        *host_api_lines(spec, harness=harness),
        *_systems_lines(spec),
    ]
    return "\n".join(lines + _schedule_lines(spec))


_DOES = {"reads": "reads from it", "sends": "sends to it", "both": "reads from it and sends to it"}


def _systems_lines(spec: Spec) -> list[str]:
    """The systems in the requester's words, and how the plugin finds the address of one whose
    address the team's admin enters (an address setting)."""
    services = spec.services
    lines = []
    if services.systems:
        described = "; ".join(
            f"{system.name} ({_DOES.get(system.does, system.does)}, "
            + (f"at {system.host.text()}" if system.host is not None
               else f"its address is the setting `{system.address_setting}`") + ")"
            for system in services.systems)
        lines.append(f"  - The systems it works with, in the requester's words: {described}.")
    for setting in services.address_settings:
        lines.append(
            f"  - `api.settings[\"{setting.name}\"]` holds a web address the team's admin enters"
            f" ({setting.description}), a URL such as `https://bookings.example.org/api`"
            " without a trailing /: build every request to that system from it (that URL, or"
            " it plus a path the API documentation gives) and never write that system's host"
            " in the code. The examples give it a placeholder address (`https://....example`);"
            " their answers come from there.")
    return lines


def _schedule_lines(spec: Spec) -> list[str]:
    """For a plugin that runs by itself: when, and the period input each run gives."""
    schedule = spec.schedule
    if schedule is None:
        return []
    when = schedule.when or "a rhythm its team sets"
    words = f" (\u201c{schedule.words}\u201d)" if schedule.words else ""
    lines = [f"- The command `{schedule.command}` also runs by itself on a schedule: {when}"
             f"{words}."]
    if schedule.input_fields == ("since",):
        lines.append("  Each run covers the time since the last successful run: its input has"
                     " `since`, an ISO date-time (`2025-03-03T08:00:00+01:00`); handle only what"
                     " happened from then on. When a call gives no `since`, cover today.")
    elif schedule.input_fields:
        lines.append(f"  Each run covers a period ({schedule.period}): its input has `start` and"
                     " `end`, ISO dates (`2025-03-03`), the first and last day of the period,"
                     " both included; ask the systems for exactly that period and use it in"
                     " what the plugin returns or sends. When a call gives neither, compute the"
                     " same period from today's date.")
    return lines


def testing_text(spec: Spec) -> str:
    """The tester's brief for the requester's testing strategy, one per strategy
    (autocoder/quality/strategies.py; docs/engine.md, "Testing strategies")."""
    from autocoder.quality.strategies import strategy

    chosen = strategy(spec.testing_strategy)
    if chosen.coverage_min <= 0:
        return (f"The requester chose the {chosen.key} testing strategy: test the main cases"
                " of every command beyond the examples (a typical input, an empty one) and"
                " that an unknown command raises `ValueError`.")
    lines = [
        f"The requester chose the {chosen.key} testing strategy: test every command's main"
        " cases, its edge cases (empty, missing and unusual values, boundaries) and its errors"
        " (bad input raises `ValueError` with a clear message); the tests must run at least"
        f" {chosen.coverage_min:.0%} of the plugin's lines (coverage.py), so leave no command"
        " or branch untested.",
    ]
    if chosen.property_tests:
        lines.append(
            "Stress also asks for property-based tests with Hypothesis (`from hypothesis"
            " import given, settings, strategies as st`; `@settings(max_examples=50,"
            " deadline=None, derandomize=True)`) of what holds for every input (types,"
            " invariants, round trips, no crash on valid input), and a test on a large input"
            " (thousands of rows or items, built in the test) that checks the result quickly.")
    return "\n".join(lines)


def runtime_libraries_text(*, detail: bool = True) -> str:
    """The plugin runtime's libraries as the model is told them (autocoder/runtime): with
    `detail`, each one's version and what it is for."""
    from autocoder.runtime import LIBRARIES

    if not detail:
        return ", ".join(f"`{lib.modules[0]}`" for lib in LIBRARIES)
    return "; ".join(f"`{lib.modules[0]}` {lib.version} ({lib.purpose})" for lib in LIBRARIES)


# -- the user message ----------------------------------------------------------------------------


class _UserMessage:
    """Sections of the user message, with the trimming that keeps them within a budget."""

    def __init__(self, ctx: PromptContext, wanted: frozenset[str], task: str, *,
                 role: str = "") -> None:
        self.ctx = ctx
        self.main_path = f"{ctx.spec.package}/plugin.py"
        writes_plan = role == "architect"
        self.fixed_head = [request_section(ctx.spec, examples_path=ctx.examples_path)]
        if "guidance" in wanted and ctx.guidance.strip():
            self.fixed_head.append("# Guidance from a person (follow it)\n\n"
                                   + ctx.guidance.strip())
        if "plan" in wanted and ctx.plan.strip():
            heading = "# The plan so far (you write its successor)" if writes_plan else "# Plan"
            self.fixed_head.append(f"{heading}\n\n{ctx.plan.strip()}")
        if "escape" in wanted and ctx.escape:
            self.fixed_head.append("# Change of course\n\n"
                                   + _template(f"_escape_{ctx.escape}").strip())
        self.task = f"# Your task\n\n{task}"
        self.approaches = ([_cap(a.strip(), MAX_APPROACH_CHARS) for a in ctx.earlier_approaches
                            if a.strip()] if "approaches" in wanted else [])
        self.lessons = ctx.lessons.strip() if "lessons" in wanted else ""
        self.reference = (ctx.reference or "").strip() if "reference" in wanted else ""
        self.failures = ctx.failures.strip() if "failures" in wanted else ""
        self.checks = ctx.checks.strip() if "checks" in wanted else ""
        self.files = FileSection(ctx.files, self.main_path, readme_first=role == "reviewer",
                                 host=host_written(ctx.spec, ctx.files,
                                                   examples_path=ctx.examples_path,
                                                   stub=writes_plan,
                                                   change=bool(ctx.base_version))) \
            if "files" in wanted else None

    def sections(self, files_text: str | None = None) -> list[str]:
        parts = list(self.fixed_head)
        if self.approaches:
            parts.append(_approaches_section(self.approaches, len(self.ctx.earlier_approaches)))
        if self.lessons:
            parts.append(_LESSONS_HEADING + self.lessons)
        if self.reference:
            parts.append(_REFERENCE_HEADING + self.reference)
        if self.files is not None and self.files.shown:
            parts.append(self.files.render() if files_text is None else files_text)
        if self.failures:
            parts.append(_FAILURES_HEADING + self.failures)
        if self.checks:
            parts.append(_CHECKS_HEADING + self.checks)
        parts.append(self.task)
        return parts

    def render(self) -> str:
        return "\n\n".join(self.sections()) + "\n"

    def size(self) -> int:
        # The files section is counted, not rendered, so trimming hundreds of files stays cheap.
        parts = self.sections(files_text="")
        files = self.files.size() if self.files is not None and self.files.shown else 0
        return sum(len(p) for p in parts) + files + 2 * (len(parts) - 1) + 1

    def fit(self, budget: int) -> None:
        def excess() -> int:
            return self.size() - budget

        while len(self.approaches) > KEEP_APPROACHES and excess() > 0:
            self.approaches.pop(0)
        if self.files is not None:
            for path in self.files.drop_order():
                if excess() <= 0:
                    break
                self.files.hide(path)
        # Failures shrink to their first and last lines before lessons go, but the lessons go
        # before the failures disappear altogether.
        if excess() > 0 and self.failures:
            limit = max(FAILURES_FLOOR, len(self.failures) - excess())
            self.failures = squeeze(self.failures, limit)
        if excess() > 0 and self.reference:  # reference docs go before lessons, weakest first
            self.reference = _cut_tail(self.reference, len(self.reference) - excess())
        if excess() > 0 and self.lessons:
            self.lessons = _cut_tail(self.lessons, len(self.lessons) - excess())
        # The newest approach stays longer than the failures, the one before it does not.
        while (len(self.approaches) > 1 and self.failures
               and excess() > len(self.failures) - MIN_TRIMMED_SECTION):
            self.approaches.pop(0)
        if excess() > 0 and self.failures:
            self.failures = squeeze(self.failures, len(self.failures) - excess())
        while self.approaches and excess() > 0:
            self.approaches.pop(0)
        if excess() > 0 and self.files is not None:
            self.files.squeeze_main(excess())


_LESSONS_HEADING = "# Lessons from earlier runs\n\n"
_REFERENCE_HEADING = ("# Reference: the APIs the plan and the failures call for (the runtime's"
                      " own versions)\n\n")


def _reference(ctx: PromptContext) -> str:
    """Entries of the runtime's API reference, and sections of the service's API docs, that
    the plan and the failures call for (docs/engine.md, "Reference docs")."""
    from autocoder.engine import reference_port

    # The plan and the failures at hand: the words of the request alone call for nothing.
    query = "\n\n".join(part for part in (ctx.plan, ctx.failures) if part.strip())
    if not query and ctx.spec.api_docs.strip():
        query = ctx.spec.summary  # the service's documentation is for what the plugin does
    return reference_port.retrieve(query=query, api_docs=ctx.spec.api_docs)


_FAILURES_HEADING = "# What went wrong in the last attempt\n\n"
_CHECKS_HEADING = "# What the tests and the safety gate found\n\n"
def request_section(spec: Spec, *, examples_path: str = ACCEPTANCE_TEST_PATH) -> str:
    """The request with every example: never trimmed, the model's ground truth, and the one
    place each prompt says it (`examples_path`: the tests the examples are)."""
    lines = [
        "# The request",
        "",
        f"Plugin `{spec.name}`, Python package `{spec.package}`.",
        "",
        spec.summary.strip(),
        "",
        f"Commands, with the requester's examples (they are the tests in {examples_path}"
        " and must pass exactly):",
    ]
    for command in spec.commands:
        lines += ["", f"## `{command.name}` (method `{method_name(command.name)}`)"]
        if command.description.strip():
            lines.append(command.description.strip())
        for i, example in enumerate(command.examples, start=1):
            lines.append(f"- example {i}: on_command({json.dumps(command.name)}, "
                         f"{json.dumps(example.input, ensure_ascii=False)}) == "
                         f"{json.dumps(example.output, ensure_ascii=False)}")
            if example.settings:
                lines.append(f"  with settings {json.dumps(example.settings, ensure_ascii=False)}")
            for answer in example.http:
                shown = {k: v for k, v in answer.items() if k not in ("method", "url")}
                lines.append(f"  expects the request {answer['method']} {answer['url']},"
                             f" answered {json.dumps(shown, ensure_ascii=False)}")
    if spec.constraints:
        lines += ["", "Constraints:", *(f"- {c.strip()}" for c in spec.constraints)]
    return "\n".join(lines)


def _approaches_section(approaches: list[str], total: int) -> str:
    first = total - len(approaches) + 1
    items = [f"{n}. {text}" for n, text in enumerate(approaches, start=first)]
    note = f" ({first - 1} older ones left out)" if first > 1 else ""
    return ("# Earlier approaches in this run (do not repeat them)" + note + "\n\n"
            + "\n".join(items))


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def _cut_tail(text: str, limit: int) -> str:
    """The start of `text` (the most relevant lessons come first), cut at a line boundary."""
    if len(text) <= limit:
        return text
    if limit < MIN_TRIMMED_SECTION:
        return ""
    marker = "\n[... more left out ...]"
    cut = text[: limit - len(marker)]
    if "\n" in cut:
        cut = cut[: cut.rfind("\n")]
    return cut.rstrip() + marker
