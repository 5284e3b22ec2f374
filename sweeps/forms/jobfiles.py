"""The job files the launch and audit forms read: uploaded text checked, parsed and storable."""

from __future__ import annotations

import json
import uuid
from typing import Any

from django import forms
from django.conf import settings

from agentcore import Job, JobError
from agentcore import parse_job as parse


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
