"""Constrained replies (docs/llm.md, "Constrained replies"): a role's reply held to its JSON
schema through the provider's structured-output option, where the model's server takes one.

A provider lists the forms it can send (`reply_forms`, in the order to try them). The first
call to a model tries them in turn; a form the server refuses (LLMBadRequest: HTTP 400/422, or
an error that names the option, as llama-cpp-python's HTTP 500 does) is
passed over, and when every form is refused the call is made once more without a constraint:
the fenced protocol the prompts describe. What settled it is remembered for the model
(ModelReplyForm), so later calls send the form that worked, or none, straight away.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from autocoder.llm.system_role import as_sent
from autocoder.llm.types import (
    FENCED,
    Completion,
    LLMBadRequest,
    Message,
    Provider,
    ReplyFormat,
    ReplySchema,
    memory_key,
)

MAX_DETAIL_CHARS = 1000


def remembered(provider: Provider) -> str:
    """The form that worked for this model, FENCED when none did, "" when not known yet."""
    from autocoder.llm.models import ModelReplyForm

    name, base_url, model = memory_key(provider)
    found = ModelReplyForm.objects.filter(provider=name, base_url=base_url,
                                          model=model).values_list("form", flat=True).first()
    return found or ""


def remember(provider: Provider, form: str, detail: str = "") -> None:
    from autocoder.llm.models import ModelReplyForm

    name, base_url, model = memory_key(provider)
    ModelReplyForm.objects.update_or_create(
        provider=name, base_url=base_url, model=model,
        defaults={"form": form, "detail": detail[:MAX_DETAIL_CHARS]})


def forms_to_try(provider: Provider) -> tuple[tuple[str, ...], str]:
    """(the forms to send this model, best first; what is remembered for it): the remembered
    form alone, else every form the provider has, or none once the model is known to refuse."""
    forms: tuple[str, ...] = tuple(getattr(provider, "reply_forms", ()))
    if not forms:
        return (), ""
    known = remembered(provider)
    if known == FENCED:
        return (), known
    return ((known,) if known in forms else forms), known


def with_hint(messages: list[Message], schema: ReplySchema) -> list[Message]:
    """`messages` with the schema's hint after the last one: the prompts describe fenced
    blocks, and a model held to a schema is told what replaces them."""
    if not schema.hint or not messages:
        return messages
    last = messages[-1]
    return [*messages[:-1], dataclasses.replace(last, content=f"{last.content}\n\n{schema.hint}")]


def complete(provider: Provider, messages: list[Message], *, role: str,
             schema: ReplySchema | None, **options: Any) -> Completion:
    """`provider.complete` with the reply held to `schema` where the model's server allows it
    (the Completion's `reply_form` says how), else as it is. Remembers what settled it. System
    messages are folded into the first user message for a model that would not read them
    (autocoder.llm.system_role)."""
    messages = as_sent(provider, messages)
    forms, known = forms_to_try(provider) if schema is not None else ((), "")
    if schema is None or not forms:
        return provider.complete(messages, role=role, **options)
    refused: list[str] = []
    for form in forms:
        try:
            completion = provider.complete(with_hint(messages, schema), role=role,
                                           reply_format=ReplyFormat(form, schema), **options)
        except LLMBadRequest as error:
            refused.append(f"{form}: {error}")
            continue
        if form != known:
            remember(provider, form)
        return completion
    completion = provider.complete(messages, role=role, **options)
    # Only now, once the same request went through without a constraint: a refusal for
    # another reason (a prompt too long) fails that call too, and settles nothing.
    remember(provider, FENCED, "; ".join(refused))
    return completion


def probe(provider: Provider, call: Callable[[ReplyFormat], Completion]) -> tuple[str, str]:
    """(form, detail) for the Model page: the first form `call` gets through, remembered; or
    (FENCED, what the server said) when every form was refused."""
    forms: tuple[str, ...] = tuple(getattr(provider, "reply_forms", ()))
    if not forms:
        return "", "none with this provider; it is asked for fenced blocks"
    refused: list[str] = []
    for form in forms:
        try:
            call(ReplyFormat(form, PROBE_SCHEMA))
        except LLMBadRequest as error:
            refused.append(f"{form}: {error}")
            continue
        remember(provider, form)
        return form, ""
    detail = "; ".join(refused)
    remember(provider, FENCED, detail)
    return FENCED, detail


PROBE_SCHEMA = ReplySchema(
    name="probe",
    schema={"type": "object", "properties": {"word": {"type": "string"}},
            "required": ["word"], "additionalProperties": False},
    hint="Answer with a JSON object whose `word` is the word asked for.")
