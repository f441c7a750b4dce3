"""The plugin's automatic name, made from the words of the request."""

from __future__ import annotations

import re
import sys

from autocoder.engine.spec import package_name

NAME_MAX_CHARS = 40
_STOPWORDS = frozenset(
    "a an and are as at be but by can could do does for from get gets give gives has have i i'd "
    "i'm in into is it its it's just like me my need needs of on or our please should so some "
    "something that the their them then there these thing this to tool plugin app program "
    "script us want wants we what when which who will with would you your".split())


def slugify(text: str, *, limit: int = NAME_MAX_CHARS) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:limit].strip("-")


def derive_plugin_name(request: str) -> str:
    """A short name from the request: "...a weekly schedule for my team" -> weekly-schedule-team."""
    words = [w for w in re.findall(r"[a-z0-9']+", request.lower()) if w not in _STOPWORDS]
    name = slugify("-".join(words[:3])) or "my-plugin"
    return name if package_name(name) not in sys.stdlib_module_names else f"{name}-plugin"
