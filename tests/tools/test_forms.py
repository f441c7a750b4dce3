"""The command form: inputs from the input schema or the examples, pasted and uploaded tables,
numbers written as people write them, and output shown for a person."""

from __future__ import annotations

import json
from typing import Any

from django.core.files.uploadedfile import SimpleUploadedFile

from tools.forms import (
    CommandForm,
    InputSpec,
    _spec_from_example,
    output_blocks,
    output_csv,
    prefill,
)

RECORDS = InputSpec(name="rows", kind="records", sample={"month": "Jan", "amount": 2})


def payload(specs: list[InputSpec], data: dict[str, Any],
            files: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    form = CommandForm(data, files or {}, specs=specs)
    valid = form.is_valid()
    return (form.payload() if valid else {}), dict(form.errors)


def test_numbers_as_people_write_them() -> None:
    number = [InputSpec(name="n", kind="number")]
    assert payload(number, {"n": "12"})[0] == {"n": 12}
    assert payload(number, {"n": "3,5"})[0] == {"n": 3.5}
    assert "Write a number" in str(payload(number, {"n": "twelve"})[1])
    assert "Fill this in" in str(payload(number, {})[1])


def test_tables_pasted_from_a_spreadsheet_or_as_csv_become_records() -> None:
    for text in ("month\tamount\nJan\t2.5\nFeb\tn/a\n", "month;amount\nJan;2.5\nFeb;n/a\n",
                 "month,amount\nJan,2.5\nFeb,n/a\n"):
        assert payload([RECORDS], {"rows": text})[0] == {"rows": [
            {"month": "Jan", "amount": 2.5}, {"month": "Feb", "amount": "n/a"}]}
    ragged = payload([RECORDS], {"rows": "month,amount\nJan\n"})[1]
    assert "Line 2 has 1 cells" in str(ragged)


def test_uploaded_files_csv_json_and_not_text() -> None:
    csv = SimpleUploadedFile("x.csv", b"\xef\xbb\xbfmonth,amount\nJan,2\n")
    assert payload([RECORDS], {}, {"rows__file": csv})[0] == {
        "rows": [{"month": "Jan", "amount": 2}]}
    records = [{"month": "Mar", "amount": 1}]
    as_json = SimpleUploadedFile("x.json", json.dumps(records).encode())
    assert payload([RECORDS], {}, {"rows__file": as_json})[0] == {"rows": records}
    binary = SimpleUploadedFile("x.csv", b"\xff\xfe\x00bad")
    assert "not text in UTF-8" in str(payload([RECORDS], {}, {"rows__file": binary})[1])


def test_a_declared_table_gets_csv_text_and_a_declared_file_its_content() -> None:
    table = [InputSpec(name="csv", kind="table")]
    assert payload(table, {"csv": "a\tb\n1\t2\n"})[0] == {"csv": "a,b\n1,2\n"}
    upload = [InputSpec(name="doc", kind="file")]
    got = payload(upload, {}, {"doc__file": SimpleUploadedFile("n.txt", b"hi")})[0]
    assert got == {"doc": {"name": "n.txt", "content_base64": "aGk="}}


def test_choices_and_booleans() -> None:
    specs = [InputSpec(name="size", kind="choice", choices=("S", "M")),
             InputSpec(name="loud", kind="boolean", required=False)]
    assert payload(specs, {"size": "M", "loud": "on"})[0] == {"size": "M", "loud": True}
    assert payload(specs, {"size": "M"})[0] == {"size": "M", "loud": False}
    assert "size" in payload(specs, {"size": "XL"})[1]


def test_output_for_a_person() -> None:
    blocks = output_blocks({"totals": [{"month": "Jan", "total": 2}], "note": "done",
                            "count": 1})
    assert [b.kind for b in blocks] == ["table", "text", "value"]
    assert blocks[0].columns == ["month", "total"] and blocks[0].rows == [["Jan", "2"]]
    assert output_blocks("plain")[0].kind == "text"
    assert output_blocks([1, 2])[0].kind == "list"
    assert output_blocks([[1], 2])[0].kind == "json"
    assert output_csv({"totals": [{"month": "Jan", "total": 2}]}) == "month,total\nJan,2\n"
    assert output_csv("text") is None


def test_lists_and_decimal_commas_read_as_people_type_them() -> None:
    """Issue 48: `mon, tue` is a list, not "not valid JSON"; `2,5` is 2.5, not text."""
    days = [InputSpec(name="days", kind="list", sample={"item": "mon"})]
    assert payload(days, {"days": "mon, tue"})[0] == {"days": ["mon", "tue"]}
    assert payload(days, {"days": "mon\ntue\n"})[0] == {"days": ["mon", "tue"]}
    assert payload(days, {"days": '["mon"]'})[0] == {"days": ["mon"]}
    amounts = [InputSpec(name="amounts", kind="list", sample={"item": 1.5})]
    assert payload(amounts, {"amounts": "2,5 3"})[0] == {"amounts": [2.5, 3]}
    assert payload(amounts, {"amounts": "1, 2, 3"})[0] == {"amounts": [1, 2, 3]}
    assert payload(amounts, {"amounts": "2,5\n3,75"})[0] == {"amounts": [2.5, 3.75]}
    refused = str(payload(amounts, {"amounts": "2,5 lots"})[1])
    assert "\u201clots\u201d is not a number" in refused and "JSON" not in refused
    assert payload([RECORDS], {"rows": "month;amount\nJan;2,5\n"})[0] == {
        "rows": [{"month": "Jan", "amount": 2.5}]}


def test_a_list_in_the_example_gets_a_list_box() -> None:
    spec = _spec_from_example("days", ["mon", "tue"])
    assert spec.kind == "list" and "like: mon, tue" in spec.description


def test_run_it_again_starts_from_the_input_as_it_was_typed() -> None:
    specs = [RECORDS, InputSpec(name="days", kind="list", sample={"item": "mon"}),
             InputSpec(name="n", kind="number"), InputSpec(name="loud", kind="boolean"),
             InputSpec(name="doc", kind="file")]
    earlier = {"rows": [{"month": "Jan", "amount": 2.5}], "days": ["mon", "tue"], "n": 3,
               "loud": True, "doc": {"name": "a.txt", "content_base64": "aGk="}}
    initial = prefill(specs, earlier)
    assert initial == {"rows": "month,amount\nJan,2.5\n", "days": "mon, tue", "n": "3",
                       "loud": True}
    # What it starts from is sent as it was (the file is chosen again).
    data = {k: ("on" if v is True else v) for k, v in initial.items()}
    assert payload(specs[:4], data)[0] == {k: v for k, v in earlier.items() if k != "doc"}
    whole = [InputSpec(name="input", kind="json", required=False)]
    assert prefill(whole, {"text": "hi"}) == {"input": '{"text": "hi"}'}


def test_names_with_a_value_each_are_a_table_and_numbers_are_marked() -> None:
    blocks = output_blocks({"totals": {"REWE": 12.5, "EDEKA": 3}, "rows": [
        {"shop": "REWE", "amount": 12.5}, {"shop": "ALDI", "amount": None}]})
    assert blocks[0].kind == "pairs" and blocks[0].rows == [["REWE", "12.5"], ["EDEKA", "3"]]
    assert blocks[0].numeric == (1,)
    assert blocks[1].numeric == (1,) and blocks[1].rows[1] == ["ALDI", ""]
