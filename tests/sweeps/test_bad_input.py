"""Bad input through the pages: hostile job files, out-of-range form values, unknown IDs, bad filters,
corrupt stored state. Each gets a clear error and a 4xx (never a 500), and nothing is stored or
enqueued.

Launch errors re-render the sweeps list with the form's errors and status 400 (as the existing views
do); bad GET parameters give the 400 page; unknown IDs a 404.
"""

from __future__ import annotations

import copy
import html
import json
from collections.abc import Callable
from typing import Any

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from sweeps.configs import builtin_job_source
from sweeps.models import Question, Scenario, Sweep
from tests.sweeps import _data
from tests.sweeps._web import counts, launch_data, logged_in, member, record_enqueued, sent_resumes, waiting_sweep

pytestmark = pytest.mark.django_db

TRIAGE = json.loads(builtin_job_source())


@pytest.fixture
def enqueued(monkeypatch):
    return record_enqueued(monkeypatch)


# `client` reads as a viewer; `auth` acts as staff (these sweeps have no owner). Roles: test_roles.py.
@pytest.fixture
def client():
    return logged_in(member("vic", "viewer"))


@pytest.fixture
def auth():
    return logged_in(member("ann", "staff"))


def text(response) -> str:
    return response.content.decode()


def job(change: Callable[[dict], Any]) -> bytes:
    """The triage job with one change (the function edits a deep copy in place)."""
    j = copy.deepcopy(TRIAGE)
    change(j)
    return json.dumps(j).encode()


def nested(levels: int) -> list:
    value: list = [1]
    for _ in range(levels):
        value = [value]
    return value


def call(j: dict, turn: int = 0, index: int = 0) -> dict:
    return j["turns"][turn]["calls"][index]


# (id, file content, a phrase the page must show)
HOSTILE_FILES: list[tuple[str, bytes, str]] = [
    # wrong types
    ("name-is-a-number", job(lambda j: j.update(name=5)), "name: must be a non-empty string"),
    ("name-is-blank", job(lambda j: j.update(name="   ")), "name: must be a non-empty string"),
    ("tools-is-a-list", job(lambda j: j.update(tools=["create_issue"])), "tools: must be an object, not list"),
    ("tools-is-empty", job(lambda j: j.update(tools={})), "tools: declares no tool"),
    ("turns-is-a-string", job(lambda j: j.update(turns="go")), "turns: must be a non-empty list"),
    ("turns-is-empty", job(lambda j: j.update(turns=[])), "turns: must be a non-empty list"),
    ("turn-is-a-number", job(lambda j: j["turns"].insert(0, 7)), "turns[0]: must be an object, not int"),
    ("calls-is-empty", job(lambda j: j["turns"][0].update(calls=[])), "turns[0].calls: must be a non-empty list"),
    ("args-is-a-list", job(lambda j: call(j).update(args=["x"])), "args: must be an object, not list"),
    ("flag-is-a-string", job(lambda j: j["tools"]["create_issue"].update(lookup="yes")), "must be true or false"),
    ("unknown-op", job(lambda j: j["tools"]["create_issue"].update(op="explode")), "must be one of"),
    ("unknown-field", job(lambda j: j.update(extra=1)), "extra: unknown field"),
    ("no-final-turn", job(lambda j: j["turns"].pop()), "the last turn must be"),
    ("search-not-read-only", job(lambda j: j["tools"]["search"].update(read_only=False)), "declare it read_only"),
    ("call-id-twice", job(lambda j: call(j, 0, 1).update(id="call_1")), "is used twice"),
    ("call-missing-field", job(lambda j: call(j).pop("args")), "exactly the fields id, tool, args"),
    # unknown tools
    ("unknown-tool", job(lambda j: call(j).update(tool="delete_everything")), "unknown tool 'delete_everything'"),
    # references to results that do not exist
    (
        "ref-to-no-call",
        job(lambda j: call(j, 1, 1)["args"].update(issue={"$result": "call_99", "field": "number"})),
        "refers to 'call_99', which is no call of an earlier turn",
    ),
    (
        "ref-to-same-turn",
        job(lambda j: call(j, 0, 1)["args"].update(x={"$result": "call_1", "field": "number"})),
        "refers to 'call_1', which is no call of an earlier turn",
    ),
    (
        "ref-to-a-later-turn",
        job(lambda j: call(j, 0, 0)["args"].update(x={"$result": "call_4", "field": "n"})),
        "refers to 'call_4'",
    ),
    (
        "ref-not-a-string",
        job(lambda j: call(j, 1, 1)["args"].update(issue={"$result": 1, "field": "number"})),
        "refers to 1",
    ),
    (
        "ref-with-extra-keys",
        job(lambda j: call(j, 1, 1)["args"].update(issue={"$result": "call_1", "field": "n", "x": 1})),
        "a reference is",
    ),
    # deep nesting
    ("nested-25-levels", job(lambda j: j.update(description=nested(25))), "nested deeper than 20 levels"),
    ("nested-100000-brackets", b"[" * 100_000 + b"]" * 100_000, "not valid JSON"),
    ("nested-objects", b'{"a":' * 50_000 + b"1" + b"}" * 50_000, "not valid JSON"),
    # not UTF-8
    ("invalid-utf8", b"\xff\xfe\x00{", "not UTF-8"),
    ("overlong-utf8", b'{"name": "\xc0\xaf"}', "not UTF-8"),
    ("truncated-utf8", json.dumps(TRIAGE).encode()[:-1] + b"\xe2\x82", "not UTF-8"),
    ("png-bytes", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "not UTF-8"),
    # JSON that is not an object
    ("a-list", b"[]", "file: must be an object, not list"),
    ("a-number", b"42", "file: must be an object, not int"),
    ("a-string", b'"a job"', "file: must be an object, not str"),
    ("null", b"null", "file: must be an object, not NoneType"),
    ("true", b"true", "file: must be an object, not bool"),
    # a key named twice in one object (JSON alone would keep the last, silently)
    (
        "name-twice",
        json.dumps(TRIAGE).replace('"name": "triage"', '"name": "triage", "name": "x"', 1).encode(),
        "hostile.json: name: the key 'name' appears more than once in its object",
    ),
    (
        "op-twice",
        json.dumps(TRIAGE).replace('"op": "comment"', '"op": "comment", "op": "search"', 1).encode(),
        "hostile.json: tools.comment.op: the key 'op' appears more than once in its object",
    ),
    # not JSON at all
    ("broken-json", b'{"name": "x", "tools": {', "not valid JSON"),
    ("blank", b"   \n\t ", "not valid JSON"),
    ("python-literal", b"{'name': 'x'}", "not valid JSON"),
    # empty
    ("empty-file", b"", "The submitted file is empty"),
    # values no database stores (PostgreSQL refuses NUL in text and jsonb, NaN in jsonb) or no page shows
    ("nul-in-name", job(lambda j: j.update(name="tri\u0000age")), "name: contains a NUL character"),
    ("nul-in-an-argument", job(lambda j: call(j)["args"].update(title="a\u0000b")), "contains a NUL character"),
    ("nul-in-a-key", job(lambda j: call(j)["args"].update({"a\u0000": 1})), "contains a NUL character"),
    ("lone-surrogate-in-name", job(lambda j: j.update(name="x\ud800")), "contains a lone surrogate"),
    ("lone-surrogate-in-a-tool", job(lambda j: call(j).update(tool="t\udfff")), "unknown tool 't\\udfff'"),
    ("nan", job(lambda j: call(j)["args"].update(n=float("nan"))), "not valid JSON (NaN is not a JSON number)"),
    (
        "infinity",
        job(lambda j: call(j)["args"].update(n=float("inf"))),
        "not valid JSON (Infinity is not a JSON number)",
    ),
    (
        "1e400",
        json.dumps(TRIAGE).replace('"Login fails after password reset"', "1e400").encode(),
        "not valid JSON (1e400 is too large for a number)",
    ),
    ("5000-digit-number", b'{"name": 1' + b"1" * 5000 + b"}", "not valid JSON (Exceeds the limit"),
    # a name longer than a column
    ("long-name", job(lambda j: j.update(name="n" * 300)), "longer than 200 characters"),
]


@pytest.mark.parametrize("content,phrase", [f[1:] for f in HOSTILE_FILES], ids=[f[0] for f in HOSTILE_FILES])
def test_hostile_job_file_is_a_form_error_and_stores_nothing(
    auth, enqueued, django_capture_on_commit_callbacks, content, phrase
):
    upload = SimpleUploadedFile("hostile.json", content, content_type="application/json")
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        r = auth.post(reverse("sweeps:launch"), launch_data(job="upload", job_file=upload))
    assert r.status_code == 400
    page = text(r)
    assert 'id="launch"' in page and 'class="errorlist' in page  # the form again, with its errors
    assert html.escape(phrase) in page, page[page.find("errorlist") - 200 : page.find("errorlist") + 800]
    assert counts() == (0, 0) and callbacks == [] and enqueued == []


def test_a_job_file_over_the_limit_is_refused(auth, enqueued):
    limit = settings.SWEEPSITE_MAX_JOB_BYTES
    j = copy.deepcopy(TRIAGE)
    j["description"] = "x" * limit  # valid JSON, one byte over is enough
    content = json.dumps(j).encode()
    assert len(content) > limit
    r = auth.post(reverse("sweeps:launch"), launch_data(job="upload", job_file=SimpleUploadedFile("big.json", content)))
    assert r.status_code == 400 and f"the limit is {limit:,}" in text(r)
    assert counts() == (0, 0) and enqueued == []


def test_a_job_too_big_for_its_sweep_is_a_form_error_with_its_figure_and_stores_nothing(
    auth, enqueued, django_capture_on_commit_callbacks
):
    content = _data.long_title_job().encode()  # valid, under the upload limit: only its cost is too big
    assert len(content) < settings.SWEEPSITE_MAX_JOB_BYTES
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        r = auth.post(
            reverse("sweeps:launch"), launch_data(job="upload", job_file=SimpleUploadedFile("long.json", content))
        )
    assert r.status_code == 400
    page = html.unescape(text(r))
    assert "this sweep's states would carry about 3.8" in page
    assert "bytes of calls and final text), more than the 1 GB a sweep may carry" in page
    assert counts() == (0, 0) and callbacks == [] and enqueued == []


def test_the_plan_of_a_job_too_big_for_its_sweep_is_a_400_saying_so(auth):
    upload = SimpleUploadedFile("long.json", _data.long_title_job().encode())
    r = auth.post(reverse("sweeps:plan"), launch_data(job="upload", job_file=upload))
    assert r.status_code == 400
    (error,) = r.json()["errors"]
    assert error.startswith("this sweep's states would carry about 3.8") and "the 1 GB a sweep may carry" in error


def test_a_job_file_exactly_at_the_limit_is_read(auth, settings):
    content = json.dumps(TRIAGE).encode()
    settings.SWEEPSITE_MAX_JOB_BYTES = len(content)
    r = auth.post(
        reverse("sweeps:launch"), launch_data(job="upload", depth="1", job_file=SimpleUploadedFile("j.json", content))
    )
    assert r.status_code == 302 and Sweep.objects.count() == 1


def test_a_byte_order_mark_is_tolerated(auth):
    content = b"\xef\xbb\xbf" + builtin_job_source().encode()
    r = auth.post(
        reverse("sweeps:launch"), launch_data(job="upload", depth="1", job_file=SimpleUploadedFile("bom.json", content))
    )
    assert r.status_code == 302
    assert Sweep.objects.get().job_source == builtin_job_source()


def test_a_hostile_job_name_is_shown_escaped(auth):
    j = copy.deepcopy(TRIAGE)
    j["name"] = "<script>alert(1)</script>"
    upload = SimpleUploadedFile("x.json", json.dumps(j).encode())
    r = auth.post(reverse("sweeps:launch"), launch_data(job="upload", depth="1", job_file=upload), follow=True)
    assert r.status_code == 200
    assert "<script>alert(1)</script>" not in text(r) and "&lt;script&gt;alert(1)&lt;/script&gt;" in text(r)
    assert "<script>alert(1)" not in text(auth.get(reverse("sweeps:list")))


# --- out-of-range form values -------------------------------------------------------------------

BAD_VALUES: list[dict[str, Any]] = [
    {"depth": "4"},
    {"depth": "3", "person": "queue"},
    {"depth": "0"},
    {"depth": "-1"},
    {"depth": "two"},
    {"depth": ""},
    {"runs": "0"},
    {"runs": "1000"},
    {"runs": "-5"},
    {"runs": "1.5"},
    {"runs": "9" * 40},
    {"runs": ""},
    {"person": "x"},
    {"person": ""},
    {"preset": "custom", "designs": ["no-such-design"], "trackers": ["keyed"]},
    {"preset": "custom", "designs": ["loop+reuse_run_id"], "trackers": ["keyed"]},
    {"preset": "custom", "designs": ["loop"], "trackers": ["sometimes"]},
    {"preset": "custom", "designs": ["loop"], "trackers": []},
    {"preset": "custom", "designs": [], "trackers": []},
    {"preset": "everything"},
    {"job": "x"},
    {"job": ""},
    {"request_token": ""},
    {"request_token": "x" * 10_000},
    {"request_token": "' OR 1=1 --"},
]


@pytest.mark.parametrize("changes", BAD_VALUES, ids=lambda c: ",".join(f"{k}={str(v)[:12]}" for k, v in c.items()))
def test_out_of_range_form_values_are_form_errors(auth, enqueued, changes):
    r = auth.post(reverse("sweeps:launch"), launch_data(**changes))
    assert r.status_code == 400
    assert 'class="errorlist' in text(r)
    assert counts() == (0, 0) and enqueued == []


def test_a_post_with_no_fields_at_all(auth):
    r = auth.post(reverse("sweeps:launch"), {})
    assert r.status_code == 400 and counts() == (0, 0)


def test_a_bad_form_keeps_a_fresh_token_for_the_next_submit(auth):
    r = auth.post(reverse("sweeps:launch"), launch_data(request_token="not-a-token"))
    assert r.status_code == 400 and 'name="request_token" value="' in text(r)
    assert "the form was damaged" in text(r)


# --- unknown IDs in URLs ------------------------------------------------------------------------

HUGE = [999_999, 2**31, 2**63 - 1, 2**63, 10**30]
GET_BY_SWEEP = ["sweeps:detail", "sweeps:progress", "sweeps:heatmap", "sweeps:scenarios", "sweeps:sweep_questions"]


@pytest.mark.parametrize("pk", HUGE)
@pytest.mark.parametrize("name", GET_BY_SWEEP)
def test_unknown_sweep_is_404(client, name, pk):
    assert client.get(reverse(name, args=[pk])).status_code == 404


@pytest.mark.parametrize("pk", HUGE)
def test_unknown_ids_for_logged_in_actions_are_404(auth, enqueued, pk):
    assert auth.get(reverse("sweeps:export_table", args=[pk, "csv"])).status_code == 404
    assert auth.get(reverse("sweeps:export_scenarios", args=[pk, "jsonl"])).status_code == 404
    assert auth.post(reverse("sweeps:resume", args=[pk])).status_code == 404
    assert auth.post(reverse("sweeps:answer_all", args=[pk])).status_code == 404
    assert auth.post(reverse("sweeps:answer", args=[pk]), {"happened": "yes"}).status_code == 404
    assert enqueued == []


@pytest.mark.parametrize("pk", HUGE)
def test_unknown_scenario_is_404(client, pk):
    assert client.get(reverse("sweeps:scenario", args=[pk])).status_code == 404


@pytest.mark.parametrize(
    "path",
    [
        "/sweeps/-1/",
        "/sweeps/x/",
        "/sweeps/1.5/",
        "/scenarios/%00/",
        "/questions/0x1/answer/",
        "/sweeps/1/export/table.",
        "/sweeps/1/export/scenarios.csv%00",
    ],
)
def test_malformed_ids_are_404(auth, path):
    _data.make_sweep(1)
    assert auth.get(path).status_code == 404


def test_a_known_sweep_with_an_unknown_format_is_404(auth):
    s = _data.make_sweep(1)
    for fmt in ("xlsx", "CSV", "csv%00", "..", "json.exe"):
        assert auth.get(f"/sweeps/{s.pk}/export/table.{fmt}").status_code == 404


# --- bad filter values --------------------------------------------------------------------------


@pytest.fixture
def sweep():
    s = _data.make_sweep(3)
    _data.add(s, 0, 1)
    _data.add(s, 0, 1, 1, duplicates=2)
    _data.add(s, 1, 2, asks=1)
    _data.chunk(s, 0, 1)
    return s


BAD_FILTERS = [
    "config=x",
    "config=-1",
    "config=3",
    "config=99999999999999999999999",
    "config=1.0",
    "config=%00",
    "first_point=x",
    "first_point=-1",
    "first_point=0",
    "first_point=1e3",
    "first_point=" + "9" * 50,
    "first_point=1000001",
    "second_point=-3",
    "second_point=" + "9" * 500,
    "design=nope",
    "tracker=nope",
    "first_kind=nope",
    "first_kind=%00",
    "twice=maybe",
    "has_dups=1",
    "asked=true",
    "missing=YES",
    "extra_calls=x",
    "status=lost",
    "page=0",
    "page=-1",
    "page=x",
    "page=" + "9" * 30,
    "page=99",
    "config=0&config=x",  # repeated: the last value counts
]


@pytest.mark.parametrize("query", BAD_FILTERS)
def test_bad_scenario_filters_are_400(client, sweep, query):
    r = client.get(reverse("sweeps:scenarios", args=[sweep.pk]) + "?" + query)
    assert r.status_code == 400
    assert "bad filter values" in text(r) or "there is no page" in text(r)


@pytest.mark.parametrize("query", [q for q in BAD_FILTERS if not q.startswith("page")])
@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_bad_export_filters_are_400(auth, sweep, query, fmt):
    r = auth.get(reverse("sweeps:export_scenarios", args=[sweep.pk, fmt]) + "?" + query)
    assert r.status_code == 400 and "bad filter values" in text(r)


@pytest.mark.parametrize(
    "query",
    [
        "metric=bogus",
        "metric=%00",
        "metric=duplicates%20",
        "metric=id",
        "metric=__class__",
        "config=x",
        "config=-1",
        "config=3",
        "config=" + "9" * 40,
        "metric=asks&metric=bogus",
    ],
)
def test_bad_heatmap_options_are_400(client, sweep, query):
    r = client.get(reverse("sweeps:heatmap", args=[sweep.pk]) + "?" + query)
    assert r.status_code == 400 and "bad heatmap options" in text(r)


@pytest.mark.parametrize(
    "query", ["status=closed", "status=%00", "page=0", "page=-2", "page=y", "page=" + "9" * 40, "page=5"]
)
@pytest.mark.parametrize("name", ["sweeps:questions", "sweeps:sweep_questions", "sweeps:list"])
def test_bad_list_parameters_are_400(client, sweep, name, query):
    url = reverse(name, args=[sweep.pk] if name == "sweeps:sweep_questions" else [])
    if name == "sweeps:list" and query.startswith("status"):
        assert client.get(url + "?" + query).status_code == 200  # the sweeps list has no status filter
        return
    assert client.get(url + "?" + query).status_code == 400


@pytest.mark.parametrize(
    "query",
    [
        "config=x&config=0",
        "metric=bogus&metric=asks",
        "has_dups=maybe&has_dups=yes",
        "unknown=1&unknown=2",
        "page=1&page=1",
        "design=&tracker=",
    ],
)
def test_repeated_and_padded_parameters_use_the_last_value(client, auth, sweep, query):
    for url in (
        reverse("sweeps:scenarios", args=[sweep.pk]),
        reverse("sweeps:heatmap", args=[sweep.pk]),
        reverse("sweeps:export_scenarios", args=[sweep.pk, "csv"]),
    ):
        assert auth.get(url + "?" + query).status_code == 200, url


def test_table_export_ignores_query_parameters(auth, sweep):
    Sweep.objects.filter(pk=sweep.pk).update(status=Sweep.Status.DONE)  # a table is exported once final
    r = auth.get(reverse("sweeps:export_table", args=[sweep.pk, "md"]) + "?config=x&page=-1&%00=%00")
    assert r.status_code == 200


# --- corrupt stored state -----------------------------------------------------------------------


def corrupt(q: Question, how: Callable[[dict], None]) -> None:
    durable = copy.deepcopy(q.durable)
    how(durable)
    Question.objects.filter(pk=q.pk).update(durable=durable)


def first_file(durable: dict) -> str:
    return next(iter(durable["files"]))


CORRUPTIONS: list[tuple[str, Callable[[dict], None], str]] = [
    (
        "broken-json",
        lambda d: d["files"].update({first_file(d): '{"run_id": "run-1", "turns": [tru'}),
        "corrupt or truncated checkpoint",
    ),
    ("empty-file", lambda d: d["files"].update({first_file(d): ""}), "corrupt or truncated checkpoint"),
    ("not-a-checkpoint", lambda d: d["files"].update({first_file(d): "[1, 2]"}), "not a checkpoint"),
    ("deeply-nested", lambda d: d["files"].update({first_file(d): "[" * 100_000 + "]" * 100_000}), "checkpoint"),
    ("huge-number", lambda d: d["files"].update({first_file(d): "1" * 5000}), "checkpoint"),
    ("not-text", lambda d: d["files"].update({first_file(d): 42}), "not text"),
    ("files-missing", lambda d: d.pop("files"), "files is missing or of the wrong type"),
    ("tracker-corrupt", lambda d: d.update(tracker={"mode": "?", "effects": 1}), "tracker records are corrupt"),
]


@pytest.mark.parametrize("how,phrase", [c[1:] for c in CORRUPTIONS], ids=[c[0] for c in CORRUPTIONS])
def test_a_corrupt_checkpoint_is_a_clear_error_on_its_pages(
    auth, enqueued, django_capture_on_commit_callbacks, how, phrase
):
    sweep = waiting_sweep()
    q = Question.objects.filter(sweep=sweep, status=Question.Status.OPEN).first()
    corrupt(q, how)

    r = auth.get(reverse("sweeps:scenario", args=[q.scenario_id]))
    assert r.status_code == 200
    page = text(r)
    assert 'id="timeline-error"' in page and f"question {q.pk}" in page and html.escape(phrase) in page

    r = auth.get(reverse("sweeps:sweep_questions", args=[sweep.pk]))
    assert r.status_code == 200
    page = text(r)
    assert f'id="question-error-{q.pk}"' in page and html.escape(phrase) in page
    others = Question.objects.filter(sweep=sweep, status=Question.Status.OPEN).exclude(pk=q.pk)
    assert all(f'id="question-error-{o.pk}"' not in page for o in others)  # only the corrupt one
    assert auth.get(reverse("sweeps:questions")).status_code == 200

    # An answer is still recorded (and its resume enqueued); the pages still answer.
    with django_capture_on_commit_callbacks(execute=True):
        r = auth.post(reverse("sweeps:answer", args=[q.pk]), {"happened": "yes"})
    assert r.status_code == 302 and sent_resumes(enqueued) == [q.pk]
    assert auth.get(reverse("sweeps:scenario", args=[q.scenario_id])).status_code == 200
    assert auth.get(reverse("sweeps:sweep_questions", args=[sweep.pk]) + "?status=answered").status_code == 200


def test_valid_checkpoints_show_no_error(auth):
    sweep = waiting_sweep()
    page = text(auth.get(reverse("sweeps:sweep_questions", args=[sweep.pk])))
    assert "question-error-" not in page
    sc = Scenario.objects.filter(sweep=sweep, status=Scenario.Status.WAITING).first()
    assert 'id="timeline-error"' not in text(auth.get(reverse("sweeps:scenario", args=[sc.pk])))


@pytest.mark.parametrize(
    "timeline,effects",
    [
        ([1, "two", None], None),
        ("not a list", None),
        ({"kind": "crash"}, None),
        ([{"kind": "start", "text": "ok"}], [1, 2]),
        ([{"kind": "start", "text": "ok"}], {"origin": 1}),
    ],
)
def test_a_corrupt_stored_timeline_is_a_clear_error(client, timeline, effects):
    s = _data.make_sweep(1)
    sc = _data.add(s, 0, 1, timeline=timeline, effects=effects)
    r = client.get(reverse("sweeps:scenario", args=[sc.pk]))
    assert r.status_code == 200 and 'id="timeline-error"' in text(r) and "corrupt" in text(r)


@pytest.mark.parametrize(
    "change",
    [
        {"job_source": "{not json"},
        {"configs": [{"name": "x", "design": "no-such-design", "tracker": "keyed"}]},
        {"configs": [{"name": "x"}]},
    ],
)
def test_a_scenario_of_a_corrupt_sweep_is_a_clear_error(client, change):
    s = _data.make_sweep(1)
    sc = _data.add(s, 0, 1)
    Sweep.objects.filter(pk=s.pk).update(**change)
    r = client.get(reverse("sweeps:scenario", args=[sc.pk]))
    assert r.status_code == 200 and 'id="timeline-error"' in text(r)


def test_a_scenario_whose_config_is_out_of_range_is_a_clear_error(client):
    s = _data.make_sweep(1)
    sc = _data.add(s, 0, 1)
    Scenario.objects.filter(pk=sc.pk).update(config=7)
    r = client.get(reverse("sweeps:scenario", args=[sc.pk]))
    assert r.status_code == 200 and 'id="timeline-error"' in text(r)


# --- malformed requests -------------------------------------------------------------------------


def test_too_many_fields_or_files_are_400(auth):
    fields = {**launch_data(), **{f"f{i}": "x" for i in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS + 1)}}
    assert auth.post(reverse("sweeps:launch"), fields).status_code == 400
    files = {
        **launch_data(),
        **{f"f{i}": SimpleUploadedFile(f"{i}.json", b"{}") for i in range(settings.DATA_UPLOAD_MAX_NUMBER_FILES + 1)},
    }
    assert auth.post(reverse("sweeps:launch"), files).status_code == 400
    assert counts() == (0, 0)


@pytest.mark.parametrize(
    "body,content_type",
    [
        (b'--xyz\r\nContent-Disposition: form-data; name="job"\r\n\r\ntri', "multipart/form-data; boundary=xyz"),
        (b"abc", "multipart/form-data"),
        (b'{"job": "triage", "preset": "table"}', "application/json"),
        (b"job=%ff%fe&depth=%00&runs=%", "application/x-www-form-urlencoded"),
        (b"\x00" * 1000, "application/octet-stream"),
    ],
)
def test_malformed_post_bodies_are_400(auth, enqueued, body, content_type):
    r = auth.generic("POST", reverse("sweeps:launch"), body, content_type=content_type)
    assert r.status_code == 400 and counts() == (0, 0) and enqueued == []


def test_bad_percent_encoding_in_a_query_is_400(client, sweep):
    for url in (reverse("sweeps:list"), reverse("sweeps:scenarios", args=[sweep.pk])):
        assert client.get(url + "?page=%ff%fe").status_code == 400


@pytest.mark.parametrize("method", ["put", "patch", "delete", "options"])
def test_other_methods_are_405(auth, sweep, method):
    for url in (
        reverse("sweeps:list"),
        reverse("sweeps:launch"),
        reverse("sweeps:detail", args=[sweep.pk]),
        reverse("sweeps:export_table", args=[sweep.pk, "csv"]),
    ):
        assert getattr(auth, method)(url).status_code == 405


def test_pages_answer_head_requests(client, sweep):
    assert client.head(reverse("sweeps:list")).status_code == 200
    assert client.head(reverse("sweeps:detail", args=[sweep.pk])).status_code == 200
