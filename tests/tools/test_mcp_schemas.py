"""What an assistant is told of a command (tools/mcp/catalogue.py) and which web pages may
call the MCP addresses (tools/mcp/asgi.py): the rules on their own, without a server."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from autocoder.plugins import InputField
from tools.mcp.asgi import _base, origin_allowed
from tools.mcp.catalogue import input_schema, output_schema


def test_a_declared_input_becomes_a_strict_schema() -> None:
    schema = input_schema([InputField("name", "text", "Who to greet"),
                           InputField("tone", "choice", choices=("warm", "dry"), required=False),
                           InputField("sheet", "table"), InputField("scan", "file")], [])
    jsonschema.validate({"name": "Ada", "sheet": "a,b\n1,2\n",
                         "scan": {"name": "x.png", "content_base64": "AA=="}}, schema)
    for wrong in ({"sheet": "a\n"}, {"name": "Ada", "sheet": "a", "tone": "loud"},
                  {"name": "Ada", "sheet": "a", "extra": 1}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(wrong, schema)


def test_without_a_declaration_the_examples_give_the_shape() -> None:
    schema = input_schema([], [{"rows": [{"month": "Jan", "amount": 2}]}])
    assert schema["properties"]["rows"]["items"]["properties"]["amount"]["type"] == "integer"
    assert input_schema([], []) == {"type": "object"}


def test_the_output_schema_takes_what_a_later_answer_may_differ_in() -> None:
    schema = output_schema([{"totals": [{"month": "Jan", "total": 2}], "required": True}])
    assert schema is not None
    jsonschema.validate({"totals": [{"month": "Feb", "total": 2.5}]}, schema)  # a decimal, less
    assert "required" in schema["properties"]  # a field named "required" is kept
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"totals": "none"}, schema)
    assert output_schema(["Hello, Ada!"]) is None and output_schema([]) is None


def test_only_the_portals_own_or_configured_origins_may_call(settings: Any) -> None:
    settings.MCP_ALLOWED_ORIGINS = ["https://assistant.example"]
    settings.CSRF_TRUSTED_ORIGINS = []
    base = "http://127.0.0.1:8000"
    assert origin_allowed(None, base) and origin_allowed("http://127.0.0.1:8000", base)
    assert origin_allowed("https://assistant.example", base)
    assert not origin_allowed("http://127.0.0.1:8001", base)
    assert not origin_allowed("http://rebound.example", base)


def test_behind_a_proxy_the_address_is_https_when_the_proxy_says_so(settings: Any) -> None:
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    scope = {"scheme": "http"}
    assert _base(scope, {"host": "portal.example", "x-forwarded-proto": "https"}) == \
        "https://portal.example"
    assert _base(scope, {"host": "portal.example"}) == "http://portal.example"
