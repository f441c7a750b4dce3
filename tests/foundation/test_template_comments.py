"""Django's `{# ... #}` comment ends at the end of its line: one spread over several lines is
shown to users as text. Longer comments use {% comment %} ... {% endcomment %}."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_no_template_spreads_a_short_comment_over_several_lines() -> None:
    opened = re.compile(r"\{#(?!.*#\})")
    found = [f"{path.relative_to(ROOT)}:{number}"
             for path in sorted((ROOT / "templates").rglob("*.html"))
             for number, line in enumerate(path.read_text().splitlines(), 1)
             if opened.search(line)]
    assert not found, f"a {{# comment #}} must end on its own line: {found}"
