"""The runtime's reference loaded once per test module (embedding it is the slow part: the
vectors are kept beside reference.json, so only the first load on a machine embeds)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from autocoder.reference.loading import LoadReport, load_reference, reference_path
from autocoder.reference.models import ReferenceSet
from autocoder.runtime import runtime_problem


def runtime_reference() -> Path:
    """The runtime's reference.json; fails (does not skip) when the runtime is not built."""
    problem = runtime_problem()
    assert problem is None, f"the plugin runtime cannot be used: {problem}"
    path = reference_path()
    if not path.exists():  # a runtime built before the reference was extracted
        from autocoder.runtime.build import write_reference

        write_reference(path.parent)
    return path


@pytest.fixture(scope="module")
def loaded_reference(django_db_setup: None, django_db_blocker: pytest.FixtureRequest
                     ) -> Iterator[LoadReport]:
    path = runtime_reference()
    with django_db_blocker.unblock():  # type: ignore[attr-defined]
        report = load_reference(path=path)
        yield report
        ReferenceSet.objects.all().delete()
