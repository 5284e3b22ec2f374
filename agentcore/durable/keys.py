"""The idempotency key of one tool call of one run.

Rules: the key is the first 16 bytes (hex) of SHA-256 over each ID prefixed by its UTF-8 byte
length in decimal and a colon. The call ID was saved with the model's reply before the call ran,
so every retry (in this process or after a restart) computes the same key; the length prefixes
keep ("a:b", "c") and ("a", "b:c") apart. Uniqueness across runs comes from the run ID, which is
never reused: providers' call IDs are not promised unique, and scripted models repeat them.
"""

from __future__ import annotations

import functools
import hashlib


@functools.lru_cache(maxsize=4096)
def key(run_id: str, call_id: str) -> str:
    h = hashlib.sha256()
    for part in (run_id, call_id):
        raw = part.encode("utf-8")
        h.update(str(len(raw)).encode("ascii"))
        h.update(b":")
        h.update(raw)
    return h.digest()[:16].hex()


def new_run_id() -> str:
    """A fresh run ID for real use; sweeps use a deterministic counter instead."""
    import uuid  # here: its import (and platform's) is a few ms that only real runs need

    return "run-" + uuid.uuid4().hex
