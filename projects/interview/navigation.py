"""The wizard's pages of questions, its progress, and which page comes next.

The pages are fixed from the start, so the counter never jumps ("page 1 of 2" becoming "page 2
of 4"): every task's information is asked on one page and all their examples on the next, and
the analyst's questions, however many rounds it takes, share the last page. That page is only
counted while the analyst has questions or may still ask some.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from projects.interview.checklist import essentials_open, is_open
from projects.interview.types import Question

# (page, its heading), in the order the wizard asks them.
PAGES: tuple[tuple[str, str], ...] = (
    ("tasks", "What it should do"),
    ("io", "What goes in and what comes out"),
    ("examples", "Examples"),
    ("finish", "Checks and rules"),
    ("analyst", "A few more questions"),
)

# The page that also asks whether the plugin talks to another service (interview/other_systems.py).
SERVICES_PAGE = "finish"


def page_index(name: str) -> int:
    return [page for page, _ in PAGES].index(name)


@dataclass(frozen=True)
class Progress:
    answered: int
    total: int
    essentials_open: int
    # What the page shows: pages whose every question is answered, of the fixed page count
    # (questions are added as tasks are named, so a count of questions jumped: 0 of 3, 1 of 7).
    pages_done: int = 0
    pages: int = 0


def progress(questions: list[Question], state: Mapping[str, Any], *,
             analyst_done: bool = False) -> Progress:
    done = sum(1 for q in questions if not is_open(q, state))
    count = page_count(questions, analyst_done=analyst_done)
    groups = question_groups(questions)[:count]
    finished = sum(1 for index, group in enumerate(groups)
                   if (group and not any(is_open(q, state) for q in group))
                   or (not group and PAGES[index][0] == "analyst" and analyst_done))
    return Progress(answered=done, total=len(questions),
                    essentials_open=essentials_open(questions, state),
                    pages_done=finished, pages=count)


def question_groups(questions: list[Question]) -> list[list[Question]]:
    """The questions of each page, in PAGES order (a page may have none yet)."""
    groups: dict[str, list[Question]] = {page: [] for page, _ in PAGES}
    for question in questions:
        groups[_page(question)].append(question)
    return list(groups.values())


def page_count(questions: list[Question], *, analyst_done: bool) -> int:
    """How many pages the counter shows: the same on every page of an interview."""
    asks = not analyst_done or any(q.get("source") == "analyst" for q in questions)
    return len(PAGES) if asks else len(PAGES) - 1


def page_heading(index: int) -> str:
    return PAGES[index][1]


def _page(question: Mapping[str, Any]) -> str:
    if question.get("source") == "analyst":
        return "analyst"
    return {"commands": "tasks", "inputs": "io", "outputs": "io", "examples": "examples",
            "edge_cases": "examples", "autonomy": "finish", "constraints": "finish"}[
        question["kind"]]


def first_open_group(questions: list[Question], state: Mapping[str, Any]) -> int | None:
    for index, group in enumerate(question_groups(questions)):
        if any(is_open(q, state) for q in group):
            return index
    return None
