"""The dashboard's forms: every bad value is a form error, good values come out typed."""

from __future__ import annotations

import json
import uuid

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from agentcore import MODELS, Job
from agentcore.config import CRASH_MODELS  # the names, in order
from sweeps.configs import Conditions, builtin_job_source, clean_spelled
from sweeps.forms.launch import LaunchForm
from sweeps.forms.lists import AnswerForm, HeatmapForm, QuestionListForm, ScenarioFilterForm
from sweeps.models import Sweep
from tests.sweeps import _data
from tests.sweeps._web import launch_data


def launch(files=None, **kw) -> LaunchForm:
    return LaunchForm(launch_data(**kw), files or {})


def upload(content: bytes | str, name: str = "job.json") -> dict:
    raw = content.encode() if isinstance(content, str) else content
    return {"job_file": SimpleUploadedFile(name, raw, content_type="application/json")}


def nested(levels: int) -> list:
    value: list = [1]
    for _ in range(levels):
        value = [value]
    return value


def test_launch_defaults_are_the_chapter_table():
    f = launch()
    assert f.is_valid(), f.errors
    assert f.cleaned_data["job_source"] == builtin_job_source()
    assert isinstance(f.cleaned_data["job_obj"], Job) and f.cleaned_data["job_obj"].name == "triage"
    assert (f.cleaned_data["depth"], f.cleaned_data["runs"]) == (2, 1)


def test_launch_token_comes_out_as_hex():
    token = uuid.uuid4()
    f = launch(request_token=str(token))
    assert f.is_valid() and f.cleaned_data["request_token"] == token.hex


def test_launch_upload_keeps_the_source_text():
    source = builtin_job_source().replace('"triage"', '"renamed"', 1)
    f = launch(files=upload(source), job="upload")
    assert f.is_valid(), f.errors
    assert f.cleaned_data["job_source"] == source and f.cleaned_data["job_obj"].name == "renamed"


@pytest.mark.parametrize(
    "content,message",
    [
        (b"{broken", "not valid JSON"),
        (b"\xff\xfe\x00junk", "not UTF-8"),
        (json.dumps({"name": "x", "tools": {"t": {"op": "explode"}}, "turns": [{"final": "ok"}]}), "must be one of"),
        (
            json.dumps(
                {
                    "name": "x",
                    "tools": {"t": {"op": "comment"}},
                    "turns": [{"calls": [{"id": "c", "tool": "nope", "args": {}}]}, {"final": "f"}],
                }
            ),
            "unknown tool",
        ),
        (
            json.dumps(
                {
                    "name": "x",
                    "tools": {"t": {"op": "comment"}},
                    "turns": [
                        {"calls": [{"id": "c", "tool": "t", "args": {"a": {"$result": "zz", "field": "n"}}}]},
                        {"final": "f"},
                    ],
                }
            ),
            "no call of an earlier turn",
        ),
        (
            json.dumps(
                {"name": "x", "tools": {"t": {"op": "comment"}}, "turns": [{"final": "f"}], "description": nested(25)}
            ),
            "nested deeper",
        ),
        ("[" * 100_000 + "]" * 100_000, "not valid JSON"),
    ],
)
def test_launch_hostile_job_files_are_form_errors(content, message):
    f = launch(files=upload(content), job="upload")
    assert not f.is_valid()
    assert message in " ".join(f.errors["job_file"])


def test_launch_upload_without_a_file():
    f = launch(job="upload")
    assert not f.is_valid() and "choose a job file" in f.errors["job_file"][0]


def test_launch_upload_over_the_limit(settings):
    settings.SWEEPSITE_MAX_JOB_BYTES = 50
    f = launch(files=upload(builtin_job_source()), job="upload")
    assert not f.is_valid() and "limit is 50" in f.errors["job_file"][0]


def test_launch_custom_needs_designs_and_trackers():
    f = launch(preset="custom")
    assert not f.is_valid()
    assert set(f.errors) == {"designs", "trackers"}


def test_launch_custom_with_choices_is_valid():
    f = launch(preset="custom", designs=["keys", "approval-gate"], trackers=["lookup"])
    assert f.is_valid(), f.errors
    assert f.cleaned_data["designs"] == ["keys", "approval-gate"]


@pytest.mark.parametrize(
    "field,value",
    [
        ("runs", "0"),
        ("runs", "11"),
        ("runs", "1.5"),
        ("depth", "0"),
        ("depth", "4"),
        ("person", "nobody"),
        ("preset", "all"),
        ("job", "other"),
        ("request_token", ""),
        ("request_token", "x" * 40),
    ],
)
def test_launch_out_of_range_values(field, value):
    f = launch(**{field: value})
    assert not f.is_valid() and field in f.errors


def test_launch_a_file_sent_with_the_built_in_job_selected_is_an_error():
    """Never the built-in job while the person believes their file is swept."""
    f = launch(files=upload(builtin_job_source()), job="triage")
    assert not f.is_valid()
    assert f.errors["job_file"] == [
        'a job file was chosen, but "the built-in triage job" is selected: choose '
        '"upload a job file" to sweep the file, or remove it'
    ]


def test_launch_name_and_notes_are_optional_and_bounded():
    f = launch(name="  baseline ", notes="why\n")
    assert f.is_valid() and (f.cleaned_data["name"], f.cleaned_data["notes"]) == ("baseline", "why\n")
    plain = launch()
    assert plain.is_valid() and (plain.cleaned_data["name"], plain.cleaned_data["notes"]) == ("", "")
    assert "name" in launch(name="x" * 201).errors and "notes" in launch(notes="y" * 10_001).errors
    assert "name" in launch(name="a\x00b").errors


@pytest.mark.django_db
def test_filter_labels_are_in_one_case_style():
    """Lower case, as every label of the site (Django would capitalize the ones it makes up)."""
    f = ScenarioFilterForm({}, sweep=_data.make_sweep(2))
    labels = [str(field.label) for name, field in f.fields.items() if not field.widget.is_hidden and name != "page"]
    assert labels == [label.lower() for label in labels] and all(labels), labels


@pytest.mark.django_db
def test_filters_come_out_typed():
    sweep = _data.make_sweep(3)
    f = ScenarioFilterForm(
        {"config": "2", "first_point": "4", "has_dups": "yes", "asked": "no", "tracker": "", "page": "3"}, sweep=sweep
    )
    assert f.is_valid(), f.errors
    assert f.filters() == {"config": 2, "first_point": 4, "has_dups": True, "asked": False}
    assert f.cleaned_data["page"] == 3


@pytest.mark.django_db
@pytest.mark.parametrize(
    "data",
    [
        {"config": "3"},
        {"config": "-1"},
        {"first_point": "0"},
        {"first_point": "1e3"},
        {"second_point": "-1"},
        {"first_point": str(10**30)},
        {"design": "x"},
        {"first_kind": "boom"},
        {"twice": "true"},
        {"status": "lost"},
        {"page": "0"},
        {"page": "last"},
    ],
)
def test_filters_refuse_bad_values(data):
    f = ScenarioFilterForm(data, sweep=_data.make_sweep(3))
    assert not f.is_valid()


@pytest.mark.django_db
def test_filter_config_choices_are_the_sweeps():
    f = ScenarioFilterForm({}, sweep=_data.make_sweep(2))
    assert [c for c, _ in f.fields["config"].choices] == ["", "0", "1"]


@pytest.mark.django_db
def test_heatmap_form_defaults():
    f = HeatmapForm({}, sweep=_data.make_sweep(2))
    assert f.is_valid() and (f.cleaned_data["metric"], f.cleaned_data["config"]) == ("duplicates", 0)


@pytest.mark.django_db
@pytest.mark.parametrize("data", [{"metric": "speed"}, {"config": "2"}, {"config": "a"}])
def test_heatmap_form_refuses_bad_values(data):
    assert not HeatmapForm(data, sweep=_data.make_sweep(2)).is_valid()


def test_question_list_form():
    assert QuestionListForm({}).is_valid()
    assert QuestionListForm({"status": "answered", "page": "2"}).is_valid()
    assert not QuestionListForm({"status": "all"}).is_valid()


@pytest.mark.parametrize("value,expected", [("yes", True), ("no", False)])
def test_answer_form(value, expected):
    f = AnswerForm({"happened": value})
    assert f.is_valid() and f.cleaned_data["happened"] is expected


def test_answer_form_needs_a_choice():
    assert not AnswerForm({}).is_valid() and not AnswerForm({"happened": "1"}).is_valid()


def test_person_choices_match_the_model():
    assert {c for c, _ in LaunchForm().fields["person"].choices} == set(Sweep.Person.values)


# --- the conditions: crash model, fsync, and the world's faults ----------------------------------


def test_launch_conditions_come_out_typed():
    f = launch(crash_model="power-cut", fsync="off", tracker_fault="crash")
    assert f.is_valid(), f.errors
    assert (f.cleaned_data["crash_model"], f.cleaned_data["fsync"], f.cleaned_data["tracker_fault"]) == (
        "power-cut",
        False,
        "crash",
    )


def test_launch_world_comes_out_as_written_and_typed():
    f = launch(tracker_fault="ttl:5", tool_faults="k:2", person_faults="deny:0.25", model="fickle", seed="42")
    assert f.is_valid(), f.errors
    assert {n: f.cleaned_data[n] for n in ("tracker_fault", "tool_faults", "person_faults", "model", "seed")} == {
        "tracker_fault": "ttl:5",
        "tool_faults": "k:2",
        "person_faults": "deny:0.25",
        "model": "fickle",
        "seed": 42,
    }


@pytest.mark.parametrize("fault", ["none", "crash", "strict-params", "ttl:1", "ttl:10000"])
def test_launch_takes_every_tracker_fault_agentcore_spells(fault):
    f = launch(tracker_fault=fault)
    assert f.is_valid(), f.errors
    assert f.cleaned_data["tracker_fault"] == fault


def test_launch_conditions_start_at_agentcore_s_defaults():
    form = LaunchForm()
    initial = {n: form.fields[n].initial for n in Conditions._fields}
    assert initial == Conditions(fsync="on")._asdict()  # fsync as its select says it


def test_launch_offers_agentcore_s_crash_models_and_models():
    form = LaunchForm()
    assert [c for c, _ in form.fields["crash_model"].choices] == list(CRASH_MODELS)
    assert [c for c, _ in form.fields["model"].choices] == list(MODELS)
    assert [c for c, _ in form.fields["fsync"].choices] == ["on", "off"]


def test_launch_suggests_spellings_of_each_fault_agentcore_takes():
    form = LaunchForm()
    for field, suggestions in form.world():
        assert all(clean_spelled(field.name, v) == v for v in suggestions)
        if suggestions:
            assert field.field.widget.attrs["list"] == f"{field.auto_id}_spellings"


def test_launch_world_fields_explain_their_spellings():
    helps = {field.name: field.help_text for field, _ in LaunchForm().world()}
    assert "ttl:N" in helps["tracker_fault"] and "strict-params" in helps["tracker_fault"]
    assert "k:N" in helps["tool_faults"] and "deny:P" in helps["person_faults"] and "random" in helps["seed"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("crash_model", "earthquake"),
        ("crash_model", ""),
        ("crash_model", "PANIC"),
        ("fsync", "yes"),
        ("fsync", ""),
        ("fsync", "true"),
        ("tracker_fault", "flaky"),
        ("tracker_fault", ""),
        ("tracker_fault", "ttl:0"),
        ("tracker_fault", "ttl:five"),
        ("tracker_fault", "TTL:5"),
        ("tool_faults", "k:-1"),
        ("tool_faults", "never"),
        ("tool_faults", ""),
        ("person_faults", "deny:1.5"),
        ("person_faults", "wrong:"),
        ("person_faults", "x" * 21),
        ("model", "random"),
        ("model", ""),
        ("seed", "-1"),
        ("seed", "1.5"),
        ("seed", ""),
        ("seed", str(2**31)),
    ],
)
def test_launch_bad_conditions_are_errors_of_their_field(field, value):
    f = launch(**{field: value})
    assert not f.is_valid()
    assert list(f.errors) == [field]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("tracker_fault", "ttl:0", "tracker fault 'ttl:0': N must be a whole number from 1 to 10000"),
        ("tool_faults", "never", "unknown tool faults 'never' (choose from first, k:N, always)"),
        ("person_faults", "deny:1.5", "person faults 'deny:1.5': P must be a probability from 0 to 1"),
    ],
)
def test_a_bad_fault_s_error_is_agentcore_s_message(field, value, message):
    f = launch(**{field: value})
    assert f.errors[field] == [message]


def test_filters_offer_the_corrupt_status():
    assert "corrupt" in [c for c, _ in ScenarioFilterForm.base_fields["status"].choices]


def test_launch_takes_depth_3_with_the_scripted_person():
    f = launch(depth="3")
    assert f.is_valid(), f.errors
    assert f.cleaned_data["depth"] == 3


def test_launch_refuses_depth_3_with_the_question_queue_by_the_depth_field():
    f = launch(depth="3", person="queue")
    assert not f.is_valid()
    assert f.errors["depth"] == [
        "depth 3 needs the scripted person: a question queue pauses scenarios at depth 2 at most"
    ]


def test_heatmap_form_takes_a_pair_for_the_third_point_map():
    sweep = Sweep(configs=_data.configs(2), depth=3)
    f = HeatmapForm({"config": "1", "first": "4", "second": "2"}, sweep=sweep)
    assert f.is_valid(), f.errors
    assert f.pair() == (4, 2)
    f = HeatmapForm({}, sweep=sweep)
    assert f.is_valid() and f.pair() is None


@pytest.mark.parametrize(
    "data",
    [
        {"first": "4"},
        {"second": "2"},
        {"first": "0", "second": "1"},
        {"first": "1", "second": "-2"},
        {"first": "1", "second": "2.5"},
    ],
)
def test_heatmap_form_refuses_half_a_pair_or_bad_points(data):
    assert not HeatmapForm(data, sweep=Sweep(configs=_data.configs(2), depth=3)).is_valid()


def test_scenario_filters_of_the_third_point_exist_at_depth_3_only():
    deep = ScenarioFilterForm({"thrice": "yes", "third_point": "2"}, sweep=Sweep(configs=_data.configs(2), depth=3))
    assert deep.is_valid() and deep.filters() == {"thrice": True, "third_point": 2}
    shallow = ScenarioFilterForm({"thrice": "yes", "third_point": "2"}, sweep=Sweep(configs=_data.configs(2), depth=2))
    assert shallow.is_valid() and shallow.filters() == {}
    assert "thrice" not in shallow.fields and "third_point" not in shallow.fields
