"""A GGUF model inside the worker process through llama-cpp-python (`pip install .[local]`).

llama_cpp is imported only when this provider is built, so the project runs without it. A
loaded model is shared by every provider instance for the same file (loading takes seconds and
memory); llama.cpp contexts are not thread-safe, so calls on one model are serialized.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path
from typing import Any

from autocoder.llm.base import BaseProvider, Reply, TextCallback, past, read_timeout
from autocoder.llm.system_role import folded
from autocoder.llm.types import (
    CAPPED,
    DEADLINE,
    FINISHED,
    JSON_OBJECT,
    LLMBadRequest,
    LLMConfigError,
    LLMServerError,
    LLMTimeout,
    Message,
    ProviderConfig,
    ReplyFormat,
)

INSTALL_HINT = "install the local extra: pip install .[local]"
# llama.cpp generates until the context is full when no cap is given; keep replies bounded even
# when neither the caller nor the role's configuration (LLM_MAX_TOKENS*) sets one.
DEFAULT_MAX_TOKENS = 1024

_models: dict[tuple[str, int], tuple[Any, threading.Lock]] = {}
_models_lock = threading.Lock()


class _TokenMeter:
    """A llama.cpp logits processor: runs once per generated token, so it counts and can stop.

    It runs inside a ctypes callback where exceptions are swallowed, so past the deadline it
    forces the end-of-sequence token instead, and the caller keeps the text generated so far.
    """

    def __init__(self, deadline: float | None, eos_token: int) -> None:
        self.deadline = deadline
        self.eos_token = eos_token
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.expired = False

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        if self.completion_tokens == 0:
            self.prompt_tokens = len(input_ids)  # on the first token the context is the prompt
        self.completion_tokens += 1
        if self.expired or (self.deadline is not None and time.monotonic() > self.deadline):
            self.expired = True
            scores[:] = -float("inf")
            scores[self.eos_token] = 0.0
        return scores


def load_model(path: Path, *, n_ctx: int) -> tuple[Any, threading.Lock]:
    """The shared llama_cpp.Llama for `path` and the lock that serializes its use."""
    key = (str(path.resolve()), n_ctx)
    with _models_lock:
        if key not in _models:
            try:
                import llama_cpp
            except ImportError:
                raise LLMConfigError(f"llama-cpp-python is not installed; {INSTALL_HINT}") \
                    from None
            try:
                model = llama_cpp.Llama(model_path=key[0], n_ctx=n_ctx, verbose=False)
            except (ValueError, RuntimeError) as error:
                raise LLMConfigError(f"cannot load GGUF model {path}: {error}") from None
            _pick_chat_format(model)
            _models[key] = (model, threading.Lock())
        return _models[key]


def _pick_chat_format(model: Any) -> None:
    """Use the architecture's chat format when the GGUF carries no chat template.

    llama-cpp-python otherwise falls back to the llama-2 format, and a Gemma or Qwen model
    prompted that way mostly answers with an immediate end-of-turn.
    """
    if model.metadata.get("tokenizer.chat_template") or model.chat_handler is not None:
        return
    from llama_cpp import llama_chat_format

    architecture = model.metadata.get("general.architecture", "").rstrip("0123456789")
    if architecture in llama_chat_format.LlamaChatCompletionHandlerRegistry()._chat_handlers:
        model.chat_format = architecture


def _drops_system(model: Any) -> bool:
    """Whether the model's chat format leaves a system message out of the prompt (llama-cpp-
    python's `gemma` and `mistral-instruct` formats do): a prompt is formatted and looked at."""
    from llama_cpp import llama_chat_format

    mark = "autocoder-system-message-mark"
    probe: Any = [{"role": "system", "content": mark}, {"role": "user", "content": "Say yes."}]
    template = model.metadata.get("tokenizer.chat_template")
    try:
        if template:
            prompt = llama_chat_format.Jinja2ChatFormatter(
                template=template, eos_token="", bos_token="")(messages=probe).prompt
        else:
            name = str(model.chat_format or "").replace("-", "_").replace(".", "_")
            formatter = getattr(llama_chat_format, f"format_{name}", None)
            if formatter is None or model.chat_handler is not None:
                return False
            prompt = formatter(messages=probe).prompt
    except Exception:  # noqa: BLE001 - a template that cannot format the probe: send as it is
        return False
    return mark not in prompt


class LlamaCppProvider(BaseProvider):
    name = "llamacpp"
    reply_forms = (JSON_OBJECT,)  # llama-cpp-python's form: json_object with a schema

    def __init__(self, config: ProviderConfig, *, n_ctx: int = 4096,
                 retry_base_delay_s: float = 0.5) -> None:
        super().__init__(config, retry_base_delay_s=retry_base_delay_s)
        if not config.model:
            raise LLMConfigError("the llamacpp provider needs the path of a .gguf file in "
                                 "LLM_MODEL (or LLM_MODEL_<ROLE>)")
        self.path = Path(config.model).expanduser()
        if not self.path.is_file():
            raise LLMConfigError(f"GGUF model file not found: {self.path}")
        self.n_ctx = n_ctx
        self._model, self._lock = load_model(self.path, n_ctx=n_ctx)
        # Its chat format drops system messages: their text opens the first user message
        # instead (autocoder/llm/system_role.py).
        self.folds_system_messages = _drops_system(self._model)

    @property
    def model_name(self) -> str:
        return self.path.name

    def _attempt(self, messages: list[Message], *, role: str, max_tokens: int | None,
                 temperature: float | None, timeout_s: float,
                 on_text: TextCallback | None, deadline: float | None,
                 reply_format: ReplyFormat | None = None) -> Reply:
        """Generation in this process cannot go silent; the idle timeout bounds the wait for
        the model while other calls use it, and the deadline stops generation (reading a very
        long prompt cannot be interrupted)."""
        wait_s = read_timeout(timeout_s, deadline)
        if not self._lock.acquire(timeout=wait_s):
            if past(deadline):
                return Reply(text="", prompt_tokens=0, completion_tokens=0,
                             model=self.path.name, finish_reason=DEADLINE)
            raise LLMTimeout(f"{self.path.name} stayed busy with other calls for {wait_s:g}s")
        meter = _TokenMeter(deadline, self._model.token_eos())
        try:
            reply = self._generate(messages, max_tokens=max_tokens, temperature=temperature,
                                   meter=meter, on_text=on_text, reply_format=reply_format)
        except ValueError as error:
            # llama-cpp-python signals a prompt longer than the context window this way.
            raise LLMBadRequest(f"{self.path.name}: {error}") from None
        except RuntimeError as error:
            raise LLMServerError(f"{self.path.name}: {error}") from None
        finally:
            self._lock.release()
        if meter.expired:
            return dataclasses.replace(reply, finish_reason=DEADLINE)
        return reply

    def _generate(self, messages: list[Message], *, max_tokens: int | None,
                  temperature: float | None, meter: _TokenMeter,
                  on_text: TextCallback | None, reply_format: ReplyFormat | None) -> Reply:
        import llama_cpp

        if self.folds_system_messages:
            messages = folded(messages)
        request: dict[str, Any] = {
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "max_tokens": max_tokens or DEFAULT_MAX_TOKENS,
            "logits_processor": llama_cpp.LogitsProcessorList([meter]),
            "stream": on_text is not None,
        }
        if temperature is not None:
            request["temperature"] = temperature
        if reply_format is not None:  # a grammar made from the schema holds every token to it
            request["response_format"] = {"type": "json_object",
                                          "schema": reply_format.schema.schema}
        if on_text is None:
            response = self._model.create_chat_completion(**request)
            usage, choice = response["usage"], response["choices"][0]
            return Reply(text=choice["message"].get("content") or "",
                         prompt_tokens=usage["prompt_tokens"],
                         completion_tokens=usage["completion_tokens"], model=self.path.name,
                         finish_reason=_finish(choice.get("finish_reason")))
        parts: list[str] = []
        finish = None
        for chunk in self._model.create_chat_completion(**request):
            choice = chunk["choices"][0] if chunk["choices"] else {}
            finish = choice.get("finish_reason") or finish
            piece = choice.get("delta", {}).get("content")
            if piece:
                parts.append(piece)
                on_text("".join(parts))
        # Streams carry no usage; the meter saw every token, which is the exact count.
        return Reply(text="".join(parts), prompt_tokens=meter.prompt_tokens,
                     completion_tokens=meter.completion_tokens, model=self.path.name,
                     finish_reason=_finish(finish))


def _finish(finish_reason: str | None) -> str:
    return CAPPED if finish_reason == "length" else FINISHED
