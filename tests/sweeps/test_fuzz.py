"""Hypothesis fuzzing of the launch form, the answer form, and the filter and export endpoints.

Every generated request must answer below 500 (a view that raises fails the test too: the test
client re-raises). The launch form stores a sweep (and registers its enqueue on commit) exactly when
its input was valid: each field is drawn from known-valid values, known-invalid values or random
text, so the expected outcome is known unless random text was drawn (then the outcome must be
one of the two: 302 with one sweep and one enqueue, or 400 with nothing stored).

Each example runs in a savepoint that is rolled back, so examples do not depend on each other. The
number of examples run is counted and written to artifacts/fuzz-count.txt (at least 1,000 in all).
Run only these with `pytest -m fuzz`.
"""

from __future__ import annotations

import copy
import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from django.conf import settings as django_settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, transaction
from django.test import Client
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentcore import DESIGNS, MODELS, MODES, Kind
from agentcore.config import CRASH_MODELS  # the names, in order
from agentcore.standins.faults import MAX_TTL
from sweeps.configs import Conditions, builtin_job_source, conditions_of
from sweeps.limits import MAX_SEED
from sweeps.models import Chunk, Question, Scenario, Sweep
from tests.sweeps import _data
from tests.sweeps._web import exported, member

pytestmark = [pytest.mark.fuzz, pytest.mark.django_db]

# Examples per test; the sum is what CI runs (at least 1,000).
EXAMPLES = {"launch": 350, "filters": 400, "exports": 250, "answer": 150}
RAN: Counter[str] = Counter()
OUTCOMES: Counter[str] = Counter()  # launch examples by outcome: stored a sweep, or a form error
COUNT_FILE = Path(django_settings.BASE_DIR) / "artifacts" / "fuzz-count.txt"


def fuzz_settings(name: str) -> settings:
    return settings(
        max_examples=EXAMPLES[name],
        deadline=None,
        database=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    )


@pytest.fixture(scope="module", autouse=True)
def _report_count() -> Iterator[None]:
    yield
    total = sum(RAN.values())
    COUNT_FILE.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"{name} {n}" for name, n in sorted(RAN.items())] + [f"total {total}"]
    launches = "".join(f"# launch: {n} {what}\n" for what, n in sorted(OUTCOMES.items()))
    COUNT_FILE.write_text("\n".join(lines) + "\n" + launches)
    print(f"\nfuzz cases run: {total} ({', '.join(lines[:-1])}); written to {COUNT_FILE}")


@pytest.fixture
def user():
    return member("fuzz", "staff")  # may do everything (sweeps.roles); no password: no slow hashing


@pytest.fixture
def client_in(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


@pytest.fixture
def sweep() -> Sweep:
    s = _data.make_sweep(3, total_chunks=4)
    for config, first, second, kw in [
        (0, 1, 0, {}),
        (0, 1, 1, {"duplicates": 2, "asks": 1, "avoidable": 1}),
        (0, 2, 0, {"missing": 1, "wrong": 1}),
        (0, 2, 1, {"calls_plus": 3, "gave_up": 1}),
        (1, 1, 0, {"duplicates": 1, "denied_ran": 2}),
        (2, 1, 0, {"status": Scenario.Status.WAITING}),
    ]:
        _data.add(s, config, first, second, **kw)
    for config, first in [(0, 1), (0, 2), (1, 1)]:
        _data.chunk(s, config, first)
    _data.chunk(s, 2, 1, stored=False)
    _data.question(Scenario.objects.get(sweep=s, config=2))
    return s


def rolled_back():
    """A savepoint undone at the end of the example (with the on-commit callbacks registered in it)."""
    return _RolledBack()


class _RolledBack:
    def __enter__(self) -> None:
        self.atomic = transaction.atomic()
        self.atomic.__enter__()

    def __exit__(self, *exc: object) -> None:
        transaction.set_rollback(True)
        self.atomic.__exit__(*exc)


# --- strategies ---------------------------------------------------------------------------------


def spoiled(invalid: list[str], valid: list[str]) -> st.SearchStrategy[tuple[str, bool | None]]:
    """A spoiled field: a known-invalid value, or random text (valid only if it is a valid value)."""
    return st.one_of(
        st.sampled_from(invalid).map(lambda v: (v, False)),
        st.text(max_size=12).map(lambda v: (v, True if v in valid else None)),
    )


def spoiled_choices(valid: list[str], invalid: list[str]) -> st.SearchStrategy[tuple[list[str], bool | None]]:
    """A multiple choice with an unknown name among known ones."""
    return st.tuples(st.lists(st.sampled_from(valid), max_size=2, unique=True), st.sampled_from(invalid)).map(
        lambda t: (t[0] + [t[1]], False)
    )


TRIAGE = json.loads(builtin_job_source())
SAFE_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=40).filter(
    lambda s: s.strip() != ""
)

# Any text, with what databases refuse: NUL, lone surrogates (JSON escapes them: the file is UTF-8).
ANY_TEXT = st.text(
    st.one_of(st.sampled_from(["\x00", "\ud800", "\udfff", "\x1b", " ", "a"]), st.characters()), max_size=40
)

HOSTILE_NAMES = st.one_of(
    ANY_TEXT.filter(str.strip),
    st.builds(
        "{}{}{}".format,
        ANY_TEXT,
        st.sampled_from(
            ["\x00", "\ud800", "\udfff", "\ud83d", "<script>", "'; DROP TABLE sweeps_sweep; --", "\u202e", "\ufeff"]
        ),
        ANY_TEXT,
    ),
)


def _job_with(name: str, title: str, description: str) -> bytes:
    j = copy.deepcopy(TRIAGE)
    j["name"], j["description"] = name, description
    j["turns"][0]["calls"][0]["args"]["title"] = title
    return json.dumps(j).encode()


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
TRIAGE_BYTES = builtin_job_source().encode()
LIMIT = django_settings.SWEEPSITE_MAX_JOB_BYTES


def _mangle(edits: list[tuple[int, int, bytes]]) -> bytes:
    raw = bytearray(TRIAGE_BYTES)
    for at, cut, insert in edits:
        at %= len(raw) + 1
        raw[at : at + cut] = insert
    return bytes(raw)


# (file content or None, valid for an upload: True/False/None)
JOB_FILES = st.one_of(
    st.just((None, False)),  # no file
    st.builds(_job_with, SAFE_TEXT, SAFE_TEXT, SAFE_TEXT).map(lambda b: (b, True)),  # a valid job, renamed
    st.builds(_job_with, ANY_TEXT, ANY_TEXT, ANY_TEXT).map(lambda b: (b, None)),  # ... to any text, NUL and all
    st.just((TRIAGE_BYTES, True)),
    st.just((b"", False)),  # empty
    st.just((b" " * (LIMIT + 1), False)),  # over the limit
    JSON_VALUES.map(lambda v: (json.dumps(v).encode(), None)),  # JSON of any shape
    st.fixed_dictionaries({"name": JSON_VALUES, "tools": JSON_VALUES, "turns": JSON_VALUES}).map(
        lambda v: (json.dumps(v).encode(), None)
    ),  # the right keys, anything in them
    st.binary(max_size=200).map(lambda b: (b, None)),  # any bytes
    st.lists(
        st.tuples(st.integers(0, len(TRIAGE_BYTES)), st.integers(0, 8), st.binary(max_size=4)), min_size=1, max_size=3
    ).map(lambda e: (_mangle(e), None)),  # the triage job, edited at random
)

# The world's spellings a random text is valid as (others: the form decides).
TRACKER_FAULTS = ["none", "crash", "strict-params", "ttl:1", "ttl:5"]
TOOL_FAULTS = ["first", "always", "k:0", "k:1"]
PERSON_FAULTS = ["truthful", "adversarial", "deny:0", "deny:1", "wrong:1"]

# Each field: (strategy of valid values, strategy of spoiled values as (value, valid)).
FIELDS: dict[str, tuple[st.SearchStrategy[Any], st.SearchStrategy[tuple[Any, bool | None]]]] = {
    "job": (st.sampled_from(["triage", "upload"]), spoiled(["", "x", "upload ", "TRIAGE"], ["triage", "upload"])),
    # Mostly small custom sweeps: the table preset plans 11 configurations (~50 ms a launch), the
    # audit preset 24 (every design with every tracker mode).
    "preset": (
        st.sampled_from(["custom"] * 9 + ["table"] * 3 + ["audit"]),
        spoiled(["", "all", "Audit"], ["table", "audit", "custom"]),
    ),
    "designs": (
        st.lists(st.sampled_from(list(DESIGNS)), min_size=1, max_size=2, unique=True),
        spoiled_choices(list(DESIGNS), ["nope", "loop+reuse_run_id", ""]),
    ),
    "trackers": (
        st.lists(st.sampled_from(list(MODES)), min_size=1, max_size=2, unique=True),
        spoiled_choices(list(MODES), ["sometimes", "KEYED"]),
    ),
    "depth": (st.sampled_from(["1", "2"]), spoiled(["0", "4", "-1", "", "x", "1.5"], ["1", "2"])),
    "runs": (
        st.sampled_from(["1", "1", "2", "07", " 2 "]),
        spoiled(["0", "11", "-1", "", "x", "1e1", "9" * 30, "1.5"], [str(n) for n in range(1, 11)]),
    ),
    "person": (st.sampled_from(["scripted", "queue"]), spoiled(["", "x", "robot"], ["scripted", "queue"])),
    "crash_model": (st.sampled_from(CRASH_MODELS), spoiled(["", "PANIC", "power cut", "panic "], list(CRASH_MODELS))),
    "fsync": (st.sampled_from(["on", "off"]), spoiled(["", "yes", "true", "1", "ON"], ["on", "off"])),
    # The world: agentcore.standins.faults' spellings, those with a number drawn over their range (a tool's
    # failures kept small: each one is more crash points to plan).
    "tracker_fault": (
        st.one_of(
            st.sampled_from(["none", "crash", "strict-params", f"ttl:{MAX_TTL}"]),
            st.integers(1, MAX_TTL).map("ttl:{}".format),
        ),
        spoiled(
            [
                "",
                "crashes",
                "None",
                "ttl:0",
                f"ttl:{MAX_TTL + 1}",
                "ttl:",
                "ttl:-1",
                "TTL:5",
                "ttl:\u0665",
                "ttl:5x",
                "strict_params",
            ],
            TRACKER_FAULTS,
        ),
    ),
    "tool_faults": (
        st.sampled_from(["first", "always", "k:0", "k:1", "k:2", "k:3"]),
        spoiled(["", "sometimes", "k:101", "k:", "k:x", "FIRST", "k:-1", "k:1.5"], TOOL_FAULTS),
    ),
    "person_faults": (
        st.one_of(
            st.sampled_from(["truthful", "adversarial", "deny:0", "deny:1", "wrong:0.5"]),
            st.builds("{}:{:.3f}".format, st.sampled_from(["deny", "wrong"]), st.floats(0, 1)),
        ),
        spoiled(
            ["", "liar", "deny:2", "wrong:", "deny:nan", "deny:-0.1", "deny:0." + "1" * 20, "Truthful", "deny:0,5"],
            PERSON_FAULTS,
        ),
    ),
    "model": (st.sampled_from(MODELS), spoiled(["", "FIXED", "random", "fixed "], list(MODELS))),
    "seed": (
        st.one_of(st.integers(0, MAX_SEED).map(str), st.sampled_from(["0", "7", " 3 "])),
        spoiled(["", "-1", "x", "1.5", str(MAX_SEED + 1), "9" * 30, "0x10"], ["0", "1", "2", "7"]),
    ),
    "request_token": (
        st.one_of(st.uuids().map(lambda u: u.hex), st.uuids().map(str)),
        st.one_of(
            st.sampled_from(["", "x", "not-a-uuid", "1" * 40, "' OR 1=1"]).map(lambda v: (v, False)),
            st.text(max_size=40).map(lambda v: (v, None)),
        ),
    ),
}
# An upload that is not spoiled: the triage job, renamed (valid), or renamed to any text (the form decides;
# drawn more often: NUL and lone surrogates were 500s).
_ANY_NAME = st.builds(_job_with, HOSTILE_NAMES, ANY_TEXT, ANY_TEXT).map(lambda b: (b, None))
UPLOADS = st.one_of(
    st.just((TRIAGE_BYTES, True)),
    st.builds(_job_with, SAFE_TEXT, SAFE_TEXT, SAFE_TEXT).map(lambda b: (b, True)),
    _ANY_NAME,
    _ANY_NAME,
)


@st.composite
def launch_posts(draw: st.DrawFn) -> tuple[dict[str, Any], bytes | None, bool | None]:
    """A launch form POST: a valid form with none, one or a few fields spoiled (and maybe a hostile job
    file, maybe unknown fields). (fields, job file bytes or None, expected validity)."""
    spoil = draw(st.sets(st.sampled_from([*FIELDS, "job_file"]), max_size=3))
    data: dict[str, Any] = {}
    flags: list[bool | None] = []
    for name, (good, bad) in FIELDS.items():
        if name in spoil:
            value, ok = draw(bad)
        else:
            value, ok = draw(good), True
        data[name] = value
        flags.append(ok)
    if data["preset"] == "custom":  # the table preset ignores the (valid) choices
        flags += [bool(data["designs"]), bool(data["trackers"])]
    elif not {"designs", "trackers"} & spoil and draw(st.booleans()):
        data["designs"], data["trackers"] = [], []
    if "job_file" in spoil:
        content, file_ok = draw(JOB_FILES)
    elif data["job"] == "upload":
        content, file_ok = draw(UPLOADS)
    else:
        content, file_ok = None, True
    if data["job"] == "upload":
        flags.append(file_ok)
    elif content is not None:
        flags.append(False)  # a file sent with the built-in job selected is an error, never ignored
    data.update(
        draw(
            st.dictionaries(st.text(min_size=1, max_size=8), st.text(max_size=8), max_size=2).filter(
                lambda d: not set(d) & {*data, "job_file"}
            )
        )
    )  # unknown fields are ignored
    if data["preset"] == "audit" and str(data["runs"]).strip() not in ("1", "2"):
        flags.append(None)  # every design with every tracker mode: from 5 runs it passes MAX_CHUNKS
    big = data["preset"] in ("table", "audit") or str(data["runs"]).strip() not in ("1", "2")
    if (data["crash_model"], data["fsync"]) == ("power-cut", "off") and big:
        # A power cut's states make first points (538 for a configuration of 2 runs): the table, the
        # audit's 27 configurations, or 4 configurations of 7 runs, may pass MAX_CHUNKS.
        flags.append(None)
    expected = False if False in flags else (None if None in flags else True)
    return data, content, expected


def _counts() -> tuple[int, int, int]:
    return Sweep.objects.count(), Chunk.objects.count(), len(connection.run_on_commit)


# --- the launch form ----------------------------------------------------------------------------


def test_fuzz_launch_form(client_in):
    url = reverse("sweeps:launch")

    @fuzz_settings("launch")
    @given(launch_posts())
    def launch(post: tuple[dict[str, Any], bytes | None, bool | None]) -> None:
        RAN["launch"] += 1
        data, content, expected = post
        if content is not None:
            data = {**data, "job_file": SimpleUploadedFile("job.json", content, content_type="application/json")}
        with rolled_back():
            sweeps, chunks, callbacks = _counts()
            r = client_in.post(url, data)
            assert r.status_code < 500
            stored = Sweep.objects.count() - sweeps
            outcome = (r.status_code, stored, len(connection.run_on_commit) - callbacks)
            OUTCOMES["stored a sweep" if outcome[0] == 302 else "form error"] += 1
            if outcome[0] == 302:
                assert outcome == (302, 1, 1), outcome  # one sweep, its enqueue registered once
                sweep = Sweep.objects.get(pk=int(r["Location"].rstrip("/").rsplit("/", 1)[1]))
                assert (sweep.depth, sweep.runs, sweep.person) == (
                    int(data["depth"]),
                    int(data["runs"]),
                    data["person"],
                )
                assert conditions_of(sweep) == Conditions(
                    data["crash_model"],
                    data["fsync"] == "on",
                    data["tracker_fault"].strip(),
                    data["tool_faults"].strip(),
                    data["person_faults"].strip(),
                    data["model"],
                    int(data["seed"]),
                )
                assert Chunk.objects.filter(sweep=sweep).count() == sweep.total_chunks > 0
            else:
                assert outcome == (400, 0, 0), outcome  # a form error, nothing stored or enqueued
                assert Chunk.objects.count() == chunks
                assert b'class="errorlist' in r.content
            if expected is not None:
                assert (outcome[0] == 302) is expected, (expected, outcome, r.content[-3000:])

    launch()
    assert RAN["launch"] >= EXAMPLES["launch"]


# --- filters and exports ------------------------------------------------------------------------

PARAMS = [
    "config",
    "design",
    "tracker",
    "first_kind",
    "first_point",
    "second_point",
    "twice",
    "has_dups",
    "asked",
    "missing",
    "extra_calls",
    "has_wrong",
    "gave_up",
    "denied_ran",
    "avoidable",
    "status",
    "page",
    "metric",
    "sum",
    "need",
]
GOOD_VALUES = (
    [
        "",
        "0",
        "1",
        "2",
        "yes",
        "no",
        "done",
        "waiting",
        "failed",
        "open",
        "answered",
        "duplicates",
        "asks",
        "calls_plus",
        "missing",
        "wrong",
        "gave_up",
        "denied_ran",
        "avoidable",
        "necessary",
    ]
    + list(DESIGNS)
    + list(MODES)
    + [k.value for k in Kind]
)
VALUES = st.one_of(
    st.sampled_from(GOOD_VALUES),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.integers(min_value=-3, max_value=5).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(str),
    st.text(max_size=30),
)
PAIRS = st.lists(st.tuples(st.one_of(st.sampled_from(PARAMS), st.text(max_size=10)), VALUES), max_size=8)
RAW = st.text(st.characters(codec="ascii"), max_size=80)  # a query string typed by hand, % and & and all
QUERIES = st.one_of(PAIRS.map(lambda pairs: urlencode(pairs)), RAW.map(lambda s: s.replace("#", "%23")))


def _check_page(r: Any) -> None:
    assert r.status_code in (200, 400), r.status_code
    if r.status_code == 400:
        assert b"Bad request" in r.content


def test_fuzz_filter_pages(client_in, sweep):
    client = client_in
    urls = [
        reverse("sweeps:scenarios", args=[sweep.pk]),
        reverse("sweeps:heatmap", args=[sweep.pk]),
        reverse("sweeps:sweep_questions", args=[sweep.pk]),
        reverse("sweeps:questions"),
        reverse("sweeps:list"),
        reverse("sweeps:detail", args=[sweep.pk]),
        reverse("sweeps:progress", args=[sweep.pk]),
    ]
    total = Scenario.objects.filter(sweep=sweep).count()

    @fuzz_settings("filters")
    @given(st.sampled_from(urls), QUERIES)
    def filters(url: str, query: str) -> None:
        RAN["filters"] += 1
        with rolled_back():
            r = client.get(f"{url}?{query}")
            _check_page(r)
            if r.status_code == 200 and url == urls[0]:
                shown = int(re.search(rb'<strong id="count">(\d+)</strong>', r.content).group(1))
                assert 0 <= shown <= total

    filters()
    assert RAN["filters"] >= EXAMPLES["filters"]


def test_fuzz_exports(client_in, sweep):
    Sweep.objects.filter(pk=sweep.pk).update(status=Sweep.Status.DONE)  # a table is exported once final
    urls = [reverse("sweeps:export_scenarios", args=[sweep.pk, f]) for f in ("csv", "jsonl")] + [
        reverse("sweeps:export_table", args=[sweep.pk, f]) for f in ("csv", "json", "md")
    ]
    total = Scenario.objects.filter(sweep=sweep).count()

    @fuzz_settings("exports")
    @given(st.sampled_from(urls), QUERIES)
    def exports(url: str, query: str) -> None:
        RAN["exports"] += 1
        with rolled_back():
            r = client_in.get(f"{url}?{query}")
            _check_page(r)
            if r.status_code == 200 and "scenarios" in url:
                body = b"".join(exported(client_in, f"{url}?{query}").streaming_content).decode()
                lines = body.splitlines()
                rows = len(lines) - 1 if url.endswith("csv") else len(lines)
                assert 0 <= rows <= total
                if url.endswith("jsonl"):
                    assert all(json.loads(line)["sweep"] == sweep.pk for line in lines)

    exports()
    assert RAN["exports"] >= EXAMPLES["exports"]


# --- the answer form ----------------------------------------------------------------------------


def test_fuzz_answer_form(client_in, sweep):
    q = Question.objects.get(sweep=sweep)
    url = reverse("sweeps:answer", args=[q.pk])
    fields = st.dictionaries(
        st.sampled_from(["happened", "next", "other"]),
        st.one_of(
            st.sampled_from(
                [
                    "yes",
                    "no",
                    "",
                    "/",
                    "//evil.example",
                    "https://evil.example/",
                    "/questions/",
                    "javascript:alert(1)",
                    "\\\\evil",
                ]
            ),
            st.text(max_size=40),
        ),
        max_size=3,
    )

    @fuzz_settings("answer")
    @given(fields)
    def answer(data: dict[str, str]) -> None:
        RAN["answer"] += 1
        with rolled_back():
            r = client_in.post(url, data)
            row = Question.objects.get(pk=q.pk)
            if (
                data.get("happened") in ("yes", "no")
                and len(data.get("next", "")) <= 2000
                and "\x00" not in data.get("next", "")
            ):
                assert r.status_code == 302
                assert r["Location"].startswith("/")
                assert url_has_allowed_host_and_scheme(r["Location"], allowed_hosts={"testserver"})
                assert row.status == Question.Status.ANSWERED and row.answer is (data["happened"] == "yes")
            else:
                assert r.status_code == 400 and row.status == Question.Status.OPEN

    answer()
    assert RAN["answer"] >= EXAMPLES["answer"]
