"""A plugin's git history (marketplace/history.py): the History page, the diff of a version
against the one before it, the history as a git bundle, and read-only clones over git's dumb
HTTP protocol under /marketplace/p/<name>/git/.

Who may read it: the rule of the plugin page and the package index. The pages use the portal
session; the bundle and the git URLs also take an API token as the password of HTTP basic auth,
as pip does. A git URL asked for without credentials, for a plugin the asker may not see (or
that does not exist), answers 401 with WWW-Authenticate so git asks for the token, whichever of
the two it is; with credentials it is a 404. Only GET and HEAD, only the files the dumb
protocol reads (history.served_file): nothing here ever writes to a repository.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_safe

from marketplace.history import (
    HistoryError,
    bundle_create,
    history_entries,
    served_file,
    unrecorded_versions,
    version_diff,
)
from marketplace.install_commands import index_url_with_token
from marketplace.models import Plugin
from marketplace.selectors.history import version_stories
from marketplace.selectors.visibility import plugin_for_viewer, request_viewer
from marketplace.views.index import BadCredentials, index_viewer
from projects.diffs import MAX_DIFF_LINES, DiffRow, DiffView
from teams.http import AuthenticatedHttpRequest
from teams.permissions import membership_for

GIT_REALM = 'Basic realm="Autocoder plugin history", charset="UTF-8"'
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")
_META = ("--- ", "+++ ", "index ", "new file", "deleted file", "old mode", "new mode",
         "similarity", "rename ", "Binary files", "\\ ")
CONTENT_TYPES = {
    "pack": "application/x-git-packed-objects",
    "idx": "application/x-git-packed-objects-toc",
}


def _plugin_or_404(request: AuthenticatedHttpRequest, name: str) -> Plugin:
    plugin = plugin_for_viewer(request_viewer(request), name)
    if plugin is None:
        raise Http404("No such plugin")
    return plugin


def clone_command(request: HttpRequest, plugin: Plugin) -> str:
    """`git clone URL NAME` as it works on this portal, with YOUR-TOKEN in the address of a
    plugin that is not public (like the Install command)."""
    url = request.build_absolute_uri(reverse("marketplace:git_root",
                                             args=[plugin.normalized_name]))
    if plugin.visibility != Plugin.Visibility.PUBLIC:
        url = index_url_with_token(url)
    return f"git clone {url} {plugin.normalized_name}"


@login_required
@require_safe
def history(request: AuthenticatedHttpRequest, name: str) -> HttpResponse:
    plugin = _plugin_or_404(request, name)
    if plugin.normalized_name != name:
        return redirect("marketplace:history", name=plugin.normalized_name)
    try:
        entries, missing = history_entries(plugin), unrecorded_versions(plugin)
    except HistoryError:
        entries, missing = [], []
    return render(request, "marketplace/history.html", {
        "plugin": plugin, "entries": version_stories(plugin, entries), "missing": missing,
        # the run pages are the plugin's team's: others see that a run made it, not the run
        "sees_runs": membership_for(request.user, plugin.team) is not None,
        "clone_command": clone_command(request, plugin),
        "needs_token": plugin.visibility != Plugin.Visibility.PUBLIC})


@login_required
@require_safe
def history_diff(request: AuthenticatedHttpRequest, name: str, version: str) -> HttpResponse:
    plugin = _plugin_or_404(request, name)
    try:
        found = version_diff(plugin, version)
    except HistoryError:
        found = None
    if found is None:
        raise Http404("This version is not in the plugin's history")
    previous, text = found
    entry = next((e for e in history_entries(plugin) if e.version == version), None)
    return render(request, "marketplace/history_diff.html", {
        "plugin": plugin, "version": version, "previous": previous, "entry": entry,
        "diff": diff_view(text)})


def diff_view(text: str) -> DiffView:
    """`git diff` output as the rows of templates/projects/_diff_unified.html."""
    view = DiffView()
    old_no = new_no = 0
    for line in text.splitlines():
        if len(view.rows) >= MAX_DIFF_LINES:
            view.truncated = True
            break
        if line.startswith("diff --git "):
            row = DiffRow("file", line.split(" b/", 1)[-1])
        elif line.startswith(_META):
            row = DiffRow("meta", line)
        elif (hunk := _HUNK.match(line)) is not None:
            row, old_no, new_no = DiffRow("hunk", line), int(hunk.group(1)), int(hunk.group(2))
        elif line.startswith("+"):
            row, new_no = DiffRow("add", line[1:], new_no=new_no), new_no + 1
        elif line.startswith("-"):
            row, old_no = DiffRow("del", line[1:], old_no=old_no), old_no + 1
        else:
            row = DiffRow("ctx", line[1:], old_no, new_no)
            old_no, new_no = old_no + 1, new_no + 1
        view.added += row.kind == "add"
        view.removed += row.kind == "del"
        view.rows.append(row)
    return view


def _unauthorized() -> HttpResponse:
    response = HttpResponse("Sign in with an API token of the plugin's team (as the password)."
                            "\n", status=401, content_type="text/plain; charset=utf-8")
    response["WWW-Authenticate"] = GIT_REALM
    return response


def _git_plugin(request: HttpRequest, name: str) -> Plugin | HttpResponse:
    """The plugin if the asker may read it; else the answer to give (401 or 404)."""
    try:
        viewer = index_viewer(request)
    except BadCredentials:
        return _unauthorized()
    plugin = plugin_for_viewer(viewer, name)
    if plugin is not None:
        return plugin
    if viewer.is_anonymous:  # maybe a plugin the token would show: ask for it
        return _unauthorized()
    raise Http404("No such plugin")


@require_safe
def history_bundle(request: HttpRequest, name: str) -> HttpResponseBase:
    plugin = _git_plugin(request, name)
    if isinstance(plugin, HttpResponse):
        return plugin
    with tempfile.TemporaryDirectory(prefix="autocoder-bundle-") as scratch:
        try:
            bundle = bundle_create(plugin, Path(scratch))
        except HistoryError:
            bundle = None
        if bundle is None:
            raise Http404("This plugin has no history yet")
        stream = bundle.open("rb")  # still readable once the directory is gone
    response = FileResponse(stream, as_attachment=True, filename=bundle.name,
                            content_type="application/octet-stream")
    response["Cache-Control"] = "private, no-cache"
    return response


@require_safe
def git_root(request: HttpRequest, name: str) -> HttpResponseBase:
    """The clone address itself, opened in a browser: the History page."""
    return redirect("marketplace:history", name=name)


@require_safe
def git_file(request: HttpRequest, name: str, path: str) -> HttpResponseBase:
    """One file of the bare repository, as git's dumb HTTP protocol asks for it.

    info/refs?service=git-upload-pack is answered as plain text, which tells git the server
    speaks the dumb protocol."""
    plugin = _git_plugin(request, name)
    if isinstance(plugin, HttpResponse):
        return plugin
    found = served_file(plugin, path)
    if found is None:
        raise Http404("No such file in the plugin's history")
    immutable = path.startswith("objects/") and not path.startswith("objects/info/")
    content_type = (CONTENT_TYPES.get(path.rsplit(".", 1)[-1], "application/x-git-loose-object")
                    if immutable else "text/plain; charset=utf-8")
    response = FileResponse(found.open("rb"), content_type=content_type)
    response["Cache-Control"] = ("private, max-age=31536000, immutable" if immutable
                                 else "private, no-cache")
    response["Vary"] = "Authorization, Cookie"
    return response

