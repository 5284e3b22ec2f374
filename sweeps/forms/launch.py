"""Launching a sweep (LaunchForm) or an audit (AuditForm)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError

import agentcore as _audit
from agentcore import BUILTIN, DESIGNS, MODES
from agentcore import CONDITIONS_BY_NAME as NAMED
from sweeps import targets as sweep_targets
from sweeps.configs import DEPTH_3_PERSON, Conditions, builtin_job_source, clean_spelled
from sweeps.forms.fields import launch_fields, section
from sweeps.forms.jobfiles import checked_job, read_job_file
from sweeps.limits import MAX_RUNS
from sweeps.models import Sweep
from sweeps.request import LaunchRequest, launch_request, preset_configs


class LaunchForm(forms.Form):
    job = forms.ChoiceField(
        choices=[("triage", "the built-in triage job"), ("upload", "upload a job file (JSON)")],
        initial="triage",
        widget=forms.RadioSelect,
    )
    job_file = forms.FileField(
        required=False, label="job file", help_text=f"JSON, at most {settings.SWEEPSITE_MAX_JOB_BYTES:,} bytes"
    )
    preset = forms.ChoiceField(
        choices=[
            ("table", "the chapter's table (11 configurations)"),
            (
                "audit",
                f"one world of the audit: every design × every tracker mode ({len(DESIGNS) * len(MODES)} "
                "configurations) under the world chosen below, with rows and heatmaps (the audit runs 2 "
                "job runs in sequence: set runs to 2); the Audits page sweeps every world and gives "
                "the verdicts",
            ),
            ("custom", "the designs × tracker modes chosen below"),
            (
                "targets",
                "the registered agents chosen below: your own loops, crashed through the port at each of "
                "their points (their saves, the model's replies, the tools' effects)",
            ),
        ],
        initial="table",
        widget=forms.RadioSelect,
    )
    designs = forms.MultipleChoiceField(
        choices=[(d.name, f"{d.name} ({d.title})") for d in DESIGNS.values()],
        required=False,
        widget=forms.CheckboxSelectMultiple,
    )
    trackers = forms.MultipleChoiceField(
        choices=[(m, m) for m in MODES], required=False, widget=forms.CheckboxSelectMultiple, label="tracker modes"
    )
    # The registered targets (sweeps.targets; settings.SWEEPSITE_TARGETS), by name: never a module path.
    targets = forms.MultipleChoiceField(
        choices=[], required=False, widget=forms.CheckboxSelectMultiple, label="registered agents"
    )
    # A target's model, from the model condition's declaration, at fresh IDs as a real provider's: the
    # World section's model stays the designs' (a target's sweep refuses it changed).
    target_model = forms.ChoiceField(
        choices=NAMED["model"].choices,
        initial=sweep_targets.DEFAULT_MODEL,
        required=False,
        label="the agents' model",
        help_text="fresh-ids, as a real provider: a restart that asks again gets new tool-call IDs",
    )
    depth = forms.TypedChoiceField(
        choices=[
            (1, "1: crash once"),
            (2, "2: crash once, then again in the restart"),
            (3, "3: and again in the second restart (scripted person)"),
        ],
        coerce=int,
        initial=2,
    )
    runs = forms.IntegerField(
        min_value=1, max_value=MAX_RUNS, initial=1, help_text=f"job runs in sequence (1 to {MAX_RUNS})"
    )
    person = forms.ChoiceField(
        choices=[
            (Sweep.Person.SCRIPTED, "scripted (answers from the tracker)"),
            (Sweep.Person.QUEUE, "the question queue (people answer here)"),
        ],
        initial=Sweep.Person.SCRIPTED,
    )
    # The conditions (agentcore.conditions), spelled as the command line spells them.
    locals().update(launch_fields())
    name = forms.CharField(
        required=False,
        max_length=Sweep._meta.get_field("name").max_length,
        label="name",
        help_text="optional: your name for this sweep",
    )
    notes = forms.CharField(
        required=False,
        max_length=Sweep._meta.get_field("notes").max_length,
        label="notes",
        widget=forms.Textarea(attrs={"rows": 2}),
        strip=False,
        help_text="optional: what this sweep is for",
    )
    request_token = forms.UUIDField(widget=forms.HiddenInput)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["targets"].choices = [
            (r.name, f"{r.name} ({r.target})") for r in sweep_targets.registered().values()
        ]

    def clean_job_file(self) -> Any:
        f = self.cleaned_data.get("job_file")
        if f is not None and f.size > settings.SWEEPSITE_MAX_JOB_BYTES:
            raise forms.ValidationError(
                f"the file is {f.size:,} bytes; the limit is {settings.SWEEPSITE_MAX_JOB_BYTES:,}"
            )
        return f

    def clean_request_token(self) -> str:
        return self.cleaned_data["request_token"].hex

    CRASH = section("crash")
    WORLD = section("world")

    def crash(self) -> list[forms.BoundField]:
        """The Crash conditions section's fields."""
        return [self[name] for name in self.CRASH]

    def world(self) -> list[tuple[forms.BoundField, tuple[str, ...]]]:
        """The World section's fields, each with the spellings its text field suggests (or none)."""
        return [(self[name], NAMED[name].suggestions) for name in self.WORLD]

    def _clean_fault(self, name: str) -> str:
        """A fault as written, once agentcore.standins.faults' parser takes it (sweeps.configs' check and message)."""
        try:
            return clean_spelled(name, self.cleaned_data.get(name))
        except ValidationError as e:
            raise forms.ValidationError(e.messages) from None

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("depth") == 3 and data.get("person") == Sweep.Person.QUEUE:
            self.add_error("depth", DEPTH_3_PERSON)
        if data.get("job") == "triage" and data.get("job_file") is not None:
            # Never run the built-in job while the person believes their file is being swept.
            self.add_error(
                "job_file",
                'a job file was chosen, but "the built-in triage job" is selected: '
                'choose "upload a job file" to sweep the file, or remove it',
            )
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
        if data.get("preset") == "targets":
            if not data.get("targets"):
                self.add_error(
                    "targets",
                    "choose at least one registered agent"
                    if self.fields["targets"].choices
                    else "no agent is registered here: the operator sets SWEEPSITE_TARGETS",
                )
            if data.get("model") != NAMED["model"].default:
                self.add_error("model", "a target's model is chosen with the agents (the agents' model)")
        data["source_name"] = name
        return data

    def launch_request(self) -> LaunchRequest | None:
        """The launch a valid form asks for, checked and planned once (sweeps.request), or None with
        its refusal added to the form's errors."""
        data = self.cleaned_data
        world = {c: data[c] for c in Conditions._fields}
        chosen: list[str] = []
        if data["preset"] == "targets":
            chosen, world["model"] = data["targets"], data.get("target_model") or sweep_targets.DEFAULT_MODEL
        try:
            return launch_request(
                job_source=data["job_source"],
                job=data["job_obj"],
                source_name=data["source_name"],
                configs=[] if chosen else preset_configs(data),
                targets=chosen,
                depth=data["depth"],
                runs=data["runs"],
                person=data["person"],
                name=data["name"],
                notes=data["notes"],
                **world,
            )
        except ValidationError as e:
            for message in e.messages:
                self.add_error(None, message)
            return None


class AuditForm(forms.Form):
    """Launch an audit (agentcore.harness.audit): a built-in job or an uploaded one, designs, tracker modes
    and world models (default: all of them). The service checks the choices again."""

    job = forms.ChoiceField(choices=[(name, f"built-in: {name}") for name in BUILTIN], initial="triage", required=False)
    job_file = forms.FileField(required=False, label="or a job file", help_text="replaces the built-in job")
    designs = forms.MultipleChoiceField(
        choices=[(d, d) for d in DESIGNS], initial=list(DESIGNS), widget=forms.CheckboxSelectMultiple
    )
    trackers = forms.MultipleChoiceField(
        choices=[(m, m) for m in MODES], initial=list(MODES), widget=forms.CheckboxSelectMultiple
    )
    worlds = forms.MultipleChoiceField(
        choices=[(w.name, w.name) for w in _audit.WORLDS],
        initial=[w.name for w in _audit.WORLDS],
        widget=forms.CheckboxSelectMultiple,
    )

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
