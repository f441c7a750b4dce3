"""What a run's publish request asks reviewers to approve: the version, the visibility and the
category the plugin is published with, and the exact files the index will serve.

They travel in the request's payload (`publish_as`, `served_files`). The payload is part of the
candidate a reviewer's decision names (projects.selectors.approvals.approval_candidate), so a
decision made on a page that showed one combination can never approve another one; publishing
with anything else than an approved combination goes back to the reviewers.

Reads and pure helpers only; marketplace.services writes.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

from autocoder.plugins import read_manifest
from autocoder.plugins.render import render_manifest
from marketplace.models import Plugin, PluginVersion
from marketplace.served import served_preview
from marketplace.validation import Manifest, PackageError, normalize_name, parse_manifest
from runs.models import ApprovalRequest, Run
from teams.models import Team

PROPOSAL_KEY = "publish_as"
SERVED_KEY = "served_files"


@dataclass(frozen=True)
class PublishProposal:
    version: str
    visibility: str
    category: str

    def as_payload(self) -> dict[str, str]:
        # Labels travel too, so the approval page needs no marketplace code to show them.
        return {"version": self.version, "visibility": self.visibility,
                "visibility_label": Plugin.Visibility(self.visibility).label,
                "category": self.category,
                "category_label": Plugin.Category(self.category).label}

    def describe(self) -> str:
        return (f"version {self.version}, visibility {self.visibility},"
                f" category {Plugin.Category(self.category).label}")


def proposal_from_payload(payload: Mapping[str, Any] | None) -> PublishProposal | None:
    data = (payload or {}).get(PROPOSAL_KEY)
    if not isinstance(data, dict):
        return None
    try:
        return PublishProposal(version=str(data["version"]),
                               visibility=Plugin.Visibility(data["visibility"]).value,
                               category=Plugin.Category(data["category"]).value)
    except (KeyError, ValueError):
        return None


def listing_in_force(*, team: Team, manifest: Manifest) -> tuple[str, str] | None:
    """Visibility and category of the team's already published plugin of this name: a new
    version keeps them (team admins change them on the plugin's page)."""
    row = (Plugin.objects.filter(normalized_name=normalize_name(manifest.name), team=team,
                                 published_at__isnull=False)
           .values_list("visibility", "category").first())
    return (row[0], row[1]) if row else None


def proposal_wanted(*, team: Team, manifest: Manifest, visibility: str,
                    category: str) -> PublishProposal:
    """The combination a submission asks for: the manifest's version (already set to the one
    chosen), and the chosen visibility and category unless the plugin's listing is in force."""
    in_force = listing_in_force(team=team, manifest=manifest)
    if in_force is not None:
        visibility, category = in_force
    category = category or manifest.category or Plugin.Category.OTHER
    if visibility not in Plugin.Visibility.values:
        raise PackageError([f"visibility must be one of {', '.join(Plugin.Visibility.values)}"])
    if category not in Plugin.Category.values:
        raise PackageError([f"category {category!r} is not one of"
                            f" {', '.join(Plugin.Category.values)}"])
    return PublishProposal(version=manifest.version, visibility=visibility, category=category)


def proposal_default(*, team: Team, files: Mapping[str, str]) -> PublishProposal:
    """What a publish request proposes before anyone chose: plugin.toml's version, visibility
    team (the plugin's own once published) and plugin.toml's category (else Other)."""
    manifest = parse_manifest(files.get("plugin.toml", ""))
    category = (manifest.category if manifest.category in Plugin.Category.values
                else Plugin.Category.OTHER)
    return proposal_wanted(team=team, manifest=manifest, visibility=Plugin.Visibility.TEAM,
                           category=category)


def proposal_of(approval: ApprovalRequest, *, files: Mapping[str, str]) -> PublishProposal:
    """The combination a publish request is about; a request made before requests carried one
    is taken to be about the defaults (never about more than a member could see)."""
    return (proposal_from_payload(approval.payload)
            or proposal_default(team=approval.project.team, files=files))


def publish_payload(*, files: Mapping[str, str], proposal: PublishProposal) -> dict[str, object]:
    """The payload keys a publish request adds for `proposal`: the combination and the files a
    publication of it serves."""
    return {PROPOSAL_KEY: proposal.as_payload(),
            SERVED_KEY: served_preview(with_version(files, proposal.version))}


def publish_payload_default(*, team: Team, files: Mapping[str, str]) -> dict[str, object]:
    """For the engine's publish request when a run succeeds. PackageError (a ValueError) when
    plugin.toml cannot be read; the request is still made, the marketplace's checks say why."""
    return publish_payload(files=files, proposal=proposal_default(team=team, files=files))


def with_version(files: Mapping[str, str], version: str) -> dict[str, str]:
    """The files with plugin.toml's [plugin] version replaced (a new run of a plugin is a new
    version); unchanged when `version` is empty or already the one there, so the files stay
    exactly the reviewed ones whenever they can."""
    result = dict(files)
    if not version or _current_version(result) == version:
        return result
    lines = result.get("plugin.toml", "").splitlines(keepends=True)
    table = ""
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith("["):
            table = stripped
        elif table == "[plugin]" and stripped.split("=")[0].strip() == "version":
            lines[i] = f"version = {json.dumps(version)}\n"
            break
    result["plugin.toml"] = "".join(lines)
    return result


def with_summary(files: Mapping[str, str], summary: str) -> dict[str, str]:
    """The files with plugin.toml's summary (what the plugin does, as the marketplace, the
    tool's page and the README say it) replaced by `summary`, and the README's paragraph that
    said the old one; unchanged when `summary` is empty or the same, or plugin.toml cannot be
    read (the package checks say why)."""
    result = dict(files)
    summary = summary.strip()
    manifest = read_manifest(result.get("plugin.toml", ""))
    if not summary or manifest is None or manifest.summary.strip() == summary:
        return result
    result["plugin.toml"] = render_manifest(dataclasses.replace(manifest, summary=summary))
    readme = result.get("README.md")
    if readme is not None and manifest.summary.strip() and manifest.summary.strip() in readme:
        result["README.md"] = readme.replace(manifest.summary.strip(), summary, 1)
    return result


def candidate_summary(files: Mapping[str, str]) -> str:
    manifest = read_manifest(files.get("plugin.toml", ""))
    return manifest.summary if manifest is not None else ""


def _current_version(files: Mapping[str, str]) -> str:
    try:
        return parse_manifest(files.get("plugin.toml", "")).version
    except PackageError:
        return ""


@dataclass(frozen=True)
class PublishState:
    """The publish page's view of a run: its newest publish request and what it proposes."""

    approval: ApprovalRequest | None
    proposal: PublishProposal | None
    approved: list[PublishProposal]


def publish_state(run: Run) -> PublishState:
    requests = list(ApprovalRequest.objects.filter(run=run, kind=ApprovalRequest.Kind.PUBLISH)
                    .select_related("project__team", "decided_by").order_by("-created_at", "-pk"))
    if not requests:
        return PublishState(approval=None, proposal=None, approved=[])
    iteration = run.iterations.filter(number=requests[0].iteration).first()
    files = iteration.files if iteration else {}
    try:
        approved = [proposal_of(r, files=files) for r in requests
                    if r.status == ApprovalRequest.Status.APPROVED]
        latest = proposal_of(requests[0], files=files)
    except PackageError:  # plugin.toml unreadable: publishing will say why
        return PublishState(approval=requests[0], proposal=None, approved=[])
    return PublishState(approval=requests[0], proposal=latest, approved=approved)


@dataclass(frozen=True)
class PublishChoice:
    """What the review page of a run's publish request lets the reviewer choose, so that
    approving publishes in the same step: the version, visibility and category to start from,
    and which of them are fixed.

    - `waiting`: a version was already submitted against the request (the requester pressed
      Publish, or another reviewer approved first): its combination is what is approved;
    - `listing_fixed`: the plugin is already published, so a new version keeps its visibility
      and category (its team's admins change them on the plugin's page).
    """

    initial: PublishProposal
    listing_fixed: bool
    waiting: bool
    summary: str = ""  # what the candidate's plugin.toml says it does
    from_version: str = ""  # the version in use a change run changes ("" for a new plugin)


def publish_choice(approval: ApprovalRequest) -> PublishChoice | None:
    """The choice for a pending publish request (None: nothing to choose - another kind of
    request, no readable plugin.toml, or a version of this run is already in the
    marketplace)."""
    if approval.kind != ApprovalRequest.Kind.PUBLISH or approval.run_id is None:
        return None
    submitted = (PluginVersion.objects.filter(run_id=approval.run_id)
                 .exclude(status=PluginVersion.Status.REJECTED).order_by("-pk").first())
    if submitted is not None:
        if submitted.approval_id != approval.pk or submitted.status != PluginVersion.Status.PENDING:
            return None
        return PublishChoice(initial=PublishProposal(version=submitted.version,
                                                     visibility=submitted.visibility,
                                                     category=submitted.category),
                             listing_fixed=True, waiting=True)
    iteration = approval.run.iterations.filter(number=approval.iteration).first()
    files = iteration.files if iteration else {}
    try:
        manifest = parse_manifest(files.get("plugin.toml", ""))
        proposal = proposal_of(approval, files=files)
    except PackageError:
        return None
    in_force = listing_in_force(team=approval.project.team, manifest=manifest)
    version = next_free_version(team=approval.project.team, name=manifest.name,
                                version=proposal.version)
    return PublishChoice(initial=PublishProposal(version=version,
                                                 visibility=proposal.visibility,
                                                 category=proposal.category),
                         listing_fixed=in_force is not None, waiting=False,
                         summary=manifest.summary, from_version=approval.run.base_version)


def next_free_version(*, team: Team, name: str, version: str) -> str:
    """`version` when the team's plugin `name` can take it, else the newest taken one with
    its last number raised (a second run of a plugin still says 0.1.0 in plugin.toml)."""
    taken = []
    for text in (PluginVersion.objects.filter(plugin__normalized_name=normalize_name(name),
                                              plugin__team=team)
                 .exclude(status=PluginVersion.Status.REJECTED)
                 .values_list("version", flat=True)):
        try:
            taken.append(Version(text))
        except InvalidVersion:
            continue
    newest = max(taken, default=None)
    try:
        if newest is None or Version(version) > newest:
            return version
    except InvalidVersion:
        return version
    return f"{newest.major}.{newest.minor}.{newest.micro + 1}"
