from greeter.plugin import Plugin


def test_greet():
    assert Plugin().on_command("greet", {"name": "Ada"}) == {"greeting": "Hello, Ada!"}
