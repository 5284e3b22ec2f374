"""Fixtures of the services' tests."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model


@pytest.fixture
def user() -> Any:
    return get_user_model().objects.create_user("ann", password="pw-for-tests")
