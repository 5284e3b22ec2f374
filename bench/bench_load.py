"""Pages under load: concurrent clients against gunicorn as `make serve` runs it (run by hand).

    .venv/bin/python bench/bench_load.py [--var DIR] [--clients 20] [--seconds 30] [--rows 135000]
    .venv/bin/python bench/bench_load.py --url http://127.0.0.1:8000 --user NAME   (password: $BENCH_PASSWORD)

Without --url it starts what `make serve` starts, on a private SWEEPSITE_VAR folder (--var, kept and
reused, or a temp folder removed at the end), its SQLite database and a free loopback port: the
database's tables and static files (migrate, collectstatic), gunicorn (`sweepsite.wsgi`, 2 workers,
DJANGO_PRODUCTION=1 with a generated SECRET_KEY and ALLOWED_HOSTS=127.0.0.1) and 2 solo-pool Celery
workers on a queue of its own. A folder whose database holds --rows scenario rows already is used
as it is (--db FILE copies such a database in first); else the sweeps are stored first, by those
workers: a 3-run table (76,851 rows), 1-run tables up to --rows (9,663 each), a 1-run table under the
question queue (it waits for answers: open questions, a live table) and a one-world audit.

Then it logs in over the login form (an operator it creates: the launch form is on the list
page), finds the sweeps, a few scenarios and the audits from the pages themselves, and runs
--clients threads for --seconds, each asking for the next page of its own shuffled round of
every page a person visits (no pause between requests), each a new connection as a browser behind
the TLS proxy asks (X-Forwarded-Proto: https, Accept-Encoding: gzip), timed to the last byte of
the body. /healthz is asked by a probe of its own every --probe seconds, as a load balancer does (it
waits for the Celery workers' answers): its times are printed apart, out of the pages' overall.
Exports are not pages (a task builds their files). It prints p50, p95 and max in ms and the
count per page and over all pages, errors (any status but 200), requests per second, the load
average and, for a server it started, the CPU its gunicorn workers used per request.

Rules:
- Loopback only: --url must name 127.0.0.1, ::1 or localhost.
- Bounded: at most MAX_CLIENTS clients and MAX_SECONDS seconds; every request has a timeout.
- The client is this one Python process (threads, http.client): on a 2-core machine it takes a
  share of the cores the server has, so its times are what a person behind it would see at worst.
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import json
import math
import os
import random
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from urllib.parse import urlencode, urlsplit

from _served import free_port, manage, server_env, start_celery, start_gunicorn, stop, stored_rows

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
BIN = Path(PY).parent
MAX_CLIENTS = 64
MAX_SECONDS = 600
REQUEST_TIMEOUT = 60.0
LOOPBACK = {"127.0.0.1", "::1", "localhost"}
THREE_RUN_ROWS = 76_851
TABLE_ROWS = 9_663
USER = "bench-operator"


# --- storing the sweeps (a child process with Django set up: --load-only) ----------------------------


def load(rows: int) -> None:
    """Store the sweeps (see the module's docstring) with 2 workers this process starts; wait for them."""
    import django

    sys.path.insert(0, str(ROOT))
    django.setup()
    from sweeps import configs
    from sweeps.models import Audit, Sweep
    from sweeps.services import audits, launch
    from sweeps.workqueue import workers

    source, table = configs.builtin_job_source("triage"), configs.table_configs_for()
    launch.sweep_create(user=None, job_source=source, configs=table, depth=2, runs=3, name="3-run table")
    for i in range(max(round((rows - THREE_RUN_ROWS - TABLE_ROWS) / TABLE_ROWS), 0)):
        launch.sweep_create(user=None, job_source=source, configs=table, depth=2, name=f"table {i + 1}")
    launch.sweep_create(user=None, job_source=source, configs=table, depth=2, person="queue", name="queue table")
    audits.audit_create(
        user=None,
        job_source=source,
        designs=[table[0]["design"]],
        trackers=[table[0]["tracker"]],
        worlds=["panic"],
        source_name="builtin:triage",
    )
    started = workers.start_workers(2, prefix="bench-load")
    t0 = time.monotonic()
    try:
        while (
            Sweep.objects.filter(status=Sweep.Status.RUNNING).exists()
            or Audit.objects.filter(status=Audit.Status.RUNNING).exists()
        ):
            if time.monotonic() - t0 > MAX_SECONDS * 3:
                raise SystemExit("the sweeps did not finish in time")
            time.sleep(1)
    finally:
        workers.stop_workers(started)
    print(f"stored {Sweep.objects.count()} sweeps in {time.monotonic() - t0:.0f} s", flush=True)


# --- the client ------------------------------------------------------------------------------------


class Site:
    """One logged-in session on a loopback server, as a browser behind the TLS proxy."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port, self.cookies = host, port, {}

    def headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        h = {
            "Host": f"{self.host}:{self.port}",
            "X-Forwarded-Proto": "https",
            "Accept-Encoding": "gzip",
            "User-Agent": "bench_load",
        }
        if self.cookies:
            h["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        return {**h, **(extra or {})}

    def request(
        self, method: str, path: str, body: str | None = None, extra: dict[str, str] | None = None
    ) -> tuple[int, bytes, http.client.HTTPResponse]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=REQUEST_TIMEOUT)
        try:
            conn.request(method, path, body=body, headers=self.headers(extra))
            r = conn.getresponse()
            data = r.read()
        finally:
            conn.close()
        return r.status, data, r

    def text(self, path: str) -> str:
        status, data, r = self.request("GET", path)
        if status != 200:
            raise SystemExit(f"GET {path}: {status}")
        return (gzip.decompress(data) if r.getheader("Content-Encoding") == "gzip" else data).decode()

    def login(self, user: str, password: str) -> None:
        status, data, r = self.request("GET", "/accounts/login/")
        self._keep(r)
        page = (gzip.decompress(data) if r.getheader("Content-Encoding") == "gzip" else data).decode()
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        origin = f"https://{self.host}:{self.port}"
        status, _, r = self.request(
            "POST",
            "/accounts/login/",
            urlencode({"username": user, "password": password, "csrfmiddlewaretoken": token}),
            {
                "Content-Type": "application/x-www-form-urlencoded",
                "Origin": origin,
                "Referer": origin + "/accounts/login/",
            },
        )
        self._keep(r)
        if status != 302 or "sessionid" not in self.cookies:
            raise SystemExit(f"login as {user} failed ({status})")

    def _keep(self, r: http.client.HTTPResponse) -> None:
        for header in r.headers.get_all("Set-Cookie") or []:
            name, _, rest = header.partition("=")
            self.cookies[name.strip()] = rest.split(";", 1)[0]


def ids(page: str, pattern: str) -> list[int]:
    return list(dict.fromkeys(int(m) for m in re.findall(pattern, page)))


def pages(site: Site) -> list[tuple[str, str]]:
    """(page name, path): every page a person visits, found from the list pages."""
    listing = site.text("/")
    sweeps = ids(listing, r'href="/sweeps/(\d+)/"')
    if len(sweeps) < 3:
        raise SystemExit(f"the sweep list shows {len(sweeps)} sweeps: store some first")
    # The biggest sweep, the smallest done one and a waiting one (the question queue's), by their progress.
    progress = {s: json.loads(site.text(f"/sweeps/{s}/progress/")) for s in sweeps}
    big = max(sweeps, key=lambda s: progress[s]["scenarios"])
    done = [s for s in sweeps if progress[s]["status"] == "done" and s != big]
    table = min(done or [big], key=lambda s: progress[s]["scenarios"])
    queue = next((s for s in sweeps if progress[s]["status"] == "waiting"), None)
    out = [("sweep list", "/"), ("sweep list p2", "/?page=2") if len(sweeps) >= 20 else ("sweep list", "/")]
    scen = ids(site.text(f"/sweeps/{big}/scenarios/?has_dups=yes"), r'href="/scenarios/(\d+)/')[:5]
    for s in (big, table, queue):
        if s is None:
            continue
        out += [
            ("sweep page", f"/sweeps/{s}/"),
            ("progress poll", f"/sweeps/{s}/progress/"),
            ("heatmap", f"/sweeps/{s}/heatmap/"),
            ("heatmap config", f"/sweeps/{s}/heatmap/?metric=asks&config=5"),
            ("scenarios", f"/sweeps/{s}/scenarios/"),
            ("scenarios filtered", f"/sweeps/{s}/scenarios/?config=3&has_dups=yes&sum=duplicates"),
            ("scenarios filtered", f"/sweeps/{s}/scenarios/?design=keys&tracker=keyed&asked=no&page=2"),
            ("scenarios page", f"/sweeps/{s}/scenarios/?page=40"),
            ("scenarios page", f"/sweeps/{s}/scenarios/?twice=yes&page=120"),
            ("sweep questions", f"/sweeps/{s}/questions/"),
        ]
    out += [("scenario", f"/scenarios/{i}/?back=/sweeps/{big}/scenarios/") for i in scen]
    out += [
        ("questions", "/questions/"),
        ("questions", "/questions/?status=answered"),
        ("compare", f"/compare/?a={table}&b={big}"),
        ("compare", f"/compare/?a={queue or table}&b={table}"),
        ("compare form", "/compare/"),
        ("audits", "/audits/"),
    ]
    out += [("audit", f"/audits/{a}/") for a in ids(site.text("/audits/"), r'href="/audits/(\d+)/"')[:2]]
    return out


def percentile(sorted_ms: list[float], q: float) -> float:
    """The nearest-rank percentile."""
    return sorted_ms[min(len(sorted_ms) - 1, max(math.ceil(q * len(sorted_ms)) - 1, 0))]


def hammer(
    site: Site, todo: list[tuple[str, str]], clients: int, seconds: float, probe: float
) -> tuple[dict[str, list[float]], dict[str, list[str]], float]:
    times: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, list[str]] = defaultdict(list)
    lock = threading.Lock()
    end = time.monotonic() + seconds

    def timed(name: str, path: str) -> None:
        t0 = time.perf_counter()
        try:
            status, _, _ = site.request("GET", path)
        except OSError as e:
            status = f"{type(e).__name__}"
        ms = (time.perf_counter() - t0) * 1000
        with lock:
            times[name].append(ms)
            if status != 200:
                errors[name].append(f"{path}: {status}")

    def client(seed: int) -> None:
        rnd = random.Random(seed)
        while time.monotonic() < end:
            order = todo[:]
            rnd.shuffle(order)
            for name, path in order:
                if time.monotonic() >= end:
                    return
                timed(name, path)

    def prober() -> None:
        while time.monotonic() < end:
            timed("healthz (probe)", "/healthz")
            time.sleep(probe)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    if probe > 0:
        threads.append(threading.Thread(target=prober))
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + REQUEST_TIMEOUT + 5)
    return times, errors, time.monotonic() - t0


def report(times: dict[str, list[float]], errors: dict[str, list[str]], took: float, clients: int) -> None:
    def line(name: str, ms: list[float]) -> str:
        s = sorted(ms)
        return (
            f"{name:<22} {len(s):>6} {percentile(s, 0.5):>8.0f} {percentile(s, 0.95):>8.0f} {s[-1]:>8.0f}"
            f"{'  errors: ' + str(len(errors[name])) if errors.get(name) else ''}"
        )

    print(f"\n{clients} clients, {took:.1f} s, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'page':<22} {'count':>6} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    page_names = [n for n in times if not n.startswith("healthz")]
    for name in sorted(page_names):
        print(line(name, times[name]))
    every = [ms for n in page_names for ms in times[n]]
    print(line("all pages", every))
    for name in sorted(set(times) - set(page_names)):
        print(line(name, times[name]))
    print(f"pages: {len(every) / took:.1f} requests/s")
    for name, errs in errors.items():
        print(f"errors on {name}: {', '.join(errs[:3])}{' ...' if len(errs) > 3 else ''}")


def cpu_seconds(parent: int) -> float:
    """CPU seconds (user + system) the children of process `parent` (gunicorn's workers) have used."""
    total, tick = 0.0, os.sysconf("SC_CLK_TCK")
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == parent:  # fields[1] is the parent's ID; [11], [12]: user and system ticks
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def served(args: argparse.Namespace) -> tuple[str, int, str, str, list[subprocess.Popen], Path | None]:
    """Start the server on a private folder (see the module's docstring): host, port, user,
    password, the processes to stop and the temp folder to remove (None if kept)."""
    temp = None if args.var else Path(tempfile.mkdtemp(prefix="sweepsite-bench-load-"))
    var = Path(args.var or temp).resolve()
    var.mkdir(parents=True, exist_ok=True)
    env = server_env(var)
    db = var / "db.sqlite3"
    if args.db:
        shutil.copyfile(args.db, db)
    manage(env, "migrate", "--noinput", "-v", "0")
    manage(env, "collectstatic", "--noinput", "--clear", "-v", "0")
    if stored_rows(db) < args.rows:
        t0 = time.monotonic()
        print(f"storing about {args.rows:,} rows in {db} ...", flush=True)
        subprocess.run([PY, __file__, "--load-only", "--rows", str(args.rows)], cwd=ROOT, env=env, check=True)
        print(f"stored in {time.monotonic() - t0:.0f} s", flush=True)
    password = secrets.token_urlsafe(16)
    manage(env, "user", USER, "--role", "operator", "--password-stdin", stdin=password + "\n")
    manage(
        env,
        "shell",
        "--no-imports",
        "-c",
        f"from django.contrib.auth import get_user_model; u = get_user_model().objects.get(username={USER!r}); "
        f"u.set_password({password!r}); u.save()",
    )
    port = free_port()
    procs = start_celery(env, var)
    procs.append(start_gunicorn(env, var, port, args.gunicorn_workers))
    print(
        f"gunicorn ({args.gunicorn_workers} workers) on 127.0.0.1:{port}, {stored_rows(db):,} scenario rows, "
        f"folder {var}",
        flush=True,
    )
    return "127.0.0.1", port, USER, password, procs, temp


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--url", help="a running server (loopback only); with --user and $BENCH_PASSWORD")
    ap.add_argument("--user", default=USER)
    ap.add_argument("--var", help="the server's SWEEPSITE_VAR folder (kept; its database reused when loaded)")
    ap.add_argument("--db", help="a loaded SQLite database file to copy in first")
    ap.add_argument("--rows", type=int, default=135_000, help="scenario rows to store (if fewer are)")
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--probe", type=float, default=5.0, help="seconds between /healthz probes (0: none)")
    ap.add_argument("--gunicorn-workers", type=int, default=2)
    ap.add_argument("--warm", type=int, default=1, help="rounds of every page before the clock starts")
    ap.add_argument("--load-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.load_only:
        return load(args.rows)
    if not (0 < args.clients <= MAX_CLIENTS and 0 < args.seconds <= MAX_SECONDS):
        raise SystemExit(f"--clients 1..{MAX_CLIENTS}, --seconds up to {MAX_SECONDS}")
    procs: list[subprocess.Popen] = []
    temp = None
    try:
        if args.url:
            u = urlsplit(args.url)
            if u.hostname not in LOOPBACK:
                raise SystemExit("--url: loopback only (127.0.0.1, ::1, localhost)")
            host, port, user, password = u.hostname, u.port or 80, args.user, os.environ.get("BENCH_PASSWORD", "")
        else:
            host, port, user, password, procs, temp = served(args)
        site = Site(host, port)
        site.login(user, password)
        todo = pages(site)
        print(f"{len(todo)} page addresses, {len({n for n, _ in todo})} pages", flush=True)
        for _ in range(args.warm):
            for _, path in todo:
                site.request("GET", path)
        cpu = cpu_seconds(procs[-1].pid) if procs else None
        times, errors, took = hammer(site, todo, args.clients, args.seconds, args.probe)
        report(times, errors, took, args.clients)
        if cpu is not None:
            # What the load cannot blur much: the server's own CPU per request (a busy machine's
            # other work shows in the times above, little in this).
            n = sum(len(v) for v in times.values())
            print(f"gunicorn workers' CPU: {(cpu_seconds(procs[-1].pid) - cpu) * 1000 / n:.1f} ms per request")
    finally:
        stop(procs)
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)


if __name__ == "__main__":
    main()
