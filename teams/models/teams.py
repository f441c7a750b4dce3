from __future__ import annotations

from django.conf import settings
from django.db import models


class GenerationMode(models.TextChoices):
    """Whether runs take their steps (docs/portal.md, "Pausing generation"): the strictest of
    the site's mode and the team's applies (teams/selectors/generation.py)."""

    AUTOMATIC = "automatic", "Automatic"  # runs start and go on by themselves
    MANUAL = "manual", "Manual"  # every new run waits for a person to press Start
    PAUSED = "paused", "Paused"  # no run takes a new step until generation resumes


class Team(models.Model):
    name = models.CharField(max_length=120)
    slug = models.SlugField(max_length=60, unique=True)
    # Small teams (a household, a solo founder) let the requester approve their own gates.
    requester_may_approve = models.BooleanField(
        default=False, help_text="Requesters may decide approval requests on their own projects."
    )
    required_approvals = models.PositiveSmallIntegerField(
        default=1, help_text="How many approvals a gate needs before the run continues."
    )
    # What generation may cost, in the site's currency (COST_CURRENCY); empty: no limit. A run
    # that reaches one pauses and asks the team's admins (runs/budgets.py, docs/llm.md "Budgets").
    monthly_budget = models.DecimalField(
        max_digits=12, decimal_places=2, null=True, blank=True,
        help_text="What all runs together may cost per calendar month.")
    run_budget = models.DecimalField(
        max_digits=12, decimal_places=2, null=True, blank=True,
        help_text="What one run may cost before a team admin is asked to allow more.")
    generation_mode = models.CharField(
        max_length=12, choices=GenerationMode.choices, default=GenerationMode.AUTOMATIC,
        help_text="Whether this team's runs start and go on by themselves.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "projects_team"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    class Role(models.TextChoices):
        REQUESTER = "requester", "Requester"
        REVIEWER = "reviewer", "Reviewer"
        ADMIN = "admin", "Admin"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.REQUESTER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "projects_membership"
        constraints = [
            models.UniqueConstraint(fields=["team", "user"], name="unique_membership"),
        ]
        ordering = ["team", "user"]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} as {self.role}"

    @property
    def can_review(self) -> bool:
        return self.role in {self.Role.REVIEWER, self.Role.ADMIN}

    @property
    def is_admin(self) -> bool:
        return self.role == self.Role.ADMIN


class SiteTeamSettings(models.Model):
    """What the whole site says about teams, set by site admins on /settings/teams/. One row;
    until it is saved the defaults below apply (teams/selectors/site.py)."""

    SINGLETON_ID = 1

    class TeamCreation(models.TextChoices):
        SITE_ADMINS = "site_admins", "Only site administrators"
        ANYONE = "anyone", "Anyone who can sign in"

    # Safest by default: a new team runs generation on the site's model, at the site's cost.
    team_creation = models.CharField(max_length=16, choices=TeamCreation.choices,
                                     default=TeamCreation.SITE_ADMINS)
    # Copied onto each team as it is created (its admins change them in the team settings).
    default_monthly_budget = models.DecimalField(
        max_digits=12, decimal_places=2, null=True, blank=True,
        help_text="The monthly budget a new team starts with; empty: no limit.")
    default_run_budget = models.DecimalField(
        max_digits=12, decimal_places=2, null=True, blank=True,
        help_text="The budget per run a new team starts with; empty: no limit.")
    generation_mode = models.CharField(
        max_length=12, choices=GenerationMode.choices, default=GenerationMode.AUTOMATIC,
        help_text="Whether runs of every team start and go on by themselves.")
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")

    class Meta:
        db_table = "projects_siteteamsettings"
        verbose_name = verbose_name_plural = "site settings for teams"

    def __str__(self) -> str:
        return "site settings for teams"
