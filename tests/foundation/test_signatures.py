from __future__ import annotations

from autocoder.signatures import normalize_error_signature


def test_paths_lines_addresses_and_values_are_stripped() -> None:
    first = 'File "/tmp/run-1/weekly/plugin.py", line 12\nKeyError: \'monday\' at 0x7f3a2b'
    second = 'File "/tmp/run-9/weekly/plugin.py", line 40\nKeyError: \'tuesday\' at 0x55aa10'
    assert normalize_error_signature(first) == normalize_error_signature(second)
    assert "KeyError" in normalize_error_signature(first)


def test_different_errors_keep_different_signatures() -> None:
    assert normalize_error_signature("TypeError: bad operand") != normalize_error_signature(
        "ValueError: bad operand")


def test_empty_and_huge_inputs() -> None:
    assert normalize_error_signature("") == ""
    assert len(normalize_error_signature("E" * 100_000)) <= 300
