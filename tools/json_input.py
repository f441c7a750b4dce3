"""JSON from people and API clients, read the same way at every door of the tools app: the
HTTP API's body, the form's JSON boxes and JSON files, a schedule's input.

Python's `json` accepts more than JSON, and more than PostgreSQL and the sandbox's call keep:
NaN and Infinity (not JSON), a number too large for a float (read as Infinity), the NUL
character and lone surrogates (`\\ud800`: not a character, not UTF-8) in strings, and nesting
so deep that reading it exhausts the interpreter's stack. Each is refused here with the reason
in plain words, so a client gets a 400 and a person a form error, never a 500.
`json_input_problem` checks a value already read (a service's caller hands one over).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from autocoder.runtime.storable import MAX_DEPTH, storable_text

SURROGATE = re.compile("[\ud800-\udfff]")

NOT_FINITE = "NaN and Infinity are not JSON numbers: send a number or null instead"


class JsonInputError(ValueError):
    """Input that is not JSON the tools can use; `str()` says why. `syntax` is True when the
    text is not JSON at all (the API words that its own way)."""

    def __init__(self, message: str, *, syntax: bool = False) -> None:
        super().__init__(message)
        self.syntax = syntax


def _no_constant(name: str) -> float:
    raise JsonInputError(f"{NOT_FINITE} (found {name}).")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JsonInputError(f"The number {text[:40]} is too large.")
    return value


def json_input_parse(text: str | bytes) -> Any:
    """The JSON value of `text`, or JsonInputError with the reason."""
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except JsonInputError:
        raise
    except RecursionError:
        raise JsonInputError(f"The input is nested too deeply: at most {MAX_DEPTH} levels of "
                             "lists and objects.") from None
    except ValueError as exc:  # JSONDecodeError, not UTF-8, an integer of 5000 digits
        raise JsonInputError(f"This is not valid JSON ({exc}).", syntax=True) from None
    problem = json_input_problem(value)
    if problem is not None:
        raise JsonInputError(problem)
    return value


def json_input_problem(value: Any) -> str | None:
    """Why `value` cannot be used as a call's input, or None: too deep, NaN or Infinity, a
    NUL or a lone surrogate in a key or a string. Walks with a stack, never recursion."""
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        item, where, depth = stack.pop()
        if isinstance(item, str):
            problem = _text_problem(item)
        elif isinstance(item, float):
            problem = None if math.isfinite(item) else NOT_FINITE
        elif isinstance(item, dict | list):
            if depth >= MAX_DEPTH:
                return (f"The input is nested too deeply: at most {MAX_DEPTH} levels of lists "
                        "and objects.")
            problem = _children(item, where, depth, stack)
        else:
            problem = None
        if problem is not None:
            place = storable_text(where[:80]) or "the top"
            return f"{problem} (at {place})."
    return None


def _children(item: dict[Any, Any] | list[Any], where: str, depth: int,
              stack: list[tuple[Any, str, int]]) -> str | None:
    if isinstance(item, list):
        stack.extend((child, f"{where}[{index}]", depth + 1) for index, child in
                     enumerate(item))
        return None
    for key, child in item.items():
        problem = _text_problem(key, "A name") if isinstance(key, str) else None
        if problem is not None:
            return problem
        stack.append((child, f"{where}.{key}" if where else str(key), depth + 1))
    return None


def _text_problem(text: str, what: str = "Text") -> str | None:
    if "\x00" in text:
        return f"{what} in the input holds the NUL character (\\u0000), which cannot be stored"
    if SURROGATE.search(text):
        return (f"{what} in the input holds a lone surrogate (like \\ud800), which is not a "
                "character; send valid Unicode text")
    return None
