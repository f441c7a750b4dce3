"""Markdown as pages show it, sanitised: plugin READMEs (marketplace) and comments (projects).

nh3 keeps only harmless tags and attributes; images are dropped (a remote image would tell a
third party who reads the page), links get rel="noopener noreferrer nofollow".
"""

from __future__ import annotations

import markdown
import nh3

TAGS = nh3.ALLOWED_TAGS - {"img"}


def render_markdown(text: str) -> str:
    """`text` (Markdown) as safe HTML."""
    html = markdown.markdown(text, extensions=["fenced_code", "tables", "sane_lists"],
                             output_format="html")
    return nh3.clean(html, tags=TAGS, link_rel="noopener noreferrer nofollow")
