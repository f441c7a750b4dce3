"""How hard the plugin is tested (docs/portal.md, "Requesting a plugin"), and the services' API
documentation the requester may give (spec "testing_strategy", "quality_threshold",
"max_iterations", "api_docs").

The strategies are defined once, in autocoder/quality/strategies.py. The answers are kept as typed:

    state["testing"] = {"strategy": "" | "basic" | "comprehensive" | "stress",
                        "threshold": "" | "85", "iterations": "" | "10"}
    state["api_docs"] = "the pasted (or uploaded) documentation"

An empty strategy is the default for what the plugin touches (comprehensive once it talks to a
service or keeps a secret), so it follows the services answers until the requester picks one. An
empty threshold or number of attempts is the strategy's own: choosing another strategy moves them
to its numbers, unless the requester typed numbers of their own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from html.parser import HTMLParser
from pathlib import PurePath
from typing import Any, TypedDict

from autocoder.engine.spec import MAX_API_DOCS_CHARS
from autocoder.quality.strategies import STRATEGIES, Strategy, default_strategy, strategy
from projects.interview import other_systems
from projects.interview.parsing import clip
from projects.interview.samples import SampleFile

FIELD_STRATEGY, FIELD_THRESHOLD = "testing-strategy", "testing-threshold"
FIELD_ITERATIONS = "testing-iterations"
FIELD_API_DOCS, FIELD_API_DOCS_UPLOAD = "api-docs", "api-docs-upload"
THRESHOLD_BOUNDS = (1, 100)  # percent of the quality score
ITERATION_BOUNDS = (1, 50)  # the spec's bounds on max_iterations
API_DOCS_SUFFIXES = (".txt", ".md", ".markdown", ".html", ".htm")
MAX_API_DOCS_BYTES = 1024 * 1024  # HTML is longer than the text it holds
API_DOCS_LIMIT_WORDS = "1 MB"


# -- the strategy -------------------------------------------------------------------------------


def default_for(state: Mapping[str, Any]) -> str:
    services = other_systems.spec_services(state) or {}
    addresses = any(s.get("kind") == "address" for s in services.get("settings", []))
    return default_strategy(talks_to_hosts=bool(services.get("hosts")) or addresses,
                            has_secrets=any(s.get("secret") for s in services.get("settings", [])))


def _stored(state: Mapping[str, Any]) -> dict[str, str]:
    stored = state.get("testing") or {}
    return {key: str(stored.get(key, "")) for key in ("strategy", "threshold", "iterations")}


def chosen(state: Mapping[str, Any]) -> Strategy:
    key = _stored(state)["strategy"]
    return strategy(key if key in STRATEGIES else default_for(state))


def percent(threshold: float) -> str:
    return str(round(threshold * 100))


def apply_form(state: dict[str, Any], data: Mapping[str, Any]) -> None:
    """Store the posted strategy and numbers as typed (in place). A number still showing the
    previous strategy's value was not changed by the requester: it follows the strategy."""
    if not any(key in data for key in (FIELD_STRATEGY, FIELD_THRESHOLD, FIELD_ITERATIONS)):
        return
    stored, before = _stored(state), chosen(state)
    key = str(data.get(FIELD_STRATEGY, stored["strategy"]))
    if key not in STRATEGIES:
        key = stored["strategy"]
    elif not stored["strategy"] and key == default_for(state):
        key = ""  # still the default: it keeps following what the plugin touches
    threshold = str(data.get(FIELD_THRESHOLD, stored["threshold"])).strip()
    if threshold.removesuffix("%").strip() == percent(before.quality_threshold):
        threshold = ""
    iterations = str(data.get(FIELD_ITERATIONS, stored["iterations"])).strip()
    if iterations == str(before.max_iterations):
        iterations = ""
    state["testing"] = {"strategy": key, "threshold": threshold, "iterations": iterations}


def _whole(text: str, bounds: tuple[int, int]) -> int | None:
    text = text.removesuffix("%").strip()
    if not re.fullmatch(r"\d{1,4}", text) or not bounds[0] <= int(text) <= bounds[1]:
        return None
    return int(text)


def testing_errors(state: Mapping[str, Any]) -> dict[str, list[str]]:
    stored = _stored(state)
    errors: dict[str, list[str]] = {}
    if stored["threshold"] and _whole(stored["threshold"], THRESHOLD_BOUNDS) is None:
        errors[FIELD_THRESHOLD] = [
            f"Give the quality needed as a whole number from {THRESHOLD_BOUNDS[0]} to "
            f"{THRESHOLD_BOUNDS[1]} (a percentage), e.g. 85; you typed "
            f"\u201c{clip(stored['threshold'])}\u201d."]
    if stored["iterations"] and _whole(stored["iterations"], ITERATION_BOUNDS) is None:
        errors[FIELD_ITERATIONS] = [
            f"Give the number of attempts as a whole number from {ITERATION_BOUNDS[0]} to "
            f"{ITERATION_BOUNDS[1]}, e.g. 10; you typed \u201c{clip(stored['iterations'])}\u201d."]
    return errors


class TestingValues(TypedDict):
    """The spec's testing fields, as spec_values gives them."""

    testing_strategy: str
    quality_threshold: float  # 0-1
    max_iterations: int


def spec_values(state: Mapping[str, Any]) -> TestingValues:
    """The spec's strategy, threshold (0-1) and iteration limit: the requester's numbers when
    they are valid, else the strategy's."""
    stored, picked = _stored(state), chosen(state)
    threshold = _whole(stored["threshold"], THRESHOLD_BOUNDS)
    iterations = _whole(stored["iterations"], ITERATION_BOUNDS)
    return {"testing_strategy": picked.key,
            "quality_threshold": threshold / 100 if threshold else picked.quality_threshold,
            "max_iterations": iterations or picked.max_iterations}


def form_view(state: Mapping[str, Any], errors: Mapping[str, list[str]]) -> dict[str, object]:
    """What the summary shows and its form's values (as typed, errors and all)."""
    stored, picked = _stored(state), chosen(state)
    values = spec_values(state)
    return {
        "choices": [{"key": s.key, "label": s.label, "plain": s.plain,
                     "threshold": percent(s.quality_threshold), "iterations": s.max_iterations}
                    for s in STRATEGIES.values()],
        "chosen": picked, "default": default_for(state), "picked_by_requester": bool(
            stored["strategy"] in STRATEGIES),
        "threshold": stored["threshold"] or percent(picked.quality_threshold),
        "iterations": stored["iterations"] or str(picked.max_iterations),
        "threshold_shown": percent(values["quality_threshold"]),
        "iterations_shown": values["max_iterations"],
        "own_numbers": bool(stored["threshold"] or stored["iterations"]),
        "bounds": {"threshold": THRESHOLD_BOUNDS, "iterations": ITERATION_BOUNDS},
        # keyed without the "testing-" (a template cannot look up a name with a dash)
        "errors": {"threshold": errors.get(FIELD_THRESHOLD, []),
                   "iterations": errors.get(FIELD_ITERATIONS, [])},
    }


# -- the services' API documentation ------------------------------------------------------------


def api_docs_of(state: Mapping[str, Any]) -> str:
    return str(state.get("api_docs", ""))


def apply_api_docs(state: dict[str, Any], data: Mapping[str, Any]) -> None:
    if FIELD_API_DOCS in data:
        state["api_docs"] = str(data[FIELD_API_DOCS]).replace("\r\n", "\n")


def api_docs_errors(state: Mapping[str, Any]) -> dict[str, list[str]]:
    text = api_docs_of(state)
    if len(text) > MAX_API_DOCS_CHARS:
        return {FIELD_API_DOCS: [
            f"Please shorten the documentation to at most {MAX_API_DOCS_CHARS:,} characters "
            f"(it has {len(text):,}): the parts about what the tool uses are enough."]}
    return {}


def spec_api_docs(state: Mapping[str, Any]) -> str:
    """The documentation the spec keeps: only for a plugin that talks to a service."""
    return api_docs_of(state).strip() if other_systems.talks_to_service(state) else ""


def attach_api_docs(data: dict[str, Any], upload: SampleFile | None) -> dict[str, list[str]]:
    """An uploaded documentation file becomes the documentation text in `data` (in place); a
    refused one changes nothing and says why."""
    if upload is None or not upload.name:
        return {}
    text, problem = _upload_text(upload)
    if problem:
        return {FIELD_API_DOCS_UPLOAD: [problem]}
    data[FIELD_API_DOCS] = text
    return {}


def _upload_text(upload: SampleFile) -> tuple[str, str]:
    label = f"\u201c{clip(upload.name)}\u201d"
    suffix = PurePath(upload.name).suffix.lower()
    if suffix not in API_DOCS_SUFFIXES:
        return "", (f"{label} is not a text, Markdown or HTML file. Save the documentation as a "
                    "web page (HTML) or as text, or copy and paste it into the box.")
    if upload.size > MAX_API_DOCS_BYTES:
        return "", (f"{label} is {upload.size / 1024 / 1024:.1f} MB; the documentation file can "
                    f"be at most {API_DOCS_LIMIT_WORDS}. Attach the pages about what the tool "
                    "uses, or paste them into the box.")
    if b"\x00" in upload.content or not upload.content.strip():
        return "", f"{label} is empty or not a text file."
    try:
        text = upload.content.decode("utf-8-sig")
    except UnicodeDecodeError:
        return "", f"{label} is not written in UTF-8; save it as UTF-8 and attach it again."
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if suffix in (".html", ".htm"):
        text = html_text(text)
    text = text.strip()
    if len(text) > MAX_API_DOCS_CHARS:
        return "", (f"{label} holds {len(text):,} characters of text; at most "
                    f"{MAX_API_DOCS_CHARS:,} are kept. Attach the pages about what the tool "
                    "uses.")
    return text, ""


class _Text(HTMLParser):
    """The readable text of a web page: no scripts, styles or tags; blocks on lines of their own."""

    BLOCKS = frozenset({"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "pre",
                        "section", "article", "table", "dt", "dd", "hr"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "template"):
            self.hidden += 1
        elif tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "template"):
            self.hidden = max(0, self.hidden - 1)
        elif tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.hidden:
            self.parts.append(data)


def html_text(page: str) -> str:
    parser = _Text()
    parser.feed(page)
    parser.close()
    text = "".join(parser.parts)
    lines = (" ".join(line.split()) for line in text.split("\n"))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
