from initials.plugin import Plugin


def test_initials():
    assert Plugin().on_command("initials", {"name": "Ada Lovelace"}) == {"initials": "AL"}


def test_no_name():
    assert Plugin().on_command("initials", {}) == {"initials": ""}
