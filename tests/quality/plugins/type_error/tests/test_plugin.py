from item_counter.plugin import Plugin


def test_count_items():
    assert Plugin().on_command("count-items", {"items": ["a", "b"]}) == {"count": 2}
