from __future__ import annotations

import pytest
from django.db import connection


@pytest.mark.django_db
def test_vector_extension_is_created_by_migrations() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        assert cursor.fetchone() is not None
        # A real vector operation, not just the catalogue row: cosine distance of two vectors.
        cursor.execute("SELECT '[1,0,0]'::vector <=> '[0,1,0]'::vector")
        assert cursor.fetchone()[0] == pytest.approx(1.0)


@pytest.mark.django_db
def test_no_model_changes_are_missing_a_migration() -> None:
    from django.core.management import call_command

    call_command("makemigrations", "--check", "--dry-run", verbosity=0)
