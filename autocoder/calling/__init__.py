"""Calling a plugin: one command (or event) of a reviewed version, in the sandbox, as a team.

- `invoke.py`: `call_plugin` (the call in the sandbox, its limits, the outcome checked and
  blanked of secrets) and `host_runner.py`, the standalone runner it ships into the sandbox;
- the outbound gate of `api.http`: `http_gate.py` (`HttpGate`, `HttpPolicy`: the hosts, the
  addresses, the network), with `http_request.py` (a request's headers, body and secrets),
  `http_addresses.py` (which addresses are private), `http_watchdog.py` (a slow answer cut at
  the deadline) and `http_rehearsal.py` (a rehearsal: every rule, nothing sent);
- `payload.py`: a command's payload against the input schema its plugin declares;
- `setting_words.py`: the words for settings still missing, as a refused call and api.http say.

Above the sandbox and the plugin contract, below the apps: the tools (the form, the API,
schedules) and the marketplace's "Try it" call plugins through it (docs/development.md,
"Layers"). The interpreter plugins run on is autocoder/runtime/.
"""
