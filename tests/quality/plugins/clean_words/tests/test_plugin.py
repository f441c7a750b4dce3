import pytest
from clean_words.plugin import Plugin


def test_count_words():
    assert Plugin().on_command("count-words", {"text": "one two three"}) == {"words": 3}


def test_top_word():
    assert Plugin().on_command("top-word", {"text": "a b a"}) == {"word": "a", "count": 2}


def test_top_word_of_nothing():
    assert Plugin().on_command("top-word", {"text": ""}) == {"word": "", "count": 0}


def test_unknown_command():
    with pytest.raises(ValueError):
        Plugin().on_command("nope", {})
