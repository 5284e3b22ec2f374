"""`make run` as the README starts it: it serves, and Ctrl-C stops the web server and every worker."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.conf import settings

from tests import _make

pytestmark = pytest.mark.django_db(transaction=True)


def test_ctrl_c_stops_make_run_and_its_workers_within_seconds():
    port = _make.free_port()
    log = Path(settings.VAR_DIR) / "make-run-ctrl-c.log"
    proc = _make.start("run", port, _make.session_environ(SWEEPSITE_STALL_SECONDS="0"), log, "WORKERS=2")
    try:
        _make.wait_until_served(proc, f"http://127.0.0.1:{port}/", log)
    finally:
        took = _make.stop(proc)
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)  # nothing of the group is left
    assert took < 15, f"Ctrl-C took {took:.1f} s (SIGKILL after 30 s?)\n{log.read_text()[-2000:]}"
    assert "workers stopped" in log.read_text()
