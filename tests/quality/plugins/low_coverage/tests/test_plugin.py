from number_words.plugin import Plugin


def test_short():
    got = Plugin().on_command("describe", {"numbers": [1, 2, 3], "style": "short"})
    assert got == {"text": "3 numbers"}
