from running_totals.plugin import Plugin


def test_running_totals():
    got = Plugin().on_command("running-totals", {"numbers": [1, 2, 3]})
    assert got == {"totals": [1, 3, 6]}


def test_empty():
    assert Plugin().on_command("running-totals", {"numbers": []}) == {"totals": []}
