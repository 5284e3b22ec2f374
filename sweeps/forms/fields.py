"""The conditions' form fields, each derived from its declaration (agentcore.conditions): the launch
form's (a closed condition's select with its titles, an open spelling's text field with the spellings
its page suggests, a whole number) and the witness form's (as its link spells them, each optional)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms

from agentcore import CONDITIONS, Condition
from sweeps.limits import CONDITION_CHARS, MAX_SEED


def launch_field(c: Condition) -> forms.Field:
    common: dict[str, Any] = {"label": c.title, "help_text": c.long_help, "initial": c.text(c.default)}
    if c.choices:
        if c.type is bool:
            return forms.TypedChoiceField(choices=c.choices, coerce=c.value, **common)
        return forms.ChoiceField(choices=c.choices, **common)
    if c.type is int:
        return forms.IntegerField(min_value=c.minimum, max_value=MAX_SEED, **common)
    field = forms.CharField(max_length=CONDITION_CHARS, **common)
    if c.suggestions:  # the <datalist> of spellings the page puts beside the field
        field.widget.attrs["list"] = f"id_{c.name}_spellings"
    return field


def _cleaner(name: str) -> Callable[[Any], str]:
    def clean(form: Any) -> str:
        return form._clean_fault(name)

    return clean


def launch_fields() -> dict[str, Any]:
    """The launch form's condition fields in CONDITIONS' order, and each open spelling's clean_NAME
    method (the form's `_clean_fault`: agentcore.standins.faults' parser, sweeps.configs' message)."""
    fields: dict[str, Any] = {c.name: launch_field(c) for c in CONDITIONS}
    fields |= {f"clean_{c.name}": _cleaner(c.name) for c in CONDITIONS if c.parse is not None and not c.choices}
    return fields


def witness_field(c: Condition) -> forms.Field:
    if c.type is bool:
        return forms.ChoiceField(choices=[(v, v) for v in c.values], required=False)
    if c.type is int:
        return forms.IntegerField(min_value=c.minimum, max_value=MAX_SEED, required=False)
    return forms.CharField(max_length=CONDITION_CHARS, required=False)


def witness_fields() -> dict[str, forms.Field]:
    return {c.name: witness_field(c) for c in CONDITIONS}


def section(name: str) -> tuple[str, ...]:
    """The names of a section's conditions ("crash" or "world"), in order."""
    return tuple(c.name for c in CONDITIONS if c.section == name)
