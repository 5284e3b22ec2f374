"""The command line's progress line on stderr (agentcore.cli; manage.py sweep shows its own)."""

from __future__ import annotations

import sys
import time


class Progress:
    """A one-line progress display on stderr, shown only for work that takes over a second."""

    def __init__(self, what: str, stream: object = None, unit: str = "chunks") -> None:
        self.what, self.unit = what, unit
        self.stream = stream or sys.stderr
        self.start = time.monotonic()
        self.last = 0.0
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        elapsed = now - self.start
        tty = getattr(self.stream, "isatty", lambda: False)()
        # A terminal gets a line redrawn in place; a log gets a new line every few seconds.
        if elapsed < 1.0 or (now - self.last < (0.2 if tty else 5.0) and done < total):
            return
        self.last = now
        rate = done / elapsed
        eta = (total - done) / rate if rate else 0.0
        line = f"{self.what}: {done}/{total} {self.unit}, {elapsed:.1f} s, about {eta:.0f} s left"
        self.stream.write(f"\r{line} " if tty else line + "\n")
        self.stream.flush()
        self.shown = tty

    def close(self) -> None:
        if self.shown:
            self.stream.write("\n")
