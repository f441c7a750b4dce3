"""Portal pages of the marketplace: catalogue, plugin and version pages, "try it", reviews,
uploads, publishing a run, the publish gate for uploads, yanks, settings and API tokens."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from marketplace.build import ignored_inputs
from marketplace.forms import (
    DecisionForm,
    PluginSettingsForm,
    PublishRunForm,
    ReviewForm,
    TokenForm,
    TryForm,
    UploadForm,
    YankForm,
)
from marketplace.install_commands import index_url_with_token, pip_command
from marketplace.models import Plugin, PluginVersion
from marketplace.proposals import PublishState, publish_state
from marketplace.selectors.catalogue import SORTS, catalogue_facets, catalogue_search, clean_params
from marketplace.selectors.checking import check_progress
from marketplace.selectors.gate import pending_versions_for, version_gate
from marketplace.selectors.network import network_summary
from marketplace.selectors.reviews import (
    plugin_reviews,
    publisher_reviews,
    rates_as_publisher,
    review_of,
)
from marketplace.selectors.tokens import api_tokens_of
from marketplace.selectors.trying import try_request_of
from marketplace.selectors.versions import (
    plugin_version_for_viewer,
    plugin_versions,
    published_version_of_run,
    waiting_version_of_run,
)
from marketplace.selectors.visibility import Viewer, plugin_for_viewer, request_viewer
from marketplace.served import served_files_of_version
from marketplace.services.gate import DecisionConflict, plugin_version_decide
from marketplace.services.listing import plugin_settings_update
from marketplace.services.publishing import plugin_version_publish
from marketplace.services.reviews import review_delete, review_upsert
from marketplace.services.tokens import api_token_create, api_token_revoke
from marketplace.services.trying import (
    TryRateLimited,
    plugin_try_request,
    try_hosts,
    try_send_terms,
)
from marketplace.services.uploads import plugin_upload_store
from marketplace.services.yanking import plugin_version_unyank, plugin_version_yank
from marketplace.try_input import try_commands
from marketplace.types import StoredCommand
from marketplace.validation import PackageError
from projects.permissions import get_run_for_member
from teams.http import AuthenticatedHttpRequest
from teams.selectors import teams_for_user


def _plugin_or_404(request: AuthenticatedHttpRequest, name: str) -> tuple[Plugin, Viewer]:
    viewer = request_viewer(request)
    plugin = plugin_for_viewer(viewer, name)
    if plugin is None:
        raise Http404("No such plugin")
    return plugin, viewer


def _version_or_404(plugin: Plugin, viewer: Viewer, version: str) -> PluginVersion:
    found = plugin_version_for_viewer(plugin, viewer, version)
    if found is None:
        raise Http404("No such version")
    return found


def _render(request: AuthenticatedHttpRequest, template: str, context: dict[str, object],
            partial: str = "") -> HttpResponse:
    if partial and getattr(request, "htmx", False):
        return render(request, f"{template}#{partial}", context)
    return render(request, template, context)


@login_required
def catalogue(request: AuthenticatedHttpRequest) -> HttpResponse:
    viewer = request_viewer(request)
    params = clean_params(**{key: request.GET.get(key, "") for key in
                                       ("q", "category", "tag", "sort", "page")})
    page = catalogue_search(viewer=viewer, params=params)
    context = {"page": page, "params": params, "sorts": SORTS,
               "categories": Plugin.Category.choices,
               "facets": catalogue_facets(viewer)}
    return _render(request, "marketplace/catalogue.html", context, "results")


@login_required
def plugin_detail(request: AuthenticatedHttpRequest, name: str) -> HttpResponse:
    plugin, viewer = _plugin_or_404(request, name)
    if plugin.normalized_name != name:
        return redirect("marketplace:plugin", name=plugin.normalized_name)
    versions = plugin_versions(plugin, viewer)
    shown = plugin.latest_version or next(iter(versions), None)
    return render(request, "marketplace/plugin_detail.html",
                  _plugin_context(request, plugin, viewer, versions, shown))


@login_required
def version_detail(request: AuthenticatedHttpRequest, name: str, version: str) -> HttpResponse:
    plugin, viewer = _plugin_or_404(request, name)
    versions = plugin_versions(plugin, viewer)
    shown = _version_or_404(plugin, viewer, version)
    if request.GET.get("part") == "check" and getattr(request, "htmx", False):
        if shown.status != PluginVersion.Status.CHECKING:  # the outcome: the whole page
            response = HttpResponse("")
            response["HX-Refresh"] = "true"
            return response
        return render(request, "marketplace/plugin_detail.html#check",
                      {"plugin": plugin, "shown": shown,
                       "progress": check_progress(shown)})
    context = _plugin_context(request, plugin, viewer, versions, shown)
    asked = request.GET.get("try", "")
    if asked.isdigit():
        context["try_request"] = try_request_of(int(asked), viewer.user_id)
    return render(request, "marketplace/plugin_detail.html", context)


def _plugin_context(request: AuthenticatedHttpRequest, plugin: Plugin, viewer: Viewer,
                    versions: list[PluginVersion],
                    shown: PluginVersion | None) -> dict[str, object]:
    own_review = review_of(plugin, viewer.user_id)
    commands = try_commands(shown) if shown else []
    first_example = next((c for c in commands if c.get("examples")), None)
    index_url = request.build_absolute_uri(reverse("simple:index"))
    return {
        "plugin": plugin, "versions": versions, "shown": shown, "viewer": viewer,
        "is_member": viewer.is_member(plugin.team_id),
        "can_review_team": viewer.can_review(plugin.team_id),
        "is_admin": viewer.is_admin(plugin.team_id),
        "reviews": plugin_reviews(plugin), "own_review": own_review,
        "as_publisher": rates_as_publisher(viewer, plugin),
        "publisher_reviews": (publisher_reviews(plugin)
                              if viewer.is_member(plugin.team_id) else []),
        "review_form": ReviewForm(initial={"rating": own_review.rating, "body": own_review.body}
                                  if own_review else None),
        "try_form": TryForm(commands=commands, initial=_try_initial(first_example)),
        **_try_send_context(request, shown),
        "network": network_summary(shown) if shown else None,
        "decision_form": DecisionForm(), "yank_form": YankForm(),
        "index_url": index_url,
        "needs_token": plugin.visibility != Plugin.Visibility.PUBLIC,
        "pip_command": pip_command(
            name=plugin.name, index_url=index_url,
            version=(shown.version if shown and (shown.yanked or shown != plugin.latest_version)
                     else None),
            needs_token=plugin.visibility != Plugin.Visibility.PUBLIC),
        "served": served_files_of_version(shown) if shown else None,
        "gate": (version_gate(shown, request.user)
                 if shown and shown.status == PluginVersion.Status.PENDING else None),
        "progress": (check_progress(shown)
                     if shown and shown.status == PluginVersion.Status.CHECKING else None),
    }


def _try_send_context(request: AuthenticatedHttpRequest,
                      shown: PluginVersion | None) -> dict[str, object]:
    """For a plugin that talks to other services: its hosts (a try rehearses them), and
    whether the user's current team may send for real (only where it uses this version)."""
    hosts = try_hosts(shown) if shown else []
    if not hosts:
        return {"try_hosts": []}
    team = getattr(request, "team", None)
    refusal, send_hosts = try_send_terms(version=shown, user_id=request.user.pk,
                                         team_id=team.pk if team else None) if shown else ("", [])
    return {"try_hosts": hosts, "try_send_refusal": refusal, "try_send_hosts": send_hosts,
            "try_team": team}


def _try_initial(command: StoredCommand | None) -> dict[str, object]:
    import json

    if not command:
        return {"payload": "{}"}
    return {"command": command["name"],
            "payload": json.dumps(command["examples"][0].get("input", {}), indent=2)}


@login_required
@require_POST
def plugin_try(request: AuthenticatedHttpRequest, name: str, version: str) -> HttpResponse:
    plugin, viewer = _plugin_or_404(request, name)
    shown = _version_or_404(plugin, viewer, version)
    form = TryForm(request.POST, commands=try_commands(shown))
    context = _plugin_context(request, plugin, viewer, plugin_versions(plugin, viewer),
                              shown)
    context["try_form"] = form
    retry_after = 0
    if form.is_valid():
        team = getattr(request, "team", None)  # the current team (projects/middleware.py)
        try:
            context["try_request"] = plugin_try_request(
                version=shown, user=request.user, command=form.cleaned_data["command"],
                payload=form.cleaned_data["payload"], team_id=team.pk if team else None,
                send=form.cleaned_data.get("mode") == "send",
                confirmed=bool(form.cleaned_data.get("confirm")))
        except TryRateLimited as exc:
            context["rate_limited"], retry_after = exc, exc.retry_after
        except PackageError as exc:
            context["try_errors"] = exc.errors
    response = _render(request, "marketplace/plugin_detail.html", context, "try")
    if retry_after:
        response.status_code = 429
        response["Retry-After"] = str(retry_after)
    return response


@login_required
def try_result(request: AuthenticatedHttpRequest, name: str, version: str,
               try_id: int) -> HttpResponse:
    """A try's result as it stands (the page asks every second while it is pending); only the
    user who asked sees it."""
    plugin, viewer = _plugin_or_404(request, name)
    shown = _version_or_404(plugin, viewer, version)
    asked = try_request_of(try_id, viewer.user_id)
    if asked is None or asked.version_id != shown.pk:
        raise Http404("No such try")
    if not getattr(request, "htmx", False):
        page = reverse("marketplace:version", args=[plugin.normalized_name, shown.version])
        return redirect(f"{page}?try={asked.pk}#try")
    return render(request, "marketplace/plugin_detail.html#try_result",
                  {"plugin": plugin, "shown": shown, "try_request": asked})


@login_required
@require_POST
def review_save(request: AuthenticatedHttpRequest, name: str) -> HttpResponse:
    plugin, _ = _plugin_or_404(request, name)
    form = ReviewForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose a rating from 1 to 5; the text is at most 5000"
                       " characters.")
        return redirect("marketplace:plugin", name=plugin.normalized_name)
    try:
        review = review_upsert(plugin=plugin, user=request.user, **form.cleaned_data)
        messages.success(request, "Your feedback is saved as the publisher's own; it does not"
                         " count in the public rating." if review.from_publisher
                         else "Your review is saved.")
    except (PermissionDenied, PackageError) as exc:
        messages.error(request, _message(exc))
    return redirect(f"{reverse('marketplace:plugin', args=[plugin.normalized_name])}#reviews")


@login_required
@require_POST
def review_remove(request: AuthenticatedHttpRequest, name: str) -> HttpResponse:
    plugin, viewer = _plugin_or_404(request, name)
    review = review_of(plugin, viewer.user_id)
    if review is not None:
        review_delete(review=review, user=request.user)
        messages.success(request, "Your review was removed.")
    return redirect("marketplace:plugin", name=plugin.normalized_name)


@login_required
@require_POST
def version_decide(request: AuthenticatedHttpRequest, name: str, version: str) -> HttpResponse:
    plugin, viewer = _plugin_or_404(request, name)
    shown = _version_or_404(plugin, viewer, version)
    form = DecisionForm(request.POST)
    if form.is_valid():
        try:
            decided = plugin_version_decide(
                version=shown, user=request.user,
                approve=form.cleaned_data["decision"] == "approve",
                comment=form.cleaned_data["comment"])
            messages.success(request, f"{plugin.name} {decided.version}:"
                             f" {decided.get_status_display().lower()}.")
        except (PermissionDenied, DecisionConflict) as exc:
            messages.error(request, _message(exc))
    return redirect("marketplace:version", name=plugin.normalized_name, version=shown.version)


@login_required
@require_POST
def version_yank(request: AuthenticatedHttpRequest, name: str, version: str) -> HttpResponse:
    plugin, viewer = _plugin_or_404(request, name)
    shown = _version_or_404(plugin, viewer, version)
    undo = request.POST.get("undo") == "1"
    form = YankForm(request.POST)
    try:
        if undo:
            plugin_version_unyank(version=shown, user=request.user)
            messages.success(request, f"{shown.version} is installable again.")
        elif form.is_valid():
            plugin_version_yank(version=shown, user=request.user,
                                reason=form.cleaned_data["reason"])
            messages.success(request, f"{shown.version} is yanked.")
        else:
            messages.error(request, "Give a reason for yanking (users see it).")
    except (PermissionDenied, PackageError, DecisionConflict) as exc:
        messages.error(request, _message(exc))
    return redirect("marketplace:version", name=plugin.normalized_name, version=shown.version)


@login_required
def plugin_settings(request: AuthenticatedHttpRequest, name: str) -> HttpResponse:
    plugin, viewer = _plugin_or_404(request, name)
    if not viewer.is_admin(plugin.team_id):
        raise PermissionDenied("Only the team's admins change a plugin's listing.")
    form = PluginSettingsForm(request.POST or None, initial={
        "visibility": plugin.visibility, "category": plugin.category,
        "tags": ", ".join(plugin.tags)})
    if request.method == "POST" and form.is_valid():
        plugin_settings_update(plugin=plugin, user=request.user, **form.cleaned_data)
        messages.success(request, "Listing saved.")
        return redirect("marketplace:plugin", name=plugin.normalized_name)
    return render(request, "marketplace/plugin_settings.html", {"plugin": plugin, "form": form})


@login_required
def upload(request: AuthenticatedHttpRequest) -> HttpResponse:
    teams = teams_for_user(request.user)
    form = UploadForm(request.POST or None, request.FILES or None, teams=teams,
                      initial={"team": getattr(request, "team", None)})
    errors: list[str] = []
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            version = plugin_upload_store(
                team=data["team"], user=request.user, filename=data["package"].name,
                data=data["package"].read(), visibility=data["visibility"],
                category=data["category"], tags=data["tags"], changelog=data["changelog"])
        except (PackageError, PermissionDenied) as exc:
            errors = exc.errors if isinstance(exc, PackageError) else [str(exc)]
        else:
            messages.success(request, f"{version.plugin.name} {version.version} is uploaded."
                             " Its checks run now; this page shows how far they are.")
            _not_used_message(request, version)
            return redirect("marketplace:version", name=version.plugin.normalized_name,
                            version=version.version)
    status = 400 if errors else 200
    return render(request, "marketplace/upload.html", {"form": form, "errors": errors},
                  status=status)


@login_required
def publish_run(request: AuthenticatedHttpRequest, run_id: int) -> HttpResponse:
    run, _ = get_run_for_member(request.user, run_id)
    live = published_version_of_run(run.pk)
    if live is not None and request.method == "GET":  # "Published" on the run page leads here
        messages.info(request, f"{live.plugin.name} {live.version} from this run is published.")
        return redirect("marketplace:version", name=live.plugin.normalized_name,
                        version=live.version)
    waiting = waiting_version_of_run(run.pk)
    if waiting is not None:  # one publish request at a time: it is decided on its page
        messages.info(request, f"{waiting.plugin.name} {waiting.version} from this run waits "
                      "for a reviewer; it is published once they approve it.")
        return redirect("marketplace:version", name=waiting.plugin.normalized_name,
                        version=waiting.version)
    state = publish_state(run)
    form = PublishRunForm(request.POST or None, initial=_publish_initial(state))
    errors: list[str] = []
    if request.method == "POST" and form.is_valid():
        try:
            version = plugin_version_publish(run=run, user=request.user,
                                             **form.cleaned_data)
        except (PackageError, PermissionDenied) as exc:
            errors = exc.errors if isinstance(exc, PackageError) else [str(exc)]
        else:
            _publish_message(request, version)
            return redirect("marketplace:version", name=version.plugin.normalized_name,
                            version=version.version)
    return render(request, "marketplace/publish_run.html",
                  {"run": run, "form": form, "errors": errors, "state": state},
                  status=400 if errors else 200)


def _publish_initial(state: PublishState) -> dict[str, str]:
    proposal = state.proposal
    if proposal is None:
        return {}
    return {"version": proposal.version, "visibility": proposal.visibility,
            "category": proposal.category}


def _publish_message(request: AuthenticatedHttpRequest, version: PluginVersion) -> None:
    messages.success(request, f"{version.plugin.name} {version.version}:"
                     f" {version.get_status_display().lower()}.")
    if version.status == PluginVersion.Status.PENDING:
        messages.info(request, f"The publish request asks the reviewers for exactly this:"
                      f" version {version.version}, visibility {version.visibility}, category"
                      f" {version.get_category_display()}.")


@login_required
def pending(request: AuthenticatedHttpRequest) -> HttpResponse:
    viewer = request_viewer(request)
    return render(request, "marketplace/pending.html",
                  {"versions": pending_versions_for(viewer), "viewer": viewer})


@login_required
def tokens(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = TokenForm(request.POST or None)
    created = ""
    if request.method == "POST" and form.is_valid():
        _, created = api_token_create(user=request.user, name=form.cleaned_data["name"])
        form = TokenForm()
    index_url = request.build_absolute_uri(reverse("simple:index"))
    context = {"form": form, "created": created,
               "tokens": api_tokens_of(int(request.user.pk or 0)),
               "index_with_token": index_url_with_token(index_url, created or "TOKEN")}
    response = render(request, "marketplace/tokens.html", context)
    response["Cache-Control"] = "no-store"  # the page may show a token once
    return response


@login_required
@require_POST
def token_revoke(request: AuthenticatedHttpRequest, token_id: int) -> HttpResponse:
    if api_token_revoke(user=request.user, token_id=token_id):
        messages.success(request, "The token is revoked; pip can no longer use it.")
    return redirect("marketplace:tokens")


def _not_used_message(request: AuthenticatedHttpRequest, version: PluginVersion) -> None:
    not_used = " and ".join(ignored_inputs(version.files))
    if not_used:
        messages.info(request, f"Not used: {not_used} from your upload. The marketplace builds"
                      " the wheel and sdist itself, from plugin.toml and exactly the files"
                      " reviewed.")


def _message(exc: Exception) -> str:
    if isinstance(exc, PackageError):
        return "; ".join(exc.errors)
    return str(exc)

