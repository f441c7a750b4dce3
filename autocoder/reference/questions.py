"""Held-out API questions for `manage.py reference_eval`, written as a requester or a model
would ask them, before retrieval was tuned; each names the entries that answer it (any of them
in the top 5 counts). See docs/engine.md ("Reference docs") for the figure.
"""

from __future__ import annotations

QUESTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("how do I read an xlsx sheet by name",
     ("openpyxl.Workbook.__getitem__", "openpyxl.Workbook.get_sheet_by_name")),
    ("add one month to a date", ("dateutil.relativedelta.relativedelta",)),
    ("parse a YAML string safely", ("yaml.safe_load",)),
    ("render a Jinja template from a string",
     ("jinja2.Environment.from_string", "jinja2.Template")),
    ("write a dictionary out as TOML", ("tomli_w.dump", "tomli_w.dumps")),
    ("read a TOML configuration text", ("tomllib.loads", "tomllib.load")),
    ("convert a datetime to another time zone",
     ("zoneinfo.ZoneInfo", "datetime.datetime.astimezone")),
    ("parse a date written like 'March 3rd 2024'", ("dateutil.parser.parse",)),
    ("read a CSV file into dictionaries keyed by the header row", ("csv.DictReader",)),
    ("save an Excel workbook to a file", ("openpyxl.Workbook.save",)),
    ("create a new empty Excel spreadsheet", ("openpyxl.Workbook",)),
    ("loop over the rows of a worksheet",
     ("openpyxl.worksheet.worksheet.Worksheet.iter_rows",)),
    ("turn a Python object into a JSON string", ("json.dumps",)),
    ("count how often each word appears", ("collections.Counter",)),
    ("round a money amount to two decimal places exactly",
     ("decimal.Decimal.quantize", "decimal.Decimal")),
    ("repeat an event every second Tuesday of the month", ("dateutil.rrule.rrule",)),
    ("parse an ISO 8601 timestamp",
     ("datetime.datetime.fromisoformat", "dateutil.parser.isoparse")),
    ("wrap a long text into lines of at most 70 characters",
     ("textwrap.wrap", "textwrap.fill")),
    ("find all matches of a regular expression in a text", ("re.findall", "re.finditer")),
    ("compute the SHA-256 hash of some bytes", ("hashlib.sha256",)),
    ("generate a random token that is safe to use as a password",
     ("secrets.token_urlsafe", "secrets.token_hex")),
    ("median of a list of numbers", ("statistics.median",)),
    ("sort a list of dicts by one key", ("operator.itemgetter", "sorted")),
    ("escape HTML special characters in a string", ("html.escape",)),
    ("find close matches to a misspelled word", ("difflib.get_close_matches",)),
    ("make a random unique identifier", ("uuid.uuid4",)),
    ("base64 encode some bytes", ("base64.b64encode", "base64.urlsafe_b64encode")),
    ("dump data as YAML text", ("yaml.safe_dump", "yaml.dump")),
    ("merge cells in a worksheet", ("openpyxl.worksheet.worksheet.Worksheet.merge_cells",)),
    ("what day of the week is a date",
     ("datetime.date.weekday", "datetime.date.isoweekday", "calendar.weekday")),
)
