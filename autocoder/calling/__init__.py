"""Calling a plugin: one command (or event) of a reviewed version, in the sandbox, as a team.

- `team_call.py`: `call_as_team`, the one road every caller takes (the tools' form, API and
  schedules, "Try it", triggers), with the policies as its parameters (`TeamSettings`, the
  internal hosts, a `Rehearsal` or a real send); `http_for_call` builds the host's api.http;
- `invoke.py`: `call_plugin` (the call in the sandbox, its limits, the outcome checked and
  blanked of secrets) and `host_runner.py`, the standalone runner it ships into the sandbox,
  with the plugin's side of api.http beside it (`plugin_http.py`);
- the outbound gate of `api.http`: `http_gate.py` (`HttpGate`, `HttpPolicy`: the hosts, the
  addresses, the network), with `http_request.py` (a request's headers, body and secrets),
  `http_addresses.py` (which addresses are private), `http_watchdog.py` (a slow answer cut at
  the deadline), `http_rehearsal.py` (a rehearsal: every rule, nothing sent) and
  `http_records.py` (what the call's log keeps of each request);
- `payload.py`: a command's payload against the input schema its plugin declares;
- `setting_words.py`: the words for settings still missing, as a refused call and api.http say.

Above the sandbox and the plugin contract, below the apps (docs/development.md, "Layers").
The interpreter plugins run on is autocoder/runtime/.
"""
