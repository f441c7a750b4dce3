"""The run page's summary in plain words, written from the facts a run has stored.

A requester should know in ten seconds where a run stands: "Attempt 2 of 6: the tests showed
that your example 1 stops with an error ("ValueError: a full day was refused"); fixing that."
Everything here is a pure function of facts (the run's status and phase, the attempt against the
budget, the last attempt's test outcomes and safety findings, the loop detector's events, what
waits for a person); runs/selectors/runs.py gathers them. Codes, hashes, confidence and
timings are not for these sentences: the page keeps them behind "Details".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from autocoder.engine.scaffold import ACCEPTANCE_TEST_PATH
from autocoder.engine.second_opinion import MAX_SEND_BACKS
from autocoder.engine.spec import package_name
from runs.models import Run

MAX_QUOTE_CHARS = 120
FAILING = frozenset({"failed", "error"})
# Phases of an attempt up to its checkpoint: a run standing in one of them works on the attempt
# after the last completed one.
BEFORE_CHECKPOINT = frozenset({"plan", "implement", "test_write", "gate", "sandbox", "verify"})

_ACCEPTANCE = re.compile(r"test_(?P<method>\w+?)_example_(?P<number>\d+)$")

_DOING = {
    "plan": "writing a plan",
    "implement": "writing the code",
    "test_write": "writing tests",
    "gate": "checking the code's safety",
    "sandbox": "running the tests",
    "verify": "checking the results",
    "reflect": "looking at what went wrong",
    "learn": "finishing up",
}

# The loop detector's findings (autocoder/engine/detector.py) and escapes (escapes.py).
_PROBLEM = {
    "identical_replies": "The model repeated its last answer",
    "no_progress": "Several attempts in a row brought no improvement",
    "repeated_error": "The same error came back again and again",
    "test_failure_loop": "The same tests kept failing",
    "oscillation": "The code kept switching back to an earlier version",
}
_ESCAPE = {
    "reset_context": "it was started again with a fresh conversation",
    "try_alternative": "it was asked to try a different approach",
    "escalate": "it asked a person for guidance",
    "abort": "the run was stopped",
}
_NOW_AFTER_ESCAPE = {
    "reset_context": "starting again with a fresh conversation",
    "try_alternative": "trying a different approach",
}

_SENT_BACK = frozenset({"send_back", "sent_back_by_person"})

_WAITING_FOR = {
    "plan": "a plan is ready and waits for a person's approval",
    "change": "the change waits for a person's approval",
    "escalation": "it is stuck and waits for a person's guidance",
    "publish": "publishing waits for a reviewer's approval",
    "budget": ("it has used its budget and waits for a team admin to decide whether it may "
               "spend more"),
}


@dataclass(frozen=True)
class OutcomeFact:
    nodeid: str
    outcome: str  # passed | failed | error | skipped
    message: str = ""


@dataclass(frozen=True)
class FindingFact:
    file: str
    line: int
    severity: str
    message: str
    tool: str = ""


@dataclass(frozen=True)
class AttemptFacts:
    """One completed attempt (an iteration's checkpoint)."""

    number: int
    tests_ran: bool
    succeeded: bool
    acceptance_passed: bool
    pass_rate: float
    safety_verdict: str = ""
    tests: tuple[OutcomeFact, ...] = ()
    findings: tuple[FindingFact, ...] = ()
    timed_out: bool = False
    out_of_memory: bool = False


@dataclass(frozen=True)
class LoopFact:
    attempt: int
    kind: str  # the detector's type ("reviewer": the reviewing model's exchange)
    action: str  # the escape chosen
    occurrences: int = 0


@dataclass(frozen=True)
class RunFacts:
    status: str
    phase: str
    completed: int  # attempts checked so far
    max_attempts: int
    latest: AttemptFacts | None = None
    events: tuple[LoopFact, ...] = ()
    waiting_for: str = ""  # the kind of the pending approval request, if any
    pause_requested: bool = False
    commands: tuple[str, ...] = ()  # the spec's command names, to name an example's command
    rejected: str = ""  # the kind of a change, escalation or budget request turned down
    published: bool = False  # the project's plugin is in the marketplace
    tokens_used: int = 0
    max_tokens: int = 0
    over_time: bool = False
    held_by: str = ""  # the broken part, or "paused" / "manual" (the generation switch)


@dataclass(frozen=True)
class RunSummary:
    headline: str
    notes: tuple[str, ...]
    tone: str  # ok | info | warn | bad


def summarize(facts: RunFacts) -> RunSummary:
    return RunSummary(headline=f"{_where(facts)}: {_story(facts)}.", notes=_notes(facts),
                      tone=_tone(facts))


# -- where the run is ----------------------------------------------------------------------------


def current_attempt(facts: RunFacts) -> int:
    """The attempt the run works on or stopped at (at least 1, at most the budget)."""
    working_on_next = (facts.phase in BEFORE_CHECKPOINT and facts.status != "escalated"
                       and facts.status not in Run.TERMINAL)
    number = facts.completed + 1 if working_on_next else facts.completed
    return max(1, min(number, max(facts.max_attempts, 1)))


def _where(facts: RunFacts) -> str:
    of = f"of {facts.max_attempts}"
    if facts.status == "succeeded":
        return f"Done in attempt {facts.completed} {of}"
    if facts.status in Run.TERMINAL:
        if facts.completed == 0:
            return "Stopped before the first attempt was checked"
        return f"Stopped after attempt {facts.completed} {of}"
    return f"Attempt {current_attempt(facts)} {of}"


def _story(facts: RunFacts) -> str:
    shown = what_it_showed(facts.latest, facts.commands) if facts.latest else ""
    now = _now(facts)
    return f"{shown}; {now}" if shown and now else shown or now or "finished"


def _now(facts: RunFacts) -> str:
    """What happens next (or why nothing does)."""
    status = facts.status
    if status == "succeeded":
        if facts.published:
            return "it is published in the marketplace"
        return _WAITING_FOR["publish"] if facts.waiting_for == "publish" else ""
    if status in Run.TERMINAL:
        return ending(facts)
    if status == "escalated":
        return _WAITING_FOR["escalation"]
    if status == "awaiting_approval":
        return _WAITING_FOR.get(facts.waiting_for, "it waits for a person's decision")
    if status == "paused":
        return "paused; it goes on when someone resumes it"
    if status == "held" and facts.held_by == "paused":
        return "paused with all generation; it goes on when generation resumes"
    if status == "held" and facts.held_by == "manual":
        return "waiting for a reviewer to press Start"
    if status == "held":
        return "waiting until the installation works again"
    if facts.pause_requested:
        return "pausing after the current step"
    return _working(facts)


def _working(facts: RunFacts) -> str:
    latest = facts.latest
    if latest is None or facts.completed == 0:
        if facts.status == "queued":
            return "waiting for a free worker"
        return _DOING.get(facts.phase, "working")
    if any(e.attempt == latest.number and e.action in _SENT_BACK for e in facts.events):
        return "making the changes the reviewing model asked for"
    if latest.succeeded:
        return _DOING["learn"]
    escape = next((e.action for e in reversed(facts.events)
                   if e.attempt == latest.number and e.action in _NOW_AFTER_ESCAPE), "")
    return _NOW_AFTER_ESCAPE[escape] if escape else "fixing that"


def ending(facts: RunFacts) -> str:
    """Why a finished run stopped without success, from what it recorded."""
    last_action = facts.events[-1].action if facts.events else ""
    if facts.status == "cancelled":
        return "a person stopped it"
    if facts.rejected == "escalation":
        return "a person chose to stop it instead of giving guidance"
    if facts.status == "aborted" and last_action == "abort":
        return "it kept getting stuck on the same problem after every way out was tried"
    if facts.rejected == "change":
        return "a reviewer rejected the change"
    if facts.rejected == "budget":
        return "it reached its budget and a team admin chose not to spend more"
    if facts.completed >= facts.max_attempts > 0:
        return f"all {facts.max_attempts} attempts were used"
    if facts.max_tokens and facts.tokens_used >= facts.max_tokens:
        return "it used up its budget for the model"
    if facts.over_time:
        return "it ran out of time"
    return "a step failed and could not be retried (Details says which)"


# -- what the last attempt showed ----------------------------------------------------------------


def what_it_showed(attempt: AttemptFacts, commands: tuple[str, ...] = ()) -> str:
    """The last attempt's result in one clause, from its tests and safety findings."""
    if attempt.succeeded:
        return (f"every example gives the expected answer and {_percent(attempt.pass_rate)} "
                "of the tests pass")
    if attempt.safety_verdict == "block":
        return _blocked(attempt.findings)
    if not attempt.tests_ran:
        return "the model's reply had no code that could be used"
    if attempt.timed_out:
        return "the tests took too long and were stopped"
    if attempt.out_of_memory:
        return "the tests ran out of memory"
    failing = failing_tests(attempt.tests, commands)
    if failing:
        first = describe_failure(failing[0], commands)
        more = len(failing) - 1
        return f"the tests showed that {first}" + (
            f", and {more} more test{'s' if more > 1 else ''} fail" if more else "")
    if not attempt.tests:
        return "the tests could not start"
    if attempt.acceptance_passed and attempt.pass_rate < 1:
        return f"your examples work, but only {_percent(attempt.pass_rate)} of the tests pass"
    if attempt.acceptance_passed:
        return "your examples work and every test passes"
    return f"{_percent(attempt.pass_rate)} of the tests pass; not every example was checked"


def attempt_outcome(attempt: AttemptFacts) -> str:
    """A short line for the timeline, from an attempt's counts alone."""
    if attempt.succeeded:
        return f"every example works; {_percent(attempt.pass_rate)} of the tests pass"
    if attempt.safety_verdict == "block":
        return "the safety gate stopped the code, so the tests did not run"
    if not attempt.tests_ran:
        return "the tests did not run"
    examples = "your examples work" if attempt.acceptance_passed else \
        "not every example works yet"
    line = f"{_percent(attempt.pass_rate)} of the tests pass; {examples}"
    if attempt.safety_verdict == "review":
        line += "; the safety gate asks a person to look at the code"
    return line


def failing_tests(tests: tuple[OutcomeFact, ...],
                  commands: tuple[str, ...] = ()) -> list[OutcomeFact]:
    """Failing tests, the requester's examples first."""
    failing = [t for t in tests if t.outcome in FAILING]
    return sorted(failing, key=lambda t: (example_of(t.nodeid, commands) is None, t.nodeid))


def example_of(nodeid: str, commands: tuple[str, ...] = ()) -> tuple[str, int] | None:
    """(command, number) when `nodeid` is the acceptance test of one of the requester's
    examples (autocoder/engine/scaffold.py names them test_<command>_example_<n>)."""
    path, _, name = nodeid.partition("::")
    match = _ACCEPTANCE.match(name)
    if path != ACCEPTANCE_TEST_PATH or match is None:
        return None
    method = match["method"]
    command = next((c for c in commands if package_name(c) == method), method.replace("_", "-"))
    return command, int(match["number"])


def describe_failure(test: OutcomeFact, commands: tuple[str, ...] = ()) -> str:
    """"your example 2 gives a different answer than expected", "the check “a full day is
    refused” stops with an error (“ValueError: ...”)"."""
    subject = _test_subject(test.nodeid, commands)
    error = error_line(test.message)
    if test.message.startswith("collection failed"):
        return f"the tests could not be loaded ({_quote(error)})"
    if not error or _plain_assert(error):
        return f"{subject} gives a different answer than expected" if subject.startswith(
            "your example") else f"{subject} fails"
    if error.startswith("AssertionError:"):
        return f"{subject} fails: {_quote(error.removeprefix('AssertionError:').strip())}"
    return f"{subject} stops with an error ({_quote(error)})"


def _test_subject(nodeid: str, commands: tuple[str, ...]) -> str:
    example = example_of(nodeid, commands)
    if example is not None:
        command, number = example
        return (f"your example {number}" if len(commands) <= 1
                else f"your example {number} of “{command}”")
    name = nodeid.rsplit("::", 1)[-1].split("[", 1)[0].removeprefix("test_")
    return f"the check “{name.replace('_', ' ').strip()}”"


def error_line(message: str) -> str:
    """The line that names the error: pytest's first `E` line, else the message's last line."""
    lines = [line for line in message.splitlines() if line.strip()]
    marked = [line[1:].strip() for line in lines if line.startswith("E ")]
    return marked[0] if marked else (lines[-1].strip() if lines else "")


def _plain_assert(error: str) -> bool:
    """An assert without words of its own: `assert x == y`, `AssertionError: assert ...`."""
    return error.startswith("assert ") or error in ("AssertionError", "AssertionError:") or \
        error.startswith("AssertionError: assert ")


def _blocked(findings: tuple[FindingFact, ...]) -> str:
    blocking = [f for f in findings if f.severity.upper() == "HIGH"] or list(findings)
    if not blocking:
        return "the safety gate stopped the code"
    first = blocking[0]
    more = len(blocking) - 1
    return (f"the safety gate stopped the code: {finding_text(first)} ({first.file}, line "
            f"{first.line})" + (f", and {more} more problem{'s' if more > 1 else ''}"
                                if more else ""))


def finding_text(finding: FindingFact) -> str:
    """A finding's words without the tool's codes: bandit writes "name (B602): text"."""
    text = finding.message
    if finding.tool == "bandit" and "): " in text:
        text = text.split("): ", 1)[1]
    return text.strip().rstrip(".")


# -- notes under the headline --------------------------------------------------------------------


# The reviewing model's exchange with the loop (LoopEvent type "reviewer", by action;
# autocoder/engine/second_opinion.py); {n}: the round-trip, {most}: how many a run may make.
_REVIEWER = {
    "send_back": "The reviewing model asked for changes, so the work went back to the model "
                 "with its reasons (round {n} of {most})",
    "to_person": "The reviewing model still asks for changes, but the work may not go back "
                 "again, so a person decides when approving the publish request",
    "satisfied": "The reviewing model is satisfied with the changes",
    "sent_back_by_person": "A person sent the work back to the model with the reviewing "
                           "model's reasons",
}


def loop_sentence(event: LoopFact) -> str:
    """"The model repeated its last answer, so it was started again with a fresh conversation.\""""
    if event.kind == "reviewer":
        words = _REVIEWER.get(event.action, "The reviewing model gave its opinion")
        return words.format(n=event.occurrences, most=MAX_SEND_BACKS) + "."
    problem = _PROBLEM.get(event.kind, "The run seemed stuck")
    escape = _ESCAPE.get(event.action, "the run changed course")
    return f"{problem}, so {escape}."


def _notes(facts: RunFacts) -> tuple[str, ...]:
    latest = facts.latest
    notes = [loop_sentence(e) for e in facts.events if latest and e.attempt == latest.number]
    if latest and latest.safety_verdict == "review" and facts.status not in Run.TERMINAL:
        notes.append("The safety gate asks a person to look at the code before it is used.")
    return tuple(dict.fromkeys(notes))


def _tone(facts: RunFacts) -> str:
    if facts.status == "succeeded":
        return "ok"
    if facts.status in Run.TERMINAL:
        return "bad"
    if facts.status in Run.WAITING:
        return "warn"
    return "info"


# -- words ---------------------------------------------------------------------------------------


def _percent(rate: float) -> str:
    return f"{round(rate * 100)}%"


def _quote(text: str) -> str:
    text = " ".join(text.split())
    if len(text) > MAX_QUOTE_CHARS:
        text = text[:MAX_QUOTE_CHARS - 1].rstrip() + "…"
    return f"“{text}”"
