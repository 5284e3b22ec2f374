from agentcore.port.labels import DETAIL_CHARS, Labeller, detail_text, kind_of, label_set_difference, plans


def test_a_label_counts_its_kind_and_detail_in_this_process():
    names = Labeller()
    assert [names.name("put", "step=1"), names.name("put", "step=1"), names.name("reply", "")] == [
        "put step=1 #1",
        "put step=1 #2",
        "reply #1",
    ]


def test_details_are_cut_and_folded():
    text = detail_text("effect", "a\nb" + "x" * 100)
    assert len(text) == DETAIL_CHARS and "\n" not in text and text.endswith("…")


def test_kind_of_a_label():
    assert kind_of("put step=3 #1") == "put"


def test_label_sets_differ_only_by_their_members_not_their_order():
    assert label_set_difference(["a #1", "b #1"], ["b #1", "a #1"]) == ""
    assert "only the first run met: a #1" in label_set_difference(["a #1"], ["b #1"])


def test_plans_grow_by_what_each_restart_met():
    restarts = {("a",): ["x", "y"], ("b",): ["z"]}
    assert plans(["a", "b"], restarts, 2) == [("a",), ("b",), ("a", "x"), ("a", "y"), ("b", "z")]
