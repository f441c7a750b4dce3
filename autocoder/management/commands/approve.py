"""`manage.py approve RUN_ID --as USERNAME [--decision D] [--comment TEXT] [--json]`.

Decides the run's pending approval request (for demos and operators without the portal) through
the review page's service, so under the same rules (runs/approval_rules.py: who may decide,
what each decision does, N approvals) and with the same refusals, and - unless --enqueue is
given - drives the run on in this process like `generate` does.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from runs.approval_rules import ApprovalRefused, Decision, approval_candidate
from runs.models import Run
from runs.selectors import results as selectors
from runs.services import driving, outbox
from runs.services.approvals import approval_vote_cast


class Command(BaseCommand):
    help = "Decide the pending approval request of a run and let the run go on."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("run_id", type=int)
        parser.add_argument("--as", dest="username", required=True, help="who decides")
        parser.add_argument("--decision", default="approve",
                            choices=sorted(Decision.values), help="default: approve")
        parser.add_argument("--comment", default="", help="comment, or guidance for an answer")
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
        dispatch = outbox.enqueue_step if options["enqueue"] else None
        try:
            outcome = approval_vote_cast(
                approval=approval, user=user, decision=options["decision"],
                comment=options["comment"], candidate=approval_candidate(approval),
                dispatch=dispatch)
        except ApprovalRefused as error:
            raise CommandError(str(error)) from None
        if not outcome.decided:
            tally = outcome.tally
            self.stdout.write(f"vote recorded: {tally.approvals} of {tally.needed} approvals")
            return
        if dispatch is None:
            run = driving.run_drive(run_id=run.id)
        summary = selectors.run_summary(run)
        if options["json"]:
            self.stdout.write(json.dumps(summary))
        else:
            self.stdout.write(f"{approval.kind} request {options['decision']}: run {run.id} is "
                              f"now {summary['status']}"
                              + (f", waiting for a {summary['pending_approval']} approval"
                                 if summary["pending_approval"] else ""))
