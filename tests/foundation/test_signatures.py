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


def test_test_runner_banners_are_skipped_for_the_failure_line() -> None:
    pytest_tail = (
        "E       AssertionError: assert {'a': 2} == {'a': 1}\n"
        "tests/test_acceptance.py:12: AssertionError\n"
        "=========================== short test summary info ============================\n"
        "FAILED tests/test_acceptance.py::test_acceptance - AssertionError: assert {'a': 2}\n"
        "============================== 1 failed in 0.05s ===============================\n")
    signature = normalize_error_signature(pytest_tail)
    assert signature.startswith("FAILED <path>::test_acceptance - AssertionError")
    assert "failed in" not in signature


def test_numbers_with_units_are_stripped_but_the_unit_kept() -> None:
    assert normalize_error_signature("TimeoutError: timed out after 30s") == (
        normalize_error_signature("TimeoutError: timed out after 4.5s"))
    assert normalize_error_signature("TimeoutError: timed out after 30s").endswith("<n>s")
    # Digits inside identifiers are part of the name, not a value.
    assert "utf8" in normalize_error_signature("LookupError: unknown encoding utf8")


def test_a_huge_single_line_is_normalised_quickly() -> None:
    import time

    started = time.perf_counter()
    signature = normalize_error_signature("MemoryError: " + "y" * 1_000_000)
    assert time.perf_counter() - started < 1.0
    assert signature.startswith("MemoryError: yyy") and len(signature) <= 300
