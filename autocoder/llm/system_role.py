"""Models whose server drops system messages (docs/llm.md, "System messages").

Every role's instructions (the plugin contract, how to send files) are its system message. Some
chat formats have no place for one and leave it out without a word: llama-cpp-python's
`gemma` and `mistral-instruct` formats do, so a Gemma model served with `--chat_format gemma`
never sees the contract. For such a model the system text goes at the start of the first user
message instead, as Gemma's own chat template does.

Whether a server drops it is measured, not guessed from the model's name: the same question is
asked with a system message and without, and when both prompts count the same number of
tokens, the system message never reached the model. The first role call to a model on a server
someone runs asks (`as_sent`, through autocoder.llm.structured), as does "Test connection" on the
Model page (autocoder.llm.readiness); the answer is remembered for the model beside its reply
form (ModelReplyForm), and every role call then sends what the model will read. The in-process
llama.cpp provider needs no calls: it formats a prompt itself and sees (autocoder/llm/llamacpp.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from django.conf import settings

from autocoder.llm.types import DEADLINE, Completion, LLMError, Message, Provider, memory_key

KEPT = "kept"
DROPPED = "dropped"
UNSURE = "unsure"  # the server counts no prompt tokens: sent as they are, not measured again
# LLM_SYSTEM_MESSAGES: measure (the default), keep (never fold) or fold (always).
MEASURE, KEEP, FOLD = "measure", "keep", "fold"
MODES = (MEASURE, KEEP, FOLD)
# The measure's two one-token calls, together, before a role call: a server slower than this
# is left unmeasured, and asked again at the next call.
MEASURE_TIMEOUT_S = 20.0

PROBE_QUESTION = Message("user", "Say yes.")
PROBE_WITH_SYSTEM = [
    Message("system", "You are checking a connection. Whatever is asked, answer with one short "
                      "word and nothing else, in lower case, without punctuation."),
    PROBE_QUESTION,
]


def folded(messages: list[Message]) -> list[Message]:
    """`messages` without system messages: their text opens the first user message (or
    becomes one, when there is none)."""
    system = "\n\n".join(m.content for m in messages if m.role == "system" and m.content)
    rest = [m for m in messages if m.role != "system"]
    if not system:
        return rest
    for index, message in enumerate(rest):
        if message.role == "user":
            joined = Message("user", f"{system}\n\n{message.content}")
            return [*rest[:index], joined, *rest[index + 1:]]
    return [Message("user", system), *rest]


def remembered(provider: Provider) -> str:
    """KEPT or DROPPED as last measured for this model, "" when never measured."""
    from autocoder.llm.models import ModelReplyForm

    name, base_url, model = memory_key(provider)
    found = ModelReplyForm.objects.filter(provider=name, base_url=base_url, model=model) \
        .values_list("system_messages", flat=True).first()
    return found or ""


def remember(provider: Provider, state: str) -> None:
    from autocoder.llm.models import ModelReplyForm

    name, base_url, model = memory_key(provider)
    ModelReplyForm.objects.update_or_create(provider=name, base_url=base_url, model=model,
                                            defaults={"system_messages": state})


def as_sent(provider: Provider, messages: list[Message], *,
            measuring: bool = True) -> list[Message]:
    """`messages` as this model will read them: folded when its server drops system messages.
    A server someone runs (`may_drop_system_messages`) is measured on its first call, once per
    model (with `measuring=False`, only what is remembered counts: the wizard's analyst has
    seconds, not two calls to spare); a provider that can tell by itself, as the in-process
    one, folds them on its own. LLM_SYSTEM_MESSAGES=keep or fold settles it without measuring."""
    if not any(m.role == "system" for m in messages):
        return messages
    if getattr(provider, "folds_system_messages", False):
        return messages
    mode = getattr(settings, "LLM_SYSTEM_MESSAGES", MEASURE)
    if mode == FOLD:
        return folded(messages)
    if mode == KEEP or not getattr(provider, "may_drop_system_messages", False):
        return messages
    state = remembered(provider) or (measured_now(provider) if measuring else "")
    return folded(messages) if state == DROPPED else messages


def measured_now(provider: Provider) -> str:
    """Measure `provider`'s model now (two one-token calls, MEASURE_TIMEOUT_S together) and
    remember the answer; "" when the calls failed or were cut, and nothing is remembered."""
    deadline = time.monotonic() + MEASURE_TIMEOUT_S

    def call(messages: list[Message]) -> Completion:
        return provider.complete(messages, role="analyst", max_tokens=1,
                                 timeout_s=MEASURE_TIMEOUT_S, deadline=deadline)

    try:
        state = measure(call)
    except LLMError:
        return ""  # the role's own call meets the same fault and says so; measured next time
    if state:
        remember(provider, state)
    return state


def measure(call: Callable[[list[Message]], Completion]) -> str:
    """KEPT or DROPPED; UNSURE when the server counts no prompt tokens (then system messages
    are sent as they are); "" when a call was cut at its deadline (nothing is known). `call`
    sends the messages it is given, with a tiny reply cap."""
    with_system = call(PROBE_WITH_SYSTEM)
    without = call([PROBE_QUESTION])
    if DEADLINE in (with_system.finish_reason, without.finish_reason):
        return ""
    if with_system.prompt_tokens <= 0 or without.prompt_tokens <= 0:
        return UNSURE
    return DROPPED if with_system.prompt_tokens <= without.prompt_tokens else KEPT
