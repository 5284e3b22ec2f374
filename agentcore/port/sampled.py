"""Rates from a sampled sweep: where a runtime is not deterministic (async durability, background
writes, tools run in threads), the same plan can end differently from run to run, so a count of one
pass proves nothing exact. The sweep then plays every plan `samples` times (seeded, the seed moved
by one each pass) and reports each rate as a share of the scenarios played with its 95% Wilson
score interval, marked "sampled"; a sweep of one pass stays an exact count.

Rules: plain functions over plain records (no I/O); the interval is Wilson's score interval (never
the normal approximation, which gives [0, 0] for 0 of n and leaves [0, 1] at the edges).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from agentcore.records import ScenarioRecord

Z95 = 1.959963984540054  # the normal quantile of 0.975: a two-sided 95% interval


def wilson(hits: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of `hits` successes in `n` trials."""
    if n <= 0 or not 0 <= hits <= n:
        raise ValueError(f"need 0 <= hits <= n and n > 0, not {hits} of {n}")
    p, z2 = hits / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class Rate:
    """One sampled rate: `hits` of `n` scenarios played, with its interval."""

    what: str
    hits: int
    n: int

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.hits, self.n)

    def text(self) -> str:
        lo, hi = self.interval
        share = f"{self.hits}/{self.n} = {100 * self.hits / self.n:.1f}%"
        return f"{self.what} {share} (95% CI {100 * lo:.1f}-{100 * hi:.1f}%)"


def rates(records: Sequence[ScenarioRecord]) -> list[Rate]:
    """The shares of scenarios that doubled, lost or changed an effect."""
    n = len(records)
    return [
        Rate("with duplicates", sum(r.duplicates > 0 for r in records), n),
        Rate("with missing effects", sum(r.missing > 0 for r in records), n),
        Rate("with wrong effects", sum(r.wrong > 0 for r in records), n),
    ]


def summary(records: Sequence[ScenarioRecord], samples: int) -> str:
    """The line a sampled sweep prints under its row."""
    per = len(records) // samples if samples else 0
    shown = "; ".join(r.text() for r in rates(records))
    return f"sampled: {samples} passes of about {per} scenarios each; scenarios {shown}"
