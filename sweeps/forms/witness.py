"""One scenario of the audit, as its witness link names it (agentcore.checker.witness.link's parameters)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from agentcore import BUILTIN, CONDITIONS, MODES, VARIANTS, ConfigError
from sweeps.configs import Conditions, clean_conditions, design
from sweeps.forms.fields import witness_fields
from sweeps.limits import MAX_RUNS


class WitnessForm(forms.Form):
    """One scenario of the audit (agentcore.checker.witness.link's parameters): a built-in job or the job of the
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
    locals().update(witness_fields())

    def clean_design(self) -> str:
        name = self.cleaned_data["design"]
        try:
            design(name)
        except ConfigError as e:
            raise forms.ValidationError(str(e)) from None
        return name

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        given = {c.name: c.value(data[c.name]) for c in CONDITIONS if data.get(c.name) not in (None, "")}
        try:
            data["conditions"] = clean_conditions(**(Conditions()._asdict() | given))
        except ValidationError as e:
            raise forms.ValidationError(e.messages) from None
        if bool(data.get("job")) == (data.get("audit") is not None):
            raise forms.ValidationError("name a built-in job (job=) or a dashboard audit (audit=), one of them")
        data["variant"] = data.get("variant") or "job"
        data["runs"] = data.get("runs") or 1
        return data
