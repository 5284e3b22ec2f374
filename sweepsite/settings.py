"""One settings module, driven by the environment.

Embedded default (nothing but Python): SQLite in var/db.sqlite3 and Kombu's filesystem broker in
var/broker/. Set DATABASE_URL (e.g. postgres://127.0.0.1:5432/sweepsite) and CELERY_BROKER_URL
(e.g. redis://127.0.0.1:6379/0 or amqp://guest:guest@127.0.0.1:5672//) to use real services.
DJANGO_PRODUCTION=1 turns on the deployment settings: SECRET_KEY and ALLOWED_HOSTS must then
come from the environment.
"""

from __future__ import annotations

import os
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

import dj_database_url
import plotly

from sweeps import limits
from sweepsite import config, content_policy

BASE_DIR = Path(__file__).resolve().parent.parent
# Under pytest (unless SWEEPSITE_VAR says where), the broker folder and the test database live in
# a temp dir private to the test session, so tests never meet `make run`'s workers or var/db.sqlite3.
# Worker subprocesses started by tests get SWEEPSITE_VAR set to it (sweeps.workqueue.workers.worker_environ).
TESTING = "pytest" in sys.modules
if TESTING and "SWEEPSITE_VAR" not in os.environ:
    VAR_DIR = Path(tempfile.mkdtemp(prefix="sweepsite-test-"))
    TEST_VAR_DIR = VAR_DIR  # removed at the end of the session (tests/conftest.py)
else:
    VAR_DIR = Path(os.environ.get("SWEEPSITE_VAR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)

PRODUCTION = os.environ.get("DJANGO_PRODUCTION") == "1"
if PRODUCTION:
    # Missing: one line naming the variable (sweepsite.config), not a KeyError.
    SECRET_KEY = config.required("SECRET_KEY")
    ALLOWED_HOSTS = [h for h in config.required("ALLOWED_HOSTS").split(",") if h]
    DEBUG = False
    SECURE_SSL_REDIRECT = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = 31536000
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
else:
    # Generated once per install, kept in VAR_DIR/secret_key (mode 0600): never a key from the source.
    SECRET_KEY = os.environ.get("SECRET_KEY") or config.install_secret_key(VAR_DIR)
    ALLOWED_HOSTS = os.environ.get("ALLOWED_HOSTS", "localhost,127.0.0.1,testserver").split(",")
    DEBUG = os.environ.get("DJANGO_DEBUG", "0") == "1"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    # Before staticfiles: runserver leaves static files to WhiteNoise, DEBUG on or off.
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "axes",  # failed logins, locked out (see "Logins and roles" below)
    "sweeps",
]

MIDDLEWARE = [
    # First: a body over SWEEPSITE_MAX_REQUEST_BYTES (by its Content-Length) is answered 413 unread.
    "sweepsite.request_guards.RequestSizeLimitMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # The Content-Security-Policy header on every answer below, a lockout's and a 403's too.
    "csp.middleware.CSPMiddleware",
    # Static files (plotly.min.js, the admin's CSS) from STATIC_ROOT, DEBUG on or off, under
    # runserver (`make run`) and gunicorn (`make serve`) alike: compressed, cached for a year.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Right once the user is known: an anonymous write is refused before the CSRF check reads its body.
    "sweepsite.request_guards.AnonymousWriteMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # A database that cannot be reached: a 503 page saying so, not a 500.
    "sweepsite.middleware.DatabaseUnavailableMiddleware",
    "axes.middleware.AxesMiddleware",  # last, as axes asks: it turns a lockout into the page
]

ROOT_URLCONF = "sweepsite.urls"
WSGI_APPLICATION = "sweepsite.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{VAR_DIR / 'db.sqlite3'}", conn_max_age=int(os.environ.get("CONN_MAX_AGE", "60"))
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Web server and workers write at once: wait for the lock, and let readers go on (WAL).
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # The test database is a file, not ":memory:", so a Celery worker subprocess can share it.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test.sqlite3")}
elif TESTING:
    # One test database per session: two test runs at once on one PostgreSQL do not collide.
    DATABASES["default"]["TEST"] = {"NAME": f"test_{DATABASES['default']['NAME']}_{os.getpid()}"}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_PASSWORD_VALIDATORS = [{"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"}]
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# The page cache (sweeps/pagecache.py): what the pages compute from a sweep's rows, per version of
# those rows, in files that the web server's processes share; keyed by a digest of the code that
# makes it, so that a deploy never serves the last one's.
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
        "LOCATION": str(VAR_DIR / "cache"),
        "TIMEOUT": limits.PAGE_CACHE_SECONDS,
        "KEY_PREFIX": config.code_digest([BASE_DIR / "sweeps", BASE_DIR / "templates", BASE_DIR / "agentcore"]),
        "OPTIONS": {"MAX_ENTRIES": limits.PAGE_CACHE_ENTRIES},
    }
}

STATIC_URL = "static/"
# Filled by `manage.py collectstatic` (`make run` and `make serve` run it; so does the test session,
# into its own VAR_DIR). The manifest storage gives every file a name with its content's hash, so
# WhiteNoise can let browsers cache it for a year; it also writes gzip copies that WhiteNoise sends
# to browsers that take them.
STATIC_ROOT = VAR_DIR / "static"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
# plotly.min.js is served from the plotly package itself (no CDN, no vendored copy):
# {% static 'plotly/plotly.min.js' %}.
STATICFILES_DIRS = [("plotly", Path(plotly.__file__).resolve().parent / "package_data")]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "sweeps:list"
LOGOUT_REDIRECT_URL = "sweeps:list"

# Job file uploads larger than this are refused by the form.
SWEEPSITE_MAX_JOB_BYTES = limits.MAX_JOB_BYTES

# Celery (read by sweepsite/celery.py with namespace CELERY; tests assert these names).
BROKER_DIR = VAR_DIR / "broker"
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "filesystem://")
if CELERY_BROKER_URL.startswith("filesystem"):
    # Kombu's filesystem transport, with messages written whole before a worker can see them.
    CELERY_BROKER_TRANSPORT = "sweepsite.broker:Transport"
    for sub in ("out", "processed", "control"):
        (BROKER_DIR / sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "out"),
        "data_folder_out": str(BROKER_DIR / "out"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
        "polling_interval": 0.05,
    }
else:
    # One Redis list per priority (kombu's default merges them into 4), so that each priority's
    # queue is first in, first out on its own: workqueue/messages.py tells lost messages by it.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": int(os.environ.get("CELERY_VISIBILITY_TIMEOUT", "300")),
        "priority_steps": list(range(limits.PRIORITIES)),
    }
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A prefork worker whose pool process died waits this long for a result the process may have sent
# before requeueing its task (default 10 s). Results are ignored and a task run twice stores once,
# so a second is plenty.
CELERY_WORKER_LOST_WAIT = 1.0
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_ALWAYS_EAGER = False
# The watchdog runs in the one worker that holds the leader lease (sweeps/workqueue/leases.py, keeper.py):
# chunks whose lease ran out with their worker (a SIGKILL) are queued again within seconds
# (limits.LEASE_SECONDS), and so are those whose message was lost before any lease named it
# (workqueue/messages.py, limits.LOST_MESSAGE_SECONDS); and by the stall rule
# (services.recovery.sweeps_resume_stalled), a running sweep with no live lease that stored no chunk
# for this many seconds while the task queue is empty has lost messages (an answer's resume, or work
# that the rules above missed): the leader checks every quarter of it and queues its missing work
# again, and so does `manage.py sweep` while it waits. 0: this worker never leads (it still renews
# the leases of the chunks it plays).
SWEEPSITE_STALL_SECONDS = float(os.environ.get("SWEEPSITE_STALL_SECONDS", str(limits.STALL_SECONDS)))
# The agents an operator lets people sweep from the dashboard (sweeps.targets: a registration is
# `name=package.module:attribute[@/path/to/python]`, `;`-separated, or a JSON object); never a module
# path typed into a form. Unset: the examples (examples/plain_loop.py, and examples/langgraph_triage.py
# where the LangGraph extra is installed).
SWEEPSITE_TARGETS = os.environ.get("SWEEPSITE_TARGETS")
# Seconds each process of a target's scenario may take before it counts as hung (agentcore.port).
SWEEPSITE_TARGET_TIMEOUT = float(os.environ.get("SWEEPSITE_TARGET_TIMEOUT", "30"))
# The queue the dashboard's tasks go to; under pytest one per test session, so that test runs
# sharing a Redis never take each other's tasks.
CELERY_TASK_DEFAULT_QUEUE = os.environ.get(
    "SWEEPSITE_QUEUE", f"sweepsite-test-{os.getpid()}" if TESTING else "sweepsite"
)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}

# --- Logins and roles (sweeps.roles says who may do what) -------------------------------------
# Reading needs a login (the viewer role or more) unless SWEEPSITE_PUBLIC_READ=1 opens the pages
# without call arguments or keys to anonymous visitors; launching, answering and exporting always
# need a login and a role that allows them.
SWEEPSITE_PUBLIC_READ = os.environ.get("SWEEPSITE_PUBLIC_READ", "0") == "1"
# Unfinished sweeps per user (launch and resume refuse more; 0: no limit).
SWEEPSITE_MAX_RUNNING = int(os.environ.get("SWEEPSITE_MAX_RUNNING", str(limits.MAX_RUNNING_PER_USER)))
# django-axes: failed logins per (username, address) pair before it is locked out; staff unlock it
# in the admin (Access attempts) or with `manage.py axes_reset_username NAME`.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = int(os.environ.get("SWEEPSITE_LOGIN_FAILURES", str(limits.LOGIN_FAILURES)))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
# And failed logins per address across usernames (sweepsite.lockout.AddressBoundHandler): past it the
# address is locked out for every username. axes compares every lockout parameter against its one
# AXES_FAILURE_LIMIT, and a success would clear the address's whole count, so a handler adds this bound.
SWEEPSITE_ADDRESS_LOGIN_FAILURES = int(
    os.environ.get("SWEEPSITE_ADDRESS_LOGIN_FAILURES", str(limits.ADDRESS_LOGIN_FAILURES))
)
AXES_HANDLER = "sweepsite.lockout.AddressBoundHandler"
_LOCKOUT_MINUTES = float(os.environ.get("SWEEPSITE_LOCKOUT_MINUTES", str(limits.LOCKOUT_MINUTES)))
AXES_COOLOFF_TIME = timedelta(minutes=_LOCKOUT_MINUTES) if _LOCKOUT_MINUTES > 0 else None
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "sweepsite.lockout.lockout_response"
AXES_VERBOSE = False

# --- Hardening: request bodies, Content-Security-Policy, health -------------

# Request bodies: a body longer than SWEEPSITE_MAX_REQUEST_BYTES (Content-Length) is answered 413 before
# a byte of it is read, by the first middleware; an anonymous POST/PUT/PATCH/DELETE (but the log-in
# and log-out forms) is refused right after the session is known, before CsrfViewMiddleware reads
# the body (both in MIDDLEWARE above). What is let through is read into memory only, never into a
# temporary file.
SWEEPSITE_MAX_REQUEST_BYTES = limits.MAX_REQUEST_BYTES
SWEEPSITE_ANONYMOUS_WRITES = ("login", "logout", "admin:login")
DATA_UPLOAD_MAX_MEMORY_SIZE = limits.MAX_REQUEST_BYTES
FILE_UPLOAD_MAX_MEMORY_SIZE = limits.MAX_REQUEST_BYTES
FILE_UPLOAD_HANDLERS = ["django.core.files.uploadhandler.MemoryFileUploadHandler"]

# Content-Security-Policy (django-csp 4), in every mode: everything from this site only, no inline
# script (the pages' scripts are static files), nothing inline for styles but what Plotly needs
# (sweepsite/content_policy.py says what and why).
CONTENT_SECURITY_POLICY = content_policy.policy(Path(STATICFILES_DIRS[0][1]) / "plotly.min.js")

# Health (sweeps/health.py; its view sweepsite/health.py): /healthz answers plain HTTP too (a load
# balancer's probe, behind the TLS proxy), and a PostgreSQL host that does not answer fails in
# seconds, not minutes.
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
if "postgresql" in DATABASES["default"]["ENGINE"]:
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault("connect_timeout", limits.DATABASE_CONNECT_SECONDS)
