"""Browser fixtures: Debian's Chromium driven by Playwright for Python, against the server as `make run`
starts it.

- `site`: `make run` itself, in a subprocess of its own process group (DEBUG off, runserver, its
  Celery workers, collectstatic, WhiteNoise), on a free port, pointed at the test session's database,
  broker folder and queue. Not pytest-django's live_server, which serves static files by itself and
  so hid that `make run` served none. Stopped at the end of the session as Ctrl-C stops it (SIGINT
  to the group). `site.url` is its address; `site.log` its output, copied to artifacts/make-run.log
  at the end.

- Chromium is /usr/bin/chromium (or $CHROMIUM); Playwright never downloads a browser here. Without
  it (or without Playwright) the browser tests are skipped with the reason, and FAIL when
  REQUIRE_SERVICES=1 (as CI sets it).
- One Chromium per test module (a persistent context: a fresh --user-data-dir), one page per test
  with the cookies cleared. Playwright's sync API runs an asyncio loop in this thread, which makes
  Django refuse ORM calls ("async context"): DJANGO_ALLOW_ASYNC_UNSAFE is set while the browser
  runs and restored afterwards, so the tests after this folder see the setting as it was.
- `shot(page, name)` saves a full-page screenshot under artifacts/screenshots/ (gitignored); a
  failing test also leaves `<test>-FAILED.png` there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from tests import _make

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOTS = Path(settings.BASE_DIR) / "artifacts" / "screenshots"
TIMEOUT_MS = 20_000
# The agents `make run` is started with registered, as an operator registers theirs (SWEEPSITE_TARGETS).
# JSON, to fix their passes at 2 (ToolNode's threads make them samples; 5 unasked).
E2E_TARGETS = (
    '{"triage-naive": {"target": "examples.langgraph_triage:naive_sync", "samples": 2},'
    ' "triage-keyed": {"target": "examples.langgraph_triage:keyed_sync", "samples": 2}}'
)


def _unavailable(why: str) -> None:
    why = f"browser tests need Debian's Chromium and Playwright: {why}"
    if os.environ.get("REQUIRE_SERVICES") == "1":
        pytest.fail(why + " [REQUIRE_SERVICES=1]", pytrace=False)
    pytest.skip(why)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[Any]:
    report = yield
    setattr(item, f"rep_{report.when}", report)  # read by the `page` fixture's teardown
    return report


@pytest.fixture(scope="module")
def browser_context(django_db_setup: None) -> Iterator[Any]:
    """A headless Chromium (persistent context on a fresh profile folder), stopped after the module."""
    if not Path(CHROMIUM).is_file():
        _unavailable(f"{CHROMIUM} is missing (apt-get install -y chromium)")
    try:
        from playwright.sync_api import expect, sync_playwright
    except ImportError as e:
        _unavailable(f"cannot import playwright ({e})")
    before = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    profile = tempfile.mkdtemp(prefix="sweepsite-chromium-")
    pw = sync_playwright().start()
    try:
        try:
            context = pw.chromium.launch_persistent_context(
                profile,
                executable_path=CHROMIUM,
                headless=True,
                args=CHROMIUM_ARGS,
                accept_downloads=True,
                viewport={"width": 1280, "height": 900},
            )
        except Exception as e:  # noqa: BLE001 - any launch failure is "no usable browser"
            _unavailable(f"{CHROMIUM} did not start ({type(e).__name__}: {e})")
        context.set_default_timeout(TIMEOUT_MS)
        expect.set_options(timeout=TIMEOUT_MS)
        yield context
        context.close()
    finally:
        pw.stop()
        shutil.rmtree(profile, ignore_errors=True)
        if before is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = before


@dataclass
class Site:
    url: str
    log: Path
    process: subprocess.Popen


@pytest.fixture(scope="session")
def site(django_db_setup: None, django_db_blocker: Any) -> Iterator[Site]:
    """`make run` on a free port, sharing the test database, broker folder and queue (see above)."""
    with django_db_blocker.unblock():
        # No stall watchdog, as in tests/conftest.py's workers: the session's other tests leave sweeps
        # with unsent chunks on purpose (tests/sweeps/test_faults.py tests the watchdog).
        # The operator's registrations (sweeps.targets): the agents tests/e2e/test_targets.py launches.
        env = _make.session_environ(SWEEPSITE_STALL_SECONDS="0", SWEEPSITE_TARGETS=E2E_TARGETS)
    port = _make.free_port()
    log = Path(settings.VAR_DIR) / "make-run.log"
    proc = _make.start("run", port, env, log, "WORKERS=2")
    url = f"http://127.0.0.1:{port}"
    try:
        try:
            _make.wait_until_served(proc, url + "/", log)
        except AssertionError as e:
            pytest.fail(str(e), pytrace=False)
        yield Site(url, log, proc)
    finally:
        _make.stop(proc)
        # What the server said (a 500's traceback with DEBUG off) outlives the session's temp folder.
        SCREENSHOTS.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(log, SCREENSHOTS.parent / "make-run.log")


@pytest.fixture
def page(browser_context: Any, site: Site, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh tab, logged out; `page.errors` collects uncaught JS errors and console errors."""
    browser_context.clear_cookies()
    p = browser_context.new_page()
    p.errors = []  # type: ignore[attr-defined]
    p.on("pageerror", lambda e: p.errors.append(f"pageerror: {e}"))
    # A 4xx page is a tested answer, not a script error: the browser's "Failed to load resource" is left out.
    p.on(
        "console",
        lambda m: (
            p.errors.append(f"console.{m.type}: {m.text}")
            if m.type == "error" and not m.text.startswith("Failed to load resource")
            else None
        ),
    )
    yield p
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        try:
            p.screenshot(path=str(SCREENSHOTS / f"{request.node.name}-FAILED.png"), full_page=True)
        except Exception:  # noqa: BLE001, S110 - a screenshot is a bonus on a failure
            pass
    p.close()


@pytest.fixture
def shot(request: pytest.FixtureRequest) -> Callable[[Any, str], Path]:
    """shot(page, "step"): a full-page screenshot artifacts/screenshots/<test>-<nn>-<step>.png."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    prefix = request.node.name
    for old in SCREENSHOTS.glob(f"{prefix}-*.png"):
        old.unlink()
    counter = iter(range(1, 100))

    def take(page: Any, name: str) -> Path:
        path = SCREENSHOTS / f"{prefix}-{next(counter):02d}-{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take


@pytest.fixture
def login(site: Site) -> Callable[[Any, Any], None]:
    """login(page, user): a session cookie for `user`, as if they had logged in (the log-in form is
    tested on its own); faster than filling the form in every test."""
    from django.test import Client

    def do(page: Any, user: Any) -> None:
        client = Client()
        client.force_login(user)
        cookie = client.cookies[settings.SESSION_COOKIE_NAME]
        page.context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": cookie.value, "url": site.url}])

    return do
