"""The interview wizard's rules, free of the database (docs/engine.md, "Spec format").

Where to look:
    checklist      the questions every interview asks; whether each is answered or skipped
    navigation     the fixed pages of questions, progress, and the wizard's next page
    parsing        what people type: `name: value` lines, values of several lines (pasted
                   tables, lists, texts), plain values, JSON, lists
    commands       the plugin's tasks (spec "commands"), from the "tasks" answer
    examples       each task's example rows, their errors, the spec examples they give
    samples        sample files attached to examples: checks, and the value each becomes
    naming         the plugin's automatic name, and the name rule (the spec's NAME_PATTERN)
    analyst        the analyst model's prompt and reading its extra questions
    spec_assembly  the answers turned into a spec, with plain-words errors per field
    other_systems  the other systems it talks to, any number (spec "services", its "systems")
    system_answers reading one system's address, setting names and sample answer
    system_form    the systems' rows on the page, and the focus after adding or removing one
    schedule       how often it runs by itself and the period of each run (spec "schedule")
    testing        how hard it is tested (the strategy, the quality needed, the attempts) and
                   the services' API documentation (spec "testing_strategy", "api_docs")
    answers        applying what each step posted to the stored state
    fields         the form field names that answers and errors are keyed by

What the requester typed is kept exactly as typed (the interview's `state` holds raw text); every
read parses it again. So a half-valid answer is never lost, and the same parser produces both the
spec and the plain-words errors shown next to each field.

State layout (JSON):
    {"name", "summary", "autonomy", "constraints", "services", "schedule", "api_docs",
     "testing": {"strategy", "threshold", "iterations"},
     "commands": [{"key", "name", "description", "inputs", "outputs", "edge_cases",
                   "examples": [{"input", "output", "json"}]}]}
Questions (JSON list): {"id", "kind", "text", "help", "priority", "command", "source", "answer",
                        "skipped", "assumption"}.
"""
