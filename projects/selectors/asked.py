"""What was asked, as a reviewer checks a plan or a candidate against it (docs/portal.md,
"Approvals"): the requester's own words, what the tool is for, each task with its examples,
the answers to the analyst's questions, the rules and the assumptions. Read from the
project's spec (what the run builds) and its interview (the words as typed)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from projects.models import Interview
from projects.selectors.interviews import ReadablePart, readable
from runs.models import Project

# How the spec stores answers and assumptions (projects/interview/spec_assembly.py
# _constraints) and how a change spec states its ground rule (runs/services/changes.py).
_ANSWER, _ASSUMPTION = "Q: ", "Assumption: "
_NOT_RULES = ("This changes version ", "A call of ")


@dataclass
class AskedTask:
    name: str
    description: str
    examples: list[dict[str, list[ReadablePart]]]  # {"input": parts, "output": parts}


@dataclass
class Asked:
    words: str  # the requester's request as typed ("" when the project has no interview)
    summary: str
    tasks: list[AskedTask] = field(default_factory=list)
    answers: list[tuple[str, str]] = field(default_factory=list)  # question, answer
    rules: list[str] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)
    interview_id: int | None = None


def asked_for(project: Project) -> Asked:
    spec = project.spec or {}
    interview = Interview.objects.filter(project=project).only("id", "request").first()
    asked = Asked(words=interview.request.strip() if interview else "",
                  summary=str(spec.get("summary", "")).strip(),
                  interview_id=interview.pk if interview else None)
    for command in spec.get("commands") or []:
        asked.tasks.append(AskedTask(
            name=str(command.get("name", "")), description=str(command.get("description", "")),
            examples=[{"input": readable(example.get("input") or {}, named=True),
                       "output": _readable_output(example.get("output"))}
                      for example in command.get("examples") or []]))
    for line in (str(item) for item in spec.get("constraints") or []):
        if line.startswith(_ANSWER) and " A: " in line:
            question, answer = line.removeprefix(_ANSWER).split(" A: ", 1)
            asked.answers.append((question, answer))
        elif line.startswith(_ASSUMPTION):
            asked.assumptions.append(line.removeprefix(_ASSUMPTION))
        elif not line.startswith(_NOT_RULES):
            asked.rules.append(line)
    if asked.words == asked.summary:
        asked.words = ""  # said once is enough
    return asked


def _readable_output(value: Any) -> list[ReadablePart]:
    return readable(value, named=isinstance(value, dict))
