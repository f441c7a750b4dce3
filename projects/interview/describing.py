"""The tool's proposed description, in the third person, from the request as typed: "I need
something that greets a person by name" is described as "Greets a person by name."; "I'm the
club's bookkeeper and need to add up what we spent" as "Adds up what was spent.". The words
about the person asking ("I'm the volunteer bookkeeper...") are not the tool's description;
the requester changes the proposal on the summary page, and her own words stay with the
request (the reviewers read them beside the plan: projects/selectors/asked.py).

Only forms that can be rewritten safely are rewritten; anything else is proposed as typed."""

from __future__ import annotations

import re

_SENTENCES = re.compile(r"(?<=[.!?])\s+")
_INTRO = re.compile(r"^(?:(?:hi|hello|hey)\b|(?:i'?m|i am|we'?re|we are|my name is|as an?|as "
                    r"the)\s)", re.IGNORECASE)
_TOOL_WORDS = (r"(?:(?:a|an|some|one)\s+)?(?:(?:little|small|simple|quick|new)\s+)?"
               r"(?:something|tool|plugin|app|program|script|thing|way)?\s*")
# "(I|we) need/want/would like [a tool] (that|which|to) ...", anywhere in the sentence.
_NEED = re.compile(
    r"(?:\b(?:i|we)\s+)?(?:also\s+|really\s+)?(?:need|want|would\s+like|'d\s+like|am\s+"
    r"looking\s+for|are\s+looking\s+for)\s+" + _TOOL_WORDS
    + r"(?P<link>that|which|who|to)\s+(?P<rest>.+)$", re.IGNORECASE)
# "(can you|please) (make|build|write|create) [me] [a tool] that ..."
_ASK = re.compile(
    r"^(?:(?:can|could|would)\s+you\s+)?(?:please\s+)?(?:make|build|write|create|give)\s+"
    r"(?:me\s+|us\s+)?" + _TOOL_WORDS + r"(?P<link>that|which|to)\s+(?P<rest>.+)$",
    re.IGNORECASE)
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|me|my|mine|we|we're|us|our|ours)\b",
                           re.IGNORECASE)
_POSSESSIVE = re.compile(r"\b(?:my|our)\b", re.IGNORECASE)
_FOR_ME = re.compile(r"\s+for\s+(?:me|us)\b", re.IGNORECASE)
# Verbs a request starts with in the imperative ("Turn my meetings into a table").
IMPERATIVES = frozenset(
    "add analyse analyze assign build calculate check clean collect combine compare compute "
    "convert count create draft extract fetch fill filter find format generate greet group "
    "import join keep list look make match merge move notify organise organize parse pick "
    "plan post prepare produce read remind remove rename report schedule send show sort split "
    "sum summarise summarize take tell track translate turn update validate watch work "
    "write".split())
_IRREGULAR = {"be": "is", "have": "has", "do": "does", "go": "goes"}


def proposed_description(request: str) -> str:
    """The request, described in the third person; as typed when it cannot be rewritten."""
    text = " ".join(request.split())
    sentences = [s for s in _SENTENCES.split(text) if s]
    kept: list[str] = []
    found = False
    for sentence in sentences:
        rewritten = _rewrite(sentence)
        if rewritten:
            kept.append(rewritten.rstrip("?"))  # "Can you make ... ?" is a statement now
            found = True
        elif not _INTRO.match(sentence) and not _FIRST_PERSON.search(sentence):
            kept.append(sentence)
    if not found:
        return request.strip()
    return " ".join(_sentence(part) for part in kept)


def _rewrite(sentence: str) -> str:
    """A sentence that says what the tool should do, in the third person; "" otherwise."""
    for pattern in (_NEED, _ASK):
        match = pattern.search(sentence)
        if match:
            rest = match.group("rest")
            return _neutral(rest if match.group("link").lower() != "to" else third_person(rest))
    first = sentence.split(" ", 1)[0].lower()
    if first in IMPERATIVES and not _INTRO.match(sentence):
        return _neutral(third_person(sentence))
    return ""


def third_person(phrase: str) -> str:
    """"add up the costs" -> "adds up the costs": the first word, a verb, in the third person."""
    verb, _, rest = phrase.partition(" ")
    lower = verb.lower()
    if lower in _IRREGULAR:
        verb = _IRREGULAR[lower]
    elif re.search(r"[^aeiou]y$", lower):
        verb = verb[:-1] + "ies"
    elif re.search(r"(?:s|x|z|ch|sh|o)$", lower):
        verb += "es"
    else:
        verb += "s"
    return f"{verb} {rest}".strip()


def _neutral(text: str) -> str:
    """Who asked is not the tool's business: "my team" is "the team", "for me" goes."""
    text = _FOR_ME.sub("", text)
    return _POSSESSIVE.sub("the", text)


def _sentence(text: str) -> str:
    text = text.strip()
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


def imperative(phrase: str) -> str:
    """"Adds up the costs" -> "add up the costs": a description's first verb as a task says it;
    the phrase as it is when its first word is not one of IMPERATIVES in the third person."""
    verb, _, rest = phrase.partition(" ")
    lower = verb.lower()
    for base in IMPERATIVES:
        if third_person(base) == lower:
            return f"{base} {rest}".strip()
    return phrase
