import json

import pytest

from agentcore.jobs import JobError, load, parse, resolve

GOOD = {
    "name": "small",
    "tools": {"create_issue": {"op": "create_issue"}, "comment": {"op": "comment"}},
    "turns": [
        {"calls": [{"id": "a", "tool": "create_issue", "args": {"title": "t"}}]},
        {"calls": [{"id": "b", "tool": "comment", "args": {"issue": {"$result": "a", "field": "number"}}}]},
        {"final": "done"},
    ],
}


def bad(**change):
    job = json.loads(json.dumps(GOOD))
    job.update(change)
    return json.dumps(job)


def test_triage_job_has_four_calls_in_three_replies():
    job = load("triage")
    assert [[c.id for c in t] for t in job.turns] == [["call_1", "call_2"], ["call_3", "call_4"]]
    assert [c.tool for t in job.turns for c in t] == ["create_issue", "create_issue", "search", "comment"]
    assert job.tools["search"].read_only and not job.tools["create_issue"].read_only


def test_a_job_file_loads_from_disk(tmp_path):
    path = tmp_path / "small.json"
    path.write_text(json.dumps(GOOD))
    assert load(str(path)).name == "small"


def test_missing_file_names_it():
    with pytest.raises(JobError, match="nope.json: file: cannot read"):
        load("nope.json")


def test_invalid_json_names_the_file():
    with pytest.raises(JobError, match=r"^x.json: file: not valid JSON"):
        parse("{", "x.json")


def test_unknown_tool_names_the_field():
    text = bad(turns=[{"calls": [{"id": "a", "tool": "delete_repo", "args": {}}]}, {"final": "x"}])
    with pytest.raises(JobError, match=r"^j: turns\[0\]\.calls\[0\]\.tool: unknown tool 'delete_repo'"):
        parse(text, "j")


def test_reference_to_a_later_or_unknown_call_is_refused():
    text = bad(
        turns=[
            {"calls": [{"id": "a", "tool": "comment", "args": {"issue": {"$result": "zz", "field": "n"}}}]},
            {"final": "x"},
        ]
    )
    with pytest.raises(JobError, match=r"turns\[0\]\.calls\[0\]\.args\.issue: refers to 'zz'"):
        parse(text, "j")


def test_reference_within_the_same_turn_is_refused():
    text = bad(
        turns=[
            {
                "calls": [
                    {"id": "a", "tool": "create_issue", "args": {}},
                    {"id": "b", "tool": "comment", "args": {"issue": {"$result": "a", "field": "n"}}},
                ]
            },
            {"final": "x"},
        ]
    )
    with pytest.raises(JobError, match="no call of an earlier turn"):
        parse(text, "j")


def test_wrong_type_of_flag():
    with pytest.raises(JobError, match=r"tools\.comment\.idempotent: must be true or false"):
        parse(bad(tools={"comment": {"op": "comment", "idempotent": "yes"}}), "j")


def test_a_search_must_be_read_only_and_a_change_must_not():
    with pytest.raises(JobError, match="search changes nothing"):
        parse(bad(tools={"s": {"op": "search"}}), "j")
    with pytest.raises(JobError, match="cannot be read_only"):
        parse(bad(tools={"create_issue": {"op": "create_issue", "read_only": True}}), "j")


def test_last_turn_must_be_final():
    with pytest.raises(JobError, match=r"turns\[1\]: the last turn must be"):
        parse(bad(turns=GOOD["turns"][:2]), "j")


def test_duplicate_call_ids():
    text = bad(
        turns=[
            {"calls": [{"id": "a", "tool": "create_issue", "args": {}}]},
            {"calls": [{"id": "a", "tool": "create_issue", "args": {}}]},
            {"final": "x"},
        ]
    )
    with pytest.raises(JobError, match="used twice"):
        parse(text, "j")


def test_deep_nesting_is_refused_cheaply():
    deep = {"a": 1}
    for _ in range(50):
        deep = {"a": deep}
    with pytest.raises(JobError, match="nested deeper"):
        parse(bad(turns=[{"calls": [{"id": "a", "tool": "create_issue", "args": deep}]}, {"final": "x"}]), "j")


def test_huge_file_is_refused():
    with pytest.raises(JobError, match="larger than"):
        parse(" " * 2_000_000, "j")


def test_unknown_top_level_field():
    with pytest.raises(JobError, match="j: extra: unknown field"):
        parse(bad(extra=1), "j")


def test_resolve_fills_references_from_earlier_results():
    args = {"issue": {"$result": "a", "field": "number"}, "list": [{"$result": "a", "field": "x"}]}
    assert resolve(args, {"a": {"number": 7}}) == {"issue": 7, "list": [None]}


def test_nan_and_huge_numbers_are_errors_not_crashes():
    with pytest.raises(JobError, match="not valid JSON"):
        parse('{"name": NaN}', "j")
    with pytest.raises(JobError, match="not valid JSON"):
        parse('{"name": ' + "9" * 5000 + "}", "j")
    with pytest.raises(JobError, match="too large"):
        parse('{"name": 1e400}', "j")


def twice(text: str, old: str, new: str) -> str:
    """`text` with `old` (once) followed by `new`: a JSON object that names a key twice."""
    assert old in text
    return text.replace(old, f"{old}, {new}", 1)


@pytest.mark.parametrize(
    ("old", "new", "path"),
    [
        ('"name": "small"', '"name": "other"', "name"),
        ('"op": "comment"', '"op": "create_issue"', r"tools\.comment\.op"),
        ('"title": "t"', '"title": "u"', r"turns\[0\]\.calls\[0\]\.args\.title"),
        ('"final": "done"', '"final": "again"', r"turns\[2\]\.final"),
    ],
)
def test_a_key_named_twice_in_an_object_is_refused_with_its_path(old, new, path):
    text = twice(json.dumps(GOOD), old, new)
    key = new.split('"')[1]
    with pytest.raises(JobError, match=rf"^j: {path}: the key '{key}' appears more than once in its object"):
        parse(text, "j")


def test_the_outermost_repeated_key_is_named_first():
    text = twice(twice(json.dumps(GOOD), '"op": "comment"', '"op": "comment"'), '"name": "small"', '"name": "x"')
    with pytest.raises(JobError, match=r"^j: name: the key 'name'"):
        parse(text, "j")


def test_the_same_key_in_two_objects_is_no_repeat():
    job = parse(json.dumps(GOOD), "j")
    assert [t.op for t in job.tools.values()] == ["create_issue", "comment"]  # two "op" keys, one per tool
