"""The reply protocol: files out of untrusted model text, merging, hashing and diffing."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from autocoder.engine.replies import (
    MAX_FILE_CHARS,
    ParsedReply,
    RejectedFile,
    code_hash,
    diff_stats,
    merge_files,
    parse_reply,
    unified_diff,
)

PROTECTED = frozenset({"tests/test_acceptance.py", "plugin.toml", "tests/conftest.py"})

REPLY = """I will fix the off-by-one in the loop.

```python path=weekly_scheduler/plugin.py
class Plugin:
    def on_command(self, name, payload):
        return {}
```

And add a test:

```python path="tests/test_generated_edges.py"
def test_x():
    assert True
```
Done.
"""


def test_files_and_prose_are_separated() -> None:
    parsed = parse_reply(REPLY)
    assert parsed.files == {
        "weekly_scheduler/plugin.py": "class Plugin:\n    def on_command(self, name, payload):\n"
                                      "        return {}\n",
        "tests/test_generated_edges.py": "def test_x():\n    assert True\n",
    }
    assert parsed.rejected == ()
    assert parsed.prose == "I will fix the off-by-one in the loop.\n\nAnd add a test:\n\nDone."


@pytest.mark.parametrize("opening", [
    "```python path=a/b.py", '```python path="a/b.py"', "```python path='a/b.py'",
    "```path=a/b.py", "~~~python path=a/b.py", "```python title=x path=a/b.py",
    "```python  path = a/b.py", "  ```python path=./a//b.py",
])
def test_opening_fence_variants(opening: str) -> None:
    closing = "~~~" if opening.lstrip().startswith("~") else "```"
    parsed = parse_reply(f"text\n{opening}\nx = 1\n{closing}\n")
    assert parsed.files == {"a/b.py": "x = 1\n"}


def test_quoted_path_may_contain_spaces() -> None:
    assert parse_reply('```md path="docs/user guide.md"\nhi\n```').files == {
        "docs/user guide.md": "hi\n"}


def test_a_longer_fence_carries_a_file_that_contains_fences() -> None:
    text = "````markdown path=README.md\n# Title\n```python\nprint(1)\n```\nend\n````\n"
    assert parse_reply(text).files == {"README.md": "# Title\n```python\nprint(1)\n```\nend\n"}


def test_nested_fences_with_a_language_inside_a_three_backtick_block() -> None:
    """Models often put a README with code examples inside a plain ``` block."""
    text = ("```markdown path=README.md\n# T\n```bash\npip install x\n```\n\n```json\n{}\n```\n"
            "tail\n```\nafter\n")
    parsed = parse_reply(text)
    assert parsed.files == {"README.md": "# T\n```bash\npip install x\n```\n\n```json\n{}\n```\n"
                                         "tail\n"}
    assert parsed.prose == "after"


def test_tilde_fence_is_not_closed_by_backticks() -> None:
    text = "~~~python path=a.py\nx = '''\n```\n'''\n~~~\n"
    assert parse_reply(text).files == {"a.py": "x = '''\n```\n'''\n"}


def test_indented_fence_content_is_dedented() -> None:
    text = "1. the file:\n   ```python path=a.py\n   def f():\n       return 1\n   ```\n"
    assert parse_reply(text).files == {"a.py": "def f():\n    return 1\n"}


def test_crlf_line_endings_become_lf() -> None:
    assert parse_reply("```python path=a.py\r\nx = 1\r\n```\r\n").files == {"a.py": "x = 1\n"}


def test_blocks_without_a_path_stay_in_the_prose() -> None:
    parsed = parse_reply("Run:\n```bash\npytest -q\n```\nthen\n```python path=a.py\nx\n```")
    assert parsed.files == {"a.py": "x\n"}
    assert parsed.prose == "Run:\n```bash\npytest -q\n```\nthen"


def test_the_later_block_for_a_path_wins() -> None:
    text = ("```python path=a.py\nold\n```\n```python path=b.py\nb\n```\n"
            "```python path=./a.py\nnew\n```")
    parsed = parse_reply(text)
    assert parsed.files == {"b.py": "b\n", "a.py": "new\n"}


def test_an_empty_block_means_delete() -> None:
    assert parse_reply("```python path=old.py\n```\n").files == {"old.py": ""}


def test_unterminated_block_is_rejected() -> None:
    parsed = parse_reply("```python path=a.py\nx = 1\n```\n```python path=b.py\ny = 2\n")
    assert parsed.files == {"a.py": "x = 1\n"}
    assert parsed.rejected == (
        RejectedFile("b.py", "unterminated block for b.py (no closing fence)"),)


def test_a_new_file_before_the_closing_fence_rejects_the_open_one() -> None:
    parsed = parse_reply("```python path=a.py\nx = 1\n```python path=b.py\ny = 2\n```\n")
    assert parsed.files == {"b.py": "y = 2\n"}
    assert [r.path for r in parsed.rejected] == ["a.py"]
    assert "unterminated block for a.py" in parsed.rejected[0].reason


@pytest.mark.parametrize(("path", "reason"), [
    ("/etc/passwd", "absolute paths are not allowed"),
    ("C:/x.py", "absolute paths are not allowed"),
    ("../evil.py", "path escapes the plugin root"),
    ("a/../../evil.py", "path escapes the plugin root"),
    ("a/../b.py", "path escapes the plugin root"),
    ("a\\b.py", "path contains a backslash"),
    ("a\x00b.py", "path contains control characters"),
    ("a\x1bb.py", "path contains control characters"),
    ("~/.bashrc", "home-directory paths are not allowed"),
    ("pkg/", "path names a folder"),
    (".", "empty path"),
    ("x/" * 100 + "y.py", "path is longer than 200 characters"),
])
def test_unsafe_paths_are_rejected_with_a_reason(path: str, reason: str) -> None:
    parsed = parse_reply(f'```python path="{path}"\nimport os\n```\n```python path=ok.py\nok\n```')
    assert parsed.files == {"ok.py": "ok\n"}
    assert len(parsed.rejected) == 1 and parsed.rejected[0].reason.startswith(reason)
    assert len(parsed.rejected[0].path) <= 200


def _mutations(rng: random.Random, text: str) -> str:
    pieces = ["```", "````", "~~~", "path=", 'path="', "\n", "\r", "\x00", "..", "/", "\\",
              "```python path=a.py\n", "```\n", " ", "é", "\ud800", "'"]
    chars = list(text)
    for _ in range(rng.randint(1, 12)):
        op = rng.random()
        pos = rng.randint(0, len(chars))
        if op < 0.5:
            chars[pos:pos] = list(rng.choice(pieces))
        elif op < 0.8 and chars:
            del chars[pos:pos + rng.randint(1, 8)]
        else:
            chars[pos:pos] = [chr(rng.randint(0, 0x2FFF)) for _ in range(rng.randint(1, 5))]
    return "".join(chars)


def test_parse_reply_never_raises_on_mutated_replies() -> None:
    rng = random.Random(20240611)
    for _ in range(3000):
        parsed = parse_reply(_mutations(rng, REPLY))
        assert isinstance(parsed, ParsedReply)
        for path in parsed.files:
            assert path and not path.startswith("/") and ".." not in path.split("/")
            assert "\\" not in path and "\x00" not in path and len(path) <= 200


def test_parse_reply_never_raises_on_random_text() -> None:
    rng = random.Random(7)
    alphabet = "`~ \n\tpath=\"'/.\\x\x00"
    for _ in range(1000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 300)))
        assert isinstance(parse_reply(text), ParsedReply)
    for odd in (None, b"```python path=a.py\nx\n```", 12, "", "```" * 10000):
        assert isinstance(parse_reply(odd), ParsedReply)  # type: ignore[arg-type]


def test_huge_replies_parse_quickly() -> None:
    text = ("```python path=a.py\n" + "x = 1\n" * 200_000 + "```\n") + ("prose ``` " * 50_000)
    parsed = parse_reply(text)
    assert len(parsed.files["a.py"]) == 6 * 200_000


# -- merge_files ---------------------------------------------------------------------------------


def test_merge_applies_changes_and_deletes_on_empty_content() -> None:
    current = {"a.py": "a\n", "b.py": "b\n", "tests/test_acceptance.py": "acc\n"}
    merged, rejected = merge_files(current, {"b.py": "", "c.py": "c\n", "a.py": "A\n"},
                                   protected=PROTECTED)
    assert merged == {"a.py": "A\n", "c.py": "c\n", "tests/test_acceptance.py": "acc\n"}
    assert list(merged) == sorted(merged)
    assert rejected == ()
    assert current == {"a.py": "a\n", "b.py": "b\n", "tests/test_acceptance.py": "acc\n"}


def test_merge_rejects_protected_paths_and_keeps_them() -> None:
    current = {"tests/test_acceptance.py": "acc\n", "plugin.toml": "[plugin]\n"}
    changes = {"tests/test_acceptance.py": "def test(): pass\n", "plugin.toml": "",
               "./tests/conftest.py": "import pytest\n", "a.py": "ok\n"}
    merged, rejected = merge_files(current, changes, protected=PROTECTED)
    assert merged == {"a.py": "ok\n", "plugin.toml": "[plugin]\n",
                      "tests/test_acceptance.py": "acc\n"}
    reasons = {r.path: r.reason for r in rejected}
    assert reasons["tests/test_acceptance.py"] == "acceptance tests are read-only"
    assert reasons["plugin.toml"] == "plugin.toml changes only through a permissions request"
    assert "read-only" in reasons["tests/conftest.py"]


def test_merge_rejects_unsafe_paths_and_oversized_files() -> None:
    merged, rejected = merge_files({}, {"../x.py": "x", "/abs.py": "x",
                                        "big.py": "x" * (MAX_FILE_CHARS + 1), "ok.py": "ok"},
                                   protected=PROTECTED)
    assert merged == {"ok.py": "ok"}
    assert sorted(r.path for r in rejected) == ["../x.py", "/abs.py", "big.py"]


def test_deleting_a_file_that_does_not_exist_is_harmless() -> None:
    assert merge_files({"a.py": "a"}, {"gone.py": ""}, protected=PROTECTED) == ({"a.py": "a"}, ())


def test_merge_of_a_parsed_reply() -> None:
    parsed = parse_reply(REPLY)
    merged, rejected = merge_files({"weekly_scheduler/plugin.py": "old\n"}, parsed.files,
                                   protected=PROTECTED)
    assert merged["weekly_scheduler/plugin.py"].startswith("class Plugin:")
    assert "tests/test_generated_edges.py" in merged and rejected == ()


# -- code_hash -----------------------------------------------------------------------------------


def test_code_hash_is_stable_and_sensitive() -> None:
    files = {"a.py": "x", "b.py": "y"}
    assert code_hash(files) == code_hash(dict(reversed(list(files.items()))))
    assert len(code_hash(files)) == 64
    assert code_hash(files) != code_hash({"a.py": "x", "b.py": "y\n"})
    assert code_hash(files) != code_hash({"a.py": "y", "b.py": "x"})
    assert code_hash({"ab": "c"}) != code_hash({"a": "bc"})
    assert code_hash({}) == code_hash({})
    assert code_hash({"s.py": "\ud800"})  # lone surrogates do not crash hashing


# -- unified_diff and diff_stats ------------------------------------------------------------------

OLD = {"keep.py": "same\n", "edit.py": "a\nb\nc\nd\ne\nf\ng\nh\n", "gone.py": "bye\n",
       "eol.py": "no newline"}
NEW = {"keep.py": "same\n", "edit.py": "a\nB\nc\nd\ne\nf\ng\nh\ni\n", "new/added.py": "hi\n",
       "eol.py": "no newline\n"}


def test_unified_diff_is_git_style() -> None:
    diff = unified_diff(OLD, NEW)
    assert "diff --git a/edit.py b/edit.py\n--- a/edit.py\n+++ b/edit.py\n@@" in diff
    assert "diff --git a/new/added.py b/new/added.py\nnew file mode 100644\n--- /dev/null\n" \
           "+++ b/new/added.py\n@@ -0,0 +1 @@\n+hi\n" in diff
    assert "deleted file mode 100644\n--- a/gone.py\n+++ /dev/null\n" in diff
    assert "-no newline\n\\ No newline at end of file\n+no newline\n" in diff
    assert "keep.py" not in diff
    assert unified_diff(OLD, OLD) == ""


def test_unified_diff_applies_with_git(tmp_path: Path) -> None:
    """The diff is real: `git apply` turns the old files into the new ones."""
    for path, content in OLD.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(content)
    (tmp_path / "change.diff").write_text(unified_diff(OLD, NEW))
    subprocess.run(["git", "apply", "change.diff"], cwd=tmp_path, check=True,
                   capture_output=True)
    (tmp_path / "change.diff").unlink()
    found = {str(p.relative_to(tmp_path)): p.read_text() for p in tmp_path.rglob("*")
             if p.is_file()}
    assert found == NEW


def test_diff_stats_count_added_and_removed_lines() -> None:
    # edit.py: b->B and +i (2 added, 1 removed); added.py +1; gone.py -1; eol.py 1 and 1.
    assert diff_stats(OLD, NEW) == (4, 3)
    assert diff_stats(OLD, OLD) == (0, 0)
    assert diff_stats({}, {"a": "1\n2\n"}) == (2, 0)
    diff = unified_diff(OLD, NEW).splitlines()
    plus = sum(1 for line in diff if line.startswith("+") and not line.startswith("+++"))
    minus = sum(1 for line in diff if line.startswith("-") and not line.startswith("---"))
    assert diff_stats(OLD, NEW) == (plus, minus)
