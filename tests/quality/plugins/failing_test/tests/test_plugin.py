from adder.plugin import Plugin


def test_add():
    assert Plugin().on_command("add", {"a": 2, "b": 3}) == {"sum": 5}


def test_add_zero():
    assert Plugin().on_command("add", {"a": 2, "b": 0}) == {"sum": 2}
