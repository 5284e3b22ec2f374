"""What settings.py reads from outside the source: required environment variables, and the embedded
default's SECRET_KEY, generated once per install.

Rules:
- A setting that production must be given (SECRET_KEY, ALLOWED_HOSTS) is read with `required`: its
  absence is an ImproperlyConfigured whose message is one line naming the variable; the programs'
  entry points (manage.py, wsgi.py, the Celery app) print that line and exit, not a traceback.
- The embedded default never uses a key written in the source: `install_secret_key` makes one in
  the var/ folder (SWEEPSITE_VAR), mode 0600, and every later start reads the same file. It is
  created whole or not at all (written to a private temporary file, then linked into place, which
  fails if another process won the race: that process's key is read instead).
- The page cache's key prefix is `code_digest` of the code that makes what it keeps (templates,
  the dashboard's modules): one install's processes agree on it, and a deploy changes it.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from django.core.management.utils import get_random_secret_key

SECRET_KEY_FILE = "secret_key"


def required(name: str, why: str = "DJANGO_PRODUCTION=1 needs it") -> str:
    """The environment variable `name`, which must be set and not empty."""
    value = os.environ.get(name, "").strip()
    if not value:
        raise ImproperlyConfigured(f"{name} is not set in the environment ({why})")
    return value


def install_secret_key(var_dir: Path) -> str:
    """This install's SECRET_KEY: read from var_dir/secret_key, made there first if missing (see the rules)."""
    path = var_dir / SECRET_KEY_FILE
    try:
        return _read_key(path)
    except FileNotFoundError:
        pass
    key = get_random_secret_key()
    tmp = var_dir / f".{SECRET_KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(key + "\n")
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:  # another process made it first: theirs is this install's key
            return _read_key(path)
    finally:
        tmp.unlink(missing_ok=True)
    return key


def code_digest(folders: list[Path], suffixes: tuple[str, ...] = (".py", ".html")) -> str:
    """A short digest of every file with these suffixes below these folders (their paths and bytes)."""
    h = hashlib.sha256()
    for folder in folders:
        for path in sorted(p for p in folder.rglob("*") if p.suffix in suffixes and p.is_file()):
            h.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def _read_key(path: Path) -> str:
    key = path.read_text().strip()
    if not key:
        raise ImproperlyConfigured(f"{path} is empty: remove it and a new key is generated")
    return key


@contextmanager
def one_line_errors(program: str, status: int = 2) -> Iterator[None]:
    """Run a program's start-up: an ImproperlyConfigured ends it with its message on one line (stderr)
    and this exit status."""
    try:
        yield
    except ImproperlyConfigured as e:
        message = " ".join(str(e).split())
        sys.stderr.write(f"{program}: {message}\n")
        sys.exit(status)
