"""The API reference of the plugin runtime, searchable by name and by meaning.

One ReferenceEntry per public name (module, class, function, method) of a library plugins may
import or of the reviewed standard library, as the runtime's build extracted it
(autocoder/runtime/reference_extract.py); one ReferenceSet per (library, version, embedder)
loaded, which makes loading idempotent. See docs/engine.md ("Reference docs").
"""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.db import models
from pgvector.django import VectorField

EMBEDDING_DIMENSIONS = 384


class ReferenceSet(models.Model):
    """One library at one version, loaded with one embedder."""

    library = models.CharField(max_length=100)
    version = models.CharField(max_length=50)
    embedded_with = models.CharField(max_length=200)
    entries = models.PositiveIntegerField(default=0)
    loaded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["library", "version", "embedded_with"],
                                               name="reference_set_once")]

    def __str__(self) -> str:
        return f"{self.library} {self.version}"


class ReferenceEntry(models.Model):
    reference_set = models.ForeignKey(ReferenceSet, on_delete=models.CASCADE,
                                      related_name="items")
    name = models.CharField(max_length=300, db_index=True)
    aliases = ArrayField(models.CharField(max_length=300), default=list, blank=True)
    kind = models.CharField(max_length=20)
    signature = models.TextField(blank=True)
    doc = models.TextField(blank=True)
    library = models.CharField(max_length=100)
    version = models.CharField(max_length=50)
    # A few thousand rows: an exact scan is a few milliseconds, so no approximate index.
    embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS)

    class Meta:
        indexes = [models.Index(fields=["reference_set", "name"], name="reference_set_name")]

    def __str__(self) -> str:
        return self.name
