"""What the pages compute from a sweep's stored rows, computed once per version of those rows and kept
in Django's cache (settings.CACHES: a file cache in SWEEPSITE_VAR that the web server's processes share).

Rules:
- A sweep's rows change only when a chunk is stored (its scenario and question rows inserted, the
  chunk marked stored) or when an answer is given and its resume stores the scenario's outcome (a
  question goes open -> answered -> resumed). `rows_version` names those facts: a done sweep's rows
  never change (done needs every chunk stored and every question resumed), so its version is its
  identity alone and costs no query; another sweep's adds its status, stored chunks and open and
  resumed questions (two COUNTs over indexes). A running sweep has no version: its version would
  move with every chunk, so its pages are computed on each request, as before; but for its
  heaviest part, the heatmaps' figures (`every_status`), which are then drawn once per chunk stored
  however many look at them meanwhile.
- The version is read before the rows it names, never after: a chunk stored between the two leaves
  newer rows under an older version (the next request's version computes them again), never older
  rows under a newer version.
- A version carries the sweep's creation time: a sweep ID used again (a test database, a restored
  backup) never meets another sweep's entries. settings.CACHES' key prefix is a digest of the code
  that makes the cached values (sweepsite.config.code_digest): a deploy never serves the last one's.
- Only what the rows and the request's own parameters decide is cached, never what depends on the
  user or the session (a template's fragment that does is outside its {% cache %}, or its user's
  bit is part of the key).
- A cache write is no write to the sweep's data: selectors and views may fill the cache; the
  services never need to clear it (a change of the rows is a new version).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any, TypeVar

from django.core.cache import cache
from django.db.models import Count, Q

from sweeps.limits import PAGE_CACHE_SECONDS
from sweeps.models import Chunk, Question, Sweep

T = TypeVar("T")
_MISSING = object()


def rows_version(sweep: Sweep, *, every_status: bool = False) -> str | None:
    """The version of the sweep's stored rows (see the rules), or None for a running sweep unless
    `every_status`; read once per Sweep object (one request's)."""
    if sweep.status == Sweep.Status.RUNNING and not every_status:
        return None
    if hasattr(sweep, "_rows_version"):
        return sweep._rows_version
    identity = f"{sweep.pk}.{sweep.created_at.timestamp():.6f}"
    if sweep.status == Sweep.Status.DONE:
        version: str | None = f"{identity}.done"
    else:
        stored = Chunk.objects.filter(sweep=sweep, stored=True).count()
        q = Question.objects.filter(sweep=sweep).aggregate(
            open=Count("id", filter=Q(status=Question.Status.OPEN)),
            resumed=Count("id", filter=Q(status=Question.Status.RESUMED)),
        )
        version = f"{identity}.{sweep.status}.{stored}.{q['open']}.{q['resumed']}"
    sweep._rows_version = version
    return version


def key(sweep: Sweep, part: str, params: Any = None, *, every_status: bool = False) -> str | None:
    """The cache key of one part of a page of this version of the sweep's rows (None: a running
    sweep, unless `every_status`)."""
    version = rows_version(sweep, every_status=every_status)
    if version is None:
        return None
    digest = hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()[:32]
    return f"sweep.{version}.{part}.{digest}"


def cached(sweep: Sweep, part: str, params: Any, compute: Callable[[], T], *, every_status: bool = False) -> T:
    """compute(), from the cache when this version of the sweep's rows has it (computed and kept if
    not); computed each time for a running sweep, unless `every_status`. `params` are what else the
    value depends on (JSON)."""
    k = key(sweep, part, params, every_status=every_status)
    if k is None:
        return compute()
    value = cache.get(k, _MISSING)
    if value is _MISSING:
        value = compute()
        cache.set(k, value, PAGE_CACHE_SECONDS)
    return value


def fragment(sweep: Sweep, part: str, params: Any = None) -> dict[str, Any]:
    """A template's {% cache fragment.seconds part fragment.key %} arguments for one part of a page:
    a running sweep's timeout is 0 (nothing kept)."""
    k = key(sweep, part, params)
    return {"key": k or "live", "seconds": PAGE_CACHE_SECONDS if k else 0}
