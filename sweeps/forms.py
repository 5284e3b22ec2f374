"""The dashboard's forms: launching a sweep, the scenario list's filters, heatmap options, answers.

Every value from a URL or a POST goes through one of these, so that bad input is a form error (a 400
page), never an exception deeper down.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError

import agentcore as _audit
from agentcore import BUILTIN, CRASH_MODELS, DESIGNS, MODELS, MODES, VARIANTS, Job, JobError, Kind
from agentcore import parse_job as parse
from sweeps.configs import DEPTH_3_PERSON, Conditions, builtin_job_source, clean_conditions, clean_spelled, design
from sweeps.limits import CONDITION_CHARS, MAX_PAGE, MAX_POINT, MAX_RUNS, MAX_SEED, MAX_URL_CHARS
from sweeps.models import Scenario, Sweep
from sweeps.selectors import METRICS

YES_NO = [("", "any"), ("yes", "yes"), ("no", "no")]


def _yes_no(label: str) -> forms.TypedChoiceField:
    return forms.TypedChoiceField(label=label, choices=YES_NO, required=False, coerce=lambda v: v == "yes",
                                  empty_value=None)


# The launch form's words for agentcore's crash models and tracker faults (a name not here is shown as itself).
CRASH_MODEL_TITLES = {
    "panic": "panic: an exception; all the process wrote survives",
    "kill": "kill: SIGKILL; all the process wrote survives",
    "power-cut": "power-cut: only what was synced survives",
}
FSYNC = [("on", "on: each save syncs the file and its folder"), ("off", "off: no sync")]
# The launch form's words for the world's faults (agentcore.faults spells them; a text field takes
# any spelling agentcore's parser takes, and suggests these).
FAULT_SUGGESTIONS = {
    "tracker_fault": ("none", "crash", "ttl:5", "strict-params"),
    "tool_faults": ("first", "k:2", "always"),
    "person_faults": ("truthful", "deny:0.5", "wrong:0.5", "adversarial"),
}
FAULT_HELP = {
    "tracker_fault": "none: it never fails; crash: it can crash too; ttl:N: it forgets keys after N requests; "
                     "strict-params: it refuses a key repeated with other arguments",
    "tool_faults": "first: a flaky tool fails the first attempt of each changing call; k:N: the first N "
                   "attempts; always: every attempt (designs with a flaky tool only)",
    "person_faults": "how the scripted person answers: truthful; deny:P: denies an approval with probability "
                     "P; wrong:P: answers \"did it happen?\" wrong with probability P; adversarial: always wrong",
}
MODEL_TITLES = {
    "fixed": "fixed: asked again, the same reply with the same call IDs",
    "fresh-ids": "fresh-ids: the same calls under new call IDs",
    "fickle": "fickle: other calls (seeded)",
}


def new_request_token() -> str:
    return uuid.uuid4().hex


def printable(text: str) -> str:
    """Text a page can encode: a lone surrogate quoted from a hostile file becomes its escape."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def read_job_file(form: forms.Form, f: Any) -> tuple[str, str] | None:
    """An uploaded job file's text and name, or None with the error added to the form's job_file."""
    raw = f.read(settings.SWEEPSITE_MAX_JOB_BYTES + 1)
    if len(raw) > settings.SWEEPSITE_MAX_JOB_BYTES:
        form.add_error("job_file", f"the file is larger than {settings.SWEEPSITE_MAX_JOB_BYTES:,} bytes")
        return None
    try:
        return raw.decode("utf-8-sig"), f.name or "upload"  # a byte order mark, as some editors write, is dropped
    except UnicodeDecodeError:
        form.add_error("job_file", "the file is not UTF-8 text")
        return None


def checked_job(form: forms.Form, field: str, source: str, name: str) -> Job | None:
    """The job in `source`, parsed and storable as it is (the database keeps its text), or None with
    the error added to the form's `field`."""
    try:
        job = parse(source, name)
    except JobError as e:
        form.add_error(field, printable(str(e)))
        return None
    problem = unstorable(json.loads(source))
    if problem:
        form.add_error(field, f"{name}: {problem}")
        return None
    return job


def unstorable(value: Any, where: str = "file") -> str | None:
    """What in a parsed job no database can store or no page can show, or None.

    A NUL character (PostgreSQL text and jsonb refuse it), a lone surrogate (not UTF-8: neither
    database nor page can encode it). NaN and infinities never get here: agentcore's job parser
    refuses them.
    The job's nesting is bounded (agentcore.limits.MAX_NESTING), so the recursion is too."""
    if isinstance(value, str):
        if "\x00" in value:
            return f"{where}: contains a NUL character (\\u0000)"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return f"{where}: contains a lone surrogate (not UTF-8 text)"
    elif isinstance(value, dict):
        for k, v in value.items():
            problem = unstorable(k, f"{where} (a key)") or unstorable(v, f"{where}.{k}" if where != "file" else k)
            if problem:
                return problem
    elif isinstance(value, list):
        for i, v in enumerate(value):
            problem = unstorable(v, f"{where}[{i}]")
            if problem:
                return problem
    return None


class LaunchForm(forms.Form):
    job = forms.ChoiceField(choices=[("triage", "the built-in triage job"), ("upload", "upload a job file (JSON)")],
                            initial="triage", widget=forms.RadioSelect)
    job_file = forms.FileField(required=False, label="job file",
                               help_text=f"JSON, at most {settings.SWEEPSITE_MAX_JOB_BYTES:,} bytes")
    preset = forms.ChoiceField(
        choices=[("table", "the chapter's table (11 configurations)"),
                 ("audit", f"one world of the audit: every design × every tracker mode ({len(DESIGNS) * len(MODES)} "
                           "configurations) under the world chosen below, with rows and heatmaps (the audit runs 2 "
                           "job runs in sequence: set runs to 2); the Audits page sweeps every world and gives "
                           "the verdicts"),
                 ("custom", "the designs × tracker modes chosen below")],
        initial="table", widget=forms.RadioSelect)
    designs = forms.MultipleChoiceField(choices=[(d.name, f"{d.name} ({d.title})") for d in DESIGNS.values()],
                                        required=False, widget=forms.CheckboxSelectMultiple)
    trackers = forms.MultipleChoiceField(choices=[(m, m) for m in MODES], required=False,
                                         widget=forms.CheckboxSelectMultiple, label="tracker modes")
    depth = forms.TypedChoiceField(choices=[(1, "1: crash once"), (2, "2: crash once, then again in the restart"),
                                            (3, "3: and again in the second restart (scripted person)")],
                                   coerce=int, initial=2)
    runs = forms.IntegerField(min_value=1, max_value=MAX_RUNS, initial=1,
                              help_text=f"job runs in sequence (1 to {MAX_RUNS})")
    person = forms.ChoiceField(choices=[(Sweep.Person.SCRIPTED, "scripted (answers from the tracker)"),
                                        (Sweep.Person.QUEUE, "the question queue (people answer here)")],
                               initial=Sweep.Person.SCRIPTED)
    crash_model = forms.ChoiceField(choices=[(m, CRASH_MODEL_TITLES.get(m, m)) for m in CRASH_MODELS],
                                    initial="panic", label="crash model",
                                    help_text="what a crash leaves of the checkpoint files")
    fsync = forms.TypedChoiceField(choices=FSYNC, coerce=lambda v: v == "on", initial="on", label="fsync",
                                   help_text="whether the checkpoint store syncs what it saves")
    # The world (agentcore.faults): spelled as the command line spells them.
    tracker_fault = forms.CharField(max_length=CONDITION_CHARS, initial="none", label="tracker fault",
                                    help_text=FAULT_HELP["tracker_fault"])
    tool_faults = forms.CharField(max_length=CONDITION_CHARS, initial="first", label="tool faults",
                                  help_text=FAULT_HELP["tool_faults"])
    person_faults = forms.CharField(max_length=CONDITION_CHARS, initial="truthful", label="person faults",
                                    help_text=FAULT_HELP["person_faults"])
    model = forms.ChoiceField(choices=[(m, MODEL_TITLES.get(m, m)) for m in MODELS], initial="fixed", label="model",
                              help_text="what the model replies when a restart asks it again")
    seed = forms.IntegerField(min_value=0, max_value=MAX_SEED, initial=0, label="seed",
                              help_text="seeds the person's and the model's random choices: the same seed, the "
                                        "same sweep")
    name = forms.CharField(required=False, max_length=Sweep._meta.get_field("name").max_length, label="name",
                           help_text="optional: your name for this sweep")
    notes = forms.CharField(required=False, max_length=Sweep._meta.get_field("notes").max_length, label="notes",
                            widget=forms.Textarea(attrs={"rows": 2}), strip=False,
                            help_text="optional: what this sweep is for")
    request_token = forms.UUIDField(widget=forms.HiddenInput)

    def clean_job_file(self) -> Any:
        f = self.cleaned_data.get("job_file")
        if f is not None and f.size > settings.SWEEPSITE_MAX_JOB_BYTES:
            raise forms.ValidationError(
                f"the file is {f.size:,} bytes; the limit is {settings.SWEEPSITE_MAX_JOB_BYTES:,}")
        return f

    def clean_request_token(self) -> str:
        return self.cleaned_data["request_token"].hex

    WORLD = ("tracker_fault", "tool_faults", "person_faults", "model", "seed")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in FAULT_SUGGESTIONS:  # the <datalist> of spellings the page puts beside the field
            self.fields[name].widget.attrs["list"] = f"id_{name}_spellings"

    def world(self) -> list[tuple[forms.BoundField, tuple[str, ...]]]:
        """The World section's fields, each with the spellings its text field suggests (or none)."""
        return [(self[name], FAULT_SUGGESTIONS.get(name, ())) for name in self.WORLD]

    def _clean_fault(self, name: str) -> str:
        """A fault as written, once agentcore.faults' parser takes it (sweeps.configs' check and message)."""
        try:
            return clean_spelled(name, self.cleaned_data.get(name))
        except ValidationError as e:
            raise forms.ValidationError(e.messages) from None

    def clean_tracker_fault(self) -> str:
        return self._clean_fault("tracker_fault")

    def clean_tool_faults(self) -> str:
        return self._clean_fault("tool_faults")

    def clean_person_faults(self) -> str:
        return self._clean_fault("person_faults")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("depth") == 3 and data.get("person") == Sweep.Person.QUEUE:
            self.add_error("depth", DEPTH_3_PERSON)
        if data.get("job") == "triage" and data.get("job_file") is not None:
            # Never run the built-in job while the person believes their file is being swept.
            self.add_error("job_file", "a job file was chosen, but \"the built-in triage job\" is selected: "
                                       "choose \"upload a job file\" to sweep the file, or remove it")
            return data
        if data.get("job") == "triage":
            source, name = builtin_job_source("triage"), "builtin:triage"
        elif data.get("job") == "upload":
            f = data.get("job_file")
            if f is None:
                if "job_file" not in self.errors:
                    self.add_error("job_file", "choose a job file to upload")
                return data
            read = read_job_file(self, f)
            if read is None:
                return data
            source, name = read
        else:
            return data
        job = checked_job(self, "job_file" if data.get("job") == "upload" else "job", source, name)
        if job is None:
            return data
        data["job_obj"] = job
        data["job_source"] = source
        if data.get("preset") == "custom":
            if not data.get("designs"):
                self.add_error("designs", "choose at least one design")
            if not data.get("trackers"):
                self.add_error("trackers", "choose at least one tracker mode")
        return data


class ScenarioFilterForm(forms.Form):
    """The scenario list's filters (and the export's): every field optional; unknown parameters are ignored."""

    config = forms.TypedChoiceField(choices=[], coerce=int, required=False, empty_value=None, label="configuration")
    design = forms.ChoiceField(choices=[("", "any")] + [(d, d) for d in DESIGNS], required=False, label="design")
    tracker = forms.ChoiceField(choices=[("", "any")] + [(m, m) for m in MODES], required=False, label="tracker")
    first_kind = forms.ChoiceField(choices=[("", "any")] + [(k.value, k.value) for k in Kind], required=False,
                                   label="first point kind")
    first_point = forms.IntegerField(min_value=1, max_value=MAX_POINT, required=False, label="first point")
    second_point = forms.IntegerField(min_value=0, max_value=MAX_POINT, required=False, label="second point",
                                      help_text="0: the once scenario")
    third_point = forms.IntegerField(min_value=0, max_value=MAX_POINT, required=False, label="third point",
                                     help_text="0: a once or twice scenario (depth 3)")
    twice = _yes_no("twice")
    thrice = _yes_no("thrice")
    has_dups = _yes_no("has duplicates")
    asked = _yes_no("asked")
    missing = _yes_no("missing effects")
    extra_calls = _yes_no("repeated model calls")
    has_wrong = _yes_no("wrong effects")
    gave_up = _yes_no("gave up on a call")
    denied_ran = _yes_no("a denied call ran")
    avoidable = _yes_no("avoidable asks")
    status = forms.ChoiceField(choices=[("", "any")] + list(Scenario.Status.choices), required=False,
                               label="status")
    # Not a filter: the metric whose sum over the listed scenarios the page states first (the table's
    # number that opened the list); kept through the filter form as a hidden field.
    sum = forms.ChoiceField(choices=[("", "none")] + [(m, m) for m in METRICS], required=False,
                            widget=forms.HiddenInput)
    page = forms.IntegerField(min_value=1, max_value=MAX_PAGE, required=False)

    FILTERS = ("config", "design", "tracker", "first_kind", "first_point", "second_point", "third_point", "twice",
               "thrice", "has_dups", "asked", "missing", "extra_calls", "has_wrong", "gave_up", "denied_ran",
               "avoidable", "status")
    THIRD = ("third_point", "thrice")  # a depth-3 sweep's filters

    def __init__(self, *args: Any, sweep: Sweep, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sweep = sweep
        self.fields["config"].choices = [("", "any")] + [(str(i), c["name"]) for i, c in enumerate(sweep.configs)]
        if sweep.depth != 3:  # no thrice scenario: no third-point filters (the parameters are ignored)
            for name in self.THIRD:
                del self.fields[name]

    def filters(self) -> dict[str, Any]:
        """The cleaned filters (without the page), None for "any"."""
        return {k: self.cleaned_data.get(k) for k in self.FILTERS
                if self.cleaned_data.get(k) not in (None, "")}


class HeatmapForm(forms.Form):
    metric = forms.ChoiceField(choices=[(m, m) for m in METRICS], required=False)
    config = forms.TypedChoiceField(coerce=int, required=False, empty_value=None, choices=[])
    # A depth-3 sweep's (first, second) pair of the configuration, whose third points the third map shows.
    first = forms.IntegerField(min_value=1, max_value=MAX_POINT, required=False, label="first point")
    second = forms.IntegerField(min_value=1, max_value=MAX_POINT, required=False, label="second point")

    def __init__(self, *args: Any, sweep: Sweep, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["config"].choices = [(str(i), c["name"]) for i, c in enumerate(sweep.configs)]

    def clean_metric(self) -> str:
        return self.cleaned_data.get("metric") or "duplicates"

    def clean_config(self) -> int:
        v = self.cleaned_data.get("config")
        return 0 if v is None else v

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if (data.get("first") is None) != (data.get("second") is None):
            raise forms.ValidationError("choose a first and a second point (both) for the third-point map")
        return data

    def pair(self) -> tuple[int, int] | None:
        """The (first, second) pair chosen (after is_valid()), or None."""
        first, second = self.cleaned_data.get("first"), self.cleaned_data.get("second")
        return None if first is None or second is None else (first, second)


class SweepNotesForm(forms.ModelForm):
    """A sweep's name and notes, edited on its page by its owner or staff."""

    class Meta:
        model = Sweep
        fields = ["name", "notes"]
        labels = {"name": "name", "notes": "notes"}
        widgets = {"notes": forms.Textarea(attrs={"rows": 3})}


class PageForm(forms.Form):
    page = forms.IntegerField(min_value=1, max_value=MAX_PAGE, required=False)


class QuestionListForm(forms.Form):
    status = forms.ChoiceField(choices=[("open", "open"), ("answered", "answered")], required=False)
    # Avoidable: a key or a lookup would have settled it (agentcore says so); necessary: nothing could.
    need = forms.TypedChoiceField(choices=[("", "any"), ("necessary", "necessary"), ("avoidable", "avoidable")],
                                  required=False, empty_value=None, coerce=lambda v: v == "avoidable",
                                  label="questions")
    page = forms.IntegerField(min_value=1, max_value=MAX_PAGE, required=False)

    def clean_status(self) -> str:
        return self.cleaned_data.get("status") or "open"


class CompareForm(forms.Form):
    """Two sweeps to compare, by ID (a select of the latest sweeps; any ID is taken: unknown is a 404)."""

    a = forms.IntegerField(min_value=1, max_value=2**31 - 1, required=False, label="sweep A", widget=forms.Select)
    b = forms.IntegerField(min_value=1, max_value=2**31 - 1, required=False, label="sweep B", widget=forms.Select)

    def offer(self, choices: list[tuple[int, str]]) -> None:
        """The sweeps the selects list: (ID, description)."""
        for name in ("a", "b"):
            self.fields[name].widget.choices = [("", "choose a sweep")] + choices

    def pair(self) -> tuple[int, int] | None:
        """Both IDs when both were given (after is_valid()), else None: the page only offers the choice."""
        a, b = self.cleaned_data.get("a"), self.cleaned_data.get("b")
        return (a, b) if a is not None and b is not None else None


class BackForm(forms.Form):
    """A scenario page's `back`: the list (or map) it was opened from; views check it is a local page."""

    back = forms.CharField(required=False, max_length=MAX_URL_CHARS)


class AnswerForm(forms.Form):
    happened = forms.TypedChoiceField(choices=[("yes", "it happened"), ("no", "it did not happen")],
                                      coerce=lambda v: v == "yes")
    next = forms.CharField(required=False, max_length=MAX_URL_CHARS)


class WitnessForm(forms.Form):
    """One scenario of the audit (agentcore.audit.link's parameters): a built-in job or the job of the
    dashboard's audit `audit`, or one of its variants, a design (with planted bugs,
    "loop+reuse_run_id"), a tracker mode, job runs, the crash points, and the world's conditions
    (the command line's spellings; fsync on or off)."""

    job = forms.ChoiceField(choices=[(j, j) for j in BUILTIN], required=False)
    audit = forms.IntegerField(min_value=1, required=False)
    variant = forms.ChoiceField(choices=[(v, v) for v in VARIANTS], required=False)
    design = forms.CharField(max_length=200)
    tracker = forms.ChoiceField(choices=[(m, m) for m in MODES])
    runs = forms.IntegerField(min_value=1, max_value=MAX_RUNS, required=False)
    first = forms.IntegerField(min_value=1)
    second = forms.IntegerField(min_value=1, required=False)
    crash_model = forms.CharField(max_length=CONDITION_CHARS, required=False)
    fsync = forms.ChoiceField(choices=[("on", "on"), ("off", "off")], required=False)
    tracker_fault = forms.CharField(max_length=CONDITION_CHARS, required=False)
    tool_faults = forms.CharField(max_length=CONDITION_CHARS, required=False)
    person_faults = forms.CharField(max_length=CONDITION_CHARS, required=False)
    model = forms.CharField(max_length=CONDITION_CHARS, required=False)
    seed = forms.IntegerField(min_value=0, max_value=MAX_SEED, required=False)

    def clean_design(self) -> str:
        name = self.cleaned_data["design"]
        try:
            design(name)
        except ValueError as e:
            raise forms.ValidationError(str(e)) from None
        return name

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        given = {c: data.get(c) for c in Conditions._fields if data.get(c) not in (None, "")}
        if "fsync" in given:
            given["fsync"] = given["fsync"] == "on"
        try:
            data["conditions"] = clean_conditions(**(Conditions()._asdict() | given))
        except ValidationError as e:
            raise forms.ValidationError(e.messages) from None
        if bool(data.get("job")) == (data.get("audit") is not None):
            raise forms.ValidationError("name a built-in job (job=) or a dashboard audit (audit=), one of them")
        data["variant"] = data.get("variant") or "job"
        data["runs"] = data.get("runs") or 1
        return data


class AuditForm(forms.Form):
    """Launch an audit (agentcore.audit): a built-in job or an uploaded one, designs, tracker modes
    and world models (default: all of them). The service checks the choices again."""

    job = forms.ChoiceField(choices=[(name, f"built-in: {name}") for name in BUILTIN], initial="triage",
                            required=False)
    job_file = forms.FileField(required=False, label="or a job file", help_text="replaces the built-in job")
    designs = forms.MultipleChoiceField(choices=[(d, d) for d in DESIGNS], initial=list(DESIGNS),
                                        widget=forms.CheckboxSelectMultiple)
    trackers = forms.MultipleChoiceField(choices=[(m, m) for m in MODES], initial=list(MODES),
                                         widget=forms.CheckboxSelectMultiple)
    worlds = forms.MultipleChoiceField(choices=[(w.name, w.name) for w in _audit.WORLDS],
                                       initial=[w.name for w in _audit.WORLDS], widget=forms.CheckboxSelectMultiple)

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        f = data.get("job_file")
        if f is not None:
            read = read_job_file(self, f)
            if read is None:
                return data
        else:
            name = data.get("job") or "triage"
            read = builtin_job_source(name), f"builtin:{name}"
        if checked_job(self, "job_file" if f is not None else "job", *read) is not None:
            data["job_source"], data["source_name"] = read
        return data
