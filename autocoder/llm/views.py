"""The Model page (/settings/model/): the site's model set-up, for site admins (staff) only.

Everyone else gets a 404, as for any page of the portal they may not see.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.template import TemplateDoesNotExist
from django.template.loader import get_template
from django.views.decorators.http import require_POST

from autocoder.llm import pricing, readiness, selectors, services
from autocoder.llm.forms import ModelPriceForm, SiteModelForm, SiteModelSaveForm
from autocoder.llm.types import LLMConfigError, ProviderConfig
from autocoder.money import currency
from teams.http import AuthenticatedHttpRequest

PAGE = "llm/model_settings.html"
PRICES_PAGE = "llm/model_prices.html"
# Provided by the local-model download (autocoder/llm/local); until it exists the page shows
# how to use a local file by hand.
LOCAL_MODEL_PARTIAL = "llm/_local_model.html"


def require_site_admin(user: User | AnonymousUser) -> None:
    """Site admins only; for anyone else the page does not exist."""
    if not (user.is_authenticated and (user.is_staff or user.is_superuser)):
        raise Http404("No such page")


@login_required
def model_settings(request: AuthenticatedHttpRequest) -> HttpResponse:
    require_site_admin(request.user)
    site, env = selectors.site_model_config_get(), selectors.site_model_env_values()
    form = SiteModelSaveForm(request.POST or None, site=site, env=env)
    if request.method == "POST" and form.is_valid():
        saved = services.site_model_config_set(actor=request.user, **form.service_kwargs())
        messages.success(request, _saved_message(saved))
        for failed in form.failed_probes:  # saved anyway
            messages.warning(request, f"Saved anyway: {failed.problem} Runs wait (held) until "
                                      "the model answers; /healthz and doctor say so.")
        if form.key_withheld_from:
            messages.warning(request, f"Saved without the API key: the saved key was only sent "
                                      f"to {form.key_withheld_from}, so it was removed. Type "
                                      "the key to use this address with it.")
        return redirect("llm:model_settings")
    return render(request, PAGE, _context(form))


@login_required
@require_POST
def model_test(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Test what the form holds, before (or without) saving it; nothing is stored."""
    require_site_admin(request.user)
    site, env = selectors.site_model_config_get(), selectors.site_model_env_values()
    form = SiteModelForm(request.POST, site=site, env=env)
    context = _context(form)
    if form.is_valid():
        context["test"] = readiness.model_connection_test(site=form.candidate())
    if request.htmx:
        return render(request, f"{PAGE}#test_result", context)
    return render(request, PAGE, context)


@login_required
def model_prices(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The price table: what each model costs per million tokens, in the site's currency."""
    require_site_admin(request.user)
    form = ModelPriceForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            price = services.model_price_set(actor=request.user, **form.cleaned_data)
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            messages.success(request, f"Saved the price of {price.model}; it counts from the "
                                      "next call.")
            return redirect("llm:model_prices")
    return render(request, PRICES_PAGE, {"form": form, "prices": selectors.model_price_list(),
                                         "currency": currency()})


@login_required
@require_POST
def model_price_delete(request: AuthenticatedHttpRequest) -> HttpResponse:
    require_site_admin(request.user)
    model = request.POST.get("model", "")
    if services.model_price_delete(actor=request.user, model=model):
        messages.success(request, f"Removed the price of {model}: its next calls show "
                                  f"tokens only ({pricing.NO_PRICE}).")
    return redirect("llm:model_prices")


def _saved_message(saved: services.SiteModelSaved) -> str:
    if not saved.changed:
        return "Nothing changed."
    text = "Saved."
    if saved.released:
        count = len(saved.released)
        text += (f" {count} waiting request{'s' if count != 1 else ''} started with the new "
                 "model.")
    return text


def _context(form: SiteModelForm) -> dict[str, object]:
    partial = _local_model_partial()
    return {"form": form, "fault": readiness.model_known_fault(), "roles": _role_models(),
            "stale_provider": _stale_provider(form),
            "history": selectors.site_model_history(),
            "local_model_partial": partial, **(_local_model_context() if partial else {})}


def _stale_provider(form: SiteModelForm) -> str:
    """The stored provider when the environment names another (its values are then unused)."""
    env = form.env.get("provider")
    stored = form.site.provider
    return stored if env is not None and stored and stored != env.value else ""


def _role_models() -> list[dict[str, str]]:
    """What each role uses now, whichever source it comes from."""
    try:
        configs = readiness.site_role_configs()
    except LLMConfigError:
        return []  # the status above already says the set-up cannot be read
    if not any(config.provider for config in configs.values()):
        return []  # "no model is set up" says it all
    return [{"role": role, "provider": config.provider or "none",
             "model": config.model or "(none)", "speed": _speed_words(config)}
            for role, config in configs.items()]


def _speed_words(config: ProviderConfig) -> str:
    """The model's measured speed in words ("" before its first reply long enough to tell)."""
    from autocoder.llm.speed import speed_of

    speed = speed_of(config) if config.provider not in ("", "scripted") else None
    return f"writes about {speed:.0f} tokens a second" if speed else ""


def _local_model_context() -> Mapping[str, object]:
    """The local-model panel's own context, so it renders with the page (without it, the
    panel loads itself through htmx)."""
    try:
        from autocoder.llm.local.selectors import local_model_context
    except ImportError:
        return {}
    return local_model_context()


def _local_model_partial() -> str:
    try:
        get_template(LOCAL_MODEL_PARTIAL)
    except TemplateDoesNotExist:
        return ""
    return LOCAL_MODEL_PARTIAL
