"""Writes of the interview wizard: every answer is saved as it is given, under a row lock.

The rules (checklist, parsing, spec assembly) live in the projects/interview package; these
functions load the interview, apply the rules and save, so two tabs of the same interview cannot
lose each other's answers.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction

from autocoder import realtime
from autocoder.engine.spec import SpecError, spec_from_dict
from autocoder.llm import system_role
from autocoder.llm.speed import speed_record
from autocoder.llm.types import CallRecord, LLMError, LLMTimeout, Message, Provider
from projects.interview import (
    analyst,
    answers,
    asked_before,
    checklist,
    fields,
    naming,
    navigation,
    samples,
    spec_assembly,
    testing,
)
from projects.interview.describing import proposed_description
from projects.models import Interview
from runs.models import Project, Run
from runs.services.llm_calls import llm_calls_record_unattached
from teams.models import Team
from teams.services.audit import audit_record

logger = logging.getLogger(__name__)

# A person waits for the next page: the analyst gets one try within this bound (the page says
# so while it thinks), then the checklist's questions go on alone. INTERVIEW_ANALYST_TIMEOUT_S
# changes it (docs/configuration.md); a model whose measured speed says its reply takes longer
# is waited for that long (analyst_wait_s), up to ANALYST_MAX_WAIT_S.
ANALYST_TIMEOUT_S = 15.0
ANALYST_MAX_WAIT_S = 240.0
# When the requester goes on without waiting (the thinking page), the round goes on behind:
# its questions are added when they come, up to this long after it started.
ANALYST_LATE_S = 600.0
ANALYST_MAX_RETRIES = 0
# Five short questions fit in far less; a small local model writes about 20 tokens a second.
ANALYST_MAX_TOKENS = 400


def analyst_timeout_s() -> float:
    return float(getattr(settings, "INTERVIEW_ANALYST_TIMEOUT_S", ANALYST_TIMEOUT_S))


def analyst_wait_s(interview: Interview | None = None) -> float:
    """How long the wizard waits for the analyst: INTERVIEW_ANALYST_TIMEOUT_S, or as long as
    the model's measured speed (the Model page's) says a reply of ANALYST_MAX_TOKENS takes,
    with a quarter more and five seconds to read the prompt; at most ANALYST_MAX_WAIT_S."""
    from autocoder.llm import role_config
    from autocoder.llm.speed import seconds_for
    from autocoder.llm.types import LLMConfigError

    base = analyst_timeout_s()
    try:
        needed = seconds_for(ANALYST_MAX_TOKENS, role_config(
            "analyst", team_id=interview.team_id if interview is not None else None))
    except LLMConfigError:
        return base
    if needed is None:
        return base
    return max(base, min(ANALYST_MAX_WAIT_S, needed * 1.25 + 5))

ProviderFor = Callable[[Interview], Provider]
# Told what the analyst does while it thinks: ("question", its text) for each question as it
# arrives, then ("outcome", "answered" | "cut" | "timeout" | "failed"); "cut" and "timeout"
# mean the bound came first (with some questions, or none).
Listener = Callable[[str, str], None]


def _ignore(kind: str, value: str) -> None:
    """A listener that hears nothing."""


class InterviewClosed(Exception):
    """The interview has started its run; its answers can no longer change."""


class InterviewInvalid(Exception):
    """The interview cannot start; `errors` maps each form field to plain-words problems."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__("; ".join(m for messages in errors.values() for m in messages))
        self.errors = errors


@dataclass(frozen=True)
class Saved:
    """What saving a page of answers did: the problems found, and where the wizard goes next."""

    errors: dict[str, list[str]]
    group: int | None  # the questions page to show next; None means the summary
    # The analyst is to be asked next (consult=False left it for the page's live stream).
    analyst_due: bool = False


def _analyst_provider(interview: Interview) -> Provider:
    """The team's analyst model, kept short: a person is waiting for the next page (or, gone
    on, for its questions: the silence allowed is the longest a round may take)."""
    from autocoder.llm import build_provider, role_config

    config = role_config("analyst", team_id=interview.team_id)
    config = dataclasses.replace(config, timeout_s=min(config.timeout_s, ANALYST_LATE_S),
                                 max_retries=min(config.max_retries, ANALYST_MAX_RETRIES))
    return build_provider(config)


def interview_create(*, team: Team, requester: User, request_text: str,
                     provider_for: ProviderFor = _analyst_provider, consult: bool = True,
                     listen: Listener = _ignore) -> Interview:
    """Step 1: the request becomes a project on the board ("interviewing") and an interview.
    consult=False leaves the analyst's first round to the page's live stream
    (interview_analyst_due says so)."""
    state = answers.new_state(request_text)
    with transaction.atomic():
        project = Project.objects.create(team=team, requester=requester, name=state["name"],
                                         status=Project.Status.INTERVIEWING)
        interview = Interview.objects.create(
            team=team, requester=requester, project=project, request=request_text.strip(),
            state=state, questions=checklist.sync_questions([], state),
            step=Interview.Step.QUESTIONS)
        _announce(project)
    if consult:
        interview_analyst_consult(interview=interview, provider_for=provider_for, listen=listen)
    return interview


def interview_request_update(*, interview: Interview, request_text: str) -> Interview:
    """Going back to step 1: a changed request may raise new questions (one more analyst round)."""
    with transaction.atomic():
        locked = _locked(interview)
        summary = locked.state.get("summary", "").strip()
        if summary in (locked.request.strip(), proposed_description(locked.request)):
            locked.state["summary"] = proposed_description(request_text)  # not her own yet
        locked.request = request_text.strip()
        locked.analyst_done = False
        if locked.step == Interview.Step.DESCRIBE:
            locked.step = Interview.Step.QUESTIONS
        locked.save()
    return locked


def interview_answers_save(*, interview: Interview, question_ids: list[str],
                           data: Mapping[str, Any], action: str = "next", skip: str = "",
                           group: int = 0, files: Mapping[str, samples.SampleFile] | None = None,
                           provider_for: ProviderFor = _analyst_provider, consult: bool = True,
                           listen: Listener = _ignore) -> Saved:
    """Save a page of answers (whatever their state), skip one, and say which page comes next.

    `action` is "next" (problems keep the requester on this page), "back" (save and go back,
    problems or not) or "stay" (save only, e.g. after a skip). `files` are sample files attached
    to examples, keyed by their field; a refused one keeps the requester on this page to see why,
    with every other answer saved.
    """
    data = dict(data)
    file_errors = _attach_files(data, files or {})
    with transaction.atomic():
        locked = _locked(interview)
        errors = answers.apply_answers(locked.request, locked.state, locked.questions,
                                       question_ids, data, skip=skip,
                                       require=action == "next" and not skip and not file_errors)
        locked.step = Interview.Step.QUESTIONS
        locked.save()
        _sync_project_name(locked)
    interview.refresh_from_db()
    if file_errors:
        return Saved(errors={**errors, **file_errors}, group=group)
    if action == "back":
        return Saved(errors=errors, group=max(group - 1, -1))
    if action != "next" or skip or errors:
        return Saved(errors=errors, group=group)
    if not consult and interview_analyst_due(interview):
        return Saved(errors={}, group=None, analyst_due=True)
    return Saved(errors={}, group=interview_advance(interview=interview,
                                                     provider_for=provider_for, listen=listen))


# A round of the analyst for the thinking page (views/interviews.py) runs on a thread of its
# own, so the web process goes on answering (its requests share one thread; docs/operating.md),
# and keeps what it does in Redis for the page's poll, in whichever web process that lands: the
# questions as they arrive, then the outcome. Gone a minute after the round.
PROGRESS_KEY = "autocoder:interview-analyst:{pk}:{part}"
PROGRESS_TTL_S = 60


class RoundResult(TypedDict):
    """How an analyst round ended, as the waiting page's poll reads it: the page to go to, the
    questions written, and the words to show."""

    url: str
    questions: list[str]
    message: str


class ProgressRead(TypedDict):
    questions: list[str]  # written so far
    done: RoundResult | None  # None while the round runs


class AnalystProgress:
    """The analyst round of one interview as the thinking page polls it."""

    def __init__(self, pk: int) -> None:
        import redis

        self.connection = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1,
                                               socket_connect_timeout=1)
        self.keys = {part: PROGRESS_KEY.format(pk=pk, part=part)
                     for part in ("running", "questions", "done")}

    def begin(self) -> bool:
        """Claim the round (False: one is already going on for this interview)."""
        bound = round(ANALYST_LATE_S) + 15
        if not self.connection.set(self.keys["running"], "1", nx=True, ex=bound):
            return False
        self.connection.delete(self.keys["questions"], self.keys["done"])
        return True

    def listen(self, kind: str, value: str) -> None:
        if kind == "question":
            pipe = self.connection.pipeline()
            pipe.rpush(self.keys["questions"], value)
            pipe.expire(self.keys["questions"], PROGRESS_TTL_S)
            pipe.execute()

    def went_on(self, result: RoundResult) -> None:
        """The page stops waiting (the round goes on): its poll reads `result` as done."""
        self.connection.set(self.keys["done"], json.dumps(result), ex=PROGRESS_TTL_S)

    def finish(self, result: RoundResult) -> None:
        pipe = self.connection.pipeline()
        pipe.set(self.keys["done"], json.dumps(result), ex=PROGRESS_TTL_S)
        pipe.delete(self.keys["running"])
        pipe.execute()

    def running(self) -> bool:
        """Whether a round is still going on (the requester went on without waiting)."""
        return bool(self.connection.exists(self.keys["running"]))

    def read(self) -> ProgressRead:
        """{"questions": written so far, "done": the round's result or None}."""
        pipe = self.connection.pipeline()
        pipe.lrange(self.keys["questions"], 0, 20)
        pipe.get(self.keys["done"])
        questions, done = pipe.execute()
        return {"questions": [q.decode() for q in questions],
                "done": json.loads(done) if done else None}


def analyst_still_thinking(interview: Interview) -> bool:
    """Whether an analyst round the requester went on without waiting for is still going on
    (False when that cannot be told: the progress lives in Redis)."""
    import redis

    try:
        return AnalystProgress(interview.pk).running()
    except redis.RedisError:
        return False


def interview_analyst_due(interview: Interview) -> bool:
    """Whether the wizard's next step is an analyst round: its first (right after step 1),
    or another once every open question is answered."""
    if interview.analyst_done or interview.analyst_rounds >= analyst.MAX_ANALYST_ROUNDS:
        return False
    return interview.analyst_rounds == 0 or \
        navigation.first_open_group(interview.questions, interview.state) is None


def interview_advance(*, interview: Interview,
                      provider_for: ProviderFor = _analyst_provider,
                      listen: Listener = _ignore) -> int | None:
    """The next page with open questions; when none is left the analyst may add some, and when
    it adds none (nothing essential unclear) the interview moves on to its summary."""
    group = navigation.first_open_group(interview.questions, interview.state)
    if group is None and not interview.analyst_done:
        interview_analyst_consult(interview=interview, provider_for=provider_for, listen=listen)
        group = navigation.first_open_group(interview.questions, interview.state)
    if group is None:
        Interview.objects.filter(pk=interview.pk, step=Interview.Step.QUESTIONS).update(
            step=Interview.Step.SUMMARY)
        interview.refresh_from_db()
    return group


def interview_analyst_consult(*, interview: Interview,
                              provider_for: ProviderFor = _analyst_provider,
                              listen: Listener = _ignore, behind: bool = False) -> int:
    """Ask the analyst what is still unclear; returns how many new questions it added.

    The model is optional: no model, a failing one or a useless reply adds nothing, and the
    checklist still covers the essentials. The call runs outside any transaction (it can take
    a while: at most analyst_wait_s(), or with `behind`, a round the requester need not wait
    for, up to ANALYST_LATE_S); its questions are merged under the row lock afterwards, with
    the answers given meanwhile. `listen` hears each question as the model writes it, then the
    outcome. Questions that come after the request has started are not added, and say so in
    the log: the run has its spec.
    """
    if interview.analyst_done or interview.analyst_rounds >= analyst.MAX_ANALYST_ROUNDS:
        return 0
    messages = analyst.analyst_messages(interview.request, interview.state, interview.questions)
    bound = ANALYST_LATE_S if behind else analyst_wait_s(interview)
    reply = _analyst_reply(interview, messages, provider_for, listen, bound=bound)
    try:
        return _merge_questions(interview, reply)
    except InterviewClosed:
        logger.warning("the analyst's questions for interview %s came after it started; they "
                       "are kept with its call, not added", interview.pk)
        return 0


def _merge_questions(interview: Interview, reply: str) -> int:
    with transaction.atomic():
        locked = _locked(interview)
        locked.analyst_rounds += 1
        new = analyst.parse_analyst_questions(reply, locked.questions,
                                              round_number=locked.analyst_rounds)
        asked_before.questions_answer_before(new, locked.state, locked.questions)
        locked.questions = checklist.sync_questions(locked.questions + new, locked.state)
        # No essential question left means the analyst is satisfied; stop asking it.
        if not any(q["priority"] == checklist.ESSENTIAL for q in new) or \
                locked.analyst_rounds >= analyst.MAX_ANALYST_ROUNDS:
            locked.analyst_done = True
        locked.save()
    interview.refresh_from_db()
    return len(new)


def _analyst_reply(interview: Interview, messages: list[Message], provider_for: ProviderFor,
                   listen: Listener, *, bound: float) -> str:
    """The analyst's reply, streamed: each question is told to `listen` as soon as it is
    written in full, and the whole call ends at the bound (the text so far is the reply)."""
    records: list[CallRecord] = []
    told: set[str] = set()

    def on_text(text: str) -> None:
        items = analyst.complete_items(text)
        if len(items) <= len(told):
            return
        for question in analyst.parse_analyst_questions(
                json.dumps(items), interview.questions, round_number=interview.analyst_rounds + 1):
            if question["text"] not in told:
                told.add(question["text"])
                listen("question", question["text"])

    try:
        provider = provider_for(interview)
        # What the model reads: instructions folded in where its server drops system messages
        # (measured by a run's first call or Test connection; docs/llm.md).
        completion = provider.complete(system_role.as_sent(provider, messages, measuring=False),
                                       role="analyst", max_tokens=ANALYST_MAX_TOKENS,
                                       timeout_s=bound, record=records.append, on_text=on_text,
                                       deadline=time.monotonic() + bound)
    except LLMError as error:
        logger.info("analyst unavailable for interview %s: %s", interview.pk, error)
        llm_calls_record_unattached(messages, records, reply="", error=str(error))
        listen("outcome", "timeout" if isinstance(error, LLMTimeout) else "failed")
        return ""
    llm_calls_record_unattached(messages, records, reply=completion.text, error="")
    speed_record(provider, completion)  # how long the next round is waited for
    on_text(completion.text)  # a provider that does not stream says it all at the end
    listen("outcome", "cut" if completion.finish_reason == "deadline" else "answered")
    return completion.text


def interview_summary_save(*, interview: Interview, data: Mapping[str, Any],
                           files: Mapping[str, samples.SampleFile] | None = None,
                           ) -> dict[str, list[str]]:
    """Step 3 edits (the whole form, or only the name), saved as typed; returns what would stop
    the interview from starting, and why an attached file was refused."""
    data = dict(data)
    file_errors = _attach_files(data, files or {})
    with transaction.atomic():
        locked = _locked(interview)
        answers.apply_summary(locked.state, locked.questions, data)
        locked.step = Interview.Step.SUMMARY
        locked.save()
        _sync_project_name(locked)
    interview.refresh_from_db()
    assembly = spec_assembly.assemble(interview.request, interview.state, interview.questions)
    return {**assembly.errors, **file_errors}


def interview_start(*, interview: Interview, user: User,
                    run_options: Mapping[str, Any] | None = None) -> Run:
    """Validate the spec, store it on the project and queue its first run.

    Raises InterviewInvalid (plain-words errors per field) and changes nothing when the spec
    is not complete; InterviewClosed when it was already started (a double click, two tabs).
    """
    from runs.services.common import RunStateError
    from runs.services.starting import run_start

    with transaction.atomic():
        locked = _locked(interview)
        assembly = spec_assembly.assemble(locked.request, locked.state, locked.questions)
        if assembly.errors:
            raise InterviewInvalid(assembly.errors)
        try:
            spec = spec_from_dict(assembly.spec)
        except SpecError as error:  # assemble() maps these; this is the last line of defence
            raise InterviewInvalid({fields.FIELD_GENERAL: error.errors}) from None
        project = Project.objects.select_for_update().get(pk=locked.project_id)
        project.spec, project.name = spec.as_dict(), spec.name[:120]
        project.save(update_fields=["spec", "name", "updated_at"])
        locked.step = Interview.Step.STARTED
        locked.save(update_fields=["step", "updated_at"])
        try:
            run = run_start(project=project, started_by=user, **dict(run_options or {}))
        except (LLMError, RunStateError) as error:
            raise InterviewInvalid({fields.FIELD_GENERAL: [
                f"The request could not be started: {error}. Your answers are saved; "
                "please ask an administrator to check the generation settings."]}) from None
        audit_record(actor=user, action="project.start", team=project.team, target=project,
                     after={"run": run.pk, "spec": spec.name, "autonomy": run.autonomy})
    interview.refresh_from_db()
    return run


def _attach_files(data: dict[str, Any],
                  files: Mapping[str, samples.SampleFile]) -> dict[str, list[str]]:
    """Sample files go into their examples, an API documentation file into its box (in place);
    the refused ones say why."""
    return {**samples.attach_samples(data, files),
            **testing.attach_api_docs(data, files.get(testing.FIELD_API_DOCS_UPLOAD))}


def _locked(interview: Interview) -> Interview:
    locked = Interview.objects.select_for_update().get(pk=interview.pk)
    if locked.step == Interview.Step.STARTED:
        raise InterviewClosed("This request has already started.")
    return locked


def _sync_project_name(interview: Interview) -> None:
    """The board shows the plugin's name once it is a valid one (a half-typed name waits)."""
    name = str(interview.state.get("name", "")).strip()[:120]
    if not name or naming.name_problem(name):
        return
    if Project.objects.filter(pk=interview.project_id).exclude(name=name).update(name=name):
        _announce(Project.objects.get(pk=interview.project_id))


def _announce(project: Project) -> None:
    """Tell the team's open boards, once the change is committed."""
    data = {"project_id": project.pk, "name": project.name, "status": project.status}
    team_id = project.team_id

    def send() -> None:
        try:
            realtime.publish(realtime.team_group(team_id), {"kind": "project.updated",
                                                            "data": data})
        except Exception:  # live pages are a convenience; the database is the truth
            logger.warning("could not announce project %s", data["project_id"], exc_info=True)

    transaction.on_commit(send)
