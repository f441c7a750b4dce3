"""Retrieval on the real reference: the held-out questions, names in plans, the prompts."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from autocoder.engine.prompting import PromptContext, build_messages
from autocoder.engine.spec import Spec
from autocoder.reference.loading import LoadReport, load_reference
from autocoder.reference.retrieval import reference_for

pytestmark = pytest.mark.django_db


def test_held_out_questions_find_the_right_entry_in_the_top_5(
        loaded_reference: LoadReport) -> None:
    out = StringIO()
    call_command("reference_eval", "--json", stdout=out)
    report = json.loads(out.getvalue().strip().splitlines()[-1])
    misses = [(r["question"], r["top"]) for r in report["results"] if r["rank"] is None]
    print(f"reference_eval: {report['answered']}/{report['total']}, p50 {report['p50_ms']} ms;"
          f" load: {loaded_reference.entries} entries in {loaded_reference.seconds:.1f} s"
          f" ({loaded_reference.embedded} embedded)")
    assert report["total"] == 30
    assert report["answered"] >= 27, misses
