"""`make run` / `make serve` as the README starts them, in a subprocess, for the tests that must test
what the user runs (the browser tests' `site`, tests/sweepsite/test_serve.py).

The process gets a process group of its own, so that stopping it is Ctrl-C: SIGINT to make, its
shell, the web server and the workers at once (SIGKILL if anything lingers).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path

from django.conf import settings


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def session_environ(**extra: str) -> dict[str, str]:
    """The environment for a make target that shares this test session's database, broker folder
    and queue (DEBUG and production settings as the defaults leave them, unless `extra` says)."""
    from sweeps.workqueue import workers as sweepworkers

    env = sweepworkers.worker_environ()
    for name in ("DJANGO_DEBUG", "DJANGO_PRODUCTION", "MAKEFLAGS", "MAKELEVEL", "MFLAGS"):
        env.pop(name, None)
    env.update(extra)
    return env


def _as_in_a_terminal() -> None:
    # A foreground job in a terminal takes Ctrl-C; a process started in the background by a shell
    # (CI's, say) ignores SIGINT, and its children would inherit that.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def start(target: str, port: int, env: Mapping[str, str], log: Path, *args: str) -> subprocess.Popen:
    """`make TARGET HOST=127.0.0.1 PORT=port ARGS...` in the project folder, output to `log`."""
    with log.open("w") as out:
        return subprocess.Popen(
            ["make", "--no-print-directory", target, "HOST=127.0.0.1", f"PORT={port}", *args],
            cwd=settings.BASE_DIR,
            env=dict(env),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_as_in_a_terminal,
        )


def answers(url: str, headers: Mapping[str, str] | None = None) -> bool:
    """The server answers `url` with a 200."""
    try:
        req = urllib.request.Request(url, headers=dict(headers or {}))
        with urllib.request.urlopen(req, timeout=2) as r:  # noqa: S310 - our own loopback server
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


def wait_until_served(
    proc: subprocess.Popen, url: str, log: Path, timeout: float = 120, headers: Mapping[str, str] | None = None
) -> None:
    """Until `url` answers 200; AssertionError with the log's tail if the process ends or time runs out."""
    deadline = time.monotonic() + timeout
    while not answers(url, headers):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"`{' '.join(map(str, proc.args))}` did not serve {url}:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)


def stop(proc: subprocess.Popen) -> float:
    """Ctrl-C: SIGINT to the whole group (make, its shell, the web server, the workers); SIGKILL if it
    lingers. Returns the seconds it took."""
    began = time.monotonic()
    for sig, grace in ((signal.SIGINT, 30), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return time.monotonic() - began
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            proc.poll()  # reap make, or the group never looks empty
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                return time.monotonic() - began
            time.sleep(0.2)
    proc.poll()
    return time.monotonic() - began
