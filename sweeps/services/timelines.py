"""A scenario's timeline: stored, or replayed with agentcore (sweeps.replay) and stored."""

from __future__ import annotations

from typing import Any

from sweeps.models import Scenario
from sweeps.replay import check_pending_durables, scenario_replay


def scenario_timeline(*, scenario_id: int) -> list[dict[str, Any]]:
    """The scenario's timeline: stored, or replayed (deterministic) and stored.

    A waiting scenario's stored durable state is checked first: a corrupt one raises
    UnusableDurable (sweeps.errors: an UnusableState, a CheckpointError too) with a message fit for
    its page; a stored sweep agentcore no longer plays raises UnusableState (sweeps.replay)."""
    sc = Scenario.objects.select_related("sweep").get(pk=scenario_id)
    check_pending_durables(sc)
    if sc.timeline is not None:
        return sc.timeline
    timeline, effects = scenario_replay(sc)
    Scenario.objects.filter(pk=sc.pk, timeline__isnull=True).update(timeline=timeline, effects=effects)
    return timeline
