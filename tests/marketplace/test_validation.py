"""The pure checks of uploads: plugin.toml, the file tree, zips (traversal, links, bombs) and
wheels. No database, no sandbox: every rule here runs before anything is created."""

from __future__ import annotations

import io
import stat
import zipfile

import pytest

from marketplace.validation import (
    PackageError,
    check_plugin_files,
    check_version_order,
    files_from_wheel,
    files_from_zip,
    normalize_name,
    parse_manifest,
    render_readme,
)
from tests.marketplace.conftest import plugin_tree, zip_bytes

GOOD_TOML = """[plugin]
name = "word-count"
version = "1.2.0"
summary = "Counts words."
entry = "word_count.plugin:Plugin"

[permissions]
network = false
filesystem = "none"

[[commands]]
name = "count-words"
description = "How many words."
examples = [{input = {text = "a b"}, output = {words = 2}}]
"""


def errors_of(call, *args) -> list[str]:
    with pytest.raises(PackageError) as caught:
        call(*args)
    return caught.value.errors


def test_a_valid_manifest_is_parsed_with_its_examples() -> None:
    manifest = parse_manifest(GOOD_TOML)
    assert (manifest.name, manifest.version, manifest.package) == ("word-count", "1.2.0",
                                                                   "word_count")
    assert manifest.commands[0].examples == ({"input": {"text": "a b"}, "output": {"words": 2}},)
    assert manifest.normalized_name == "word-count"


def test_broken_toml_names_the_line() -> None:
    errors = errors_of(parse_manifest, '[plugin]\nname = "x"\nversion = 1.0.0\n')
    assert len(errors) == 1
    assert errors[0].startswith("plugin.toml: not valid TOML") and "line 3" in errors[0]


def test_every_manifest_problem_is_reported_at_once() -> None:
    text = """[plugin]
name = "-bad-"
version = "one"
entry = "x.plugin:Plugin"
colour = "blue"

[permissions]
network = "yes"
filesystem = "everything"
"""
    errors = errors_of(parse_manifest, text)
    joined = "\n".join(errors)
    for expected in ("name must be 1-64 characters", "version 'one' is not a valid version",
                     "summary is required", "entry must be", "unknown key 'colour'",
                     "network must be true or false", "filesystem must be one of none, workdir",
                     "at least one [[commands]]"):
        assert expected in joined, expected


def test_the_entry_must_match_the_package_of_the_name() -> None:
    errors = errors_of(parse_manifest, GOOD_TOML.replace("word_count.plugin", "other.plugin"))
    assert errors == ["plugin.toml: [plugin] entry must be 'word_count.plugin:Plugin'"
                      " (got 'other.plugin:Plugin')"]


def test_local_versions_are_refused_and_versions_are_made_canonical() -> None:
    assert "local part" in errors_of(parse_manifest, GOOD_TOML.replace("1.2.0", "1.2+mine"))[0]
    assert parse_manifest(GOOD_TOML.replace("1.2.0", "1.2.0.RC1")).version == "1.2.0rc1"


def test_the_tree_needs_package_plugin_module_tests_and_readme() -> None:
    files = plugin_tree()
    for missing in ("word_count/plugin.py", "README.md", "tests/test_acceptance.py"):
        broken = {k: v for k, v in files.items() if k != missing}
        assert any(missing.split("/")[0] in e for e in errors_of(check_plugin_files, broken))
    stray = {**files, "setup.py": "import os", "scripts/run.py": "print(1)"}
    errors = errors_of(check_plugin_files, stray)
    assert any(e.startswith("setup.py: unexpected file at the root") for e in errors)
    assert any(e.startswith("scripts/run.py: unexpected directory 'scripts'") for e in errors)


def test_a_zip_of_a_directory_is_read_whatever_the_top_folder() -> None:
    files = plugin_tree()
    junk = {"word-count/__pycache__/x.cpython-311.pyc": b"\x00\x01",
            "word-count/.git/config": "[core]"}
    data = zip_bytes({**files, **{k[len("word-count/"):]: v for k, v in junk.items()}},
                     folder="word-count/")
    assert files_from_zip(data) == files


def test_zip_entries_climbing_out_are_refused() -> None:
    data = zip_bytes({**plugin_tree(), "../evil.py": "x = 1", "/etc/cron.d/job": "x"})
    errors = errors_of(files_from_zip, data)
    assert "../evil.py: climbs out of the plugin directory (..)" in errors
    assert "/etc/cron.d/job: is an absolute path" in errors


def test_symbolic_links_in_a_zip_are_refused() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, content in plugin_tree().items():
            archive.writestr(path, content)
        link = zipfile.ZipInfo("word_count/data.txt")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(link, "/etc/passwd")
    assert errors_of(files_from_zip, buffer.getvalue()) == [
        "word_count/data.txt: symbolic links are not accepted"]


def test_a_zip_bomb_is_refused_before_it_is_unpacked() -> None:
    bomb = zip_bytes({**plugin_tree(), "word_count/data.txt": "0" * (50 * 1024 * 1024)})
    assert len(bomb) < 200 * 1024  # 50 MB of zeros packs into ~50 KB
    errors = errors_of(files_from_zip, bomb)
    assert any("word_count/data.txt: unpacks to 52428800 bytes" in e for e in errors)
    assert any("zip bomb" in e for e in errors)


def test_a_zip_whose_header_lies_about_the_size_is_stopped_while_reading() -> None:
    data = bytearray(zip_bytes({"plugin.toml": "x", "big.txt": "0" * (3 * 1024 * 1024)}))
    # Rewrite the declared sizes of big.txt (central directory) to 10 bytes.
    archive = zipfile.ZipFile(io.BytesIO(bytes(data)))
    info = archive.getinfo("big.txt")
    central = bytes(data).rindex(b"PK\x01\x02", 0, bytes(data).rindex(b"big.txt"))
    data[central + 24:central + 28] = (10).to_bytes(4, "little")
    assert zipfile.ZipFile(io.BytesIO(bytes(data))).getinfo("big.txt").file_size == 10
    assert info.compress_size < 100 * 1024
    errors = errors_of(files_from_zip, bytes(data))
    assert any("unpacks to more than its header says" in e or "cannot be unpacked" in e
               for e in errors)


def test_binary_and_compiled_files_are_refused() -> None:
    png = {**plugin_tree(), "word_count/logo.png": b"\x89PNG\r\n\x1a\n\x00\xff\xfe"}
    assert errors_of(files_from_zip, zip_bytes(png)) == [
        "word_count/logo.png: not UTF-8 text; binary files are not accepted"]
    native = {**plugin_tree(), "word_count/fast.so": b"\x7fELF"}
    assert errors_of(files_from_zip, zip_bytes(native)) == [
        "word_count/fast.so: is compiled or start-up code, which the marketplace does not accept"]


def test_not_a_zip_at_all() -> None:
    assert errors_of(files_from_zip, b"just text")[0].startswith("the archive is not a valid zip")


def wheel_bytes(files: dict[str, str], dist: str = "word_count-0.1.0") -> bytes:
    metadata = "Metadata-Version: 2.1\nName: word-count\nVersion: 0.1.0\n\n# Word count\n"
    return zip_bytes({**files, f"{dist}.dist-info/METADATA": metadata,
                      f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nTag: py3-none-any\n",
                      f"{dist}.dist-info/RECORD": ""})


def wheel_layout() -> dict[str, str]:
    tree = plugin_tree()
    return {"word_count/plugin.toml": tree["plugin.toml"],
            "word_count/__init__.py": tree["word_count/__init__.py"],
            "word_count/plugin.py": tree["word_count/plugin.py"],
            "word_count/tests/__init__.py": "",
            "word_count/tests/test_acceptance.py": tree["tests/test_acceptance.py"]}


def test_a_wheel_is_turned_back_into_a_plugin_tree() -> None:
    files = files_from_wheel(wheel_bytes(wheel_layout()), "word_count-0.1.0-py3-none-any.whl")
    assert {"plugin.toml", "word_count/plugin.py", "tests/test_acceptance.py",
            "README.md"} <= set(files)
    assert files["README.md"] == "# Word count\n"


def test_wheels_installing_outside_their_package_or_for_a_platform_are_refused() -> None:
    pth = wheel_bytes({**wheel_layout(), "evil.pth": "import os; os.system('id')"})
    assert errors_of(files_from_wheel, pth, "word_count-0.1.0-py3-none-any.whl") == [
        "evil.pth: is compiled or start-up code, which the marketplace does not accept"]
    shadow = wheel_bytes({**wheel_layout(), "json.py": "raise SystemExit"})
    assert errors_of(files_from_wheel, shadow, "word_count-0.1.0-py3-none-any.whl") == [
        "word_count-0.1.0-py3-none-any.whl: json.py would be installed outside the plugin's"
        " package"]
    native = errors_of(files_from_wheel, wheel_bytes(wheel_layout()),
                       "word_count-0.1.0-cp311-cp311-linux_x86_64.whl")
    assert "only pure-Python wheels" in native[0]


def test_a_wheel_must_agree_with_its_manifest() -> None:
    errors = errors_of(files_from_wheel, wheel_bytes(wheel_layout(), "word_count-0.2.0"),
                       "word_count-0.2.0-py3-none-any.whl")
    assert errors == ["word_count-0.2.0-py3-none-any.whl: the wheel is word-count 0.2.0 but"
                      " its plugin.toml says word-count 0.1.0"]


def test_versions_only_go_up() -> None:
    check_version_order("1.1.0", ["1.0.0", "0.9"], name="x")
    with pytest.raises(PackageError, match="already exists"):
        check_version_order("1.0", ["1.0.0"], name="x")
    with pytest.raises(PackageError, match="older than 1.0.0"):
        check_version_order("0.9.9", ["1.0.0"], name="x")


def test_names_are_normalized_as_pep_503_says() -> None:
    assert normalize_name("Weekly__Scheduler.v2") == "weekly-scheduler-v2"
    assert normalize_name("word-count") == normalize_name("Word_Count") == "word-count"


def test_readme_html_is_sanitised() -> None:
    html = render_readme("# Hi\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1)) "
                         "![t](http://tracker/p.png) <a href='https://ok.example'>ok</a>\n\n"
                         "```python\nprint('<b>')\n```\n")
    assert "<h1>Hi</h1>" in html and "<script" not in html and "javascript:" not in html
    assert "<img" not in html and 'rel="noopener noreferrer nofollow"' in html
    assert "&lt;b&gt;" in html


DECLARING_TOML = GOOD_TOML + """
[commands.input]
text = { type = "text", description = "The text to count" }

[[settings]]
name = "language"
description = "Which language's word rules to use"
secret = false
"""


def test_declared_settings_and_an_input_schema_are_accepted() -> None:
    manifest = parse_manifest(DECLARING_TOML)
    assert manifest.raw["settings"][0]["name"] == "language"
    assert manifest.raw["commands"][0]["input"]["text"]["type"] == "text"


def test_a_bad_declaration_is_refused_in_words() -> None:
    errors = errors_of(parse_manifest, DECLARING_TOML.replace('type = "text"', 'type = "photo"'))
    assert len(errors) == 1 and "photo" in errors[0] and errors[0].startswith("plugin.toml")
