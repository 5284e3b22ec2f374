"""python -m agentcore.port serve --target package.module:attribute --job FILE: the fork server."""

from __future__ import annotations

import argparse
import sys

from agentcore import jobs
from agentcore.errors import ConfigError
from agentcore.port.server import Server, load_target, serve


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m agentcore.port")
    sub = ap.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="play scenarios sent on stdin, one JSON line each")
    s.add_argument("--target", required=True, help="package.module:attribute")
    s.add_argument("--job", default="triage", help="a job file, or a built-in job's name")
    s.add_argument("--model", default="fresh-ids", help="fresh-ids (default), fixed or fickle")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--timeout", type=float, default=30.0, help="seconds per process before it is hung")
    s.add_argument("--tracker-fault", default="none", help="the tracker stand-in's fault: none, ttl:N, strict-params")
    s.add_argument("--person-faults", default="truthful", help="the person's: truthful, wrong:P, adversarial")
    args = ap.parse_args(argv)
    try:
        server = Server(
            load_target(args.target),
            jobs.load(args.job),
            model=args.model,
            seed=args.seed,
            timeout=args.timeout,
            tracker_fault=args.tracker_fault,
            person_faults=args.person_faults,
        )
    except (ValueError, ConfigError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    serve(server, args.target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
