"""`manage.py approve RUN_ID --as USERNAME [--decision D] [--comment TEXT]
[--publish-version V] [--visibility V] [--category C] [--enqueue] [--json]`.

Decides the run's pending approval request (for demos and operators without the portal) through
the review page's form and service (projects/approval_forms.py), so under the same rules
(runs/approval_rules.py: who may decide, what each decision does, N approvals) and with the
same refusals. Approving a run's publish request publishes, as the page's "Approve and
publish" does, with the version, visibility and category the page would propose unless given.
Other decisions drive the run on in this process like `generate` does, unless --enqueue is
given. See docs/engine.md ("manage.py generate").
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError

from projects.approval_extras import ChoiceRefused
from projects.approval_forms import ApprovalDecisionForm, decision_cast, decision_form
from runs.approval_rules import ApprovalRefused, Decision, approval_candidate
from runs.models import ApprovalRequest, Run
from runs.selectors import results as selectors
from runs.services import driving, outbox
from runs.services.approvals import VoteOutcome

# The choice fields a publish request's form adds (marketplace/approvals.py), as options here
# (Django's commands already have a --version of their own).
CHOICE_OPTIONS = {"version": "publish_version", "visibility": "visibility",
                  "category": "category"}


def _flag(name: str) -> str:
    return "--" + CHOICE_OPTIONS.get(name, name).replace("_", "-")


class Command(BaseCommand):
    help = "Decide the pending approval request of a run and let the run go on."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("run_id", type=int)
        parser.add_argument("--as", dest="username", required=True, help="who decides")
        parser.add_argument("--decision", default="approve",
                            choices=sorted(Decision.values), help="default: approve")
        parser.add_argument("--comment", default="", help="comment, or guidance for an answer")
        for name, option in CHOICE_OPTIONS.items():
            parser.add_argument(f"--{option.replace('_', '-')}", dest=option, default=None,
                                help=f"publish request: the {name} to publish with (default: "
                                     "what the review page proposes)")
        parser.add_argument("--enqueue", action="store_true",
                            help="send the next step to the workers instead of running it here")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        run = Run.objects.filter(id=options["run_id"]).first()
        if run is None:
            raise CommandError(f"no run with id {options['run_id']}")
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"no user named {options['username']!r}")
        approval = selectors.pending_approval(run)
        if approval is None:
            raise CommandError(f"run {run.id} has no pending approval request ({run.status})")
        form = self._form(approval, options)
        dispatch = outbox.enqueue_step if options["enqueue"] else None
        try:
            outcome = decision_cast(approval=approval, user=user, form=form, dispatch=dispatch)
        except (ApprovalRefused, ChoiceRefused) as error:  # the page's words: nothing decided
            raise CommandError(str(error)) from None
        if not outcome.decided:
            self._report_vote(outcome, form)
            return
        if dispatch is None:
            run = driving.run_drive(run_id=run.id)
        summary = selectors.run_summary(run)
        published = self._published(form, outcome)
        if options["json"]:
            self.stdout.write(json.dumps({**summary, "published": published}))
            return
        decided = outcome.approval.get_status_display().lower()
        self.stdout.write(f"{approval.kind} request {decided}: run {run.id} is "
                          f"now {summary['status']}"
                          + (f", waiting for a {summary['pending_approval']} approval"
                             if summary["pending_approval"] else ""))
        approved = outcome.approval.status == ApprovalRequest.Status.APPROVED
        if approval.kind == ApprovalRequest.Kind.PUBLISH and approved:
            self._report_publication(run, published, user)

    def _form(self, approval: ApprovalRequest, options: dict[str, Any]) -> ApprovalDecisionForm:
        """The review page's form, filled as the command was told; a choice left out keeps
        what the page proposes."""
        data: dict[str, object] = {"decision": options["decision"],
                                   "comment": options["comment"],
                                   "candidate": approval_candidate(approval)}
        form = decision_form(approval, data)
        for name in form.choice_names:
            field = form.fields[name]
            given = options.get(CHOICE_OPTIONS.get(name, name))
            if given is not None and field.disabled:
                self.stderr.write(f"{_flag(name)} is ignored: {field.help_text}")
            data[name] = given if given is not None else form.get_initial_for_field(field, name)
        unused = [_flag(name) for name, option in CHOICE_OPTIONS.items()
                  if options.get(option) is not None and name not in form.choice_names]
        if unused:
            raise CommandError(f"{', '.join(unused)} only apply to approving a publish request "
                               "that has not been submitted yet; nothing was decided")
        if not form.is_valid():
            problems = [(f"{name}: " if name != "__all__" else "") + " ".join(map(str, errors))
                        for name, errors in form.errors.items()]
            raise CommandError("nothing was decided:\n  " + "\n  ".join(problems))
        return form

    def _report_vote(self, outcome: VoteOutcome, form: ApprovalDecisionForm) -> None:
        tally = outcome.tally
        line = f"vote recorded: {tally.approvals} of {tally.needed} approvals"
        if form.publishes:
            line += (f"; it is published once {tally.remaining} more reviewer(s) approve "
                     "(the review page, or this command as them)")
        self.stdout.write(line)

    @staticmethod
    def _published(form: ApprovalDecisionForm, outcome: VoteOutcome) -> dict[str, str] | None:
        """The version the decision put live, as the review page shows it (None: none)."""
        if form.extra is None or outcome.approval.status != ApprovalRequest.Status.APPROVED:
            return None
        version = form.extra.page(outcome.approval).get("published")
        if version is None:
            return None
        plugin = version.plugin
        return {"plugin": plugin.name, "version": version.version,
                "visibility": plugin.visibility, "category": plugin.category,
                "who_sees_it": plugin.get_visibility_display(),
                "category_label": plugin.get_category_display()}

    def _report_publication(self, run: Run, published: dict[str, str] | None,
                            user: User) -> None:
        if published is not None:
            self.stdout.write(f"published   {published['plugin']} {published['version']} "
                              f"(who sees it: {published['who_sees_it']}; category: "
                              f"{published['category_label']})")
            return
        # Approved, yet nothing is live: say what is left, in the words of the next command.
        self.stdout.write(self.style.WARNING(
            f"nothing was published: run {run.id}'s result is not in the marketplace (its "
            "plugin.toml could not be read, or a version of it was already submitted). Its "
            "review page says why; to publish the run's files by hand: `manage.py "
            f"plugin_publish DIR --team {run.project.team.slug} --approve-as "
            f"{user.get_username()}`"))
