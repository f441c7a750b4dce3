"""The install commands the portal shows, built from the address the page was asked for.

A command a person copies must work as it is on this portal: its scheme (an `http://` portal
gets `http://`, not `https://`), its host, and the token's place named plainly. docs/marketplace.md
("The package index") describes them.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from autocoder.plugins.api_calls import TOKEN_PLACEHOLDER  # one set of words to replace


def index_url_with_token(index_url: str, token: str = TOKEN_PLACEHOLDER) -> str:
    """The index address with `__token__:<token>@` as its credentials, scheme kept."""
    parts = urlsplit(index_url)
    return urlunsplit((parts.scheme, f"__token__:{token}@{parts.netloc}", parts.path,
                       parts.query, parts.fragment))


def pip_command(*, name: str, version: str | None, index_url: str, needs_token: bool,
                token: str = TOKEN_PLACEHOLDER) -> str:
    """`pip install NAME --index-url URL`, pinned to `version` when given, on two lines."""
    requirement = f'"{name}=={version}"' if version else name
    url = index_url_with_token(index_url, token) if needs_token else index_url
    return f"pip install {requirement} \\\n  --index-url {url}"
