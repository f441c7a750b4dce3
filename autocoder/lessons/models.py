"""Lessons learned: what failed and what fixed it (negative), or what worked (positive).

A lesson belongs to one team (private to it) or to nobody (global, curated by staff). Its
embedding is searched by cosine distance through an HNSW index so later runs of the same team
find it before planning and after each failure.
"""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models.functions import Cast
from pgvector.django import HnswIndex, VectorField

EMBEDDING_DIMENSIONS = 384
# HNSW build parameters, tuned with `manage.py lessons_bench` (docs/lessons.md has the figures):
# ef_construction 64 left recall@10 at 0.966 on 100k clustered lessons, 128 reaches 0.99.
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 128


def _as_float(field: str) -> Cast:
    return Cast(models.F(field), models.FloatField())


class Lesson(models.Model):
    class Kind(models.TextChoices):
        NEGATIVE = "negative", "Mistake and its fix"
        POSITIVE = "positive", "Approach that worked"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    title = models.CharField(max_length=200)
    task_context = models.TextField(blank=True)
    error_signature = models.CharField(max_length=300, blank=True, db_index=True)
    failed_approach = models.TextField(blank=True)
    resolution = models.TextField(blank=True)
    avoidance_rule = models.TextField()
    tags = ArrayField(models.CharField(max_length=40), default=list, blank=True)
    team = models.ForeignKey(
        "teams.Team", null=True, blank=True, on_delete=models.CASCADE, related_name="lessons",
        help_text="Empty for a global lesson, which every team retrieves.",
    )
    retrieved_count = models.PositiveIntegerField(default=0)
    helped_count = models.PositiveIntegerField(default=0)
    not_helped_count = models.PositiveIntegerField(default=0)
    # How often the same mistake (or approach) was seen again and merged into this lesson.
    occurrences = models.PositiveIntegerField(default=1)
    # Laplace-smoothed share of runs the lesson helped: 0.5 before any outcome, so a new lesson
    # is neither trusted nor buried, and one lucky run cannot push it to 1.0.
    reliability = models.GeneratedField(
        expression=(_as_float("helped_count") + 1.0)
        / (_as_float("helped_count") + _as_float("not_helped_count") + 2.0),
        output_field=models.FloatField(),
        db_persist=True,
    )
    # A plain id, not a foreign key: a lesson outlives the project and runs it came from, and
    # the id still says where it was learnt (LessonSource keeps the full history).
    source_run_id = models.BigIntegerField(null=True, blank=True)
    source_iteration = models.PositiveIntegerField(null=True)
    embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS)
    # The model the embedding came from (embedder.embedder_identity); retrieval uses only
    # lessons embedded like the query, and `lessons_reembed` brings the others over.
    embedded_with = models.CharField(max_length=200, default="minilm:all-MiniLM-L6-v2",
                                     db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    retired_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-updated_at", "-id"]
        indexes = [
            HnswIndex(
                name="lesson_embedding_hnsw",
                fields=["embedding"],
                m=HNSW_M,
                ef_construction=HNSW_EF_CONSTRUCTION,
                opclasses=["vector_cosine_ops"],
            ),
            models.Index(fields=["team", "kind"], name="lesson_team_kind"),
        ]

    def __str__(self) -> str:
        return self.title

    @property
    def is_global(self) -> bool:
        return self.team_id is None

    @property
    def is_retired(self) -> bool:
        return self.retired_at is not None


class LessonSource(models.Model):
    """One (run, iteration) that produced or re-confirmed a lesson; makes extraction idempotent."""

    lesson = models.ForeignKey(Lesson, on_delete=models.CASCADE, related_name="sources")
    # The team that owned the run, so a promoted lesson never shows another team's runs.
    team = models.ForeignKey("teams.Team", null=True, on_delete=models.CASCADE, related_name="+")
    run_id = models.BigIntegerField()
    # 0 stands for "the run as a whole" (a positive lesson without a known final iteration).
    iteration = models.PositiveIntegerField()
    kind = models.CharField(max_length=16, choices=Lesson.Kind.choices)
    merged = models.BooleanField(default=False, help_text="Merged into an existing lesson.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["run_id", "iteration", "kind"], name="lesson_source_once_per_iteration"
            ),
        ]

    def __str__(self) -> str:
        return f"run {self.run_id} iteration {self.iteration} -> lesson {self.lesson_id}"


class LessonOutcome(models.Model):
    """Whether a retrieved lesson helped a run; one row per (lesson, run) so retries count once."""

    lesson = models.ForeignKey(Lesson, on_delete=models.CASCADE, related_name="outcomes")
    run_id = models.BigIntegerField()
    helped = models.BooleanField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["lesson", "run_id"],
                                    name="lesson_outcome_once_per_run"),
        ]

    def __str__(self) -> str:
        verdict = "helped" if self.helped else "did not help"
        return f"lesson {self.lesson_id} {verdict} run {self.run_id}"
