"""The lists' and pages' forms: the scenario list's filters, heatmap options, pages, questions, compare,
a sweep's notes, an answer."""

from __future__ import annotations

from typing import Any

from django import forms

from agentcore import DESIGNS, MODES, Kind
from agentcore.port.labels import KINDS as PORT_KINDS
from sweeps import targets
from sweeps.limits import MAX_PAGE, MAX_POINT, MAX_URL_CHARS
from sweeps.models import Scenario, Sweep
from sweeps.selectors import METRICS

YES_NO = [("", "any"), ("yes", "yes"), ("no", "no")]


def _yes_no(label: str) -> forms.TypedChoiceField:
    return forms.TypedChoiceField(
        label=label, choices=YES_NO, required=False, coerce=lambda v: v == "yes", empty_value=None
    )


class ScenarioFilterForm(forms.Form):
    """The scenario list's filters (and the export's): every field optional; unknown parameters are ignored."""

    config = forms.TypedChoiceField(choices=[], coerce=int, required=False, empty_value=None, label="configuration")
    design = forms.ChoiceField(choices=[("", "any")] + [(d, d) for d in DESIGNS], required=False, label="design")
    tracker = forms.ChoiceField(choices=[("", "any")] + [(m, m) for m in MODES], required=False, label="tracker")
    first_kind = forms.ChoiceField(
        choices=[("", "any")] + [(k.value, k.value) for k in Kind], required=False, label="first point kind"
    )
    first_point = forms.IntegerField(min_value=1, max_value=MAX_POINT, required=False, label="first point")
    second_point = forms.IntegerField(
        min_value=0, max_value=MAX_POINT, required=False, label="second point", help_text="0: the once scenario"
    )
    third_point = forms.IntegerField(
        min_value=0,
        max_value=MAX_POINT,
        required=False,
        label="third point",
        help_text="0: a once or twice scenario (depth 3)",
    )
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
    status = forms.ChoiceField(choices=[("", "any")] + list(Scenario.Status.choices), required=False, label="status")
    # Not a filter: the metric whose sum over the listed scenarios the page states first (the table's
    # number that opened the list); kept through the filter form as a hidden field.
    sum = forms.ChoiceField(
        choices=[("", "none")] + [(m, m) for m in METRICS], required=False, widget=forms.HiddenInput
    )
    page = forms.IntegerField(min_value=1, max_value=MAX_PAGE, required=False)

    FILTERS = (
        "config",
        "design",
        "tracker",
        "first_kind",
        "first_point",
        "second_point",
        "third_point",
        "twice",
        "thrice",
        "has_dups",
        "asked",
        "missing",
        "extra_calls",
        "has_wrong",
        "gave_up",
        "denied_ran",
        "avoidable",
        "status",
    )
    THIRD = ("third_point", "thrice")  # a depth-3 sweep's filters

    def __init__(self, *args: Any, sweep: Sweep, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sweep = sweep
        self.fields["config"].choices = [("", "any")] + [(str(i), c["name"]) for i, c in enumerate(sweep.configs)]
        # A registered target's rows name it in their design column (sweeps.targets), and its points
        # are the port's kinds.
        own = dict.fromkeys(targets.design_column(c) for c in sweep.configs if targets.is_target(c))
        if own:
            self.fields["design"].choices += [(d, d) for d in own]
            self.fields["first_kind"].choices += [(k, k) for k in PORT_KINDS]
        if sweep.depth != 3:  # no thrice scenario: no third-point filters (the parameters are ignored)
            for name in self.THIRD:
                del self.fields[name]

    def filters(self) -> dict[str, Any]:
        """The cleaned filters (without the page), None for "any"."""
        return {k: self.cleaned_data.get(k) for k in self.FILTERS if self.cleaned_data.get(k) not in (None, "")}


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
    need = forms.TypedChoiceField(
        choices=[("", "any"), ("necessary", "necessary"), ("avoidable", "avoidable")],
        required=False,
        empty_value=None,
        coerce=lambda v: v == "avoidable",
        label="questions",
    )
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
    happened = forms.TypedChoiceField(
        choices=[("yes", "it happened"), ("no", "it did not happen")], coerce=lambda v: v == "yes"
    )
    next = forms.CharField(required=False, max_length=MAX_URL_CHARS)
