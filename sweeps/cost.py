"""What a request that plays scenarios costs, known before it starts, and its refusal past a bound.

Rules:
- Work is counted in agentcore's steps (agentcore.harness.disk: a crash point played, a block written, a
  disk state a power cut may leave looked at). A play of a configuration costs about what its
  uninterrupted run costs: `agentcore.harness.scenario.run_steps` counts that without listing the power-cut
  states (as cheap as a panic run), and stops once the count alone is over what the bound allows:
  an over-bound request is refused having counted no more than the bound, its power-cut states
  almost free (the 10-run power-cut witness without fsync: 0.01 s).
- A play's truth (agentcore.checker.effects: the run its effects are checked against, a panic run of the
  sound design, kept per process) is counted as one more play of the run; it is not charged.
- Every play a request makes after its estimate is charged to one WorkBudget of the same bound
  (`bounded`): an estimate that was wrong stops the work at the bound with the same refusal.
- A refusal is a TooCostly, a BadRequest (sweeps.errors: a ValidationError too) whose message names
  the figure and the bound: pages and JSON answer it as they answer other bad input (400).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import agentcore as agentsweep
from sweeps.errors import BadRequest

STEP = "a step: a crash point played, a block written or a power-cut disk state looked at"
FEWER = "ask for fewer job runs or configurations, fsync on, or a smaller job"


class TooCostly(BadRequest):
    """A request over its bound of work; the message names the figure and the bound."""


def refusal(what: str, steps: int, bound: int, *, counted: bool = True) -> TooCostly:
    """ "this witness would take about 1,234,567 steps of work; the bound is 400,000 (...)";
    `counted` false: the count stopped at `steps` (more than that)."""
    about = "about" if counted else "more than"
    return TooCostly(
        f"{what} would take {about} {steps:,} steps of work; the bound is {bound:,} ({STEP}): {FEWER}",
        code="too_costly",
    )


def play_cost(cfg: agentsweep.Config, bound: int) -> tuple[int, int]:
    """A play of `cfg`'s run: (steps, crash points), counted up to `bound` steps (OverBudget past it)."""
    return agentsweep.run_steps(cfg, max(bound, 0))


def play_costs(what: str, plays: Sequence[tuple[agentsweep.Config, int]], bound: int) -> list[tuple[int, int]]:
    """Each configuration's run, counted: (steps, crash points) for each of `plays` ((configuration,
    plays of its run at least) pairs); TooCostly once those plays alone are past `bound`, counting
    no further than it."""
    total, out = 0, []
    for cfg, n in plays:
        try:
            steps, points = play_cost(cfg, (bound - total) // n)
        except agentsweep.OverBudget as e:
            raise refusal(what, total + n * e.spent, bound, counted=False) from None
        total += n * steps
        out.append((steps, points))
    return out


def estimate(what: str, plays: Sequence[tuple[agentsweep.Config, int]], bound: int) -> int:
    """The steps of `plays` ((configuration, how many plays of its run) pairs), each play costed as
    its uninterrupted run; TooCostly past `bound`, counting no further than it."""
    costs = play_costs(what, plays, bound)
    return sum(n * steps for (steps, _), (_, n) in zip(costs, plays, strict=True))


@contextmanager
def bounded(what: str, bound: int) -> Iterator[agentsweep.WorkBudget]:
    """A WorkBudget of `bound` steps for the plays of a request; past it, TooCostly."""
    budget = agentsweep.WorkBudget(bound)
    try:
        yield budget
    except agentsweep.OverBudget as e:
        raise TooCostly(
            f"{what} stopped after {e.spent:,} steps of work; the bound is {bound:,} ({STEP}): {FEWER}",
            code="too_costly",
        ) from None
