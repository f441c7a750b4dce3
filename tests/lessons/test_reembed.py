"""Changing the embedding model: old vectors are never compared with new ones, `doctor` says
what to do, and `lessons_reembed` brings every lesson over, batch by batch, resumably.

The new model is an OpenAI-compatible endpoint played by the local fake of test_embedder.py
(a hosted embeddings API cannot be reached here)."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings

from autocoder.lessons.embedder import EmbedderError, embed_text
from autocoder.lessons.models import Lesson
from autocoder.lessons.selectors import lessons_nearest
from autocoder.lessons.services import lesson_create, lessons_reembed
from config.health import check_embedder
from tests.factories import TeamFactory
from tests.lessons.test_embedder import EmbeddingsFake

pytestmark = pytest.mark.django_db
RULES = ["Lower-case weekday names before looking them up.",
         "Use Decimal for money and round to cents at the end.",
         "Return JSON-serialisable values: convert datetimes to ISO strings."]


@pytest.fixture
def fake() -> Iterator[EmbeddingsFake]:
    server = EmbeddingsFake()
    server.thread.start()
    yield server
    server.server.shutdown()
    server.server.server_close()


@pytest.fixture
def lessons(embedder: object) -> list[Lesson]:
    team = TeamFactory()
    return [lesson_create(kind="negative", team_id=team.id, title=rule[:40], avoidance_rule=rule)
            for rule in RULES]


def new_model(fake: EmbeddingsFake) -> override_settings:
    return override_settings(EMBEDDER="openai", EMBEDDINGS_BASE_URL=fake.base_url,
                             EMBEDDINGS_MODEL="nomic-embed")


def test_lessons_of_the_old_model_are_not_compared_and_doctor_says_what_to_do(
        lessons: list[Lesson], fake: EmbeddingsFake) -> None:
    team_id = lessons[0].team_id
    assert check_embedder().ok
    with new_model(fake):
        query = embed_text(RULES[0])
        assert lessons_nearest(team_id=team_id, vector=query, limit=5) == []
        check = check_embedder()
        assert not check.ok and "3 lessons embedded with another model" in check.detail
        assert "lessons_reembed" in check.hint


def test_reembedding_brings_every_lesson_to_the_new_model(
        lessons: list[Lesson], fake: EmbeddingsFake) -> None:
    team_id = lessons[0].team_id
    with new_model(fake):
        out = io.StringIO()
        call_command("lessons_reembed", "--batch", "2", stdout=out)
        assert out.getvalue().splitlines() == [
            "embedding with openai:nomic-embed", "  2/3 lessons", "  3/3 lessons",
            "3 lessons embedded again"]
        assert set(Lesson.objects.values_list("embedded_with", flat=True)) == {
            "openai:nomic-embed"}
        assert [len(r["body"]["input"]) for r in fake.requests] == [2, 1]
        nearest = lessons_nearest(team_id=team_id, vector=embed_text(RULES[1]), limit=1)
        assert nearest[0].lesson.avoidance_rule == RULES[1]
        assert check_embedder().ok
        again = io.StringIO()
        call_command("lessons_reembed", stdout=again)
        assert "every lesson is already embedded with this model" in again.getvalue()


def test_an_interrupted_reembedding_keeps_its_progress(
        lessons: list[Lesson], fake: EmbeddingsFake) -> None:
    def fail_after_first_batch(done: int, total: int) -> None:
        fake.status = 503

    with new_model(fake):
        with pytest.raises(EmbedderError, match="503"):
            lessons_reembed(batch_size=2, progress=fail_after_first_batch)
        assert Lesson.objects.filter(embedded_with="openai:nomic-embed").count() == 2
        fake.status = 200
        assert lessons_reembed() == 1
        with pytest.raises(CommandError, match="--batch must be at least 1"):
            call_command("lessons_reembed", "--batch", "0")
