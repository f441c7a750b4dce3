import pytest
from grader.plugin import Plugin, letter


def test_grade():
    assert Plugin().on_command("grade", {"score": 95}) == {"grade": "A"}


@pytest.mark.parametrize(("score", "expected"), [
    (100, "A++"), (97, "A+"), (91, "A-"), (88, "B+"), (85, "B"), (81, "B-"), (78, "C+"),
    (75, "C"), (71, "C-"), (65, "D"), (10, "F"), (-5, "F"),
])
def test_letters(score, expected):
    assert letter(score) == expected
