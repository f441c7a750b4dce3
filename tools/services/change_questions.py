"""The short follow-up interview of a change request (docs/tools.md, "Asking for a change").

Once a request is made, a worker (tools/tasks.py) asks the team's analyst model whether it is
clear enough to change the plugin: it reads the plugin's commands and inputs, what should be
different, what must stay and the attached examples, and answers with at most three
questions (each with what to assume if it is not answered) or none, and the change spec:
what to change and what must stay as it is, in plain words. The asker (or a reviewer of the
owning team) answers on the request's page, each answer optional; a second reply writes the
change spec from the answers. The change run receives the spec (`follow_up_for_run`).

Never a dead end: reviewers may start or decline at any point (unanswered questions keep their
assumptions); a model that is not set up or does not answer leaves the request as written,
and the page says so with the fix; a reply that cannot be read counts as "clear".
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from autocoder import durable
from autocoder.llm.types import CallRecord, LLMConfigError, LLMError, Message, Provider
from marketplace.models import PluginVersion
from projects.interview import analyst
from runs.services.llm_calls import llm_calls_record_unattached
from teams.services.audit import audit_record
from teams.services.notifications import notifications_comment_send
from tools.change_selectors import may_decide_change
from tools.declared import manifest_of
from tools.models import ChangeRequest

logger = logging.getLogger(__name__)

FollowUp = ChangeRequest.FollowUp
ACTOR = "change_request_follow_up"
MAX_QUESTIONS = 3
MAX_ANSWER_CHARS = 2000
MAX_CHANGE_CHARS = 1500
MAX_KEEP_CHARS = 1000
# What the model reads is bounded whatever was typed or attached.
MAX_PROMPT_CHARS = 8000
MAX_FIELD_CHARS = 2000
MAX_VALUE_CHARS = 600
MAX_EXAMPLES = 5
MAX_REPLY_CHARS = 20000
# Nobody waits on a page for this (the page shows the outcome when it is there), but a model
# that hangs must not hold a worker: one try, within this bound.
FOLLOW_UP_TIMEOUT_S = 90.0
FOLLOW_UP_MAX_TOKENS = 600
NO_ASSUMPTION = "The request is read as written."
# Longer than a reply can take (the actor's time limit): the worker stopped.
STALLED_AFTER_S = 10 * 60

SYSTEM = (
    "You help the team that makes a small Python plugin understand what someone asks to "
    "change in it. The person is not a programmer. Decide whether the request is clear enough "
    "to change the plugin. Reply with ONLY a JSON object (no prose): "
    '{"questions": [{"question": "...", "assumption": "what to assume if they skip it"}], '
    '"change": "what to change", "keep": "what must stay as it is"}. '
    f"Ask at most {MAX_QUESTIONS} questions, only about what is unclear and would change what "
    'gets built; reply "questions": [] when the request is clear. Write "change" and "keep" '
    "in plain words, as they read with your assumptions; no code."
)
SECOND_SYSTEM = (
    "You help the team that makes a small Python plugin understand what someone asks to "
    "change in it. You asked them some questions; their answers are below (a skipped one keeps "
    "its assumption). Do not ask again. Write the change spec. Reply with ONLY a JSON object "
    '(no prose): {"questions": [], "change": "what to change", "keep": "what must stay as it '
    'is"}, in plain words, no code.'
)


class FollowUpError(ValueError):
    """Answers that cannot be taken (who answers, or when); `str()` says why in plain words."""


class ModelNotSetUp(Exception):
    """No model is set up for the analyst (the page names the fix: the Model page)."""


ProviderFor = Callable[[ChangeRequest], Provider]


def _analyst_provider(request: ChangeRequest) -> Provider:
    """The owning team's analyst model, one try within FOLLOW_UP_TIMEOUT_S."""
    from autocoder.llm import build_provider, role_config
    from autocoder.llm.readiness import config_fault

    config = role_config("analyst", team_id=request.team_id)
    fault = config_fault(config)
    if fault is not None:
        raise ModelNotSetUp(fault.problem)
    config = dataclasses.replace(config, timeout_s=min(config.timeout_s, FOLLOW_UP_TIMEOUT_S),
                                 max_retries=0)
    return build_provider(config)


# -- the prompt ----------------------------------------------------------------------------


def _cut(value: Any, limit: int = MAX_VALUE_CHARS) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           sort_keys=True)
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "..."


def _plugin_lines(version: PluginVersion) -> list[str]:
    """The version's commands and their inputs, from its reviewed plugin.toml."""
    manifest = manifest_of(version)
    lines = [f"Plugin: {version.plugin.name} {version.version}: {_cut(version.summary, 300)}"]
    if manifest is None:
        return lines
    for command in manifest.commands[:20]:
        lines.append(f"Command {command.name}: {_cut(command.description, 300)}")
        for field in command.inputs[:20]:
            optional = "" if field.required else ", optional"
            lines.append(f"  input {field.name} ({field.type}{optional}): "
                         f"{_cut(field.description, 200)}")
        for example in command.examples[:1]:
            lines.append(f"  example: {_cut(example)}")
    return lines


def _case_lines(cases: list[dict[str, object]]) -> list[str]:
    lines = []
    for number, case in enumerate(cases[:MAX_EXAMPLES], start=1):
        line = (f"Example {number}: {case.get('command') or 'a call'} with "
                f"{_cut(case.get('input', {}))}")
        if case.get("got") is not None:
            line += (f"; it failed: {_cut(case['got'])}" if case.get("failed")
                     else f"; it answered {_cut(case['got'])}")
        if "expected" in case:
            line += f"; expected {_cut(case['expected'])}"
        elif case.get("expected_words"):
            line += f"; they expected: {_cut(case['expected_words'])}"
        lines.append(line)
    return lines


def follow_up_messages(request: ChangeRequest, *, answered: bool = False) -> list[Message]:
    """What the analyst is told: the plugin, the request and its examples, and (`answered`)
    the questions with their answers. Bounded to MAX_PROMPT_CHARS: the request and the answers
    come first, so what a bound cuts is the end of the plugin's description or examples."""
    lines = [f"What should be different (their words): "
             f"{_cut(request.description, MAX_FIELD_CHARS)}"]
    if request.keep.strip():
        lines.append(f"What must stay as it is (their words): "
                     f"{_cut(request.keep, MAX_FIELD_CHARS)}")
    if answered:
        lines += _answer_lines(request)
    lines += _plugin_lines(request.version)
    lines += _case_lines(request.cases) or ["No example was attached."]
    text = "\n".join(lines)
    if len(text) > MAX_PROMPT_CHARS:
        text = text[:MAX_PROMPT_CHARS] + "\n(cut here)"
    return [Message(role="system", content=SECOND_SYSTEM if answered else SYSTEM),
            Message(role="user", content=text)]


def _answer_lines(request: ChangeRequest) -> list[str]:
    lines = []
    for question in request.questions:
        answer = str(question.get("answer") or "").strip()
        reply = (_cut(answer, MAX_ANSWER_CHARS) if answer
                 else f"(not answered; assume: {question.get('assumption') or NO_ASSUMPTION})")
        lines.append(f"Asked: {question.get('text', '')} Answer: {reply}")
    return lines


# -- reading the reply ---------------------------------------------------------------------


@dataclass(frozen=True)
class FollowUpReply:
    questions: list[dict[str, str]]
    change: str
    keep: str


def _json_object(text: str) -> dict[str, object] | None:
    found = analyst.json_reply(text, dict)
    return dict(found) if found is not None else None


def _words(value: object, limit: int) -> str:
    if not isinstance(value, str):
        return ""
    text = "\n".join(" ".join(line.split()) for line in value.strip().splitlines())
    return text.strip()[:limit]


def follow_up_parse(text: str) -> FollowUpReply:
    """The questions (at most MAX_QUESTIONS, each with an assumption) and the change spec of
    a reply, read tolerantly: a JSON object, in a code fence or among prose; a bare list of
    questions; a reply cut short (the questions written in full). Anything else: no questions
    and no spec (the request stands as written)."""
    text = (text or "")[:MAX_REPLY_CHARS]
    found = _json_object(text)
    if found is None:
        # A bare list, or an object cut short: the questions written in full so far.
        raw: Any = analyst.complete_items(text)
        found = {}
    else:
        raw = found.get("questions")
    if not isinstance(raw, list):
        raw = []
    parsed = analyst.parse_analyst_questions(json.dumps(raw), [], round_number=1)
    questions = [{"text": q["text"],
                  "assumption": str(q.get("assumption") or "").strip() or NO_ASSUMPTION,
                  "answer": ""} for q in parsed[:MAX_QUESTIONS]]
    return FollowUpReply(questions=questions,
                         change=_words(found.get("change"), MAX_CHANGE_CHARS),
                         keep=_words(found.get("keep"), MAX_KEEP_CHARS))


# -- the work ------------------------------------------------------------------------------


def follow_up_queue(request: ChangeRequest, *, stage: str = FollowUp.READING) -> None:
    """Mark `request` as being read (or its spec as being written) and send it to a worker
    once the caller's transaction commits (the outbox: nothing is lost if Redis is down)."""
    ChangeRequest.objects.filter(pk=request.pk).update(follow_up=stage)
    request.follow_up = stage
    durable.outbox_message_queue(actor=ACTOR, args=[request.pk])


def _reply(request: ChangeRequest, messages: list[Message],
           provider_for: ProviderFor) -> tuple[str, str]:
    """(outcome, reply text): outcome "ok", "no_model" or "unreachable"."""
    records: list[CallRecord] = []
    try:
        provider = provider_for(request)
        completion = provider.complete(
            messages, role="analyst", max_tokens=FOLLOW_UP_MAX_TOKENS,
            timeout_s=FOLLOW_UP_TIMEOUT_S, record=records.append,
            deadline=time.monotonic() + FOLLOW_UP_TIMEOUT_S)
    except (ModelNotSetUp, LLMConfigError) as error:
        logger.info("no analyst model for change request %s: %s", request.pk, error)
        llm_calls_record_unattached(messages, records, reply="", error=str(error))
        return FollowUp.NO_MODEL, ""
    except LLMError as error:
        logger.info("analyst did not answer for change request %s: %s", request.pk, error)
        llm_calls_record_unattached(messages, records, reply="", error=str(error))
        return FollowUp.UNREACHABLE, ""
    llm_calls_record_unattached(messages, records, reply=completion.text, error="")
    return "ok", completion.text


def follow_up_perform(*, request_id: int,
                      provider_for: ProviderFor = _analyst_provider) -> ChangeRequest | None:
    """One reply of the analyst for request `request_id`: its questions, or the change spec.
    Does nothing for a request that is not waiting for it (a message delivered twice)."""
    request = (ChangeRequest.objects.select_related("version", "version__plugin", "plugin")
               .filter(pk=request_id).first())
    if request is None or request.follow_up not in (FollowUp.READING, FollowUp.WRITING):
        return None
    stage = request.follow_up
    messages = follow_up_messages(request, answered=stage == FollowUp.WRITING)
    outcome, text = _reply(request, messages, provider_for)
    reply = follow_up_parse(text)
    with transaction.atomic():
        locked = ChangeRequest.objects.select_for_update().get(pk=request.pk)
        if locked.follow_up != stage:
            return locked
        fields = ["follow_up", "questions", "spec_change", "spec_keep"]
        if outcome != "ok":
            locked.follow_up = outcome
        elif stage == FollowUp.READING and reply.questions and \
                locked.status == ChangeRequest.Status.OPEN:
            locked.follow_up, locked.questions = FollowUp.ASKED, reply.questions
            # A first draft, with the assumptions: what the run gets if nobody answers.
            locked.spec_change, locked.spec_keep = reply.change, reply.keep
            _tell_asker(locked)
        else:
            locked.follow_up = FollowUp.DONE
            if reply.change:
                locked.spec_change, locked.spec_keep = reply.change, reply.keep
        locked.save(update_fields=fields)
    return locked


def _url(request: ChangeRequest, anchor: str) -> str:
    return reverse("tools:change", args=[request.pk]) + f"#{anchor}"


def _tell_asker(request: ChangeRequest) -> None:
    if request.asked_by_id is None:
        return
    count = len(request.questions)
    what = "a question" if count == 1 else f"{count} questions"
    notifications_comment_send(
        team=request.from_team, url=_url(request, "questions"),
        messages={request.asked_by_id: f"{what.capitalize()} about your change request for "
                                       f"{request.plugin.name}: answer them on its page, or "
                                       "skip them (the assumptions shown are used)."})


def may_answer(user: AbstractBaseUser, request: ChangeRequest) -> bool:
    """The asker, and the reviewers and admins of the owning team."""
    if not user.is_authenticated:
        return False
    return request.asked_by_id == user.pk or not may_decide_change(user, request)


def follow_up_answer(*, request: ChangeRequest, user: AbstractBaseUser,
                     answers: dict[int, str]) -> ChangeRequest:
    """Save the answers (by question number; a blank one keeps its assumption) and have the
    change spec written from them. FollowUpError when the user may not answer, or the
    questions are no longer waiting."""
    if not may_answer(user, request):
        raise FollowUpError("Only whoever asked, or a reviewer of the team that makes "
                                 "the plugin, answers these questions.")
    with transaction.atomic():
        locked = ChangeRequest.objects.select_for_update(of=("self",)).select_related(
            "team", "plugin").get(pk=request.pk)
        if locked.status != ChangeRequest.Status.OPEN or locked.follow_up != FollowUp.ASKED:
            raise FollowUpError("These questions are settled already: the request "
                                     "goes on with what the page shows.")
        questions = [dict(q) for q in locked.questions]
        for number, question in enumerate(questions):
            question["answer"] = answers.get(number, "").strip()[:MAX_ANSWER_CHARS]
        locked.questions = questions
        locked.answered_by_id, locked.answered_at = user.pk, timezone.now()
        locked.save(update_fields=["questions", "answered_by", "answered_at"])
        audit_record(actor=user, action="tool.change_answered", team=locked.team,
                     target=locked, target_repr=f"{locked.plugin.name} (change request "
                                                f"{locked.pk})",
                     after={"answered": sum(bool(q["answer"]) for q in questions),
                            "questions": len(questions)})
        follow_up_queue(locked, stage=FollowUp.WRITING)
    return locked


def follow_up_retry(*, request: ChangeRequest, user: AbstractBaseUser) -> ChangeRequest:
    """Ask the analyst again, once the model is set up or answers again (by whoever may answer;
    only while the request is open and nothing was asked yet)."""
    if not may_answer(user, request):
        raise FollowUpError("Only whoever asked, or a reviewer of the team that makes "
                                 "the plugin, asks the analyst again.")
    with transaction.atomic():
        locked = ChangeRequest.objects.select_for_update().get(pk=request.pk)
        retryable = (FollowUp.NO_MODEL, FollowUp.UNREACHABLE)
        if locked.status != ChangeRequest.Status.OPEN or locked.follow_up not in retryable:
            raise FollowUpError("The analyst has this request already.")
        follow_up_queue(locked, stage=FollowUp.WRITING if locked.questions
                        else FollowUp.READING)
    return locked


def follow_up_stalled(request: ChangeRequest) -> bool:
    """The analyst was asked long ago and has not replied (a worker that stopped mid-way):
    the page says the request goes on as written."""
    if request.follow_up not in (FollowUp.READING, FollowUp.WRITING):
        return False
    since = request.answered_at or request.created_at
    return timezone.now() - since > timedelta(seconds=STALLED_AFTER_S)


def follow_up_for_run(request: ChangeRequest) -> dict[str, str]:
    """What the change run is told of the request: the change spec ("change", "keep") and
    the asker's own words with the questions and their answers or assumptions ("asked")."""
    notes = []
    if request.spec_change or request.questions:
        notes.append(f"Asked for in these words: {_cut(request.description, MAX_FIELD_CHARS)}")
        if request.keep.strip() and request.spec_keep:
            notes.append(f"They said must stay: {_cut(request.keep, MAX_FIELD_CHARS)}")
    notes += _answer_lines(request)
    return {"change": request.change_text, "keep": request.keep_text, "asked": "\n".join(notes)}
