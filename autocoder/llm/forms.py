"""The Model page's form: the site's model set-up, with the API key write-only.

A field the environment sets is shown read-only (the environment wins); the form never
changes what it stores for such a field.

A stored key goes only to the server it was saved for: when the form names another server and
no key is typed, "Test connection" calls it without a key, and saving drops the stored key
(`key_withheld_from` says which server the key was for, and the page says so).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from autocoder.llm.config import REMOTE_PROVIDER_URLS, default_config, key_destination
from autocoder.llm.env import normalize_provider
from autocoder.llm.models import SiteModelConfig, validate_base_url
from autocoder.llm.readiness import ProbeResult, config_fault, model_probes
from autocoder.llm.selectors import EnvValue
from autocoder.llm.services import KEEP_KEY
from autocoder.llm.types import ROLES, LLMConfigError, safe_url

NO_MODEL = ""
PROVIDER_CHOICES = [(NO_MODEL, "No model (requests wait in the queue)"),
                    *SiteModelConfig.Provider.choices]
ROLE_HELP = {
    "analyst": "asks the requester's clarifying questions",
    "architect": "plans the plugin",
    "implementer": "writes the code (the biggest job)",
    "tester": "writes the tests",
    "reviewer": "reviews the result",
    "reflector": "works out what went wrong after a failed attempt",
}


def role_field(role: str) -> str:
    return f"model_{role}"


class SiteModelForm(forms.Form):
    provider = forms.ChoiceField(label="Provider", choices=PROVIDER_CHOICES, required=False,
                                 widget=forms.RadioSelect)
    base_url = forms.CharField(
        label="Base URL", required=False, max_length=500, validators=[validate_base_url],
        help_text="The server's address, e.g. http://localhost:11434/v1 for Ollama. Leave "
                  "empty for OpenAI's or Anthropic's own service.",
        widget=forms.URLInput(attrs={"inputmode": "url", "autocomplete": "off"}))
    # Not "api_key": a blank entry means "keep the stored key", never "store a blank one".
    new_api_key = forms.CharField(
        label="API key", required=False, strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Write-only: a stored key is never shown again. Leave empty to keep it "
                  "(for the address it was saved with only).")
    clear_api_key = forms.BooleanField(label="Remove the stored API key", required=False)
    model = forms.CharField(
        label="Model", required=False, max_length=500,
        help_text="The model's name on the server (e.g. qwen2.5-coder:7b), or the absolute "
                  "path of the .gguf file for a local model. Every role uses it unless it has "
                  "its own below.")

    def __init__(self, *args: Any, site: SiteModelConfig | None,
                 env: dict[str, EnvValue], **kwargs: Any) -> None:
        self.site = site or SiteModelConfig(pk=SiteModelConfig.SINGLETON_ID)
        self.env = env
        kwargs["initial"] = self._initial()
        super().__init__(*args, **kwargs)
        for role in ROLES:
            self.fields[role_field(role)] = forms.CharField(
                label=role.title(), required=False, max_length=500,
                help_text=f"The {role} {ROLE_HELP[role]}. Empty: the model above.")
        self._mark_environment_fields()
        for name, field in self.fields.items():
            if field.help_text:  # the template puts it under the field with this id
                field.widget.attrs["aria-describedby"] = f"id_{name}-help"

    def _initial(self) -> dict[str, Any]:
        initial: dict[str, Any] = {"provider": self.site.provider, "base_url": self.site.base_url,
                                   "model": self.site.model}
        initial.update({role_field(role): name for role, name in self.site.role_models.items()})
        return initial

    def _mark_environment_fields(self) -> None:
        """Fields the environment sets are read-only and show its value (never a key)."""
        for name, found in self.env.items():
            field = self.fields.get("new_api_key" if name == "api_key" else name)
            if field is None:
                continue
            field.disabled = True
            field.help_text = f"Set by {found.variable} in the environment, which wins over " \
                              "this page."
            if name != "api_key":
                self.initial[name] = found.value
        if "api_key" in self.env:
            self.fields["clear_api_key"].disabled = True

    def env_field(self, name: str) -> EnvValue | None:
        return self.env.get(name)

    def role_fields(self) -> list[forms.BoundField]:
        return [self[role_field(role)] for role in ROLES]

    @property
    def has_role_models(self) -> bool:
        """Whether any role has its own model (entered or stored): the section starts open."""
        return any(field.value() for field in self.role_fields())

    @property
    def everything_from_environment(self) -> bool:
        """The environment's scripted provider ignores everything the page could set."""
        return self.env.get("provider", EnvValue("", "")).value == "scripted"

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("new_api_key") and cleaned.get("clear_api_key"):
            raise forms.ValidationError("Either enter a new API key or remove it, not both.")
        return cleaned

    # -- what the form means -------------------------------------------------------------------

    def _value(self, name: str, stored: str) -> str:
        # A read-only field keeps what is stored: the environment's value is shown, not saved.
        if self.fields[name].disabled:
            return stored
        return str(self.cleaned_data.get(name) or "").strip()

    def _provider(self) -> str:
        env = self.env.get("provider")
        if env is not None:
            # Values saved under the environment's provider belong to it (see site_layer).
            known = {value for value, _ in SiteModelConfig.Provider.choices}
            return env.value if env.value in known else self.site.provider
        return str(self.cleaned_data.get("provider") or "")

    def _api_key(self) -> str | None:
        if self.fields["new_api_key"].disabled:
            return KEEP_KEY
        if self.cleaned_data.get("clear_api_key") or self.key_withheld_from:
            return ""
        return self.cleaned_data.get("new_api_key") or KEEP_KEY

    @property
    def key_withheld_from(self) -> str:
        """Where the stored key was saved for, when the form would send it to another server
        (no key typed): then it is neither sent (test) nor kept (save). "" otherwise."""
        if not self._stored_key_would_move():
            return ""
        return (safe_url(self.site.base_url)
                or REMOTE_PROVIDER_URLS.get(normalize_provider(self.site.provider), "")
                or "the address it was saved with")

    def _stored_key_would_move(self) -> bool:
        cleaned = getattr(self, "cleaned_data", None)
        if (cleaned is None or "base_url" not in cleaned or not self.site.api_key_sealed
                or self.fields["new_api_key"].disabled
                or cleaned.get("new_api_key") or cleaned.get("clear_api_key")):
            return False
        provider = self._provider()
        if normalize_provider(provider) not in REMOTE_PROVIDER_URLS:
            return False  # a local model sends no key anywhere: it stays for a switch back
        return key_destination(provider, self._value("base_url", self.site.base_url)) != \
            key_destination(self.site.provider, self.site.base_url)

    def service_kwargs(self) -> dict[str, Any]:
        """The arguments of site_model_config_set for what was entered."""
        return {
            "provider": self._provider(),
            "base_url": self._value("base_url", self.site.base_url),
            "model": self._value("model", self.site.model),
            "role_models": {role: self._value(role_field(role),
                                              self.site.role_models.get(role, ""))
                            for role in ROLES},
            "api_key": self._api_key(),
        }

    def candidate(self) -> SiteModelConfig:
        """An unsaved SiteModelConfig with what was entered (the stored key unless replaced or
        withheld), for testing a set-up before saving it."""
        values = self.service_kwargs()
        candidate = SiteModelConfig(
            pk=SiteModelConfig.SINGLETON_ID, provider=values["provider"],
            base_url=values["base_url"], model=values["model"],
            role_models={role: name for role, name in values["role_models"].items() if name},
            api_key_sealed=self.site.api_key_sealed)
        if values["api_key"] is not KEEP_KEY:
            candidate.api_key = values["api_key"]
        return candidate


class SiteModelSaveForm(SiteModelForm):
    """Saving also refuses a remote set-up that cannot work (no address, key or model name);
    a local model may be chosen before its file has finished downloading.

    A remote set-up is called before it is saved (one short call per distinct model, as Test
    connection does): one that does not answer is not saved, the page says what is wrong, and
    the set-up in use stays, unless the admin insists with "Save anyway"."""

    save_anyway = forms.BooleanField(
        label="Save anyway", required=False,
        help_text="Store the set-up even though its model did not answer; runs then wait "
                  "(held) until it answers.")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.failed_probes: list[ProbeResult] = []

    @property
    def offer_save_anyway(self) -> bool:
        return bool(self.failed_probes) and not self.cleaned_data.get("save_anyway")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if self.errors:
            return cleaned
        candidate = self.candidate()
        try:
            candidate.full_clean(validate_unique=False)  # an unsaved copy of the one row
        except ValidationError as error:
            for name, messages in error.message_dict.items():
                self.add_error(name if name in self.fields else None, messages)
            return cleaned
        if self._provider() in (NO_MODEL, SiteModelConfig.Provider.LLAMACPP):
            return cleaned
        try:
            fault = config_fault(default_config(site=candidate))
        except LLMConfigError as error:  # the stored key cannot be unsealed
            raise forms.ValidationError(str(error)) from None
        if fault is not None:
            raise forms.ValidationError(f"This set-up cannot work: {fault.problem}. "
                                        f"To fix it, {fault.fix}.")
        self._check_connection(candidate, insist=bool(cleaned.get("save_anyway")))
        return cleaned

    def _check_connection(self, candidate: SiteModelConfig, *, insist: bool) -> None:
        """Call the set-up's models; refuse one that does not answer unless `insist`."""
        self.failed_probes = [result for result in model_probes(site=candidate,
                                                                load_local=False)
                              if not result.ok]
        if not self.failed_probes or insist:
            return
        problems = " ".join(result.problem for result in self.failed_probes)
        raise forms.ValidationError(
            f"Not saved: {problems} To fix it, {self.failed_probes[0].fix}. The set-up in use "
            "stays as it was. To store this one all the same, press “Save anyway”: "
            "runs then wait (held) until its model answers.")


class ModelPriceForm(forms.Form):
    """One row of the Prices page: a model's prompt and completion price per million tokens."""

    model = forms.CharField(max_length=200, strip=True,
                            help_text="The model name exactly as the calls report it (the run "
                                      "page's model calls show it), e.g. gpt-4o-mini.")
    prompt_per_million = forms.DecimalField(min_value=0, max_digits=12, decimal_places=4,
                                            label="Prompt, per million tokens")
    completion_per_million = forms.DecimalField(min_value=0, max_digits=12, decimal_places=4,
                                                label="Completion, per million tokens")
