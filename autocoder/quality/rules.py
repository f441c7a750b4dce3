"""The lint stage's reviewed rule set (ruff) and the complexity bound (docs/engine.md, "The
quality pipeline"). Not all rules: each family below is here because its findings are real
defects or real readability problems in a small plugin, and none of them is a matter of taste
the formatter already settles.
"""

from __future__ import annotations

LINE_LENGTH = 99
MAX_COMPLEXITY = 10  # ruff's C901 (McCabe): a function over this is named by "complexity"
COMPLEXITY_RULE = "C901"

LINT_SELECT: tuple[str, ...] = (
    "F",    # pyflakes: undefined names, unused imports and variables, broken f-strings
    "E4", "E7", "E9",  # pycodestyle errors that are bugs or syntax (imports, `== None`,
                       # bare except, lambda assignment, syntax); not the layout ones
    "W6",   # invalid escape sequences (a regex that does not match what it says)
    "B",    # bugbear: mutable default arguments, loop variables in closures, assert False
    "UP",   # pyupgrade: old syntax on the runtime's Python 3.11 (typing.List, % format)
    "SIM",  # simplify: nested ifs, needless bool(), try/except/pass where suppress fits
    "C4",   # comprehensions: list(...) around generators, dict() with literals
    "RET",  # returns: inconsistent implicit/explicit returns (a function that sometimes
            # returns None by accident)
    "PIE",  # unnecessary pass, duplicate class fields
    "PLE",  # pylint errors: wrong format-string arguments, return in __init__
    "S",    # bandit-like security checks (eval, pickle, shell), also seen by the safety gate
    "BLE",  # blind `except Exception` that hides the plugin's errors from the requester
    "RUF",  # ruff's own: mutable class defaults, ambiguous unicode, unused noqa
    COMPLEXITY_RULE,  # McCabe complexity; reported by the complexity stage
)
LINT_IGNORE: tuple[str, ...] = (
    "S101",    # assert is how pytest tests are written
    "S311",    # random for shuffling or sampling data, not for secrets
    "RUF001", "RUF002", "RUF003",  # plugins handle text in every language
    "UP007",   # `Optional[X]` vs `X | None`: taste
    "SIM108",  # ternary instead of if/else: taste
    "RET504",  # assignment before return: often clearer
    "B905",    # zip(strict=): taste in small data code
)
