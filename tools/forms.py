"""The form of a tool's command, generated from what the version declares.

Fields come from the command's input schema in plugin.toml (`[commands.input]`) or, without
one, from the keys of its first example, each typed as the example's value is:

| declared type / example value | the form shows                    | the plugin gets            |
|-------------------------------|-----------------------------------|----------------------------|
| text / a string               | a text box                        | the text                   |
| number / a number             | a number box                      | an integer or a decimal    |
| choice                        | a list to pick from               | the choice                 |
| boolean / true or false       | a tick box                        | true or false              |
| table (declared)              | a box to paste into, or a file    | the table as CSV text      |
| a list of records (example)   | a box to paste into, or a file    | a list of records          |
| a list of words or numbers    | a box: one per line, or `a, b`    | the list (numbers typed as |
|   (example)                   |                                   | the example's, `2,5` too)  |
| file (declared)               | a file to upload                  | {"name", "content_base64"} |
| anything else (example)       | a box for JSON                    | that JSON                  |

A pasted table may be copied from a spreadsheet (tab-separated) or be CSV; an uploaded file is
CSV, tab-separated text or JSON (a list of records), in UTF-8, at most MAX_FILE_BYTES. When the
example's records have numbers in a column, the same column's cells become numbers (a decimal
comma, `2,5`, reads as 2.5). A form can start from an earlier call's input (`prefill`: "Run it
again" on a result keeps what was typed).
"""

from __future__ import annotations

import base64
import csv
import io
import json
import re
from dataclasses import dataclass, field
from typing import Any

from django import forms
from django.core.files.uploadedfile import UploadedFile

from marketplace.models import PluginVersion
from tools.declared import command_info, declared_inputs
from tools.json_input import JsonInputError, json_input_parse

# Small enough that a file, even as base64, fits the call's input limit (1024 KB of JSON).
MAX_FILE_BYTES = 750 * 1024
MAX_TABLE_ROWS = 10_000
NUMBER = re.compile(r"[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?")


@dataclass(frozen=True)
class InputSpec:
    """One input of a command's form."""

    name: str
    kind: str  # text, number, choice, boolean, table, records, list, file, json
    description: str = ""
    choices: tuple[str, ...] = ()
    required: bool = True
    multiline: bool = False
    # For records: the example's first record, whose value types the table's cells follow.
    sample: dict[str, object] = field(default_factory=dict)

    @property
    def label(self) -> str:
        words = self.name.replace("_", " ").replace("-", " ").strip()
        return words[:1].upper() + words[1:]

    @property
    def takes_file(self) -> bool:
        return self.kind in ("table", "records", "file")


def input_specs(version: PluginVersion, command: str) -> list[InputSpec]:
    """The command's inputs: its declared schema, else its first example's keys."""
    declared = declared_inputs(version, command)
    if declared:
        return [InputSpec(name=f.name, kind=f.type, description=f.description,
                          choices=f.choices, required=f.required) for f in declared]
    info = command_info(version, command) or {}
    examples = info.get("examples") or []
    example = examples[0].get("input") if examples and isinstance(examples[0], dict) else None
    if not isinstance(example, dict):
        return [InputSpec(name="input", kind="json", required=False, multiline=True,
                          description="The whole input as a JSON object, for example "
                                      "{\"text\": \"hello\"}; leave it empty if the command "
                                      "needs nothing.")]
    return [_spec_from_example(name, value) for name, value in example.items()]


def _spec_from_example(name: str, value: Any) -> InputSpec:
    if isinstance(value, bool):
        return InputSpec(name=name, kind="boolean", required=False)
    if isinstance(value, int | float):
        return InputSpec(name=name, kind="number")
    if isinstance(value, str):
        return InputSpec(name=name, kind="text", multiline="\n" in value or len(value) > 80)
    if isinstance(value, list) and value and all(
            isinstance(v, str) or _is_number(v) for v in value):
        shown = ", ".join(str(v) for v in value[:3])
        return InputSpec(name=name, kind="list", sample={"item": value[0]},
                         description=f"One per line, or separated by commas, like: {shown}")
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return InputSpec(name=name, kind="records", sample=value[0],
                         description="Paste a table (from a spreadsheet, or CSV with a header "
                                     "line) or upload a CSV or JSON file.")
    return InputSpec(name=name, kind="json", multiline=True,
                     description=f"As JSON, for example {json.dumps(value)[:80]}")


class CommandForm(forms.Form):
    """A form for one command: `payload()` after `is_valid()` is what the plugin gets."""

    def __init__(self, *args: Any, specs: list[InputSpec], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.specs = specs
        for spec in specs:
            self.fields.update(_fields_for(spec))

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        self._payload: dict[str, object] = {}
        for spec in self.specs:
            try:
                value = _value_of(spec, cleaned)
            except forms.ValidationError as exc:
                self.add_error(_error_field(spec, self), exc)
                continue
            if value is not None:
                self._payload[spec.name] = value
            elif spec.required and spec.kind != "boolean":
                self.add_error(_error_field(spec, self), "Fill this in: the plugin needs it.")
        return cleaned

    def payload(self) -> dict[str, object]:
        if self.specs and self.specs[0].kind == "json" and self.specs[0].name == "input" \
                and len(self.specs) == 1:
            whole = self._payload.get("input")
            return whole if isinstance(whole, dict) else {}
        return self._payload

    def rows(self) -> list[tuple[InputSpec, forms.BoundField, forms.BoundField | None]]:
        """For the template: each input with its field and, for tables, its file field."""
        found = []
        for spec in self.specs:
            main = self[spec.name] if spec.kind != "file" else self[f"{spec.name}__file"]
            extra = self[f"{spec.name}__file"] if spec.kind in ("table", "records") else None
            found.append((spec, main, extra))
        return found


def prefill(specs: list[InputSpec], payload: Any) -> dict[str, object]:
    """The form's values for an earlier call's input, written as a person types them (a list
    as "a, b", records as a table with a header line); a file is not kept, so it is asked
    for again."""
    if not isinstance(payload, dict):
        return {}
    if len(specs) == 1 and specs[0].kind == "json" and specs[0].name == "input":
        return {"input": json.dumps(payload, ensure_ascii=False)} if payload else {}
    initial: dict[str, object] = {}
    for spec in specs:
        if spec.name not in payload or spec.kind == "file":
            continue
        value = payload[spec.name]
        if spec.kind == "boolean":
            initial[spec.name] = bool(value)
        elif spec.kind == "records" and is_records(value):
            initial[spec.name] = _as_csv(_records_to_rows(value))
        elif spec.kind == "list" and isinstance(value, list):
            initial[spec.name] = ", ".join(_cell_text(item) for item in value)
        elif spec.kind == "json" or not isinstance(value, str | int | float):
            initial[spec.name] = json.dumps(value, ensure_ascii=False)
        else:
            initial[spec.name] = str(value)
    return initial


def _error_field(spec: InputSpec, form: CommandForm) -> str:
    return spec.name if spec.name in form.fields else f"{spec.name}__file"


def _fields_for(spec: InputSpec) -> dict[str, forms.Field]:
    common: dict[str, Any] = {"label": spec.label, "help_text": spec.description,
                              "required": False}
    if spec.kind == "boolean":
        return {spec.name: forms.BooleanField(**common)}
    if spec.kind == "choice":
        choices = [("", "Choose…"), *[(c, c) for c in spec.choices]]
        return {spec.name: forms.ChoiceField(choices=choices, **common)}
    if spec.kind == "number":
        return {spec.name: forms.CharField(widget=forms.TextInput(
            attrs={"inputmode": "decimal"}), **common)}
    upload = forms.FileField(label=f"…or upload a file for “{spec.label}”",
                             required=False, help_text="CSV, tab-separated text or JSON, "
                             f"in UTF-8, at most {MAX_FILE_BYTES // 1024} KB.")
    if spec.kind == "file":
        return {f"{spec.name}__file": forms.FileField(
            label=spec.label, required=False, help_text=spec.description or
            f"At most {MAX_FILE_BYTES // 1024} KB.")}
    big = spec.kind in ("table", "records") or spec.multiline
    # A whole optional JSON input (a command without examples) is usually left empty.
    rows = 6 if spec.kind in ("table", "records") or spec.required else 2
    widget = forms.Textarea(attrs={"rows": rows}) if big else forms.TextInput()
    text: dict[str, forms.Field] = {spec.name: forms.CharField(widget=widget, strip=False,
                                                               **common)}
    if spec.kind in ("table", "records"):
        text[f"{spec.name}__file"] = upload
    return text


def _value_of(spec: InputSpec, cleaned: dict[str, Any]) -> Any:
    raw = cleaned.get(spec.name)
    upload = cleaned.get(f"{spec.name}__file")
    if spec.kind == "boolean":
        return bool(raw)
    if spec.kind == "file":
        return _file_value(upload) if upload else None
    if spec.kind in ("table", "records") and upload:
        return _table_from_upload(spec, upload)
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    if spec.kind == "number":
        return _number(raw)
    if spec.kind == "json":
        return _json(raw)
    if spec.kind == "table":
        return _as_csv(_rows(raw))
    if spec.kind == "records":
        return _records(spec, _rows(raw))
    if spec.kind == "list":
        return _list(spec, raw)
    return raw


def _list(spec: InputSpec, text: str) -> list[Any]:
    """"mon, tue" or one per line; numbers where the example has numbers ("2,5 3" or one per
    line: a comma between digits is a decimal comma); JSON ("[...]") as it is."""
    if text.strip().startswith("["):
        value = _json(text)
        if not isinstance(value, list):
            raise forms.ValidationError("Write the items one per line, or separated by commas.")
        return value
    if _is_number(spec.sample.get("item")):
        pieces = [p.strip(",") for p in re.split(r"[\s;]+", text) if p.strip(",")]
        items: list[Any] = []
        for piece in pieces:
            parts = [piece] if re.fullmatch(r"[-+]?\d+,\d+", piece) else piece.split(",")
            for part in (p for p in parts if p):
                try:
                    items.append(_number(part))
                except forms.ValidationError:
                    raise forms.ValidationError(
                        f"\u201c{part}\u201d is not a number: write numbers like 12 or 3,5, "
                        "one per line or separated by spaces.") from None
        return items
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) == 1:
        separator = ";" if ";" in lines[0] else ","
        lines = [item.strip() for item in lines[0].split(separator) if item.strip()]
    return lines


def _number(text: str) -> int | float:
    text = _decimal_point(text.strip())
    if not NUMBER.fullmatch(text):
        raise forms.ValidationError("Write a number, like 12 or 3.5.")
    value = float(text)
    return int(value) if value.is_integer() and re.fullmatch(r"[-+]?\d+", text) else value


def _json(text: str) -> Any:
    try:
        return json_input_parse(text)
    except JsonInputError as exc:
        raise forms.ValidationError(str(exc)) from exc


def _read_upload(upload: UploadedFile) -> str:
    if (upload.size or 0) > MAX_FILE_BYTES:
        raise forms.ValidationError(
            f"The file “{upload.name}” is {(upload.size or 0) // 1024} KB; the limit is "
            f"{MAX_FILE_BYTES // 1024} KB.")
    data = upload.read(MAX_FILE_BYTES + 1)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise forms.ValidationError(
            f"The file “{upload.name}” is not text in UTF-8. From a spreadsheet, save it as "
            "“CSV UTF-8”.") from exc


def _file_value(upload: UploadedFile) -> dict[str, str]:
    if (upload.size or 0) > MAX_FILE_BYTES:
        raise forms.ValidationError(
            f"The file “{upload.name}” is {(upload.size or 0) // 1024} KB; the limit is "
            f"{MAX_FILE_BYTES // 1024} KB.")
    content = upload.read(MAX_FILE_BYTES + 1)
    return {"name": str(upload.name), "content_base64": base64.b64encode(content).decode()}


def _table_from_upload(spec: InputSpec, upload: UploadedFile) -> Any:
    text = _read_upload(upload)
    if str(upload.name).lower().endswith(".json"):
        data = _json(text)
        if not (isinstance(data, list) and all(isinstance(r, dict) for r in data)):
            raise forms.ValidationError("A JSON file for a table must be a list of records, "
                                        'like [{"name": "Ann"}].')
        return data if spec.kind == "records" else _as_csv(_records_to_rows(data))
    rows = _rows(text)
    return _records(spec, rows) if spec.kind == "records" else _as_csv(rows)


def _rows(text: str) -> list[list[str]]:
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise forms.ValidationError("The table is empty.")
    if len(lines) > MAX_TABLE_ROWS + 1:
        raise forms.ValidationError(f"At most {MAX_TABLE_ROWS} rows.")
    delimiter = "\t" if "\t" in lines[0] else (";" if lines[0].count(";") >
                                                 lines[0].count(",") else ",")
    return [[cell.strip() for cell in row] for row in
            csv.reader(io.StringIO("\n".join(lines)), delimiter=delimiter)]


def _records(spec: InputSpec, rows: list[list[str]]) -> list[dict[str, object]]:
    header, body = rows[0], rows[1:]
    if len(set(header)) != len(header) or not all(header):
        raise forms.ValidationError("The first line must name every column, each once.")
    records = []
    for number, row in enumerate(body, start=2):
        if len(row) != len(header):
            raise forms.ValidationError(f"Line {number} has {len(row)} cells; the first line "
                                        f"names {len(header)} columns.")
        records.append({name: _cell(spec, name, cell) for name, cell in zip(header, row,
                                                                            strict=True)})
    return records


def _cell(spec: InputSpec, column: str, cell: str) -> Any:
    # Numbers where the example has numbers: a pasted "12.50" (or "12,50") is what the plugin
    # was shown; anything else ("n/a") stays as typed.
    wanted = spec.sample.get(column)
    if _is_number(wanted) and NUMBER.fullmatch(_decimal_point(cell.strip())):
        return _number(cell)
    return cell


def _decimal_point(text: str) -> str:
    """"3,5" is 3.5: one comma and no point is a decimal comma."""
    return text.replace(",", ".") if text.count(",") == 1 and "." not in text else text


def _records_to_rows(records: list[dict[str, object]]) -> list[list[str]]:
    columns = list(dict.fromkeys(key for record in records for key in record))
    return [columns, *[[str(record.get(c, "")) for c in columns] for record in records]]


def _as_csv(rows: list[list[str]]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    return buffer.getvalue()


# -- output, for a person ------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """One part of an output as a page shows it."""

    kind: str  # table, pairs (names and their values), list, text, value, json
    title: str = ""
    columns: list[str] = field(default_factory=list)
    rows: list[list[Any]] = field(default_factory=list)
    text: str = ""
    numeric: tuple[int, ...] = ()  # the columns that hold numbers (shown as numbers)


def is_records(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | bool | int | float)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def output_blocks(output: Any) -> list[Block]:
    """A list of records is a table, text is text, a small object is its parts (in the order
    the plugin gave them: Invocation.output_in_order), names with a number or a word each are
    a table of names and values, the rest is pretty-printed JSON."""
    if isinstance(output, dict) and 0 < len(output) <= 20:
        return [_block(value, title=str(key)) for key, value in output.items()]
    return [_block(output)]


def _block(value: Any, *, title: str = "") -> Block:
    if is_records(value):
        columns = list(dict.fromkeys(key for record in value for key in record))
        rows = [[_cell_text(record.get(c, "")) for c in columns] for record in value]
        numeric = tuple(i for i, c in enumerate(columns)
                        if any(_is_number(record.get(c)) for record in value)
                        and all(_is_number(record.get(c)) or record.get(c) in (None, "")
                                for record in value))
        return Block(kind="table", title=title, columns=columns, rows=rows, numeric=numeric)
    if isinstance(value, dict) and value and all(_is_scalar(v) for v in value.values()):
        return Block(kind="pairs", title=title, columns=["", ""],
                     rows=[[str(k), _cell_text(v)] for k, v in value.items()],
                     numeric=(1,) if all(_is_number(v) for v in value.values()) else ())
    if isinstance(value, list) and value and all(
            isinstance(v, str) or _is_number(v) for v in value):
        return Block(kind="list", title=title, rows=[[_cell_text(v)] for v in value])
    if isinstance(value, str):
        return Block(kind="text", title=title, text=value)
    if value is None or isinstance(value, bool | int | float):
        return Block(kind="value", title=title, text=json.dumps(value))
    return Block(kind="json", title=title, text=json.dumps(value, indent=2, ensure_ascii=False))


def _cell_text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def output_csv(output: Any) -> str | None:
    """The output as CSV when it is a table (or an object holding exactly one), else None."""
    if isinstance(output, dict):
        tables = [v for v in output.values() if is_records(v)]
        output = tables[0] if len(tables) == 1 else None
    if not is_records(output):
        return None
    block = _block(output)
    return _as_csv([block.columns, *block.rows])
