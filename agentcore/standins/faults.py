"""How the sweep's world misbehaves: the options' spellings, parsed in one place.

Rules:
- Each option is a short string, as the command line, `manage.py sweep` and the launch form take
  it; a parser here turns it into plain values or raises ConfigError with a message that lists the
  spellings. Defaults are the chapter's world: a flaky tool fails the first attempt of each changing
  call (`first`), the person is truthful, the model repeats itself (`fixed`), the tracker never
  forgets or crashes (`none`).
- Tool faults: `first`, `k:N` (the first N attempts of each changing call fail; `k:0` none),
  `always`. They apply only to a design with a flaky tool server (agentcore.durable.designs: `flaky`); the
  others' tools never fail. How the failing attempts die (half of them after the tracker accepted)
  is agentcore.standins.tools's rule; `first` is the chapter's flaky server, attempt for attempt.
- Person: `truthful`, `deny:P` (approvals denied with probability P), `wrong:P` ("did it happen?"
  answered wrong with probability P), `adversarial` (every answer wrong). Random choices are seeded
  with the configuration's `seed`: `chance` draws them from a hash of the seed and what the choice
  is about (never a stateful generator: a restarted process, or a twice scenario started from a
  noted state, must draw what a full replay draws).
- Model: `fixed` (asked again, the same reply with the same call IDs), `fresh-ids` (the same calls
  under new provider call IDs), `fickle` (seeded: other calls); agentcore.standins.model acts on it.
- Tracker fault: `none`, `crash` (agentcore.harness.trackerfault), `ttl:N` (keys forgotten after N requests),
  `strict-params` (a repeated key with other arguments is refused).
"""

from __future__ import annotations

import hashlib

from agentcore.errors import ConfigError

TOOL_FAULTS = ("first", "k:N", "always")
PERSON_FAULTS = ("truthful", "deny:P", "wrong:P", "adversarial")
MODELS = ("fixed", "fresh-ids", "fickle")
TRACKER_FAULTS = ("none", "crash", "ttl:N", "strict-params")
TRACKER_FAULT_WORDS = tuple(f for f in TRACKER_FAULTS if ":" not in f)  # the ones without a number
MAX_TOOL_FAILURES = 100
MAX_TTL = 10_000


def chance(*parts: object) -> float:
    """A number in [0, 1), the same for the same parts: e.g. chance("deny", seed, run, call_id) < P."""
    return int.from_bytes(hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()) / 2**64


def _number(spec: str, prefix: str, low: int, high: int) -> int:
    text = spec[len(prefix) :]
    if not (text.isascii() and text.isdigit()) or not low <= int(text) <= high:
        raise ConfigError(f"{spec!r}: N must be a whole number from {low} to {high}")
    return int(text)


def _probability(spec: str, prefix: str) -> float:
    try:
        p = float(spec[len(prefix) :])
    except ValueError:
        p = -1.0
    if not 0.0 <= p <= 1.0:  # NaN fails too
        raise ConfigError(f"{spec!r}: P must be a probability from 0 to 1")
    return p


def tool_failures(spec: str) -> int | None:
    """How many attempts of each changing call fail: 1 for `first`, N for `k:N`, None for `always`."""
    if spec == "first":
        return 1
    if spec == "always":
        return None
    if isinstance(spec, str) and spec.startswith("k:"):
        return _number(spec, "k:", 0, MAX_TOOL_FAILURES)
    raise ConfigError(f"unknown tool faults {spec!r} (choose from {', '.join(TOOL_FAULTS)})")


def person_faults(spec: str) -> tuple[str, float]:
    """(kind, probability): ("truthful", 0), ("deny", P), ("wrong", P) or ("adversarial", 1)."""
    if spec == "truthful":
        return "truthful", 0.0
    if spec == "adversarial":
        return "adversarial", 1.0
    for kind in ("deny", "wrong"):
        if isinstance(spec, str) and spec.startswith(kind + ":"):
            return kind, _probability(spec, kind + ":")
    raise ConfigError(f"unknown person {spec!r} (choose from {', '.join(PERSON_FAULTS)})")


def model(spec: str) -> str:
    if spec not in MODELS:
        raise ConfigError(f"unknown model {spec!r} (choose from {', '.join(MODELS)})")
    return spec


def tracker_fault(spec: str) -> tuple[str, int | None]:
    """(kind, N): ("none", None), ("crash", None), ("ttl", N) or ("strict-params", None)."""
    if spec in ("none", "crash", "strict-params"):
        return spec, None
    if isinstance(spec, str) and spec.startswith("ttl:"):
        return "ttl", _number(spec, "ttl:", 1, MAX_TTL)
    raise ConfigError(f"unknown tracker fault {spec!r} (choose from {', '.join(TRACKER_FAULTS)})")
