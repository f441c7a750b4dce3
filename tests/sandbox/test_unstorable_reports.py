"""What a sandbox job writes back is storable (autocoder/runtime/storable.py): its output, its
test report and the quality pipeline's result carry U+FFFD where the plugin's own code put a
NUL or a lone surrogate, which PostgreSQL keeps in neither text nor jsonb. The first test runs
a plugin's failing tests for real (bwrap, the plugin runtime); the others hand the parsers the
files a plugin's process could have written in the report's place."""

from __future__ import annotations

import json

import pytest

from autocoder.quality.pipeline import _load
from autocoder.runtime.storable import MAX_DEPTH, storable_loads
from autocoder.sandbox.output import decode_output
from autocoder.sandbox.pytest_runner import REPORT_FILE, build_report, run_pytest
from autocoder.sandbox.types import RunResult

FFFD = "\ufffd"


def clean(text: str) -> bool:
    return "\x00" not in text and not any("\ud800" <= c <= "\udfff" for c in text)


def test_a_test_failing_with_a_nul_and_a_lone_surrogate_is_reported_storable() -> None:
    report = run_pytest({"tests/__init__.py": "", "tests/test_words.py": (
        "def test_nul():\n    raise ValueError('a' + chr(0) + 'b')\n\n"
        "def test_half():\n    raise ValueError('c' + chr(0xD800) + 'd')\n\n"
        "def test_prints():\n    print('out' + chr(0))\n    assert False\n")})
    assert (report.passed, report.failed) == (0, 3), report
    messages = {o.nodeid.rpartition("::")[2]: o.message for o in report.outcomes}
    assert f"ValueError: a{FFFD}b" in messages["test_nul"]
    assert f"ValueError: c{FFFD}d" in messages["test_half"]
    assert clean(json.dumps(report.stored(), ensure_ascii=False))


def forged(report: bytes) -> RunResult:
    return RunResult(exit_code=1, timed_out=False, oom=False, killed_reason=None, stdout="",
                     stderr="", stdout_truncated=False, stderr_truncated=False, duration_ms=1,
                     backend="bwrap", files={REPORT_FILE: report})


def test_a_report_file_with_escaped_nul_and_surrogates_is_read_storable() -> None:
    raw = json.dumps({"outcomes": [{"nodeid": "tests/t.py::x\u0000", "outcome": "failed",
                                    "message": "m\u0000 \ud800"}]}).encode()
    [outcome] = build_report(forged(raw)).outcomes
    assert (outcome.nodeid, outcome.message) == (f"tests/t.py::x{FFFD}", f"m{FFFD} {FFFD}")


def test_a_report_nested_too_deep_for_the_parser_is_no_report_not_a_crash() -> None:
    raw = b'{"outcomes": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    report = build_report(forged(raw))
    assert [o.nodeid for o in report.outcomes] == ["<session>"]
    assert _load(raw) == {}
    with pytest.raises(ValueError, match=f"more than {MAX_DEPTH} levels"):
        storable_loads(raw)


def test_the_quality_result_and_the_output_are_storable() -> None:
    raw = json.dumps({"readme": [{"block": 1, "stderr": "E\u0000\udfff"}]}).encode()
    assert _load(raw) == {"readme": [{"block": 1, "stderr": f"E{FFFD}{FFFD}"}]}
    assert decode_output(b"a\x00b\xff") == f"a{FFFD}b{FFFD}"
