"""Is a model set up, and does it answer?

`model_fault()` looks only at the configuration (no network call), so it can be asked on every
run start, by the workers' watchdog and on every page an admin opens. `model_probe()` makes a
real, short call through the same provider code the runs use: the Model page's "Test
connection" and `doctor` use it. See docs/llm.md.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autocoder.installation import InstallationFault
from autocoder.llm import structured, system_role
from autocoder.llm.config import build_provider, default_config, layer
from autocoder.llm.env import normalize_provider
from autocoder.llm.types import (
    PROVIDERS,
    ROLES,
    Completion,
    LLMAuthError,
    LLMBadRequest,
    LLMConfigError,
    LLMConnectionError,
    LLMError,
    LLMRateLimited,
    LLMServerError,
    LLMTimeout,
    Message,
    ProviderConfig,
    ReplyFormat,
    safe_url,
)

if TYPE_CHECKING:
    from autocoder.llm.models import SiteModelConfig

MODEL_PAGE = "/settings/model/"
SET_UP = (f"a site admin sets one up on the portal's Model page ({MODEL_PAGE}), or sets "
          "LLM_PROVIDER and the other LLM_* settings (see docs/llm.md)")

# A probe asks for a word, not an essay: it proves the address, the key and the model name.
PROBE_MESSAGES = [Message("system", "You are checking a connection. Answer with one word."),
                  Message("user", "Reply with the word: ready")]
PROBE_MAX_TOKENS = 8
PROBE_FORM_MAX_TOKENS = 24  # {"word": "ready"} and the tokens of its JSON
PROBE_TIMEOUT_S = 15.0

# What to do about each kind of failed probe (`ProbeResult.failed`).
PROBE_FIXES: dict[str, str] = {
    "address": "start the model server, or correct the base URL on the Model page "
               "(or LLM_BASE_URL)",
    "key": "enter the right API key on the Model page (or LLM_API_KEY)",
    "model": "correct the model name on the Model page (or LLM_MODEL)",
    "timeout": "check that the server is up and not overloaded; a slow server may need a "
               "larger LLM_TIMEOUT_S",
    "setup": SET_UP,
}
OTHER_FIX = "read the server's log; the Model page's Test connection shows its answer"


def model_fault() -> InstallationFault | None:
    """Why no model can answer now (as a fault to show admins), or None when one is set up."""
    try:
        config = default_config()
    except LLMConfigError as error:  # a stored key sealed under a secret key that is gone
        return InstallationFault("model", f"the model set-up cannot be read ({error})",
                                 "enter the API key again on the Model page")
    return config_fault(config)


def config_fault(config: ProviderConfig) -> InstallationFault | None:
    """What keeps `config` from working, judged without calling it."""
    from django.conf import settings

    provider = normalize_provider(config.provider)
    if provider in ("", "none"):
        return InstallationFault("model", "no model is set up", SET_UP)
    if provider not in PROVIDERS:
        return InstallationFault("model", f"the provider {provider!r} is unknown (known: "
                                 f"{', '.join(PROVIDERS)})", "choose a provider on the Model "
                                 "page, or correct LLM_PROVIDER")
    if settings.LLM_SYSTEM_MESSAGES not in system_role.MODES:
        return InstallationFault("model", f"LLM_SYSTEM_MESSAGES is "
                                 f"{settings.LLM_SYSTEM_MESSAGES[:40]!r}, which is none of "
                                 f"{', '.join(system_role.MODES)}",
                                 "set LLM_SYSTEM_MESSAGES to measure (or leave it out), keep or "
                                 "fold; see docs/llm.md, \"System messages\"")
    if provider == "scripted":
        if settings.LLM_SCRIPT and Path(settings.LLM_SCRIPT).is_file():
            return None
        return InstallationFault("model", "only the scripted provider (recorded replies) is "
                                 "configured, and it has no script", SET_UP)
    if provider == "llamacpp":
        return _local_fault(config.model)
    return _remote_fault(provider, config)


def _remote_fault(provider: str, config: ProviderConfig) -> InstallationFault | None:
    # A blank address means the vendor's hosted API, which is of no use without a key.
    if provider == "openai" and not config.base_url and not config.api_key:
        return InstallationFault("model", "the OpenAI-compatible provider has no server address",
                                 "set its base URL on the Model page (or LLM_BASE_URL)")
    if provider == "anthropic" and not config.api_key:
        return InstallationFault("model", "the Anthropic provider has no API key",
                                 "enter the key on the Model page (or LLM_API_KEY)")
    if not config.model:
        return InstallationFault("model", f"the {provider} provider has no model name",
                                 "enter the model name on the Model page (or LLM_MODEL)")
    return None


def _local_fault(model_path: str) -> InstallationFault | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return InstallationFault("model", "the local model runtime (llama-cpp-python) is not "
                                 "installed", "pick the local model on the Model page, which "
                                 "installs it, or run `pip install llama-cpp-python`")
    if not model_path or not Path(model_path).is_file():
        return InstallationFault("model", "the local model file is missing "
                                 f"({model_path or 'none'})", "download it on the Model page "
                                 "or with `python manage.py model_pull`")
    return None


# -- real calls ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProbeResult:
    """One real call to one model. `failed` names the part that failed: address, key, model,
    timeout, setup, busy, request or server; `problem` says it in plain words."""

    roles: tuple[str, ...]
    provider: str
    model: str
    where: str
    ok: bool
    reply: str = ""
    latency_ms: int = 0
    failed: str = ""
    problem: str = ""
    # Constrained replies (docs/llm.md): the form the server took, "fenced" when it refused
    # every one (`reply_form_detail` says what it said), "" when not checked.
    reply_form: str = ""
    reply_form_detail: str = ""
    # Whether the model reads system messages (autocoder.llm.system_role): "kept", "dropped",
    # "" when not checked or the server counts no tokens.
    system_messages: str = ""

    @property
    def described(self) -> str:
        return f"{self.provider} model {self.model or '(none)'} at {self.where}"

    @property
    def fix(self) -> str:
        return PROBE_FIXES.get(self.failed, OTHER_FIX) if not self.ok else ""


def model_probe(config: ProviderConfig, *, roles: tuple[str, ...] = ("analyst",),
                timeout_s: float = PROBE_TIMEOUT_S, reply_forms: bool = False) -> ProbeResult:
    """Ask `config`'s model for one word, once (no retries), within `timeout_s`; with
    `reply_forms`, then ask again held to a schema, to learn which constraint it takes."""
    config = dataclasses.replace(config, timeout_s=min(config.timeout_s, timeout_s),
                                 max_retries=0)
    where = _where(config)
    tried = ProbeResult(roles=roles, provider=config.provider, model=config.model, where=where,
                        ok=False)
    try:
        completion = build_provider(config).complete(
            PROBE_MESSAGES, role=roles[0], max_tokens=PROBE_MAX_TOKENS,
            timeout_s=config.timeout_s)
    except LLMError as error:
        failed, problem = explain_failure(error, config, where)
        result = dataclasses.replace(tried, failed=failed, problem=problem)
    else:
        result = dataclasses.replace(tried, ok=True, reply=completion.text.strip()[:200],
                                     latency_ms=completion.latency_ms)
        if reply_forms:
            form, detail = reply_form_probe(config)
            result = dataclasses.replace(result, reply_form=form, reply_form_detail=detail,
                                         system_messages=system_role_probe(config))
    reach_record_probe(config, result)  # what /healthz reports until the next call or probe
    return result


def model_probes(*, site: SiteModelConfig | None = None, load_local: bool = True,
                 reply_forms: bool = False) -> list[ProbeResult]:
    """One probe per distinct model the roles use (most set-ups: one). `site` tests values of
    the Model page before they are saved; `load_local=False` leaves local models (loading one
    takes a while and much memory) and the scripted provider to the offline check."""
    # Roles differ in more than their model (reply caps, timeouts); one call per model will do.
    by_model: dict[tuple[str, ...], tuple[ProviderConfig, list[str]]] = {}
    for role, config in site_role_configs(site=site).items():
        key = (config.provider, config.base_url, config.api_key, config.model)
        by_model.setdefault(key, (config, []))[1].append(role)
    skipped = ("llamacpp", "scripted") if not load_local else ()
    return [model_probe(config, roles=tuple(roles), reply_forms=reply_forms)
            for config, roles in by_model.values()
            if normalize_provider(config.provider) not in skipped]


def reply_form_probe(config: ProviderConfig) -> tuple[str, str]:
    """(form, detail): which constraint the model's server takes, remembered for the runs
    (autocoder.llm.structured); ("", why) when the question could not be asked."""
    provider = build_provider(config)

    def call(reply_format: ReplyFormat) -> Completion:
        return provider.complete(
            structured.with_hint(PROBE_MESSAGES, reply_format.schema), role="analyst",
            max_tokens=PROBE_FORM_MAX_TOKENS, timeout_s=config.timeout_s,
            reply_format=reply_format)

    try:
        return structured.probe(provider, call)
    except LLMError as error:
        return "", f"not checked: {error}"


def system_role_probe(config: ProviderConfig) -> str:
    """"kept" or "dropped": whether the model's server lets a system message reach it,
    remembered for the runs (autocoder.llm.system_role); "" when it could not be told."""
    provider = build_provider(config)
    if getattr(provider, "folds_system_messages", False):
        return system_role.DROPPED  # it saw so itself, and folds them (llamacpp.py)
    state = system_role.measured_now(provider)
    return state if state != system_role.UNSURE else ""


@dataclass(frozen=True)
class ConnectionTest:
    """What "Test connection" found: a fault that made calling pointless, or one result per
    distinct model."""

    fault: InstallationFault | None
    results: list[ProbeResult]

    @property
    def ok(self) -> bool:
        return self.fault is None and all(result.ok for result in self.results)


def model_connection_test(*, site: SiteModelConfig | None = None) -> ConnectionTest:
    """Call every model the roles use, with `site` (unsaved page values) or what is stored."""
    try:
        fault = config_fault(default_config(site=site))
    except LLMConfigError as error:
        fault = InstallationFault("model", str(error), "enter the API key again")
    if fault is not None:
        return ConnectionTest(fault, [])
    return ConnectionTest(None, model_probes(site=site, reply_forms=True))


def site_role_configs(*, site: SiteModelConfig | None = None) -> dict[str, ProviderConfig]:
    """Each role's configuration without a team's override: role_config's layers, with
    `site` (unsaved page values) in place of the stored page when given."""
    from django.conf import settings

    from autocoder.llm.config import role_config

    if site is None:
        return {role: role_config(role) for role in ROLES}
    return {role: layer(default_config(role, site=site),
                        settings.LLM_ROLE_OVERRIDES.get(role, {})) for role in ROLES}


def explain_failure(error: LLMError, config: ProviderConfig, where: str) -> tuple[str, str]:
    """(the part that failed, what happened in plain words) for a failed call."""
    if isinstance(error, LLMConnectionError):
        return "address", (f"The address {where} could not be reached: is the server running, "
                           "and is the address right?")
    if isinstance(error, LLMTimeout):
        return "timeout", f"{where} did not answer within {config.timeout_s:g} seconds."
    if isinstance(error, LLMAuthError):
        return "key", f"{where} refused the API key ({error})."
    if isinstance(error, LLMBadRequest) and _unknown_model(str(error)):
        return "model", (f"{where} does not know the model \u201c{config.model}\u201d ({error}). "
                         "Check its name; an OpenAI-compatible address usually ends in /v1.")
    if isinstance(error, LLMConfigError):
        return "setup", f"The set-up is incomplete: {error}."
    if isinstance(error, LLMRateLimited):
        return "busy", f"{where} is busy (rate limited): try again in a moment ({error})."
    if isinstance(error, LLMBadRequest):
        return "request", f"{where} refused the request: {error}."
    return "server", f"{where} failed: {error}."


def _unknown_model(message: str) -> bool:
    text = message.lower()
    return "http 404" in text or ("model" in text and any(
        words in text for words in ("not found", "does not exist", "unknown", "no such")))


def _where(config: ProviderConfig) -> str:
    provider = normalize_provider(config.provider)
    if provider == "llamacpp":
        return "this machine (local file)"
    if provider == "scripted":
        return "the script (recorded replies)"
    if config.base_url:
        return safe_url(config.base_url)
    return {"openai": "https://api.openai.com", "anthropic": "https://api.anthropic.com"
            }.get(provider, "the provider")


# -- the health check ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Health:
    ok: bool
    detail: str
    fix: str = ""


def model_health(*, live: bool = True) -> Health:
    """Whether the site's model works, for `doctor` (live: real calls) and /healthz (offline).

    Never "ok" for a set-up that cannot work: no model, a missing file, a refused key."""
    from django.conf import settings

    fault = model_fault()
    if fault is not None:
        return Health(False, fault.problem, fault.fix)
    config = default_config()
    if config.provider == "scripted":
        return Health(True, f"scripted provider replaying {settings.LLM_SCRIPT} (recorded "
                            "replies for tests and demos, not a model)")
    if config.provider == "llamacpp":
        return Health(True, f"{config.provider} model {config.model} at {_where(config)} is set "
                            "up (not called: `manage.py doctor` calls remote models)")
    if not live:
        return site_reach_health() or Health(
            True, f"{config.provider} model {config.model} at {_where(config)} is set up and no "
                  "failed call is known (not called here: `manage.py doctor` calls it)")
    return _probes_health(model_probes(load_local=False))


def model_set_by_environment() -> bool:
    """Whether the environment sets any part of the model (LLM_PROVIDER, LLM_BASE_URL,
    LLM_API_KEY, LLM_MODEL or a role's LLM_<FIELD>_<ROLE>), which no page has checked."""
    from django.conf import settings

    from autocoder.llm.env import ENV_SETTINGS

    return (any(getattr(settings, name) for name in ENV_SETTINGS.values())
            or any(field in ENV_SETTINGS for fields in settings.LLM_ROLE_OVERRIDES.values()
                   for field in fields))


def model_start_check() -> Health | None:
    """`up`'s check, once at start, of a model the environment sets: the Model page's check
    on saving (`model_probes`: one word per distinct remote model), whose outcome is kept as
    the page's is, so /healthz, the admins' banner and new runs (held) treat a model that does
    not answer alike wherever it was set up. None when there is nothing to call: no model set
    by the environment, only local or scripted ones, or a set-up that cannot work, which
    `model_fault` says without a call."""
    if not model_set_by_environment() or model_fault() is not None:
        return None
    results = model_probes(load_local=False)
    return _probes_health(results) if results else None


def _probes_health(results: list[ProbeResult]) -> Health:
    failed = [result for result in results if not result.ok]
    if not results:
        return Health(True, "every role uses a local model (checked without loading it)")
    if failed:
        return Health(False, " ".join(result.problem for result in failed), failed[0].fix)
    return Health(True, "; ".join(f"{result.described} answered in {result.latency_ms} ms"
                                  for result in results))


# -- a model that is set up but does not answer (docs/llm.md, "A model that does not answer") --

REACH = "model_reach"
RECHECK_TIMEOUT_S = 5.0  # the watchdog's re-check: short, it runs in the heartbeat thread
REACH_KEY = "autocoder:llm:unreachable:"
REACH_FIXES: dict[str, str] = {
    **PROBE_FIXES,
    "busy": "wait until the provider's limit resets, or raise it with the provider; held runs "
            "go on by themselves once the model answers",
    "server": "read the model server's log and restart it if needed; held runs go on by "
              "themselves once it answers",
}


def call_fault(error: LLMError, config: ProviderConfig | None) -> InstallationFault | None:
    """The installation's fault in a failed call (the model is unreachable, refuses the key,
    does not know the model, is rate limited or fails), or None for a failure of the request
    itself (a prompt too long, a bad input), which is the run's. Plain, stable words: fifty
    held runs make one notice per admin."""
    config = config or ProviderConfig(provider="")
    where = _where(config)
    failed = _reach_failure(error)
    if failed is None:
        return None
    problems = {
        "address": f"the model server at {where} could not be reached (is it running, and is "
                   "the address right?)",
        "timeout": f"the model at {where} did not answer in time",
        "key": f"the model server at {where} refused the API key",
        "model": f"the model server at {where} does not know the model "
                 f"\u201c{config.model}\u201d",
        "busy": f"the model server at {where} is rate limiting the portal (too many requests)",
        "server": f"the model server at {where} answered with a server error",
    }
    reach_record(config, problems[failed], REACH_FIXES[failed])
    return InstallationFault(REACH, problems[failed], REACH_FIXES[failed])


def _reach_failure(error: LLMError) -> str | None:
    """Which part failed, when it is the installation's. A model that went silent, or sent an
    error, after it had started answering stays the run's failure (docs/llm.md: a working
    server is never asked twice); a connection lost mid-reply is the server going away."""
    if isinstance(error, LLMConnectionError):
        return "address"
    if isinstance(error, LLMTimeout) and error.retryable:  # not even a first token
        return "timeout"
    if isinstance(error, LLMAuthError):
        return "key"
    if isinstance(error, LLMRateLimited):
        return "busy"
    if isinstance(error, LLMServerError) and error.retryable:
        return "server"
    if isinstance(error, LLMBadRequest) and _unknown_model(str(error)):
        return "model"
    return None


def model_reach_fault(*, team_id: int | None = None, timeout_s: float = RECHECK_TIMEOUT_S,
                      seen: dict[tuple[str, ...], ProbeResult] | None = None,
                      ) -> InstallationFault | None:
    """Whether the models `team_id`'s roles use (the site's without a team) answer now: the
    offline check, then one short real call per distinct remote model. What the watchdog asks
    before it lets runs held for the model go on; the result is kept for /healthz. `seen`
    shares the calls' results between the teams of one sweep (one call per model)."""
    from autocoder.llm.config import role_config

    fault = model_fault()
    if fault is not None:
        return fault
    by_model: dict[tuple[str, ...], tuple[ProviderConfig, list[str]]] = {}
    for role in ROLES:
        config = role_config(role, team_id=team_id)
        if normalize_provider(config.provider) in ("llamacpp", "scripted"):
            continue
        by_model.setdefault((config.provider, config.base_url, config.api_key, config.model),
                            (config, []))[1].append(role)
    seen = {} if seen is None else seen
    for model_key, (config, roles) in by_model.items():
        if model_key not in seen:
            seen[model_key] = model_probe(config, roles=tuple(roles), timeout_s=timeout_s)
        result = seen[model_key]
        if not result.ok:
            return InstallationFault(REACH, result.problem.rstrip("."), result.fix)
    return None


# What /healthz knows between checks: the last failure of each model set-up (keyed by a
# keyed hash of its provider, address, key and model), kept in Redis until a call or a probe
# of the same set-up works. A new set-up starts clean.


def _fingerprint(config: ProviderConfig) -> str:
    from django.utils.crypto import salted_hmac

    value = "\x00".join((normalize_provider(config.provider), config.base_url, config.api_key,
                         config.model))
    return salted_hmac("autocoder.llm.reach", value).hexdigest()[:24]


def _redis() -> Any:
    import redis
    from django.conf import settings

    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1)


def reach_record(config: ProviderConfig, problem: str, fix: str) -> None:
    """Remember that `config`'s model does not answer (best effort: Redis may be down)."""
    import json
    import logging

    from django.utils import timezone

    value = json.dumps({"problem": problem, "fix": fix, "at": timezone.now().isoformat()})
    try:
        _redis().set(REACH_KEY + _fingerprint(config), value)
    except Exception:  # health is reported elsewhere; a call never fails for this
        logging.getLogger(__name__).warning("could not record the model's state", exc_info=True)


def reach_clear(config: ProviderConfig) -> None:
    import logging

    try:
        _redis().delete(REACH_KEY + _fingerprint(config))
    except Exception:
        logging.getLogger(__name__).warning("could not clear the model's state", exc_info=True)


def reach_record_probe(config: ProviderConfig, result: ProbeResult) -> None:
    if result.ok:
        reach_clear(config)
    elif result.failed not in ("setup",):
        reach_record(config, result.problem.rstrip("."), result.fix)


def reach_recorded(config: ProviderConfig) -> dict[str, str] | None:
    """The last failure recorded for `config`, or None (also when Redis cannot be read)."""
    import json

    try:
        value = _redis().get(REACH_KEY + _fingerprint(config))
    except Exception:
        return None
    return json.loads(value) if value else None


def site_reach_fault() -> InstallationFault | None:
    """A failure recorded for a model the site's roles use (None: none known); no call."""
    found = _recorded(site_role_configs().values())
    if found is None:
        return None
    since = found["at"][:19].replace("T", " ")
    return InstallationFault(REACH, f"the model is set up but does not answer: "
                             f"{found['problem']} (since {since} UTC)", found["fix"])


def team_reach_fault(*, team_id: int) -> InstallationFault | None:
    """A failure recorded for a model `team_id`'s roles use (its overrides included), without
    calling it: a new run is held for such a model at once, in the words a run that met it is
    held with (one notice for both), and goes on with the held runs once a real call works
    (docs/llm.md, "A model that does not answer")."""
    from autocoder.llm.config import role_config

    try:
        configs = [role_config(role, team_id=team_id) for role in ROLES]
    except LLMConfigError:
        return None  # model_fault says so; the run's own call would too
    found = _recorded(configs)
    return InstallationFault(REACH, found["problem"], found["fix"]) if found else None


def _recorded(configs: Iterable[ProviderConfig]) -> dict[str, str] | None:
    """The failure recorded for the first of `configs`' remote models that has one."""
    for config in {(c.provider, c.base_url, c.api_key, c.model): c for c in configs}.values():
        if normalize_provider(config.provider) in ("llamacpp", "scripted"):
            continue
        found = reach_recorded(config)
        if found is not None:
            return found
    return None


def site_reach_health() -> Health | None:
    fault = site_reach_fault()
    if fault is None:
        return None
    return Health(False, f"{fault.problem}; runs that need it wait (held) and go on by "
                         "themselves once it answers", fault.fix)


def model_known_fault() -> InstallationFault | None:
    """Why no model works, as far as is known without calling one: no set-up, or a set-up
    whose last call or check failed (what the admins' banner shows)."""
    return model_fault() or site_reach_fault()


def model_reach_recheck() -> list[int]:
    """The watchdog's re-check of a site model known not to answer (so /healthz turns ok
    again by itself); nothing is called while none is known to fail. Returns nothing moved."""
    if site_reach_health() is not None:
        model_reach_fault()
    return []
