"""The wizard's rules without a database: checklist, parsing what people type, the analyst's
questions, and the spec an interview produces (validated by the engine's own spec_from_dict)."""

from __future__ import annotations

from typing import Any

import pytest

from autocoder.engine.spec import spec_from_dict
from projects.interview import (
    analyst,
    answers,
    checklist,
    describing,
    examples,
    naming,
    navigation,
    parsing,
    samples,
    spec_assembly,
)

REQUEST = "I need a tool that greets a person by name, politely."


def interview(commands: str = "greet: say hello to someone") -> tuple[dict, list]:
    state = answers.new_state(REQUEST)
    questions = checklist.sync_questions([], state)
    assert answers.apply_answers(REQUEST, state, questions, ["commands"],
                                 {"commands": commands}) == {}
    return state, questions


def answer(state: dict, questions: list, data: dict[str, Any], *, skip: str = "",
           require: bool = True) -> dict[str, list[str]]:
    """Post `data` as the page holding the questions it answers (and the one skipped)."""
    ids = [q["id"] for q in questions if answers.question_field(q) in data or q["id"] == skip
           or (q["kind"] == "examples" and any(k.startswith(f"ex-{q['command']}-")
                                               for k in data))]
    return answers.apply_answers(REQUEST, state, questions, ids, data, skip=skip, require=require)


GOOD_EXAMPLES = {
    "ex-c1-0-in": "name: Ada", "ex-c1-0-out": "message: Hello, Ada!",
    "ex-c1-1-in": "name: Linus", "ex-c1-1-out": "message: Hello, Linus!",
}


def complete(state: dict, questions: list) -> None:
    data = {"cmd-c1-inputs": "name", "cmd-c1-outputs": "message", **GOOD_EXAMPLES,
            "cmd-c1-edge_cases": "An empty name is refused.", "autonomy": "full",
            "constraints": "Standard library only"}
    assert answer(state, questions, data) == {}


# -- values and fields ------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "value"), [
    ("42", 42), ("2.5", 2.5), ("true", True), ("false", False), ("[1, 2]", [1, 2]),
    ("null", None), ('"42"', "42"), ("Paris", "Paris"), ("Hello, Ada!", "Hello, Ada!"),
    ("  padded  ", "padded"), ("NaN", "NaN"), ('{"a": 1}', {"a": 1}),
])
def test_values_that_parse_as_json_become_json_the_rest_stay_text(text: str, value: Any) -> None:
    assert parsing.parse_value(text) == value


def test_name_value_lines_become_a_dict_with_typed_values() -> None:
    fields, errors = parsing.parse_fields("city: Paris\ndays: 3\n\nlate ok: true\ntags: [\"a\"]")
    assert errors == []
    assert fields == {"city": "Paris", "days": 3, "late ok": True, "tags": ["a"]}


def test_a_line_without_a_colon_is_explained_in_plain_words() -> None:
    _, errors = parsing.parse_fields("city: Paris\njust some words")
    assert errors == ["Line 2 (\u201cjust some words\u201d) needs a name, a colon and a value, "
                      "like \u201ccity: Paris\u201d. For a value that spans several lines (a "
                      "table, a list, a text), write its name and a colon on a line of their own "
                      "and paste the lines below it."]


MEETINGS_CSV = "day,start,title\nMon,09:00,Stand-up\nTue,10:30,Review"


def test_a_pasted_table_is_one_value_called_text() -> None:
    assert parsing.parse_example_input(MEETINGS_CSV, False) == ({"text": MEETINGS_CSV}, [])


def test_a_pasted_list_of_meetings_with_times_is_data_not_names() -> None:
    """"Mon 9:30 stand-up" has a colon, but in a time: it is a line of a list, not a name."""
    given = "Mon 9:30 stand-up\nTue 14:00 review"
    assert parsing.parse_example_input(given, False) == ({"text": given}, [])
    assert parsing.parse_example_output("Meeting at 10:30", False) == ("Meeting at 10:30", [])


def test_a_name_alone_on_its_line_holds_the_lines_below_it() -> None:
    given = ("week: 19\nmeetings:\n  Mon 09:00 Stand-up\n  Tue 10:30 Review\n\n"
             "log:\nERROR: disk full\nINFO: retried")
    assert parsing.parse_example_input(given, False) == ({
        "week": 19, "meetings": "Mon 09:00 Stand-up\nTue 10:30 Review",
        "log": "ERROR: disk full\nINFO: retried"}, [])
    assert parsing.parse_example_output("clashes:\nnone", False) == ({"clashes": "none"}, [])


def test_a_pasted_json_object_is_the_input_itself() -> None:
    assert parsing.parse_example_input('{\n  "a": [1, 2]\n}', False) == ({"a": [1, 2]}, [])


def test_tables_are_recognised_for_the_summary_and_prose_is_not() -> None:
    assert parsing.table_rows(MEETINGS_CSV) == [
        ["day", "start", "title"], ["Mon", "09:00", "Stand-up"], ["Tue", "10:30", "Review"]]
    assert parsing.table_rows("name\tage\nAda\t36") == [["name", "age"], ["Ada", "36"]]
    assert parsing.table_rows("Hello, Ada!\nSee you, Ada.") is None


def test_a_name_given_twice_is_an_error_not_a_silent_overwrite() -> None:
    _, errors = parsing.parse_fields("city: Paris\ncity: Rome")
    assert errors == ["\u201ccity\u201d is given twice; give it once."]


def test_output_is_fields_text_or_a_value() -> None:
    assert parsing.parse_example_output("total: 5\nok: true", False) == ({"total": 5, "ok": True},
                                                                        [])
    assert parsing.parse_example_output("Hello, Ada!", False) == ("Hello, Ada!", [])
    assert parsing.parse_example_output("10:30", False) == ("10:30", [])
    assert parsing.parse_example_output('"Note: remember"', False) == ("Note: remember", [])
    assert parsing.parse_example_output("[1, 2, 3]", False) == ([1, 2, 3], [])


def test_json_mode_for_technical_users_and_its_errors() -> None:
    assert parsing.parse_example_input('{"a": [1, {"b": null}]}', True) == (
        {"a": [1, {"b": None}]}, [])
    value, errors = parsing.parse_example_input('{"a": 1', True)
    assert value is None and errors[0].startswith("This is not valid JSON (line 1, column 8)")
    assert parsing.parse_example_input("[1]", True) == (
        None, ["In JSON mode the input must be an object, written in { }."])
    assert parsing.parse_example_output("[1]", True) == ([1], [])


def test_an_empty_input_means_the_task_needs_nothing() -> None:
    assert parsing.parse_example_input("  ", False) == ({}, [])


# -- sample files ----------------------------------------------------------------------------


def sample(name: str, content: bytes, size: int | None = None) -> samples.SampleFile:
    return samples.SampleFile(name=name, size=len(content) if size is None else size,
                              content=content)


def test_an_attached_csv_becomes_a_value_named_after_the_file_kept_exactly() -> None:
    data = {"ex-c1-0-in": "week: 19", "ex-c1-0-out": "3 meetings"}
    csv_bytes = ("\ufeff" + MEETINGS_CSV.replace("\n", "\r\n") + "\r\n").encode()
    errors = samples.attach_samples(data, {"ex-c1-0-file": sample("Meetings May.csv", csv_bytes)})
    assert errors == {}
    assert parsing.parse_example_input(data["ex-c1-0-in"], False) == (
        {"week": 19, "meetings_may": MEETINGS_CSV}, [])


def test_an_attached_json_file_becomes_structured_data_and_names_do_not_clash() -> None:
    data = {"ex-c1-0-in": "people: 2"}
    samples.attach_samples(data, {"ex-c1-0-file": sample("people.json", b'[{"name": "Ann"}]')})
    value, errors = parsing.parse_example_input(data["ex-c1-0-in"], False)
    assert errors == [] and value == {"people": 2, "people_2": [{"name": "Ann"}]}


@pytest.mark.parametrize(("upload", "message"), [
    (sample("big.csv", b"", size=2 * 1024 * 1024),
     "\u201cbig.csv\u201d is 2.0 MB; a sample file can be at most 16 KB. Attach a shorter "
     "extract: a few dozen lines make a good example."),
    (sample("photo.png", b"\x89PNG\r\n"),
     "\u201cphoto.png\u201d is not a CSV, text or JSON file. From a spreadsheet, choose "
     "\u201cSave as\u201d and CSV, then attach that file."),
    (sample("renamed.csv", b"PK\x03\x04\x00\x00binary"),
     "\u201crenamed.csv\u201d is not plain text (it may be a picture, a PDF or a spreadsheet). "
     "Save it as CSV or plain text and attach it again."),
    (sample("latin.txt", "caf\u00e9".encode("latin-1")),
     "\u201clatin.txt\u201d is not written in UTF-8, the text encoding read here. When saving, "
     "choose \u201cCSV UTF-8\u201d (spreadsheets) or UTF-8 (text editors)."),
    (sample("broken.json", b'{"a": '),
     "\u201cbroken.json\u201d: This is not valid JSON (line 1, column 7): Expecting value."),
    (sample("empty.txt", b"\n"), "\u201cempty.txt\u201d is empty."),
])
def test_a_refused_file_says_why_and_changes_nothing(upload: samples.SampleFile,
                                                     message: str) -> None:
    data = {"ex-c1-0-in": "week: 19"}
    assert samples.attach_samples(data, {"ex-c1-0-file": upload}) == {"ex-c1-0-file": [message]}
    assert data == {"ex-c1-0-in": "week: 19"}


def test_a_file_cannot_be_attached_to_an_example_written_as_json() -> None:
    data = {"ex-c1-0-in": '{"a": 1}', "ex-c1-0-json": "1"}
    errors = samples.attach_samples(data, {"ex-c1-0-file": sample("a.txt", b"hello")})
    assert errors["ex-c1-0-file"][0].startswith("Untick \u201cI wrote this example as JSON")
    assert data["ex-c1-0-in"] == '{"a": 1}'


# -- names and actions ------------------------------------------------------------------------


@pytest.mark.parametrize(("request_text", "name"), [
    ("I need a tool that makes a weekly schedule for my team", "weekly-schedule"),
    ("Turn my list of meetings into a weekly summary table.", "weekly-meeting-summary"),
    ("I need something that greets a person by name, politely.", "person-greeter"),
    ("Check a list of meetings for clashes", "meeting-checker"),
    ("Convert temperatures from Celsius to Fahrenheit", "temperature-converter"),
    ("calendar please", "calendar-plugin"),  # would hide Python's own calendar module
    ("I need a thing", "my-plugin"),
])
def test_plugin_name_says_what_it_is_about_and_avoids_python_module_names(
        request_text: str, name: str) -> None:
    assert naming.derive_plugin_name(request_text) == name


BOOKKEEPER = ("I'm the volunteer bookkeeper of our sports club. I get a CSV export from our "
              "bank every month and need to add up how much was spent at REWE, EDEKA or ALDI.")


def test_a_request_that_starts_with_who_asks_is_named_for_what_the_tool_does() -> None:
    assert naming.derive_plugin_name(BOOKKEEPER) == "monthly-spending"
    assert describing.proposed_description(BOOKKEEPER) == (
        "Adds up how much was spent at REWE, EDEKA or ALDI.")


@pytest.mark.parametrize(("request_text", "description"), [
    ("I need something that greets a person by name, politely.",
     "Greets a person by name, politely."),
    ("I need a tool that makes a weekly schedule for my team. It must skip holidays.",
     "Makes a weekly schedule for the team. It must skip holidays."),
    ("Turn my list of meetings into a weekly summary table", "Turns the list of meetings into "
                                                               "a weekly summary table."),
    ("Can you make something to match invoices with payments for me?",
     "Matches invoices with payments."),
    ("I need a thing", "I need a thing"),  # nothing to rewrite safely: as typed
])
def test_the_proposed_description_is_in_the_third_person(request_text: str,
                                                          description: str) -> None:
    assert describing.proposed_description(request_text) == description


@pytest.mark.parametrize(("line", "name"), [
    ("add up how much was spent per category", "spending-by-category"),
    ("Count the visitors", "count-visitors"),
    ("Sort the rows by date", "sort-rows-by-date"),
])
def test_a_task_is_named_for_what_it_does(line: str, name: str) -> None:
    assert naming.derive_task_name(line) == name


def test_names_are_checked_with_the_spec_rule_in_plain_words() -> None:
    assert naming.name_problem("weekly-meeting-summary") == ""
    assert naming.name_problem("my greeter!") == (
        "\u201cmy greeter!\u201d cannot be used as a name: use only letters, digits, dashes (-) "
        "and underscores (_), no spaces, at most 64 characters, e.g. weekly-scheduler.")
    assert naming.name_problem("---") and naming.name_problem("x" * 65)


def test_actions_from_lines_keep_what_was_said_about_them() -> None:
    state, questions = interview("greet: say hello\nCount the visitors")
    assert [(c["key"], c["name"], c["description"]) for c in state["commands"]] == [
        ("c1", "greet", "say hello"), ("c2", "count-visitors", "Count the visitors")]
    answer(state, questions, {"cmd-c1-inputs": "name"}, require=False)
    answer(state, questions, {"commands": "count-visitors\ngreet: say hello"},
           require=False)
    greet = next(c for c in state["commands"] if c["name"] == "greet")
    assert (greet["key"], greet["inputs"]) == ("c1", "name")


def test_duplicate_and_reserved_action_names_are_refused_and_the_text_is_kept() -> None:
    state = answers.new_state(REQUEST)
    questions = checklist.sync_questions([], state)
    errors = answer(state, questions, {"commands": "greet\nGreet\non_command: do things"})
    assert errors["commands"] == [
        "Two tasks would both be called \u201cgreet\u201d; give them different names.",
        "\u201con-command\u201d is a reserved word; call that task something else."]
    assert state["commands"] == []
    commands_question = next(q for q in questions if q["id"] == "commands")
    assert answers.answer_text(commands_question, state) == "greet\nGreet\non_command: do things"


# -- the checklist ----------------------------------------------------------------------------


def test_checklist_covers_inputs_outputs_examples_edge_cases_and_autonomy() -> None:
    state, questions = interview("greet\nwave")
    kinds = [(q["kind"], q["command"], q["priority"]) for q in questions]
    for key in ("c1", "c2"):
        for kind in ("inputs", "outputs", "examples"):
            assert (kind, key, "essential") in kinds
        assert ("edge_cases", key, "important") in kinds
    assert ("autonomy", "", "essential") in kinds
    groups = [[q["id"] for q in group] for group in navigation.question_groups(questions)]
    assert groups == [["commands"], ["inputs:c1", "outputs:c1", "inputs:c2", "outputs:c2"],
                      ["examples:c1", "edge_cases:c1", "examples:c2", "edge_cases:c2"],
                      ["autonomy", "constraints"], []]


def test_the_page_count_is_known_from_the_start_whatever_the_answers() -> None:
    """Four pages, or five while the analyst has questions or may still ask some; adding tasks
    or analyst questions never changes it."""
    state = answers.new_state(REQUEST)
    questions = checklist.sync_questions([], state)
    assert navigation.page_count(questions, analyst_done=True) == 4
    assert navigation.page_count(questions, analyst_done=False) == 5
    answer(state, questions, {"commands": "greet\nwave\ncount"}, require=False)
    assert navigation.page_count(questions, analyst_done=True) == 4
    questions = checklist.sync_questions(
        questions + analyst.parse_analyst_questions('["a?", "b?", "c?", "d?"]', questions,
                                                    round_number=1), state)
    assert navigation.page_count(questions, analyst_done=True) == 5
    assert len(navigation.question_groups(questions)) == 5


def test_removing_an_action_removes_its_questions() -> None:
    state, questions = interview("greet\nwave")
    answer(state, questions, {"commands": "greet"}, require=False)
    assert not [q for q in questions if q["command"] == "c2"]


def test_blank_essential_answer_asks_to_answer_or_skip() -> None:
    state, questions = interview()
    errors = answer(state, questions, {"cmd-c1-inputs": "", "cmd-c1-outputs": "message"})
    assert errors == {"cmd-c1-inputs": [answers.BLANK_ESSENTIAL]}
    assert state["commands"][0]["outputs"] == "message"  # the other answer is kept


def test_blank_optional_answer_becomes_a_stated_assumption_once_the_page_is_fine() -> None:
    state, questions = interview()
    errors = answer(state, questions, {**GOOD_EXAMPLES, "cmd-c1-edge_cases": ""})
    assert errors == {}
    edge = next(q for q in questions if q["id"] == "edge_cases:c1")
    assert edge["skipped"] and "rejects missing or invalid input" in edge["assumption"]


def test_blank_optional_answer_is_not_skipped_while_the_page_has_errors() -> None:
    state, questions = interview()
    errors = answer(state, questions, {"ex-c1-0-in": "name: Ada", "ex-c1-0-out": "",
                                       "cmd-c1-edge_cases": ""})
    assert "ex-c1-0-out" in errors
    assert not next(q for q in questions if q["id"] == "edge_cases:c1")["skipped"]


def test_an_example_without_a_result_is_an_error_next_to_it_and_is_kept() -> None:
    state, questions = interview()
    errors = answer(state, questions, {"ex-c1-0-in": "name: Ada", "ex-c1-0-out": "Hello, Ada!",
                                       "ex-c1-1-in": "name: Linus", "ex-c1-1-out": " "})
    assert errors == {"ex-c1-1-out": [
        "Example 2 has no result: say what should come back for this input."]}
    assert state["commands"][0]["examples"][1] == {"input": "name: Linus", "output": " ",
                                                   "json": False}


def test_fewer_than_two_examples_cannot_pass() -> None:
    state, questions = interview()
    errors = answer(state, questions, {"ex-c1-0-in": "name: Ada", "ex-c1-0-out": "Hi Ada",
                                       "ex-c1-1-in": "", "ex-c1-1-out": ""})
    assert errors["cmd-c1-examples"][0].startswith(
        "Give at least two examples for \u201cgreet\u201d (only 1).")
    question = next(q for q in questions if q["id"] == "examples:c1")
    assert checklist.is_open(question, state) and not checklist.can_skip(question)


def test_examples_cannot_be_skipped_but_other_questions_can() -> None:
    state, questions = interview()
    answer(state, questions, {}, skip="examples:c1", require=False)
    assert not next(q for q in questions if q["id"] == "examples:c1")["skipped"]
    answer(state, questions, {}, skip="inputs:c1", require=False)
    inputs = next(q for q in questions if q["id"] == "inputs:c1")
    assert inputs["skipped"] and not checklist.is_open(inputs, state)
    assert inputs["assumption"] == ("\u201cgreet\u201d needs exactly the information used in "
                                    "its examples.")


def test_skipping_the_actions_assumes_one_action_and_says_so() -> None:
    state = answers.new_state(REQUEST)
    questions = checklist.sync_questions([], state)
    answer(state, questions, {}, skip="commands", require=False)
    assert [c["name"] for c in state["commands"]] == ["run"]
    assert state["commands"][0]["description"] == REQUEST
    assert any("called \u201crun\u201d" in text
               for text in spec_assembly.assumptions(questions, state))


def test_answering_a_skipped_question_replaces_the_assumption() -> None:
    state, questions = interview()
    answer(state, questions, {}, skip="inputs:c1", require=False)
    answer(state, questions, {"cmd-c1-inputs": "name"}, require=False)
    inputs = next(q for q in questions if q["id"] == "inputs:c1")
    assert not inputs["skipped"] and spec_assembly.assumptions(questions, state) == []


def test_progress_and_first_open_page() -> None:
    state, questions = interview()
    assert navigation.first_open_group(questions, state) == 1
    assert navigation.progress(questions, state).essentials_open == 4
    complete(state, questions)
    assert navigation.first_open_group(questions, state) is None
    assert navigation.progress(questions, state, analyst_done=True) == navigation.Progress(
        answered=7, total=7, essentials_open=0, pages_done=4, pages=4)


def test_the_pages_done_never_jump_as_tasks_add_questions() -> None:
    """Issue 48: "Answered 0 of 3" became "1 of 7" once the tasks were named."""
    state, questions = interview()  # the tasks are named: their questions were added
    seen = navigation.progress(questions, state, analyst_done=False)
    assert (seen.pages_done, seen.pages) == (1, 5)
    complete(state, questions)
    done = navigation.progress(questions, state, analyst_done=False)
    assert (done.pages_done, done.pages) == (4, 5)  # the analyst may still ask


# -- the analyst ------------------------------------------------------------------------------


def test_analyst_questions_are_read_from_a_json_list_even_inside_prose_and_fences() -> None:
    reply = ('Sure, here you go:\n```json\n[{"question": "Which language for the greeting?", '
             '"priority": "essential", "assumption": "English"}, "Formal or casual?", 5, '
             '{"q": "no question key"}, {"question": "Nice to know?", "priority": '
             '"nice-to-have"}]\n```')
    new = analyst.parse_analyst_questions(reply, [], round_number=1)
    assert [(q["id"], q["text"], q["priority"], q["assumption"]) for q in new] == [
        ("a1-1", "Which language for the greeting?", "essential", "English"),
        ("a1-2", "Formal or casual?", "important", ""),
        ("a1-3", "Nice to know?", "nice", "")]


@pytest.mark.parametrize("reply", ["", "I have no questions.", "{\"question\": \"x\"}",
                                   "[unterminated", "null", "[[[]]]"])
def test_useless_analyst_replies_add_nothing(reply: str) -> None:
    assert analyst.parse_analyst_questions(reply, [], round_number=1) == []


def test_analyst_questions_already_asked_are_not_asked_again() -> None:
    first = analyst.parse_analyst_questions('["Which language?"]', [], round_number=1)
    again = analyst.parse_analyst_questions('["which language", "Time zone?"]', first,
                                            round_number=2)
    assert [q["text"] for q in again] == ["Time zone?"]


def test_analyst_questions_come_after_the_checklist_essentials_first_on_one_page() -> None:
    state, questions = interview()
    reply = ('[{"question": "n1", "priority": "nice"}, {"question": "e1", "priority": '
             '"essential"}, "i1", "i2", {"question": "e2", "priority": "essential"}]')
    questions = checklist.sync_questions(
        questions + analyst.parse_analyst_questions(reply, questions, round_number=1), state)
    pages = [[q["text"] for q in group] for group in navigation.question_groups(questions)][-2:]
    assert pages == [[q["text"] for q in questions if q["kind"] in ("autonomy", "constraints")],
                     ["e1", "e2", "i1", "i2", "n1"]]


def test_the_analyst_sees_the_request_and_the_answers_so_far() -> None:
    state, questions = interview()
    complete(state, questions)
    messages = analyst.analyst_messages(REQUEST, state, questions)
    assert messages[0].role == "system" and "JSON list" in messages[0].content
    assert REQUEST in messages[1].content
    assert '"output": {"message": "Hello, Ada!"}' in messages[1].content


# -- the spec ---------------------------------------------------------------------------------


def test_a_complete_interview_assembles_a_valid_spec_with_examples_as_typed() -> None:
    state, questions = interview()
    complete(state, questions)
    state["name"] = "greeter"
    assembly = spec_assembly.assemble(REQUEST, state, questions)
    assert assembly.errors == {}
    spec = spec_from_dict(assembly.spec)
    assert spec.name == "greeter" and spec.autonomy == "full"
    assert spec.commands[0].name == "greet"
    assert [(e.input, e.output) for e in spec.commands[0].examples] == [
        ({"name": "Ada"}, {"message": "Hello, Ada!"}),
        ({"name": "Linus"}, {"message": "Hello, Linus!"})]
    assert "Unusual input: An empty name is refused." in spec.commands[0].description
    assert spec.constraints == ("Standard library only",)


def test_skips_and_analyst_answers_are_written_into_the_spec() -> None:
    state, questions = interview()
    complete(state, questions)
    questions = checklist.sync_questions(questions + analyst.parse_analyst_questions(
        '["Formal or casual?", {"question": "Emoji?", "assumption": "No emoji."}]', questions,
        round_number=1), state)
    answer(state, questions, {"q-a1-1": "Formal, always."}, skip="a1-2", require=False)
    constraints = spec_assembly.assemble(REQUEST, state, questions).spec["constraints"]
    assert "Q: Formal or casual? A: Formal, always." in constraints
    assert "Assumption: No emoji." in constraints


def test_assembly_reports_plain_words_errors_per_field() -> None:
    state, questions = interview()
    state.update(name="bad name!", summary=" ", autonomy="")
    errors = spec_assembly.assemble(REQUEST, state, questions).errors
    assert errors["name"] == [naming.name_problem("bad name!")]
    assert errors["summary"] == ["Please say in a sentence or two what the plugin is for."]
    assert errors["autonomy"] == ["Choose how often a person checks the work."]
    assert errors["cmd-c1-examples"][0].startswith("Give at least two examples")


def test_skipped_autonomy_is_assumed_semi_not_an_error() -> None:
    state, questions = interview()
    complete(state, questions)
    state["autonomy"] = ""
    answer(state, questions, {}, skip="autonomy", require=False)
    assembly = spec_assembly.assemble(REQUEST, state, questions)
    assert assembly.errors == {} and assembly.spec["autonomy"] == "semi"
    assert any(text.startswith("Semi-automatic") for text in assembly.assumptions)


def test_engine_spec_errors_land_next_to_the_right_field_in_plain_words() -> None:
    state, questions = interview()
    complete(state, questions)
    state["name"] = "json"  # valid characters, but it would hide Python's own json module
    errors = spec_assembly.assemble(REQUEST, state, questions).errors
    assert errors == {"name": ["This name is already used by Python itself; add a word to it, "
                               "e.g. \u201c-tool\u201d."]}


def test_spec_example_errors_map_back_to_the_form_row_they_came_from() -> None:
    state = {"commands": [{"key": "c7"}]}
    field, text = spec_assembly.spec_error_field(
        "commands[0].examples[1].output: must not be NaN or infinite", state, [[0, 3]])
    assert field == "ex-c7-3-out" and text == "Must not be NaN or infinite."


def test_summary_edits_are_stored_as_typed_and_unskip_what_they_answer() -> None:
    state, questions = interview()
    answer(state, questions, {}, skip="edge_cases:c1", require=False)
    answers.apply_summary(state, questions, {
        "name": "  greeter ", "summary": "Greets people.", "autonomy": "guided",
        "constraints": "", "cmd-c1-name": "greet", "cmd-c1-edge_cases": "Refuse empty names.",
        "ex-c1-0-in": "name: Ada", "ex-c1-0-out": "", "ex-c1-1-in": "", "ex-c1-1-out": ""})
    assert state["name"] == "greeter" and state["autonomy"] == "guided"
    assert state["commands"][0]["examples"] == [{"input": "name: Ada", "output": "",
                                                 "json": False}]
    assert not next(q for q in questions if q["id"] == "edge_cases:c1")["skipped"]


def test_form_rows_always_offer_one_blank_example_to_add_another() -> None:
    command = {"key": "c1", "examples": []}
    assert len(examples.example_rows(command)) == 2
    command["examples"] = [{"input": "a: 1", "output": "2", "json": False}] * 2
    rows = examples.example_rows(command)
    assert len(rows) == 3 and rows[2]["input"] == "" and rows[2]["index"] == 2


# -- one input name per task, one line ending -------------------------------------------------

WEEK_CSV = "day,hours\nMon,3\nTue,4"


def _command(*examples_: tuple[str, str], inputs: str = "") -> dict[str, Any]:
    return {"key": "c1", "name": "sum-hours", "inputs": inputs,
            "examples": [{"input": given, "output": result} for given, result in examples_]}


@pytest.mark.parametrize(("inputs", "name"), [("", "week47"), ("timesheet", "timesheet"),
                                              ("the hours people worked", "week47")])
def test_a_pasted_table_and_an_attached_file_are_one_input_under_one_name(
        inputs: str, name: str) -> None:
    """The probe's wizard keyed a pasted CSV `text:` and an attached file `week47:`: one
    command, two input names, and no correct plugin could pass both examples."""
    attached = {"ex-c1-1-in": ""}
    samples.attach_samples(attached, {"ex-c1-1-file": sample("week47.csv", WEEK_CSV.encode())})
    command = _command((WEEK_CSV.replace("\n", "\r\n"), "total: 7"),
                       (attached["ex-c1-1-in"], "total: 7"), inputs=inputs)
    spec_examples = examples.parsed_examples(command)
    assert [set(e["input"]) for e in spec_examples] == [{name}, {name}]
    assert spec_examples[0]["input"] == spec_examples[1]["input"] == {name: WEEK_CSV}
    assert examples.examples_errors(command) == {}


def test_windows_line_endings_are_gone_from_inputs_and_expected_results() -> None:
    command = _command(("note:\r\n  first\r\n  second", "first\r\nsecond\r\n"),
                       ("note: one", "one"))
    first = examples.parsed_examples(command)[0]
    assert first == {"input": {"note": "first\nsecond"}, "output": "first\nsecond"}


def test_examples_that_give_different_names_are_an_error_next_to_them() -> None:
    command = _command(("city: Paris\ndays: 3", "ok"), ("city: Rome\nnights: 2", "ok"))
    errors = examples.examples_errors(command)
    assert errors == {"cmd-c1-examples": [
        "The examples of \u201csum-hours\u201d give different names (example 1 gives city, "
        "days; example 2 gives city, nights). The plugin is given the same names every time: "
        "use the same names in every example (write a name and a colon on a line above "
        "pasted lines)."]}


def test_every_example_of_every_command_of_an_assembled_spec_has_the_same_keys() -> None:
    state, questions = interview()
    complete(state, questions)
    state["name"] = "greeter"
    state["commands"][0]["examples"].append({"input": "Grace", "output": "message: Hi"})
    spec = spec_assembly.assemble(REQUEST, state, questions).spec
    for command in spec["commands"]:
        keys = {frozenset(example["input"]) for example in command["examples"]}
        assert len(keys) == 1, command["examples"]
