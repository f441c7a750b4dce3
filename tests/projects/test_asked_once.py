"""The wizard does not ask again what she wrote (issue 48): page 1 proposes the task from the
request instead of asking her to restate it, and an analyst question that the form already
answers (an example shows the file's layout, an earlier answer says whether incoming money
counts) comes filled in with her words. No database: these read the interview's state."""

from __future__ import annotations

from typing import Any

from projects.interview.asked_before import answered_before, questions_answer_before
from projects.interview.commands import parse_commands, proposed_commands_text

BOOKKEEPER = ("I'm the volunteer bookkeeper of our sports club. Every month I export the bank "
              "statement as CSV and need to add up how much was spent per category.")


def state_with_examples() -> dict[str, Any]:
    return {"commands": [{
        "key": "c1", "name": "spending-by-category", "description": "",
        "inputs": "the bank's CSV", "outputs": "a total per category",
        "edge_cases": "Leave out incoming money (positive amounts): only spending counts.",
        "examples": [
            {"input": "rows:\ndate;payee;amount;category\n2026-03-01;REWE;-12,50;food",
             "output": "food: 12.50", "json": False},
            {"input": "rows:\ndate;payee;amount;category\n2026-03-02;ALDI;-3;food",
             "output": "food: 3", "json": False}]}],
        "constraints": "Round every total to whole cents."}


def test_page_one_proposes_the_task_she_described_in_a_form_the_tasks_answer_reads() -> None:
    text = proposed_commands_text(BOOKKEEPER)
    assert text == ("spending-by-category: Adds up how much was spent per category.")
    commands, errors = parse_commands(text, [], BOOKKEEPER)
    assert errors == []
    assert [(c["name"], c["description"]) for c in commands] == [
        ("spending-by-category", "Adds up how much was spent per category.")]
    # An imperative request too: "Greets ..." names the task "greet-...", not "greets-...".
    assert proposed_commands_text("Greet a person by name.").startswith("greet-person-by-name:")


def test_a_question_an_example_or_an_earlier_answer_settles_comes_answered() -> None:
    state = state_with_examples()
    layout, where = answered_before("Which columns does the bank's CSV file have?", state, [])
    assert where == "by your examples"
    assert layout == "As the examples show: rows: / date;payee;amount;category"
    money, where = answered_before("Should incoming money (positive amounts) be counted?",
                                   state, [])
    assert money == "Leave out incoming money (positive amounts): only spending counts."
    assert where.startswith("by what you said it should do when something is missing")
    rounding, where = answered_before("Should totals be rounded to whole cents?", state, [])
    assert (rounding, where) == ("Round every total to whole cents.", "by the rules you gave")


def test_a_new_question_is_still_asked() -> None:
    state = state_with_examples()
    for text in ("Should the totals be shown per month as well?",
                 "What should happen to a row without a category?",
                 "Which currency are the amounts in?"):
        assert answered_before(text, state, []) == ("", ""), text
    # No examples yet: a layout question is the analyst's to ask.
    assert answered_before("Which columns does the file have?", {"commands": []}, []) == ("", "")


def test_the_analysts_new_questions_are_filled_in_and_keep_the_rest_open() -> None:
    state = state_with_examples()
    new = [{"id": "a1-1", "text": "What does the CSV layout look like?", "answer": ""},
           {"id": "a1-2", "text": "Which currency are the amounts in?", "answer": ""}]
    questions_answer_before(new, state, [])
    assert new[0]["answer"].startswith("As the examples show:")
    assert new[0]["answered_from"] == "by your examples"
    assert new[1]["answer"] == "" and "answered_from" not in new[1]


def test_a_question_asked_before_the_examples_is_filled_once_they_are_given() -> None:
    from projects.interview.answers import apply_answers
    from projects.interview.checklist import sync_questions

    state = state_with_examples()
    examples = state["commands"][0].pop("examples")
    asked = {"id": "a1-1", "kind": "text", "text": "Which columns does the CSV have?",
             "help": "", "priority": "important", "command": "", "source": "analyst",
             "answer": "", "skipped": False, "assumption": ""}
    questions = sync_questions([asked], state)
    apply_answers("", state, questions, [], {}, require=False)
    assert questions[-1]["answer"] == ""  # no example yet: still hers to answer
    state["commands"][0]["examples"] = examples
    apply_answers("", state, questions, [], {}, require=False)
    assert questions[-1]["answer"].startswith("As the examples show:")
    # She clears it: it is not filled in again.
    apply_answers("", state, questions, ["a1-1"], {"q-a1-1": ""}, require=False)
    assert questions[-1]["answer"] == ""
