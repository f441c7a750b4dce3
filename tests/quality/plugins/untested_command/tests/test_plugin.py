from case_tools.plugin import Plugin


def test_shout():
    assert Plugin().on_command("shout", {"text": "hi"}) == {"text": "HI"}
