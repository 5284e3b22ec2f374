"""What a full disk looks like in the errors the database, the task broker and the file system raise,
and the words the pages and commands use for it.

Rules:
- A full disk is no unreachable service: the service answers, it cannot write. `full` finds it
  anywhere in an error's chain (kombu wraps the filesystem broker's OSError twice; a sweep's failed
  UPDATE after it chains that too): an OSError ENOSPC or EDQUOT, SQLite's SQLITE_FULL ("database or
  disk is full"), PostgreSQL's disk_full (SQLSTATE 53100, "No space left on device").
- Standard library only (the commands and the views both import it).
"""

from __future__ import annotations

import errno

FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
FULL_WORDS = ("database or disk is full", "no space left on device", "disk quota exceeded")
FULL_SQLSTATE = "53100"  # PostgreSQL's disk_full
CHAIN = 20  # links of an error's chain looked at (a chain that loops stops there)

ADVICE = "free space on the disk that holds the database and the broker's messages"


def full(e: BaseException) -> bool:
    """Whether `e`, or an error it was raised from or during, says the disk is full."""
    seen: BaseException | None = e
    for _ in range(CHAIN):
        if seen is None:
            return False
        if isinstance(seen, OSError) and seen.errno in FULL_ERRNOS:
            return True
        if getattr(seen, "sqlstate", None) == FULL_SQLSTATE or getattr(seen, "pgcode", None) == FULL_SQLSTATE:
            return True
        if any(words in str(seen).lower() for words in FULL_WORDS):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def reason(e: BaseException) -> str:
    """The disk-full error's own words, for a message: "No space left on device"."""
    seen: BaseException | None = e
    for _ in range(CHAIN):
        if seen is None:
            break
        if isinstance(seen, OSError) and seen.errno in FULL_ERRNOS:
            return seen.strerror or str(seen)
        seen = seen.__cause__ or seen.__context__
    return str(e)
