"""The plugin's and its tasks' names: short names for what the tool does, made from the
request's words (what it should do, not who asks: projects/interview/describing.py), changed by
the requester on the summary page, checked by the spec's own rule
(autocoder.engine.spec.NAME_PATTERN)."""

from __future__ import annotations

import re
import sys

from autocoder.engine.spec import NAME_PATTERN, package_name
from projects.interview.describing import IMPERATIVES, proposed_description
from projects.interview.parsing import clip

NAME_MAX_CHARS = 40
NAME_WORDS = 3
NAME_RULE = ("use only letters, digits, dashes (-) and underscores (_), no spaces, at most 64 "
             "characters, e.g. weekly-scheduler")
_STOPWORDS = frozenset(
    "a an and are as at be but by can could do does for from get gets give gives has have i i'd "
    "i'm in into is it its it's just like me my need needs of on or our please should so some "
    "something that the their them then there these thing this to tool plugin app program "
    "script us want wants we what when which who will with would you your up how much many "
    "was were been someone somebody anyone everyone".split())
# Words that say little about what the plugin is ("a list of meetings" is about meetings).
_FILLER = frozenset(
    "list lists every each all way kind lot lots bunch set based also always automatically "
    "simple small little nice good easy quick quickly politely nicely".split())
# Where the request turns from what it is about to details: "greets a person | by name", "a
# schedule | for my team". The details count only when nothing came before them.
_DETAIL_WORDS = frozenset("by for from in at using based per when if so".split())
_TIME_WORDS = frozenset(
    "daily weekly monthly yearly hourly nightly monday tuesday wednesday thursday friday "
    "saturday sunday morning evening".split())
# Request verbs; those that name a tool by what it does ("greet" -> "greeter") map to it.
_VERBS: dict[str, str] = {
    "greet": "greeter", "schedule": "scheduler", "convert": "converter", "count": "counter",
    "check": "checker", "calculate": "calculator", "plan": "planner", "track": "tracker",
    "translate": "translator", "format": "formatter", "sort": "sorter", "validate": "validator",
    "parse": "parser", "summarize": "summarizer", "summarise": "summariser",
    "generate": "generator", "remind": "reminder", "clean": "cleaner", "organize": "organizer",
    "organise": "organiser", "analyze": "analyzer", "analyse": "analyser", "split": "splitter",
    "filter": "filter", "rename": "renamer", "notify": "notifier", "collect": "collector",
    "extract": "extractor", "compare": "comparer", "pick": "picker", "assign": "assigner",
    "make": "", "create": "", "build": "", "produce": "", "write": "", "turn": "", "help": "",
    "find": "", "show": "", "send": "", "keep": "", "prepare": "", "fill": "", "take": "",
    "put": "", "tell": "", "work": "", "compute": "", "figure": "", "change": "",
    "total": "", "say": "", "give": "", "get": "", "list": "",
}
# What people say for a few things tools often do, as one word each (applied in order).
_PHRASES = (
    (re.compile(r"\b(?:add|adds|adding|sum|sums|summing|total|totals)\s+up\b"), "total"),
    (re.compile(r"\bhow\s+much\s+(?:money\s+)?(?:was|is|were|we|they|i|has\s+been)?\s*"
                r"(?:spent|spend|paid|pay)\b"), "spending"),
    (re.compile(r"\b(?:spent|expenses|expense|costs|outgoings)\b"), "spending"),
    (re.compile(r"\b(?:every|each|per|a)\s+(day|week|month|year)\b"),
     lambda match: {"day": "daily"}.get(match.group(1), match.group(1) + "ly")),
)


def slugify(text: str, *, limit: int = NAME_MAX_CHARS) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:limit].strip("-")


def derive_plugin_name(request: str) -> str:
    """A short name from what the request asks the tool to do, the thing it is about and the
    tool it is: "...greets a person by name" -> person-greeter, "Turn my list of meetings into
    a weekly summary table" -> weekly-meeting-summary, "I'm the club's bookkeeper ... and need
    to add up how much was spent every month" -> monthly-spending."""
    words = _topic_words(_phrased(proposed_description(request)))
    agent = ""
    if words and _verb(words[0]) is not None:
        agent = _verb(words.pop(0)) or ""
    nouns = [_singular(word) for word in words if word not in _FILLER and _keeps(word)]
    when = next((w for w in re.findall(r"[a-z]+", _phrased(request)) if w in _TIME_WORDS), "")
    if when and when not in nouns and nouns:
        nouns.insert(0, when)
    nouns.sort(key=lambda word: word not in _TIME_WORDS)  # "weekly meeting", not "meeting weekly"
    parts = nouns[:NAME_WORDS - 1] + [agent] if agent else nouns[:NAME_WORDS]
    name = slugify("-".join(parts)) or "my-plugin"
    return name if package_name(name) not in sys.stdlib_module_names else f"{name}-plugin"


def derive_task_name(line: str) -> str:
    """A task's short name from the words that describe it: "Count the visitors" ->
    count-visitors, "add up how much was spent per category" -> spending-by-category."""
    words = re.findall(r"[a-z0-9']+", _phrased(line))
    verb = words.pop(0) if words and (words[0] in IMPERATIVES or words[0] in _VERBS) else ""
    nouns: list[str] = []
    by = ""
    for index, word in enumerate(words):
        if word in ("by", "per") and index + 1 < len(words):
            by = next((w for w in words[index + 1:] if w not in _STOPWORDS), "")
            break
        if word not in _STOPWORDS and word not in _FILLER and word not in _DETAIL_WORDS:
            nouns.append(word.replace("'", ""))
    doing = [verb] if verb and _VERBS.get(verb, "x") else []  # "make", "total" say nothing
    if by and nouns:
        parts = [*(doing if len(nouns) == 1 else []), *nouns[:NAME_WORDS - 1], "by", by]
    else:
        parts = doing + nouns
    return slugify("-".join(parts[:NAME_WORDS + 1])) or slugify(line) or "run"


def _phrased(text: str) -> str:
    text = text.lower()
    for pattern, replacement in _PHRASES:
        text = pattern.sub(replacement, text)
    return text


def name_problem(name: str) -> str:
    """Why `name` cannot name the plugin (or a task), in plain words; "" when it can."""
    if NAME_PATTERN.fullmatch(name):
        return ""
    return f"\u201c{clip(name)}\u201d cannot be used as a name: {NAME_RULE}."


def _topic_words(request: str) -> list[str]:
    words: list[str] = []
    for word in re.findall(r"[a-z0-9']+", request.lower()):
        if word in _DETAIL_WORDS and any(_verb(w) is None and w not in _FILLER for w in words):
            break
        if word not in _STOPWORDS and word not in _DETAIL_WORDS:
            words.append(word.replace("'", ""))
    return words


def _verb(word: str) -> str | None:
    """The tool noun for a request verb in any form ("greets", "making"), "" when it has none,
    None when `word` is not one of the verbs."""
    stems = [word, word.removesuffix("s"), word.removesuffix("es"), word.removesuffix("ing"),
             word.removesuffix("ing") + "e", word.removesuffix("d"), word.removesuffix("ed")]
    return next((_VERBS[stem] for stem in stems if stem in _VERBS), None)


def _keeps(word: str) -> bool:
    return not (word.endswith("ly") and word not in _TIME_WORDS)


def _singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
        return word[:-1]
    return word
