"""Helpers shared by the browser tests: agentcore's expected table, a sweep run by the site's
workers, what Plotly drew, and the page's script errors."""

from __future__ import annotations

import agentcore as agentsweep
from agentcore import designs, jobs
from sweeps import configs as sweep_configs
from sweeps.models import Sweep
from sweeps.services import launch


def expected_rows(design_names, trackers, depth, person="scripted", job_source=None):
    """The table agentcore computes in this process for the configurations the launch form makes."""
    job = jobs.parse(job_source, "job.json") if job_source else jobs.load("triage")
    cfgs = [
        agentsweep.Config(job, designs.get(c["design"], ()), c["tracker"], 1, person, c["name"])
        for c in sweep_configs.configs_for(design_names, trackers)
    ]
    return agentsweep.sweep(cfgs, depth=depth).rows


def run_sweep(user, design_names, trackers, depth, wait_until, job_source=None):
    """A sweep launched through the service (the launch form has its own tests), run by the site's workers."""
    sweep = launch.sweep_create(
        user=user,
        job_source=job_source or sweep_configs.builtin_job_source("triage"),
        configs=sweep_configs.configs_for(design_names, trackers),
        depth=depth,
    )
    wait_until(
        lambda: Sweep.objects.filter(pk=sweep.pk, status__in=["done", "failed"]).exists(),
        timeout=90,
        what=f"sweep {sweep.pk} to finish",
    )
    sweep.refresh_from_db()
    assert sweep.status == Sweep.Status.DONE, sweep.error
    return sweep


def no_js_errors(page):
    assert page.errors == [], page.errors


def plot(page, div_id, what):
    """A value read from a Plotly div: `what` is a JS expression of `div`."""
    return page.evaluate(f"id => {{ const div = document.getElementById(id); return {what}; }}", div_id)


def plot_traces(page, div_id):
    """The traces Plotly drew in a div: type, z, x, y (read from the element itself)."""
    return page.evaluate(
        """id => document.getElementById(id).data.map(t => ({type: t.type, z: t.z, x: t.x, y: t.y}))""", div_id
    )


def cell_position(page, div_id, x, y):
    """Viewport coordinates of the heatmap cell at data (x, y)."""
    page.locator(f"#{div_id}").scroll_into_view_if_needed()
    return page.evaluate(
        """([id, x, y]) => {
             const div = document.getElementById(id), fl = div._fullLayout;
             const box = div.querySelector(".main-svg").getBoundingClientRect();
             return [box.left + fl.xaxis._offset + fl.xaxis.l2p(x), box.top + fl.yaxis._offset + fl.yaxis.l2p(y)];
           }""",
        [div_id, x, y],
    )
