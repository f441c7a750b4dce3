"""Model choices stored in the database: the site's (the Model page) and per team (the admin)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import PurePath
from typing import ClassVar
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models

from autocoder.llm.types import ROLES, LLMConfigError, safe_url
from autocoder.sealing import UnsealError, seal, sealed_column_register, unseal


def validate_base_url(value: str) -> None:
    # Not URLField: compose service names such as http://ollama:11434 have no dot in the host.
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError("Enter an http:// or https:// URL, e.g. http://ollama:11434/v1.")


class SealedApiKey:
    """The `api_key` of a row that stores it sealed in `api_key_sealed` (autocoder/sealing):
    readable only by the portal, shown to people only as its status."""

    api_key_sealed: str
    # What a person reads when the key cannot be unsealed: where to enter it again.
    KEY_HINT: ClassVar[str] = "The stored API key of {owner} cannot be read ({error})"

    @property
    def api_key(self) -> str:
        try:
            return unseal(self.api_key_sealed)
        except UnsealError as exc:
            raise LLMConfigError(self.KEY_HINT.format(owner=self, error=exc) + ", or put the "
                                 "previous key in SECRET_KEY_FALLBACKS.") from exc

    @api_key.setter
    def api_key(self, value: str) -> None:
        self.api_key_sealed = seal(value)

    @property
    def api_key_status(self) -> str:
        if not self.api_key_sealed:
            return "not set"
        try:
            unseal(self.api_key_sealed)
        except UnsealError:
            return "unreadable: enter it again"
        return "set"


class TeamModelOverride(SealedApiKey, models.Model):
    """One team's model for one role; blank fields keep what the environment says."""

    class Provider(models.TextChoices):
        OPENAI = "openai", "OpenAI-compatible (OpenAI, Ollama, vLLM, llama.cpp, LM Studio)"
        ANTHROPIC = "anthropic", "Anthropic"
        LLAMACPP = "llamacpp", "llama.cpp in the worker (GGUF file)"

    team = models.ForeignKey("teams.Team", on_delete=models.CASCADE,
                             related_name="model_overrides")
    role = models.CharField(max_length=16, choices=[(role, role.title()) for role in ROLES])
    provider = models.CharField(max_length=16, choices=Provider.choices, blank=True,
                                help_text="Blank: the provider configured for this role.")
    model = models.CharField(max_length=200, blank=True,
                             help_text="Model name, or the .gguf path for llama.cpp. "
                                       "Blank: the model configured for this role.")
    base_url = models.CharField(max_length=500, blank=True, validators=[validate_base_url],
                                verbose_name="base URL",
                                help_text="Blank: the endpoint configured for this role.")
    # Write-only in the admin, never logged, stored sealed (autocoder.sealing); read and set
    # through the `api_key` property.
    api_key_sealed = models.TextField(blank=True, verbose_name="API key (sealed)")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["team", "role"], name="unique_team_model_override"),
        ]
        ordering = ["team", "role"]
        verbose_name = "team model override"

    def __str__(self) -> str:
        return f"{self.team} / {self.role}"

    def __repr__(self) -> str:
        return (f"<TeamModelOverride team={self.team_id} role={self.role} "
                f"provider={self.provider!r} model={self.model!r} "
                f"base_url={safe_url(self.base_url)!r} api_key={self.api_key_status}>")

    KEY_HINT = "The stored API key of {owner} cannot be read ({error}): enter it again in the admin"

    def as_layer(self) -> dict[str, object]:
        """The fields this row sets, in the shape role_config layers over the environment."""
        fields = {"provider": self.provider, "model": self.model, "base_url": self.base_url,
                  "api_key": self.api_key}
        return {name: value for name, value in fields.items() if value}


class SiteModelConfig(SealedApiKey, models.Model):
    """The model the whole site uses, set on the Model page (/settings/model/). One row.

    A value set in the environment (LLM_PROVIDER, LLM_BASE_URL, ...) wins over the row; the
    address, key and model names here belong to `provider` and are not used while the
    environment names another provider (see autocoder.llm.config.site_layer).
    """

    SINGLETON_ID = 1

    class Provider(models.TextChoices):
        OPENAI = "openai", "OpenAI-compatible server (OpenAI, Ollama, vLLM, llama.cpp server, " \
                           "LM Studio)"
        ANTHROPIC = "anthropic", "Anthropic"
        LLAMACPP = "llamacpp", "Local model (a GGUF file run inside the workers)"

    provider = models.CharField(max_length=16, choices=Provider.choices, blank=True,
                                help_text="Blank: no model is set up.")
    base_url = models.CharField(max_length=500, blank=True, validators=[validate_base_url],
                                verbose_name="base URL")
    # Write-only on the page, never logged, stored sealed (autocoder.sealing).
    api_key_sealed = models.TextField(blank=True, verbose_name="API key (sealed)")
    model = models.CharField(max_length=500, blank=True,
                             help_text="Model name, or the .gguf path of a local model.")
    # {role: model name} for the roles that use another model than `model`.
    role_models = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")

    class Meta:
        verbose_name = "site model set-up"

    def __str__(self) -> str:
        return f"site model: {self.provider or 'none'} {self.model}".strip()

    def __repr__(self) -> str:
        return (f"<SiteModelConfig provider={self.provider!r} model={self.model!r} "
                f"base_url={safe_url(self.base_url)!r} api_key={self.api_key_status}>")

    def clean(self) -> None:
        unknown = set(self.role_models) - set(ROLES)
        if unknown:
            raise ValidationError({"role_models": f"unknown roles: {', '.join(sorted(unknown))}"})
        # The workers load the file by this path, whatever their working directory.
        if self.provider == self.Provider.LLAMACPP and self.model and \
                not PurePath(self.model).is_absolute():
            raise ValidationError({"model": "Enter the absolute path of the .gguf file, e.g. "
                                            "/srv/models/qwen2.5-coder-7b.gguf."})

    KEY_HINT = ("The stored API key of the site's model cannot be read ({error}): enter it again "
                "on the Model page")

    def model_for(self, role: str | None) -> str:
        return (self.role_models.get(role, "") if role else "") or self.model


# `manage.py secrets_reseal` seals these again under a new SECRET_KEY (autocoder/resealing.py).
sealed_column_register("llm.TeamModelOverride", "api_key_sealed")
sealed_column_register("llm.SiteModelConfig", "api_key_sealed")


class ModelPrice(models.Model):
    """What a model costs, per million tokens, in the site's currency (COST_CURRENCY). Set by
    site admins on the Prices page (/settings/model/prices/) or in the admin.

    A call is priced when it is made (runs.llm_calls): a new price counts from the next call,
    and a call to a model without a row keeps its tokens only ("no price set")."""

    model = models.CharField(max_length=200, unique=True,
                             help_text="The model name exactly as calls report it, e.g. "
                                       "gpt-4o-mini or claude-sonnet-4-5.")
    prompt_per_million = models.DecimalField(
        max_digits=12, decimal_places=4, verbose_name="prompt price per million tokens",
        validators=[MinValueValidator(0)])
    completion_per_million = models.DecimalField(
        max_digits=12, decimal_places=4, verbose_name="completion price per million tokens",
        validators=[MinValueValidator(0)])
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["model"]
        verbose_name = "model price"

    def __str__(self) -> str:
        return f"{self.model}: {self.prompt_per_million} / {self.completion_per_million}"

    def cost(self, *, prompt_tokens: int, completion_tokens: int) -> Decimal:
        return (self.prompt_per_million * prompt_tokens
                + self.completion_per_million * completion_tokens) / MILLION


MILLION = Decimal(1_000_000)


class ModelReplyForm(models.Model):
    """How one model's server takes a reply held to a schema (docs/llm.md, "Constrained
    replies"): the form it accepted, or "fenced" when it refused every form the provider has,
    with what it said; and whether it reads system messages ("System messages"). Written on
    the first call that settles each (autocoder.llm.structured, autocoder.llm.system_role) and
    by the Model page's "Test connection"; read before every role call."""

    provider = models.CharField(max_length=16)
    base_url = models.CharField(max_length=500, blank=True)
    model = models.CharField(max_length=200)
    form = models.CharField(max_length=16)
    detail = models.TextField(blank=True, help_text="What the server said when it refused.")
    # Whether the model reads system messages ("kept", "dropped", "" when not measured); see
    # autocoder/llm/system_role.py.
    system_messages = models.CharField(max_length=8, blank=True, default="")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["provider", "base_url", "model"],
                                               name="unique_model_reply_form")]
        verbose_name = "model reply form"

    def __str__(self) -> str:
        return f"{self.provider} {self.model}: {self.form}"


class ModelSpeed(models.Model):
    """How fast one model writes, measured on its replies (docs/llm.md, "How fast the model
    writes"): tokens a second over a whole reply, the time it took to read the prompt
    included, averaged over its latest replies. The Model page shows it; the interview waits
    for the analyst as long as it says a reply takes (projects/services/interviews.py)."""

    provider = models.CharField(max_length=16)
    base_url = models.CharField(max_length=500, blank=True)
    model = models.CharField(max_length=200)
    tokens_per_s = models.FloatField()
    replies = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["provider", "base_url", "model"],
                                               name="unique_model_speed")]
        verbose_name = "model speed"

    def __str__(self) -> str:
        return f"{self.provider} {self.model}: {self.tokens_per_s:.1f} tokens/s"
