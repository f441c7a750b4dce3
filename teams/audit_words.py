"""Audit entries as sentences a person reads: "alice approved the change request of
csv-tool." The action's code, the target and the values before and after stay on the page,
folded below each sentence (docs/portal.md, "The audit log")."""

from __future__ import annotations

import re

from teams.models import AuditEntry

# What each action did, as the verb phrase between who did it and what it was done to.
VERBS: dict[str, str] = {
    "approval.approve": "approved",
    "approval.reject": "rejected",
    "approval.request_changes": "asked for changes to",
    "approval.answer": "answered with guidance",
    "approval.stop": "stopped the run at",
    "approval.continue": "let the run spend more at",
    "approval.superseded": "saw a newer request replace",
    "approval.publish_as_changed": "changed what publishing covers in",
    "run.cancel": "cancelled",
    "run.retry": "retried",
    "run.pause": "paused",
    "run.resume": "resumed",
    "run.start": "pressed Start on",
    "project.start": "started generating",
    "project.queue_move": "moved in the queue",
    "plugin.submit": "submitted",
    "plugin.check": "checked",
    "plugin.approve": "approved",
    "plugin.publish": "published",
    "plugin.settings_update": "changed the listing of",
    "plugin.yank": "withdrew (yanked)",
    "plugin.unyank": "brought back",
    "marketplace.try_sent": "sent real requests while trying",
    "team.create": "created the team",
    "team.settings_update": "changed the settings of",
    "team.invite": "invited someone to",
    "team.invitation_accept": "accepted an invitation to",
    "team.invitation_decline": "declined an invitation to",
    "team.invitation_withdraw": "withdrew an invitation to",
    "team.member_add": "added",
    "team.member_remove": "removed",
    "team.member_role": "changed the role of",
    "tool.activation_requested": "asked to activate",
    "tool.activated": "activated",
    "tool.deactivated": "deactivated",
    "tool.rolled_back": "rolled back",
    "tool.settings_changed": "changed the settings of",
    "tool.address_approved": "approved an address for",
    "tool.schedule_created": "scheduled",
    "tool.schedule_deleted": "deleted a schedule of",
    "tool.schedule_paused": "paused a schedule of",
    "tool.schedule_resumed": "resumed a schedule of",
    "tool.trigger_created": "set up and approved the trigger",
    "tool.trigger_secret_changed": "replaced the signing secret of the trigger",
    "tool.trigger_paused": "paused the trigger",
    "tool.trigger_resumed": "resumed the trigger",
    "tool.trigger_deleted": "deleted the trigger",
    "tool.token_created": "created",
    "tool.token_revoked": "revoked",
    "tool.version_disabled": "switched off",
    "tool.version_enabled": "switched on again",
    "tool.warm_changed": "changed how calls start for",
    "tool.change_asked": "asked for a change of",
    "tool.change_started": "started a change run of",
    "tool.change_declined": "declined a change of",
    "tool.change_answered": "answered the follow-up questions of a change of",
    "tool.change_shipped": "shipped a change of",
    "comment.edit": "edited",
    "comment.delete": "deleted",
    "model.settings_update": "changed the model set-up",
    "model.price_update": "changed a model price:",
    "site.team_settings": "changed the site's team settings",
    "generation.mode": "set generation to",
}


# How entries recorded before their targets had names read: "2 3 in team 1 (active)".
_NUMBERS_ONLY = re.compile(r"^(?:\d+ )+in team \d+(?: \(\w+\))?$|^version \d+ disabled$")


def audit_sentence(entry: AuditEntry) -> str:
    """The entry as one sentence: who did what to which thing."""
    who = entry.actor_name or "The portal"
    verb = VERBS.get(entry.action) or entry.action.replace(".", ": ").replace("_", " ")
    what = entry.target_repr or (f"{entry.target_type} {entry.target_id}".strip())
    if _NUMBERS_ONLY.match(what):
        what = _named(entry) or what
    return f"{who} {verb} {what}".rstrip() + "."


def _named(entry: AuditEntry) -> str:
    """The plugin and version an entry's values name ("month-totals 1.0.0"), or ""."""
    values = {**(entry.before or {}), **(entry.after or {})}
    plugin = values.get("plugin")
    return f"{plugin} {values['version']}".strip() if plugin and values.get("version") else \
        str(plugin or "")
