"""The README documents what a newcomer needs: every environment variable the code reads, every page."""

from __future__ import annotations

import re
from pathlib import Path

from django.urls import get_resolver

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_every_environment_variable_read_is_documented():
    sources = [*(ROOT / "sweepsite").glob("*.py"), *(ROOT / "sweeps").glob("*.py"), ROOT / "Makefile"]
    names = {m for p in sources for m in re.findall(r"""os\.environ(?:\.get\(|\[)["']([A-Z_]+)["']""", p.read_text())}
    names.discard("DJANGO_SETTINGS_MODULE")  # Django's own, set by manage.py and the Celery app
    assert {"CELERY_BROKER_URL", "SWEEPSITE_ADMIN_PASSWORD"} <= names, names  # the search finds them
    names.add("DATABASE_URL")  # read by dj_database_url.config()
    assert sorted(n for n in names if f"`{n}`" not in README) == []


def test_every_page_is_described():
    routes = [str(p.pattern) for p in get_resolver("sweeps.urls").url_patterns]
    # /sweeps/N/heatmap/ in the README for sweeps/<int:sweep_id>/heatmap/; actions (POST) and
    # exports are described by what they do, not by address.
    pages = [r for r in routes if not re.search(r"launch|resume|answer|export|progress", r)]
    letter = {"sweep_id": "N", "scenario_id": "M", "audit_id": "N"}  # the README's names for the path parameters
    documented = [r for r in pages if "/" + re.sub(r"<int:(\w+)>", lambda m: letter[m.group(1)], r) in README]
    assert documented == pages
