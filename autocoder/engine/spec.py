"""The spec: what an interview produces and what a generation run builds (docs/engine.md, "Spec
format").

Validation reports every problem at once, each naming the field in plain words, because the
person fixing a spec file (or the wizard showing it) should not have to fix one error at a time.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

# Names: letters, digits, - and _, with at least one letter or digit (so the package name means
# something); the plugin contract's rule, which plugin.toml follows too.
from autocoder.engine.spec_schedule import ScheduleSpec, check_schedule
from autocoder.engine.spec_services import Services, check_example_services, check_services
from autocoder.plugins.names import NAME_PATTERN, package_name
from autocoder.quality.strategies import STRATEGIES, default_strategy

AUTONOMY_LEVELS: tuple[str, ...] = ("guided", "semi", "full")

MAX_SUMMARY_CHARS = 4000
MAX_DESCRIPTION_CHARS = 2000
MAX_COMMANDS = 20
MAX_EXAMPLES_PER_COMMAND = 30
MAX_EXAMPLE_JSON_CHARS = 20000
MAX_CONSTRAINTS = 30
MAX_CONSTRAINT_CHARS = 1000
# The API documentation a requester pasted or uploaded for the services the plugin talks to.
MAX_API_DOCS_CHARS = 100_000

# Method names the scaffolded Plugin class already uses; a command may not take them over.
RESERVED_METHODS = frozenset({"on_command", "on_initialize", "on_event"})
# A plugin package sits first on sys.path when its tests run, so it must not hide a module the
# tests themselves import (the standard library, pytest) or the plugin's own tests/ package.
_SHADOWED = frozenset(sys.stdlib_module_names) | {
    "tests", "conftest", "pytest", "_pytest", "pluggy",
    "_autocoder_testing", "_autocoder_host", "_autocoder_pytest_report",  # the test harness
    "_autocoder_http", "_autocoder_hosts",
}

NUL = "\x00"
_NAME_RULE = "must be 1-64 characters: letters, digits, - and _ (at least one letter or digit)"
_TOP_FIELDS = ("name", "summary", "commands", "constraints", "autonomy", "quality_threshold",
               "max_iterations", "services", "testing_strategy", "api_docs", "schedule")
_COMMAND_FIELDS = ("name", "description", "examples")
_EXAMPLE_FIELDS = ("input", "output", "http", "settings")


class ExampleDict(TypedDict, total=False):
    """`Example.as_dict()`: `http` and `settings` only when the example has them."""
    input: dict[str, object]  # the command's payload, any JSON object
    output: object
    http: list[dict[str, object]]
    settings: dict[str, str]


@dataclass(frozen=True)
class Example:
    input: dict[str, Any]
    output: Any
    # What the services answer in this example, and the settings' values for it
    # (autocoder/engine/spec_services.py); empty for a plugin that talks to nothing.
    http: tuple[dict[str, Any], ...] = ()
    settings: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> ExampleDict:
        data: ExampleDict = {"input": _json_copy(self.input), "output": _json_copy(self.output)}
        if self.http:
            data["http"] = _json_copy(list(self.http))
        if self.settings:
            data["settings"] = dict(self.settings)
        return data


@dataclass(frozen=True)
class CommandSpec:
    name: str
    description: str
    examples: tuple[Example, ...]


@dataclass(frozen=True)
class Spec:
    name: str
    summary: str
    commands: tuple[CommandSpec, ...]
    constraints: tuple[str, ...] = ()
    autonomy: str = "semi"
    quality_threshold: float = 0.85
    max_iterations: int = 10
    services: Services = Services()
    # How hard the plugin is tested (autocoder/quality/strategies.py); "" means the default
    # for what the plugin touches, filled in when the Spec is made.
    testing_strategy: str = ""
    api_docs: str = ""  # the services' API documentation, as the requester gave it
    # When it runs by itself (autocoder/engine/spec_schedule.py); None: only when called.
    schedule: ScheduleSpec | None = None

    def __post_init__(self) -> None:
        if not self.testing_strategy:
            object.__setattr__(self, "testing_strategy", spec_default_strategy(self.services))

    @property
    def package(self) -> str:
        return package_name(self.name)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready copy that `spec_from_dict` turns back into an equal Spec."""
        return {
            "name": self.name,
            "summary": self.summary,
            "commands": [
                {
                    "name": command.name,
                    "description": command.description,
                    "examples": [ex.as_dict() for ex in command.examples],
                }
                for command in self.commands
            ],
            "constraints": list(self.constraints),
            "autonomy": self.autonomy,
            "quality_threshold": self.quality_threshold,
            "max_iterations": self.max_iterations,
            # written only when the plugin talks to something: older specs read as they were
            **({"services": self.services.as_dict()} if self.services else {}),
            "testing_strategy": self.testing_strategy,
            **({"api_docs": self.api_docs} if self.api_docs else {}),
            **({"schedule": self.schedule.as_dict()} if self.schedule is not None else {}),
        }


def spec_default_strategy(services: Services) -> str:
    """The testing strategy of a spec that names none: comprehensive for one that reaches
    another service or holds secrets, else basic."""
    return default_strategy(talks_to_hosts=bool(services.hosts or services.address_settings),
                            has_secrets=any(s.secret for s in services.settings))


class SpecError(ValueError):
    """Every problem found in a spec; `errors` lists them, each starting with the field."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = list(errors)
        super().__init__("; ".join(self.errors))


def spec_from_json(text: str) -> Spec:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        raise SpecError([f"{where}: not valid JSON ({exc.msg})"]) from None
    except (TypeError, ValueError, RecursionError) as exc:  # not text, too deeply nested, ...
        raise SpecError([f"spec: not valid JSON ({exc})"]) from None
    return spec_from_dict(data)


def spec_from_dict(data: object) -> Spec:
    errors: list[str] = []
    if not isinstance(data, dict):
        raise SpecError(["spec: must be a JSON object"])
    errors += _nul_errors(data)
    _check_unknown(data, _TOP_FIELDS, "", errors)
    name = _check_name(data, errors)
    summary = _check_text(data, "summary", "summary", MAX_SUMMARY_CHARS, errors, required=True)
    services = check_services(data.get("services"), errors)
    commands = _check_commands(data.get("commands"), services, errors)
    constraints = _check_constraints(data.get("constraints", []), errors)
    autonomy = data.get("autonomy", "semi")
    if autonomy not in AUTONOMY_LEVELS:
        errors.append(f"autonomy: must be one of {', '.join(AUTONOMY_LEVELS)} (got {autonomy!r})")
    threshold = _check_threshold(data.get("quality_threshold", 0.85), errors)
    iterations = _check_iterations(data.get("max_iterations", 10), errors)
    strategy = data.get("testing_strategy") or spec_default_strategy(services)
    if not isinstance(strategy, str) or strategy not in STRATEGIES:
        errors.append(f"testing_strategy: must be one of {', '.join(STRATEGIES)} "
                      f"(got {strategy!r})")
    api_docs = _check_text(data, "api_docs", "api_docs", MAX_API_DOCS_CHARS, errors,
                           required=False)
    schedule = check_schedule(data.get("schedule"), [c.name for c in commands if c.name], errors)
    if errors:
        raise SpecError(errors)
    return Spec(name=name, summary=summary, commands=commands, constraints=constraints,
                autonomy=autonomy, quality_threshold=threshold, max_iterations=iterations,
                services=services, testing_strategy=strategy, api_docs=api_docs,
                schedule=schedule)


def _nul_errors(data: dict[Any, Any], limit: int = 20) -> list[str]:
    """A NUL character ("\\u0000" in JSON) anywhere in the spec, field by field.

    The spec ends up in PostgreSQL text (the run, the interview), which cannot hold NUL, and in
    generated source files; it is refused here with the field's name instead of failing later.
    Iterative, so nesting that the other checks call too deep cannot overflow the stack here."""
    errors: list[str] = []
    stack: list[tuple[str, object]] = [("", data)]
    while stack and len(errors) < limit:
        where, value = stack.pop()
        if isinstance(value, str) and NUL in value:
            errors.append(f"{where}: contains a NUL character (\\u0000), which cannot be stored")
        elif isinstance(value, dict):
            for key, item in reversed(list(value.items())):
                shown = str(key).replace(NUL, "\\u0000")  # never echo the NUL itself
                field = f"{where}.{shown}" if where else shown
                if isinstance(key, str) and NUL in key:
                    errors.append(f"{where or 'spec'}: a field name contains a NUL character "
                                  "(\\u0000), which cannot be stored")
                stack.append((field, item))
        elif isinstance(value, list):
            stack.extend((f"{where}[{i}]", item) for i, item in reversed(list(enumerate(value))))
    return errors


def _check_unknown(data: dict[Any, Any], allowed: tuple[str, ...], where: str,
                   errors: list[str]) -> None:
    for key in data:
        if key not in allowed:
            field = f"{where}.{key}" if where else str(key)
            errors.append(f"{field}: unknown field (expected {', '.join(allowed)})")


def _check_name(data: Mapping[str, object], errors: list[str]) -> str:
    name = data.get("name")
    if name is None:
        errors.append("name: is required")
    elif not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        errors.append(f"name: {_NAME_RULE}")
    elif package_name(name) in _SHADOWED:
        errors.append(f"name: {name!r} would hide Python's own module {package_name(name)!r};"
                      " choose another name")
    else:
        return name
    return ""


def _check_text(data: Mapping[str, object], key: str, field: str, limit: int, errors: list[str], *,
                required: bool) -> str:
    value = data.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        errors.append(f"{field}: {'is required and ' if required else ''}must be text")
        return ""
    if required and not value.strip():
        errors.append(f"{field}: must not be empty")
        return ""
    if len(value) > limit:
        errors.append(f"{field}: must be at most {limit} characters (got {len(value)})")
    if _has_surrogates(value):
        errors.append(f"{field}: contains characters that are not valid Unicode")
    return value


def _check_commands(commands: object, services: Services,
                    errors: list[str]) -> tuple[CommandSpec, ...]:
    if not isinstance(commands, list) or not commands:
        errors.append("commands: must be a list with at least one command")
        return ()
    if len(commands) > MAX_COMMANDS:
        errors.append(f"commands: at most {MAX_COMMANDS} commands (got {len(commands)})")
    result = [_check_command(raw, f"commands[{i}]", services, errors)
              for i, raw in enumerate(commands)]
    _check_command_names(result, errors)
    if not any(command.examples for command in result):
        errors.append("commands: at least one command needs an example (the examples are the"
                      " acceptance tests)")
    return tuple(result)


def _check_command(raw: object, where: str, services: Services,
                   errors: list[str]) -> CommandSpec:
    if not isinstance(raw, dict):
        errors.append(f"{where}: must be a JSON object")
        return CommandSpec(name="", description="", examples=())
    _check_unknown(raw, _COMMAND_FIELDS, where, errors)
    name = raw.get("name")
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        errors.append(f"{where}.name: {_NAME_RULE}")
        name = ""
    description = _check_text(raw, "description", f"{where}.description",
                              MAX_DESCRIPTION_CHARS, errors, required=False)
    examples = _check_examples(raw.get("examples", []), f"{where}.examples", services, errors)
    return CommandSpec(name=name, description=description, examples=examples)


def _check_command_names(commands: list[CommandSpec], errors: list[str]) -> None:
    seen: dict[str, str] = {}
    for i, command in enumerate(commands):
        if not command.name:
            continue
        method = package_name(command.name)
        if method in RESERVED_METHODS:
            errors.append(f"commands[{i}].name: {command.name!r} is reserved by the plugin"
                          " contract; choose another name")
        elif method in seen:
            same = "is a duplicate of" if seen[method] == command.name else "clashes with"
            errors.append(f"commands[{i}].name: {command.name!r} {same} {seen[method]!r}")
        else:
            seen[method] = command.name


def _check_examples(raw: object, where: str, services: Services,
                    errors: list[str]) -> tuple[Example, ...]:
    if not isinstance(raw, list):
        errors.append(f"{where}: must be a list")
        return ()
    if len(raw) > MAX_EXAMPLES_PER_COMMAND:
        errors.append(f"{where}: at most {MAX_EXAMPLES_PER_COMMAND} examples (got {len(raw)})")
    examples = []
    for i, item in enumerate(raw):
        example = _check_example(item, f"{where}[{i}]", services, errors)
        if example is not None:
            examples.append(example)
    return tuple(examples)


def _check_example(item: object, where: str, services: Services,
                   errors: list[str]) -> Example | None:
    if not isinstance(item, dict):
        errors.append(f"{where}: must be a JSON object with input and output")
        return None
    _check_unknown(item, _EXAMPLE_FIELDS, where, errors)
    ok = True
    if not isinstance(item.get("input"), dict):
        errors.append(f"{where}.input: must be a JSON object")
        ok = False
    if "output" not in item:
        errors.append(f"{where}.output: is required (any JSON value)")
        ok = False
    for key in ("input", "output"):
        problem = _json_problem(item.get(key))
        if key in item and problem:
            errors.append(f"{where}.{key}: {problem}")
            ok = False
    if ok and len(json.dumps([item["input"], item["output"]])) > MAX_EXAMPLE_JSON_CHARS:
        errors.append(f"{where}: must be at most {MAX_EXAMPLE_JSON_CHARS} characters of JSON")
        ok = False
    found: list[str] = []
    http, values = check_example_services(item, services, where, found)
    errors += found
    if not ok or found:
        return None
    return Example(input=_json_copy(item["input"]), output=_json_copy(item["output"]),
                   http=http, settings=values)


def _json_problem(value: object, depth: int = 0) -> str:
    """Why `value` would not survive a JSON round trip unchanged ("" when it would)."""
    if depth > 50:
        return "is nested too deeply"
    if isinstance(value, str):
        return "contains characters that are not valid Unicode" if _has_surrogates(value) else ""
    if value is None or isinstance(value, (bool, int)):
        return ""
    if isinstance(value, float):
        return "" if math.isfinite(value) else "must not be NaN or infinite"
    if isinstance(value, list):
        return next((p for p in (_json_problem(v, depth + 1) for v in value) if p), "")
    if isinstance(value, dict):
        if not all(isinstance(key, str) and not _has_surrogates(key) for key in value):
            return "object keys must be valid text"
        return next((p for p in (_json_problem(v, depth + 1) for v in value.values()) if p), "")
    return f"must be JSON (got {type(value).__name__})"


def _has_surrogates(text: str) -> bool:
    # JSON allows "\\ud800" escapes that no file can be written with; reject them up front.
    return any("\ud800" <= ch <= "\udfff" for ch in text)


def _check_constraints(raw: object, errors: list[str]) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
        errors.append("constraints: must be a list of texts")
        return ()
    if len(raw) > MAX_CONSTRAINTS:
        errors.append(f"constraints: at most {MAX_CONSTRAINTS} (got {len(raw)})")
    for i, item in enumerate(raw):
        if len(item) > MAX_CONSTRAINT_CHARS:
            errors.append(f"constraints[{i}]: must be at most {MAX_CONSTRAINT_CHARS} characters")
        if _has_surrogates(item):
            errors.append(f"constraints[{i}]: contains characters that are not valid Unicode")
    return tuple(item for item in raw if item.strip())


def _check_threshold(value: object, errors: list[str]) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        errors.append(f"quality_threshold: must be a number above 0 and at most 1 (got {value!r})")
        return 0.85
    return float(value)


def _check_iterations(value: object, errors: list[str]) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 50:
        errors.append(f"max_iterations: must be a whole number from 1 to 50 (got {value!r})")
        return 10
    return value


def _json_copy(value: Any) -> Any:
    # A deep copy through JSON, so a Spec never shares mutable data with its caller.
    return json.loads(json.dumps(value))
