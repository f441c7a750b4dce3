from reverser.plugin import Plugin


def test_reverse():
    assert Plugin().on_command("reverse", {"text": "abc"}) == {"text": "cba"}
