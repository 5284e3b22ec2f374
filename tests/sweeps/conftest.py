"""Fixtures the dashboard's tests share."""

from __future__ import annotations

import pytest

from tests.sweeps._web import record_enqueued


@pytest.fixture
def enqueued(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple]]:
    """What the services publish, recorded instead of sent: [(task name, args), ...]."""
    return record_enqueued(monkeypatch)
