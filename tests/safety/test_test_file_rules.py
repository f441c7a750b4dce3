"""bandit's B101 (assert_used) is about code that ships: in a plugin's test files an assert
is the test, so the gate does not report it there; everything else is still reported."""

from __future__ import annotations

from autocoder.safety import finding_applies, scan_files

PLUGIN = "def double(x):\n    return 2 * x\n"
TESTS = "from pkg.plugin import double\n\n\ndef test_double():\n    assert double(2) == 4\n"
WEAK_HASH = "import hashlib\n\n\ndef digest(data):\n    return hashlib.md5(data).hexdigest()\n"


def rules(files: dict[str, str]) -> list[tuple[str, str]]:
    return [(f.file, f.rule) for f in scan_files(files).findings]


def test_an_assert_in_a_test_file_is_no_finding() -> None:
    report = scan_files({"pkg/plugin.py": PLUGIN, "tests/test_x.py": TESTS,
                         "tests/conftest.py": "assert True\n", "pkg/double_test.py": TESTS})
    assert report.findings == []
    assert report.verdict == "pass"


def test_an_assert_in_plugin_code_is_still_reported() -> None:
    found = rules({"pkg/plugin.py": PLUGIN + "\nassert double(1) == 2\n"})
    assert found == [("pkg/plugin.py", "B101")]


def test_a_dangerous_call_without_any_assert_still_blocks_beside_clean_tests() -> None:
    report = scan_files({"pkg/plugin.py": WEAK_HASH, "tests/test_x.py": TESTS})
    assert [(f.file, f.rule, f.severity) for f in report.findings] == [
        ("pkg/plugin.py", "B324", "HIGH")]
    assert report.verdict == "block"


def test_a_dangerous_call_in_a_test_file_is_still_reported() -> None:
    found = rules({"pkg/plugin.py": PLUGIN, "tests/test_x.py": TESTS + "\n\n" + WEAK_HASH})
    assert found == [("tests/test_x.py", "B324")]


def test_stored_reports_are_read_with_the_same_rule() -> None:
    assert not finding_applies("bandit", "B101", "tests/test_x.py")
    assert finding_applies("bandit", "B101", "pkg/plugin.py")
    assert finding_applies("bandit", "B324", "tests/test_x.py")
    assert finding_applies("ast", "B101", "tests/test_x.py")  # only bandit's test id
