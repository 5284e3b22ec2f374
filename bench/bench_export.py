"""Time a scenario export through the server as `make serve` starts it: request -> ready -> downloaded.

Run by hand: .venv/bin/python bench/bench_export.py [--runs 10] [--var DIR] [--format csv]

Loads the chapter's table swept with --runs job runs (10: 814,560 scenario rows) into a database of
its own (SWEEPSITE_VAR=DIR; a DIR that holds such a sweep already is reused), then starts what
`make serve` starts: two solo-pool Celery workers and gunicorn with two workers, DJANGO_PRODUCTION=1.
As a logged-in staff user it asks for the sweep's scenario rows (the export URL's button: a POST),
reads the export's page every second until the file is ready, asks for the sweep's page every 0.2 s
meanwhile (its slowest answer says whether a page waited), downloads the file and prints the times
and the file's MD5 (compare it with another install's).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv" / "bin"


class _Stay(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def _load(runs: int) -> tuple[int, str]:
    """The table sweep of `runs` runs in this database (swept now by two workers if missing), and a
    session key of a staff user."""
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sweepsite.settings")
    import django

    django.setup()
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
    from django.contrib.sessions.backends.db import SessionStore
    from django.core.management import call_command

    from sweeps import configs
    from sweeps.models import Export, Sweep
    from sweeps.services import launch
    from sweeps.workqueue import workers

    call_command("migrate", "--noinput", verbosity=0)
    sweep = Sweep.objects.filter(runs=runs, status=Sweep.Status.DONE, job_name="triage").first()
    if sweep is None:
        t = time.perf_counter()
        sweep = launch.sweep_create(
            user=None,
            job_source=configs.builtin_job_source("triage"),
            configs=configs.table_configs_for(),
            runs=runs,
            source_name="builtin:triage",
        )
        started = workers.start_workers(2)
        try:
            while Sweep.objects.get(pk=sweep.pk).status not in (Sweep.Status.DONE, Sweep.Status.FAILED):
                time.sleep(1)
        finally:
            workers.stop_workers(started)
        print(f"loaded sweep {sweep.pk} ({runs} runs) in {time.perf_counter() - t:.0f} s", flush=True)
    Export.objects.filter(sweep=sweep).delete()  # timed from nothing, not from an earlier run's file
    users = get_user_model().objects
    user = users.filter(username="bench").first() or users.create_superuser("bench", "", None)
    session = SessionStore()
    session.update(
        {
            SESSION_KEY: str(user.pk),
            BACKEND_SESSION_KEY: "django.contrib.auth.backends.ModelBackend",
            HASH_SESSION_KEY: user.get_session_auth_hash(),
        }
    )
    session.create()
    return sweep.pk, session.session_key


def _serve(port: int) -> list[subprocess.Popen]:
    """The Makefile's `serve`: two solo-pool workers, then gunicorn (two workers)."""
    worker = [
        str(VENV / "celery"),
        "-A",
        "sweepsite",
        "--quiet",
        "worker",
        "--pool",
        "solo",
        "--concurrency",
        "1",
        "--loglevel",
        "WARNING",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
    ]
    subprocess.run([str(VENV / "python"), "manage.py", "collectstatic", "--noinput", "-v", "0"], cwd=ROOT, check=True)
    procs = [subprocess.Popen([*worker, "-n", f"bench{i}@%h"], cwd=ROOT) for i in (1, 2)]
    procs.append(
        subprocess.Popen(
            [str(VENV / "gunicorn"), "sweepsite.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "2"], cwd=ROOT
        )
    )
    return procs


def _asker(base: str, session: str) -> Callable[..., Any]:
    """ask(path, data=None, headers=None): one request as the logged-in user, redirects not followed."""
    opener = urllib.request.build_opener(_Stay)
    # Behind the TLS proxy `make serve` expects: it says the request came over HTTPS.
    headers = {"X-Forwarded-Proto": "https", "Cookie": f"sessionid={session}"}

    def ask(path: str, data: bytes | None = None, extra: dict[str, str] | None = None) -> Any:
        req = urllib.request.Request(base + path, data=data, headers={**headers, **(extra or {})})
        try:
            return opener.open(req, timeout=120)
        except urllib.error.HTTPError as e:
            return e

    return ask


def _wait_healthy(ask: Callable[..., Any]) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            ask("/healthz").read()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _export(ask: Callable[..., Any], session: str, port: int, sweep_id: int, fmt: str) -> None:
    """Ask for the export (its button's POST), follow its page until ready while the sweep's page is
    asked for too, download the file; print the times."""
    url = f"/sweeps/{sweep_id}/export/scenarios.{fmt}"
    page = ask(url)
    form = page.read().decode()
    csrf = re.search(r"csrftoken=([^;]+)", page.headers.get("Set-Cookie", "")).group(1)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form).group(1)
    t0 = time.perf_counter()
    r = ask(
        url,
        urllib.parse.urlencode({"csrfmiddlewaretoken": token}).encode(),
        {
            "Cookie": f"sessionid={session}; csrftoken={csrf}",
            "Origin": f"https://127.0.0.1:{port}",
            "Content-Type": "application/x-www-form-urlencoded",
        },
    )
    assert r.status == 302, (r.status, r.read()[:300])
    where, asked = r.headers["Location"], time.perf_counter() - t0
    pages: list[float] = []
    done = threading.Event()

    def browse() -> None:
        while not done.is_set():
            t = time.perf_counter()
            ask(f"/sweeps/{sweep_id}/").read()
            pages.append(time.perf_counter() - t)
            time.sleep(0.2)

    browser = threading.Thread(target=browse)
    browser.start()
    while True:
        shown = ask(where).read().decode()
        status = re.search(r'data-status="(\w+)"', shown).group(1)
        if status in ("ready", "failed"):
            break
        time.sleep(1)
    ready = time.perf_counter() - t0
    done.set()
    browser.join()
    assert status == "ready", shown
    digest, size = hashlib.md5(), 0
    with ask(re.search(r'href="(/exports/\d+/file)"', shown).group(1)) as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    downloaded = time.perf_counter() - t0
    rows = re.search(r"Ready: (\d+) row", shown).group(1)
    print(f"sweep {sweep_id}, scenarios.{fmt}: {rows} rows, {size:,} bytes, md5 {digest.hexdigest()}")
    print(f"request {asked:.3f} s; ready {ready:.1f} s after it; downloaded {downloaded:.1f} s after it")
    print(
        f"the sweep's page meanwhile: {len(pages)} answers, slowest {max(pages):.3f} s, "
        f"median {sorted(pages)[len(pages) // 2]:.3f} s"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--var", default=None, help="SWEEPSITE_VAR (default: a new temporary folder)")
    ap.add_argument("--format", choices=("csv", "jsonl"), default="csv")
    args = ap.parse_args()
    os.environ.update(
        SWEEPSITE_VAR=args.var or tempfile.mkdtemp(prefix="bench-export-"),
        DJANGO_PRODUCTION="1",
        ALLOWED_HOSTS="127.0.0.1",
        SECRET_KEY=os.environ.get("SECRET_KEY") or os.urandom(32).hex(),
    )
    sweep_id, session = _load(args.runs)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ask = _asker(f"http://127.0.0.1:{port}", session)
    procs = _serve(port)
    try:
        _wait_healthy(ask)
        _export(ask, session, port, sweep_id, args.format)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(60)


if __name__ == "__main__":
    main()
