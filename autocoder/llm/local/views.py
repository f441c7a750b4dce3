"""Staff-only pages of the local model: the catalogue, downloads, the runtime, the choice.

Everyone else gets 404 (the page does not exist for them). Every action is a plain POST form
that htmx enhances: with htmx the live part of the panel comes back, without it a redirect.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from autocoder.llm.local import choice, selectors, services
from autocoder.llm.local.catalogue import CatalogueModel, catalogue_get
from autocoder.llm.local.files import ModelFiles
from teams.http import AuthenticatedHttpRequest

PARTIAL = "llm/_local_model.html"
PARTS = ("live", "panel")


def _staff_or_404(request: AuthenticatedHttpRequest) -> None:
    if not request.user.is_staff:
        raise Http404("No such page")


def _model_or_404(slug: str) -> CatalogueModel:
    model = catalogue_get(slug)
    if model is None:
        raise Http404("No such model")
    return model


def _context(request: AuthenticatedHttpRequest) -> selectors.LocalContext:
    context = selectors.local_model_context()
    context["local"]["return_to"] = _return_to(request)
    return context


def _return_to(request: AuthenticatedHttpRequest) -> str:
    """The page the panel is shown on: where a form without htmx comes back to."""
    if request.htmx and request.htmx.current_url:
        parts = urlsplit(request.htmx.current_url)
        return parts.path + (f"?{parts.query}" if parts.query else "")
    return request.get_full_path()


@login_required
@require_GET
def local_models_page(request: AuthenticatedHttpRequest) -> HttpResponse:
    _staff_or_404(request)
    return render(request, "llm/local_models.html", _context(request))


@login_required
@require_GET
def local_models_status(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The live part (or, with ?part=panel, the whole panel) for htmx to swap in."""
    _staff_or_404(request)
    part = request.GET.get("part") if request.GET.get("part") in PARTS else "live"
    return render(request, f"{PARTIAL}#{part}", _context(request))


@login_required
@require_POST
def local_model_download(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    _staff_or_404(request)
    services.local_model_download_request(model=_model_or_404(slug), user=request.user)
    return _after_post(request)


@login_required
@require_POST
def local_model_use(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    _staff_or_404(request)
    files = ModelFiles.for_name(_model_or_404(slug).file_name)
    if not files.target.is_file():
        raise Http404("This model is not downloaded")
    choice.local_model_choose(path=files.target, user=request.user)
    return _after_post(request)


@login_required
@require_POST
def local_runtime_install(request: AuthenticatedHttpRequest) -> HttpResponse:
    _staff_or_404(request)
    services.local_runtime_install_request(user=request.user)
    return _after_post(request)


def _after_post(request: AuthenticatedHttpRequest) -> HttpResponse:
    if request.htmx:
        return render(request, f"{PARTIAL}#live", _context(request))
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                           require_https=request.is_secure()):
        target = reverse("local_models:page")
    return HttpResponseRedirect(target, status=303)
