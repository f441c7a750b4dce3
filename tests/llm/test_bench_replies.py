"""`manage.py bench_replies` (config/benchmarks/replies.py) prints one JSON object: the share
of replies that parse with constrained replies and without, and with --edits what the second
iteration's replies cost with whole files and with edits.

The server is the fake OpenAI-compatible server of tests/llm/fakeserver.py (as llama-cpp-python's
server behaves: it refuses a json_schema response_format and takes a json_object with the
schema); the real measurement runs against llama.cpp's server with Gemma 3 270M (docs/llm.md).
"""

from __future__ import annotations

import io
import json

from django.core.management import call_command

from tests.llm.conftest import chat_reply
from tests.llm.fakeserver import FakeServer, Reply

GOOD = "def plan(tasks):\n    return {}\n"
FIXED = '            day = next((d for d in days if used[d] + hours <= capacity), None)\n'
BROKEN = '            day = next((d for d in days if used[d] + hours < capacity), None)\n'


def files(content: str, tokens: int) -> Reply:
    return chat_reply(json.dumps({"files": [{"path": "weekly_scheduler/plugin.py",
                                             "content": content}], "reason": "r"}),
                      completion_tokens=tokens)


def test_the_bench_prints_parse_shares_and_the_tokens_edits_save(
        fake_server: FakeServer) -> None:
    refused = Reply(status=422, body={"error": {"message": "response_format: Input should be "
                                                "'text' or 'json_object'"}})
    fenced_ok = chat_reply(f"```python path=weekly_scheduler/plugin.py\n{GOOD}```",
                           completion_tokens=400)
    fenced_wandering = chat_reply("Let me think about the days of the week " * 20,
                                  completion_tokens=300)
    edit = chat_reply(json.dumps({"files": [], "edits": [{
        "path": "weekly_scheduler/plugin.py", "search": BROKEN, "replace": FIXED}],
        "reason": "<= fills a day exactly"}), completion_tokens=60)
    # As llama-cpp-python's server with --chat_format gemma: a system message adds no token.
    drops_system = chat_reply("yes", prompt_tokens=12)
    fake_server.queue(drops_system, drops_system,                  # the system-message measure
                      refused, files(GOOD, 380), fenced_ok,       # call 1
                      files("test_acceptance", 390), fenced_wandering,  # call 2: junk
                      files(GOOD * 2, 700), edit,                  # second iteration, call 1
                      files("def (:\n", 650), edit)                # second iteration, call 2
    out, err = io.StringIO(), io.StringIO()
    call_command("bench_replies", "--base-url", fake_server.url + "/v1", "--model", "gemma",
                 "--calls", "2", "--edits", "--json", stdout=out, stderr=err)
    result = json.loads(out.getvalue().strip().splitlines()[-1])

    constrained, unconstrained = result["constrained"], result["unconstrained"]
    assert constrained["form"] == "json_object" and "json_schema" in constrained["refused_forms"][0]
    assert (constrained["parse_share"], unconstrained["parse_share"]) == (1.0, 0.5)
    # a bare name parses, and defines nothing a plugin could use
    assert (constrained["code_share"], unconstrained["code_share"]) == (0.5, 0.5)
    assert (constrained["tokens_p50"], unconstrained["tokens_p50"]) == (385, 350)
    second = result["second_iteration"]
    assert (second["whole_files"]["tokens_p50"], second["edits"]["tokens_p50"]) == (675, 60)
    assert (second["whole_files"]["parse_share"], second["edits"]["parse_share"]) == (0.5, 1.0)
    assert "call 2 unconstrained (fenced): no usable file" in err.getvalue()
    assert "call 2 constrained (json_object): parses, defines nothing" in err.getvalue()
    assert "call 1 constrained (json_object): parses, defines code" in err.getvalue()
    # What went over the wire: the demo's prompt, the schema in llama-cpp-python's form.
    sent = [r.body for r in fake_server.requests][2:]
    assert sent[1]["response_format"]["type"] == "json_object" and "response_format" not in sent[2]
    assert "weekly" in sent[2]["messages"][-1]["content"]
    assert "<<<<<<< SEARCH" in sent[6]["messages"][-1]["content"]
    assert "<<<<<<< SEARCH" not in sent[5]["messages"][-1]["content"]
    assert "edits" in sent[6]["response_format"]["schema"]["properties"]
    # The server drops system messages, so the role's instructions open the user message.
    assert result["system_messages"] == "dropped"
    for body in sent[1:]:
        [message] = body["messages"]
        assert message["role"] == "user"
        assert message["content"].startswith("You are the implementer")
