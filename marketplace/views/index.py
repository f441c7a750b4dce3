"""The package index: PEP 503 (HTML) and PEP 691 (JSON) by content negotiation, PEP 592 yanks,
PEP 700 (api-version 1.1: versions, size, upload-time), and the files themselves.

Who is asking: an API token as the password of HTTP basic auth (pip), else the portal session
(a browser), else nobody (public plugins only). A project the asker may not see is a 404, never
a 403, so private names are not confirmed. A wrong token is a 401 whatever the URL.
"""

from __future__ import annotations

import base64
import binascii
from datetime import UTC
from html import escape

from django.contrib.auth.models import AbstractBaseUser
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponsePermanentRedirect,
    JsonResponse,
)
from django.http.response import HttpResponseBase
from django.urls import reverse
from django.views.decorators.http import require_safe

from marketplace.selectors.index import (
    IndexFile,
    artifact_for_viewer,
    index_files,
    index_project,
    index_projects,
)
from marketplace.selectors.tokens import api_token_user
from marketplace.selectors.visibility import Viewer, viewer_for
from marketplace.services.listing import artifact_download_record
from marketplace.storage import artifact_path
from marketplace.validation import normalize_name

API_VERSION = "1.1"
JSON_V1 = "application/vnd.pypi.simple.v1+json"
HTML_V1 = "application/vnd.pypi.simple.v1+html"
HTML_LEGACY = "text/html"
# Preference when the client weighs several equally: JSON first, as PEP 691 suggests.
SERVER_ORDER = (JSON_V1, HTML_V1, HTML_LEGACY)
ALIASES = {
    JSON_V1: JSON_V1,
    "application/vnd.pypi.simple.latest+json": JSON_V1,
    HTML_V1: HTML_V1,
    "application/vnd.pypi.simple.latest+html": HTML_V1,
    HTML_LEGACY: HTML_LEGACY,
    "text/*": HTML_LEGACY,
    "*/*": HTML_LEGACY,
}
FORMAT_PARAM = {"json": JSON_V1, "html": HTML_V1}
REALM = 'Basic realm="Autocoder package index", charset="UTF-8"'


class BadCredentials(Exception):
    pass


def negotiate(accept: str) -> str | None:
    """The content type to answer with for an Accept header, None when nothing fits (406)."""
    if not accept.strip():
        return HTML_LEGACY
    weights: dict[str, float] = {}
    for item in accept.split(","):
        media, _, params = item.strip().partition(";")
        chosen = ALIASES.get(media.strip().lower())
        if chosen is None:
            continue
        quality = _quality(params)
        if quality > 0 and quality > weights.get(chosen, -1):
            weights[chosen] = quality
    if not weights:
        return None
    return max(SERVER_ORDER, key=lambda media: (weights.get(media, -1),
                                                -SERVER_ORDER.index(media)))


def _quality(params: str) -> float:
    for param in params.split(";"):
        key, _, value = param.strip().partition("=")
        if key.strip().lower() == "q":
            try:
                return max(0.0, min(1.0, float(value)))
            except ValueError:
                return 0.0
    return 1.0


def index_viewer(request: HttpRequest) -> Viewer:
    header = request.headers.get("Authorization", "")
    if header:
        return viewer_for(_token_user(header))
    return viewer_for(request.user)


def _token_user(header: str) -> AbstractBaseUser:
    scheme, _, encoded = header.partition(" ")
    if scheme.lower() != "basic":
        raise BadCredentials
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        raise BadCredentials from None
    _user, _, password = decoded.partition(":")
    user = api_token_user(password) if password else None
    if user is None:
        raise BadCredentials
    return user


def _unauthorized() -> HttpResponse:
    response = HttpResponse("Invalid or revoked API token.\n", status=401,
                            content_type="text/plain; charset=utf-8")
    response["WWW-Authenticate"] = REALM
    return response


def _respond(request: HttpRequest, body: str | dict[str, object], media: str) -> HttpResponse:
    if media == JSON_V1:
        response: HttpResponse = JsonResponse(body, content_type=JSON_V1)
    else:
        response = HttpResponse(body, content_type=f"{media}; charset=utf-8")
    response["Vary"] = "Accept, Authorization, Cookie"
    response["Cache-Control"] = "private, no-cache"
    return response


def _media(request: HttpRequest) -> str | None:
    forced = FORMAT_PARAM.get(request.GET.get("format", ""))
    return forced or negotiate(request.headers.get("Accept", ""))


def _not_acceptable() -> HttpResponse:
    return HttpResponse(f"Supported: {', '.join(SERVER_ORDER)}\n", status=406,
                        content_type="text/plain; charset=utf-8")


@require_safe
def simple_root(request: HttpRequest) -> HttpResponse:
    media = _media(request)
    if media is None:
        return _not_acceptable()
    try:
        projects = index_projects(index_viewer(request))
    except BadCredentials:
        return _unauthorized()
    if media == JSON_V1:
        return _respond(request, {"meta": {"api-version": API_VERSION},
                                  "projects": [{"name": name} for name, _ in projects]}, media)
    links = "\n".join(f'<a href="{reverse("simple:project", args=[normalized])}">'
                      f"{escape(name)}</a><br>" for name, normalized in projects)
    return _respond(request, _html("Simple index", links), media)


@require_safe
def simple_project(request: HttpRequest, name: str) -> HttpResponse:
    normalized = normalize_name(name)
    if normalized != name:
        return HttpResponsePermanentRedirect(reverse("simple:project", args=[normalized]))
    media = _media(request)
    if media is None:
        return _not_acceptable()
    try:
        plugin = index_project(index_viewer(request), normalized)
    except BadCredentials:
        return _unauthorized()
    if plugin is None:
        raise Http404("No such project")
    files = index_files(plugin)
    if media == JSON_V1:
        return _respond(request, _project_json(plugin.name, files), media)
    links = "\n".join(_file_link(file) for file in files)
    return _respond(request, _html(f"Links for {plugin.name}", links), media)


def file_url(file: IndexFile) -> str:
    return reverse("marketplace:file", args=[file.url_id, file.filename])


def _project_json(name: str, files: list[IndexFile]) -> dict[str, object]:
    versions = list(dict.fromkeys(file.version for file in files))
    return {
        "meta": {"api-version": API_VERSION},
        "name": normalize_name(name),
        "versions": versions,
        "files": [{
            "filename": file.filename,
            "url": file_url(file),
            "hashes": {"sha256": file.sha256},
            "requires-python": file.requires_python or None,
            "yanked": (file.yank_reason or True) if file.yanked else False,
            "size": file.size,
            "upload-time": _upload_time(file),
        } for file in files],
    }


def _upload_time(file: IndexFile) -> str | None:
    when = file.uploaded_at
    if when is None:
        return None
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")  # type: ignore[attr-defined]


def _file_link(file: IndexFile) -> str:
    attributes = f' href="{escape(file_url(file))}#sha256={file.sha256}"'
    if file.requires_python:
        attributes += f' data-requires-python="{escape(file.requires_python)}"'
    if file.yanked:
        attributes += f' data-yanked="{escape(file.yank_reason)}"'
    return f"<a{attributes}>{escape(file.filename)}</a><br>"


def _html(title: str, body: str) -> str:
    return ("<!DOCTYPE html>\n<html>\n<head>\n"
            f'<meta name="pypi:repository-version" content="{API_VERSION}">\n'
            f"<title>{escape(title)}</title>\n</head>\n<body>\n<h1>{escape(title)}</h1>\n"
            f"{body}\n</body>\n</html>\n")


@require_safe
def file_download(request: HttpRequest, artifact_id: int, filename: str) -> HttpResponseBase:
    try:
        artifact = artifact_for_viewer(index_viewer(request), artifact_id, filename)
    except BadCredentials:
        return _unauthorized()
    if artifact is None:
        raise Http404("No such file")
    path = artifact_path(artifact.path)
    if not path.is_file():
        raise Http404("The file is missing from the artifact store")
    if request.method == "GET":
        artifact_download_record(artifact=artifact)
    content_type = ("application/octet-stream" if artifact.kind == "wheel"
                    else "application/gzip")
    response = FileResponse(path.open("rb"), as_attachment=True, filename=artifact.filename,
                            content_type=content_type)
    response["Cache-Control"] = "private, max-age=31536000, immutable"
    return response
