"""The other systems' section as the page shows it (templates/projects/interviews/_services.html):
one group of fields per system, one blank row for what the team provides, the buttons that add
and remove rows, and which field gets the focus after such a button (the answers are in
projects/interview/other_systems.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from projects.interview.other_systems import (
    ADD,
    DOES,
    FIELD_COUNT,
    FIELD_STORAGE,
    FIELD_SYSTEMS,
    FIELD_USES,
    MAX_SYSTEMS,
    METHODS,
    NEED_PARTS,
    REMOVE,
    REMOVE_NEED,
    answers_of,
    need_field,
    system_field,
)
from projects.interview.system_answers import setting_name

ADD_BUTTON = "svc-add-system"  # the id of the "Add another system" button
ADD_NEED = "svc-add-need-"  # a button that saves and focuses the blank row of a system


def add_need_button(index: int) -> str:
    return f"svc-{index}-add-need"


def focus_after(action: str, state: Mapping[str, Any]) -> str:
    """The id of the field to focus after a button that changed the rows ("" for none)."""
    systems = answers_of(state)["systems"]
    if action == ADD:
        return system_field(max(len(systems) - 1, 0), "name")
    if action.startswith(REMOVE_NEED):
        number = action.removeprefix(REMOVE_NEED).partition("-")[0]
        return add_need_button(int(number)) if number.isdigit() else ""
    if action.startswith(REMOVE):
        return ADD_BUTTON
    if action.startswith(ADD_NEED) and action.removeprefix(ADD_NEED).isdigit():
        at = int(action.removeprefix(ADD_NEED))
        if at < len(systems):
            return need_field(at, len(systems[at]["needs"]), "name")
    return ""


def form_view(state: Mapping[str, Any], errors: Mapping[str, list[str]],
              focus: str = "") -> dict[str, object]:
    """The section's values, one group per system (one blank one when none is typed), and
    its errors; `focus`: the id of the field that gets the focus."""
    given = answers_of(state)
    typed = given["systems"] or [{"name": "", "does": "", "address": "", "sample": "",
                                  "method": "", "needs": []}]
    systems = [_system_view(index, system, errors, focus, len(typed))
               for index, system in enumerate(typed)]
    return {"uses": given["uses"], "storage": given["storage"], "systems": systems,
            "count": len(systems), "count_field": FIELD_COUNT, "does_choices": DOES,
            "methods": METHODS, "add_action": ADD, "add_button": ADD_BUTTON,
            "may_add": len(systems) < MAX_SYSTEMS, "focus": focus,
            "fields": {"uses": FIELD_USES, "storage": FIELD_STORAGE, "systems": FIELD_SYSTEMS},
            # keyed without the "svc-" (a template cannot look up a name with a dash)
            "errors": {"uses": errors.get(FIELD_USES, []),
                       "systems": errors.get(FIELD_SYSTEMS, [])}}


def _system_view(index: int, system: Mapping[str, Any], errors: Mapping[str, list[str]],
                 focus: str, count: int) -> dict[str, object]:
    needs = list(system["needs"]) + [{}]
    rows = []
    for row, need in enumerate(needs):
        name = str(need.get("name", ""))
        derived = setting_name(name) if name.strip() else ""
        fields = {part: need_field(index, row, part) for part in NEED_PARTS}
        rows.append({"number": row + 1, "blank": row == len(needs) - 1,
                     **{part: need.get(part, "") for part in NEED_PARTS}, "fields": fields,
                     "derived": derived if derived and derived != name.strip() else "",
                     "errors": errors.get(fields["name"], []),
                     "remove_action": f"{REMOVE_NEED}{index}-{row}",
                     "focus": focus == fields["name"]})
    fields = {part: system_field(index, part)
              for part in ("name", "does", "address", "sample", "method")}
    return {"index": index, "number": index + 1, "fields": fields, "rows": rows,
            **{part: system[part] for part in ("name", "does", "address", "sample")},
            "method": system["method"] or ("POST" if system["does"] == "sends" else "GET"),
            "errors": {part: errors.get(name, []) for part, name in fields.items()},
            "has_error": any(errors.get(name) for name in fields.values()),
            "remove_action": f"{REMOVE}{index}", "may_remove": count > 1 or bool(
                str(system["name"]).strip()),
            "add_need_action": f"{ADD_NEED}{index}", "add_need_button": add_need_button(index),
            "focus": focus == fields["name"], "focus_add_need": focus == add_need_button(index)}
