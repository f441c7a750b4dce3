"""The pgvector extension, created before any app declares a vector column."""

from __future__ import annotations

from typing import ClassVar

from django.db import migrations
from pgvector.django import VectorExtension


class Migration(migrations.Migration):
    initial = True
    dependencies: ClassVar[list[tuple[str, str]]] = []
    operations = [VectorExtension()]
