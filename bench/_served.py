"""The server as `make serve` starts it, for the benchmarks that load it (bench_load.py): gunicorn
and solo Celery workers on a folder of their own, and the ways to stop and read them."""

from __future__ import annotations

import os
import secrets
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
BIN = Path(PY).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_env(var: Path) -> dict[str, str]:
    key_file = var / "bench_secret_key"
    if not key_file.exists():
        key_file.write_text(secrets.token_urlsafe(50))
    return {
        **os.environ,
        "DJANGO_PRODUCTION": "1",
        "SECRET_KEY": key_file.read_text(),
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SWEEPSITE_VAR": str(var),
        "SWEEPSITE_QUEUE": f"sweepsite-bench-load-{os.getpid()}",
        "DJANGO_SETTINGS_MODULE": "sweepsite.settings",
    }


def manage(env: dict[str, str], *args: str, stdin: str | None = None) -> str:
    return subprocess.run(
        [PY, "manage.py", *args], cwd=ROOT, env=env, input=stdin, text=True, capture_output=True, check=True
    ).stdout


def stored_rows(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db) as c:
            return c.execute("SELECT COUNT(*) FROM sweeps_scenario").fetchone()[0]
    except sqlite3.Error:
        return 0


def start_celery(env: dict[str, str], var: Path, n: int = 2) -> list[subprocess.Popen]:
    procs = []
    for i in range(n):
        log = open(var / f"bench-worker{i + 1}.log", "w")  # noqa: SIM115 - the process holds it
        procs.append(
            subprocess.Popen(
                [
                    str(BIN / "celery"),
                    "-A",
                    "sweepsite",
                    "--quiet",
                    "worker",
                    "--pool",
                    "solo",
                    "--concurrency",
                    "1",
                    "-n",
                    f"bench{i + 1}-{os.getpid()}@%h",
                    "--loglevel",
                    "WARNING",
                    "--without-gossip",
                    "--without-mingle",
                    "--without-heartbeat",
                ],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        )
    return procs


def start_gunicorn(env: dict[str, str], var: Path, port: int, workers: int) -> subprocess.Popen:
    log = open(var / "bench-gunicorn.log", "w")  # noqa: SIM115 - the process holds it
    proc = subprocess.Popen(
        [
            str(BIN / "gunicorn"),
            "sweepsite.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--access-logfile",
            str(var / "bench-access.log"),
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"gunicorn exited:\n{(var / 'bench-gunicorn.log').read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            time.sleep(0.2)
    raise SystemExit("gunicorn did not listen within 60 s")


def stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
