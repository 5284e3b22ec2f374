"""Helpers of the fault tests: private brokers, worker processes to kill, agentcore's reference rows.

- `PrivateRedis`: a redis-server of the test's own (a free port, nothing on disk), started and
  stopped (or SIGKILLed and started again on the same port) by its PID; never the shared one.
- `private_broker`: points this process's Celery app (and the workers started from it) at another
  broker for one test: that private Redis, or a filesystem broker folder of the test's own, so the
  session's shared workers (tests/conftest.py) never take the test's messages.
- `Workers`: real `celery worker` processes, each in a process group of its own, that a test can
  SIGKILL one pool process of, or whole (main process and pool); all stopped at the end. A worker
  started on another queue (`queue=`) waits there as a warm spare until `consume` points it at the
  test's queue (Celery's remote control), so a replacement takes a killed worker's place at once.
- `Lab` (`filesystem_lab`, `redis_lab`): a private broker of either kind, this process pointed at it,
  and the workers started on it, with the stall period a test asks for.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

import agentcore as agentsweep
from agentcore import jobs
from sweeps import configs as sweep_configs
from sweeps.limits import PRIORITIES
from sweeps.workqueue import workers as sweepworkers
from sweepsite.celery import app

REDIS_SERVER = shutil.which("redis-server")


def unavailable(why: str) -> None:
    """Skip with the reason, or fail when REQUIRE_SERVICES=1 (CI): a missing service is a failure there."""
    if os.environ.get("REQUIRE_SERVICES") == "1":
        pytest.fail(why + " [REQUIRE_SERVICES=1]", pytrace=False)
    pytest.skip(why)


def free_port() -> int:
    """A TCP port nothing listens on now (the kernel's choice: two test runs at once do not collide)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class PrivateRedis:
    """A redis-server on a free loopback port that keeps nothing (--save "", no AOF)."""

    def __init__(self, folder: Path) -> None:
        if REDIS_SERVER is None:
            unavailable(
                "redis-server is not installed (apt-get install redis-server): the broker fault tests "
                "start a private one"
            )
        self.folder = folder
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.starts += 1
        log = (self.folder / f"redis-{self.starts}.log").open("w")
        self.proc = subprocess.Popen(
            [
                str(REDIS_SERVER),
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
                "--dir",
                str(self.folder),
                "--protected-mode",
                "yes",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + 20
        while not _answers(self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"the private redis-server did not start on port {self.port}: "
                    f"{(self.folder / f'redis-{self.starts}.log').read_text()[-2000:]}"
                )
            time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL it (its queue, kept only in memory, is gone)."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def _reset_pools() -> None:
    """Drop this process's pooled broker connections (the next publish connects to the broker now set)."""
    from kombu import pools

    pools.reset()  # closes them, and forgets them: kombu would hand the closed pool out again
    app._pool = None
    app.amqp._producer_pool = None


@contextmanager
def private_broker(url: str, transport_options: dict[str, Any], worker_env: dict[str, str]) -> Iterator[dict[str, str]]:
    """This process's Celery app publishes to `url` for the block; yields the environment for its workers."""
    saved_env = os.environ.get("CELERY_BROKER_URL")
    saved = (app.conf.broker_url, app.conf.broker_transport_options)
    _reset_pools()
    os.environ["CELERY_BROKER_URL"] = url  # Celery reads it before its own setting
    app.conf.broker_url = url
    app.conf.broker_transport_options = transport_options
    try:
        yield {**sweepworkers.worker_environ(), **worker_env}
    finally:
        _reset_pools()
        if saved_env is None:
            os.environ.pop("CELERY_BROKER_URL", None)
        else:
            os.environ["CELERY_BROKER_URL"] = saved_env
        app.conf.broker_url, app.conf.broker_transport_options = saved


def filesystem_options(folder: Path) -> dict[str, Any]:
    """The transport options of a filesystem broker in `folder`/broker (as settings.py makes them)."""
    base = folder / "broker"
    for sub in ("out", "processed", "control"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    return {
        "data_folder_in": str(base / "out"),
        "data_folder_out": str(base / "out"),
        "processed_folder": str(base / "processed"),
        "control_folder": str(base / "control"),
        "store_processed": False,
        "polling_interval": 0.05,
    }


def _state(pid: int) -> str:
    """The process's state letter (R: running on a CPU), "" if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return ""
    return stat[stat.rindex(")") + 2 :].split()[0]


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(entry))
    return out


def holder(pid: int) -> str:
    """The lease holder a worker's chunks name: sweeps.workqueue.leases.HOLDER in its main process."""
    return f"{socket.gethostname()}:{pid}"


class Workers:
    """Celery worker processes on the test's broker and the test database, each in its own process group."""

    def __init__(
        self,
        folder: Path,
        env: dict[str, str],
        *,
        pool: str = "prefork",
        concurrency: int = 2,
        module: str | None = None,
        queue: str | None = None,
    ) -> None:
        self.folder, self.env, self.pool, self.concurrency = folder, env, pool, concurrency
        self.queue = queue  # another queue than the session's (workers of the test's own on a shared broker)
        self.module = module  # a wrapper module run instead of `-m celery` (tests/sweeps/_poison_worker.py)
        self.procs: list[subprocess.Popen] = []
        self.logs: list[Path] = []

    def start(self, n: int = 1, wait: bool = True, queue: str | None = None) -> list[subprocess.Popen]:
        new = []
        for _ in range(n):
            i = len(self.procs)
            argv = sweepworkers.worker_argv(
                self._name(i), "INFO", pool=self.pool, concurrency=self.concurrency, queue=self.queue
            )
            if self.module:
                argv[1:3] = ["-m", self.module]
            if queue:
                argv[argv.index("-Q") + 1] = queue
            log = self.folder / f"worker-{i}.log"
            with log.open("w") as out:
                proc = subprocess.Popen(
                    argv,
                    env=self.env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    cwd=settings.BASE_DIR,
                    start_new_session=True,
                )
            self.procs.append(proc)
            self.logs.append(log)
            new.append(proc)
        if wait:
            self.wait_ready(new)
        return new

    def _name(self, i: int) -> str:
        return f"faults{self.folder.name}-{i}-{os.getpid()}"

    def wait_ready(self, procs: list[subprocess.Popen], timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        for proc in procs:
            log = self.logs[self.procs.index(proc)]
            while not self.ready(proc):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"a Celery worker did not start:\n{log.read_text()[-3000:]}")
                time.sleep(0.05)

    def ready(self, proc: subprocess.Popen) -> bool:
        """Whether the worker said it is ready (and lives)."""
        return proc.poll() is None and " ready." in self.logs[self.procs.index(proc)].read_text()

    def nodename(self, proc: subprocess.Popen) -> str:
        return f"{self._name(self.procs.index(proc))}@{socket.gethostname()}"

    def consume(self, proc: subprocess.Popen, queue: str) -> None:
        """A warm spare starts consuming `queue` (Celery's remote control; an idle worker answers at once)."""
        replies = app.control.add_consumer(queue, destination=[self.nodename(proc)], reply=True, timeout=5.0)
        if not replies:
            raise RuntimeError(f"the spare worker {self.nodename(proc)} did not take the queue")

    def alive(self) -> list[subprocess.Popen]:
        return [p for p in self.procs if p.poll() is None]

    def kill_pool_process(self) -> int | None:
        """SIGKILL one pool process of a running worker (its main process starts another): one that is
        running on a CPU (playing a chunk) if there is one, else any (waiting on the database)."""
        candidates = [c for p in self.alive() for c in _children(p.pid)]
        if not candidates:
            return None
        busy = []
        for _ in range(20):
            busy = [c for c in candidates if _state(c) == "R"]
            if busy:
                break
            time.sleep(0.005)
        pid = random.choice(busy or candidates)
        os.kill(pid, signal.SIGKILL)
        return pid

    def kill_whole(self) -> int | None:
        """SIGKILL a worker's main process, then its pool processes: the whole worker dies at once."""
        alive = self.alive()
        if not alive:
            return None
        proc = random.choice(alive)
        children = _children(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()
        return proc.pid

    def log_text(self) -> str:
        return "\n".join(f"--- {log.name}\n{log.read_text()}" for log in self.logs if log.exists())

    def stop(self) -> None:
        for proc in self.alive():
            proc.terminate()  # warm shutdown (a prefork worker takes seconds: not waited for long)
        deadline = time.monotonic() + 2
        for proc in self.procs:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for proc in self.procs:  # the group: the worker and any pool process it left behind
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            if proc.poll() is None:
                proc.wait()


@lru_cache(maxsize=8)
def reference(configs: tuple[tuple[str, str, str], ...], depth: int) -> agentsweep.SweepResult:
    """agentcore's uninterrupted sweep of these configurations (in process): what must be stored."""
    job = jobs.load("triage")
    cfgs = [agentsweep.Config(job, _design(d), t, 1, "scripted", name) for name, d, t in configs]
    return agentsweep.sweep(cfgs, depth=depth, workers=2)


def _design(name: str) -> Any:

    return sweep_configs.design(name)


def record_key(config: int, r: Any) -> tuple:
    """What a stored scenario row and an agentcore record must agree on."""
    return (
        config,
        r.first_point,
        r.first_kind,
        r.first_label,
        r.second_point or 0,
        r.second_kind or "",
        r.second_label or "",
        r.duplicates,
        r.missing,
        r.asks,
        r.approvals,
        r.model_calls,
        r.calls_plus,
        r.status,
    )


class Lab:
    """A broker of the test's own, this process's Celery app pointed at it, and workers started on it."""

    def __init__(self, folder: Path, env: dict[str, str], redis: PrivateRedis | None = None) -> None:
        self.folder, self.env, self.redis = folder, env, redis
        self.pools: list[Workers] = []

    def workers(self, **kw: Any) -> Workers:
        env = {**self.env, **kw.pop("env", {})}
        w = Workers(self.folder / f"w{len(self.pools)}", env, **kw)
        w.folder.mkdir()
        self.pools.append(w)
        return w

    def stop(self) -> None:
        for w in self.pools:
            w.stop()

    def logs(self) -> str:
        return "\n".join(w.log_text() for w in self.pools)


@contextmanager
def filesystem_lab(folder: Path, stall: float) -> Iterator[Lab]:
    """The embedded default's broker (a filesystem folder in `folder`), its workers' stall period `stall`."""
    options = filesystem_options(folder)
    with private_broker(
        "filesystem://", options, {"SWEEPSITE_VAR": str(folder), "SWEEPSITE_STALL_SECONDS": str(stall)}
    ) as env:
        lab = Lab(folder, env)
        try:
            yield lab
        finally:
            lab.stop()


@contextmanager
def redis_lab(folder: Path, stall: float) -> Iterator[Lab]:
    """A private redis-server (never the shared one), stopped by its PID at the end; the transport's
    options as settings.py makes them; the workers' stall period `stall`."""
    redis = PrivateRedis(folder)
    redis.start()
    try:
        options = {"visibility_timeout": 300, "priority_steps": list(range(PRIORITIES))}
        with private_broker(
            redis.url, options, {"CELERY_BROKER_URL": redis.url, "SWEEPSITE_STALL_SECONDS": str(stall)}
        ) as env:
            lab = Lab(folder, env, redis)
            try:
                yield lab
            finally:
                lab.stop()
    finally:
        redis.stop()
