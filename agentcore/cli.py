"""The command line (python -m agentcore): the table, one sweep, the audit, or a key. Parses arguments, calls
the API, prints.

Rules:
- The argument definitions live here; `manage.py sweep` takes the same options of `table` and
  `sweep` (`add_sweep_commands`), and `agentcore/__main__.py` only calls `main`.
- Errors are one line on stderr and exit status 2; progress goes to stderr once a sweep has taken
  more than a second.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import agentcore as audit
import agentcore as sweep
from agentcore import CONDITIONS, MODES, AgentcoreError, BadInput, Condition, ConfigError, designs, jobs, key, report
from agentcore.limits import DEFAULT_SWEEP_DEPTH, SWEEP_DEPTHS
from agentcore.progress import Progress
from agentcore.records import check_writable

SITE = "http://127.0.0.1:8000"  # the dashboard the audit's witness links go to, unless --site says


def whole_number(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least `minimum`."""

    def check(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if n < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, not {n}")
        return n

    return check


positive = whole_number(1)
seed = whole_number(0)


def _spelled(parse: Callable[[str], object]) -> Callable[[str], str]:
    """An argparse type: the text itself, once agentcore.standins.faults' parser takes it."""

    def check(text: str) -> str:
        try:
            parse(text)
        except ConfigError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
        return text

    return check


def add_condition(s: argparse.ArgumentParser, c: Condition) -> None:
    """A condition's option, from its declaration: its choices, or its spellings (checked by its
    parser), or a whole number; its help with its default."""
    kind: dict[str, object] = (
        {"choices": c.values}
        if c.choices
        else {"type": _spelled(c.parse), "metavar": "|".join(c.spellings)}
        if c.parse
        else {"type": whole_number(c.minimum)}
    )
    s.add_argument(
        c.flag, dest=c.name, default=c.text(c.default), help=f"{c.long_help} (default {c.text(c.default)})", **kind
    )  # type: ignore[arg-type]


def option_conditions(options: Mapping[str, Any]) -> dict[str, Any]:
    """The conditions the parsed options ask for, as Config takes them (fsync on -> True)."""
    return {c.name: c.value(options[c.name]) for c in CONDITIONS}


def add_sweep_commands(
    sub: argparse._SubParsersAction, workers_default: int | None = 1, workers_help: str = "worker processes (default 1)"
) -> list[argparse.ArgumentParser]:
    """The `table` and `sweep` commands and their options (`manage.py sweep` takes the same)."""

    def common(s: argparse.ArgumentParser) -> None:
        s.add_argument("--format", choices=report.FORMATS, default="text")
        s.add_argument("--workers", type=positive, default=workers_default, help=workers_help)
        s.add_argument(
            "--depth",
            type=int,
            choices=SWEEP_DEPTHS,
            default=DEFAULT_SWEEP_DEPTH,
            help="crash once, once and again in the restart (default), or in the second restart too",
        )
        s.add_argument("--records", metavar="FILE", help="write every scenario record as JSON lines")
        for c in CONDITIONS:
            add_condition(s, c)

    t = sub.add_parser("table", help="the chapter's table: every design on the triage job")
    t.add_argument("--job", default="triage", help="a job file (default: the built-in triage job)")
    common(t)
    s = sub.add_parser("sweep", help="sweep one configuration and print its row")
    s.add_argument("--job", default="triage", help="a job file, or 'triage'")
    s.add_argument("--design", choices=list(designs.DESIGNS), help="one of agentcore's designs (or --target)")
    s.add_argument("--tracker", choices=list(MODES), help="the tracker mode of a design's sweep")
    s.add_argument("--runs", type=positive, default=1, help="job runs in sequence against one tracker")
    s.add_argument("--bug", action="append", default=[], choices=designs.BUGS, help="plant a bug (tests)")
    common(s)
    return [t, s]


def add_target_options(s: argparse.ArgumentParser, many: bool = False) -> None:
    """`--target`'s options: a user's loop instead of a design (agentcore.port); `many`: repeatable."""
    s.add_argument(
        "--target",
        metavar="MODULE:ATTR",
        action="append" if many else "store",
        help="sweep your own loop through agentcore.port instead of a design (its model asked again "
        "mints fresh call IDs unless --model says)" + ("; repeatable: a row each" if many else ""),
    )
    s.add_argument("--python", metavar="PATH", help="the interpreter the target runs in (default this one)")
    s.add_argument("--timeout", type=float, default=30.0, help="seconds per process of a target (default 30)")
    s.add_argument(
        "--samples",
        type=int,
        metavar="K",
        help="play every plan K times (seeds seed..seed+K-1) and report rates with 95%% Wilson intervals, "
        "for a runtime that is not deterministic (default: 1, exact counts, unless two uninterrupted runs "
        "meet their points in different orders or from more than one thread: then 5)",
    )


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m agentcore", description="Crash-sweep durable agent loops.")
    sub = p.add_subparsers(dest="command", required=True)
    table, one = add_sweep_commands(sub)
    add_target_options(one)
    add_target_options(table, many=True)
    for s in (table, one):
        s.add_argument(
            "--no-merge",
            dest="merge",
            action="store_false",
            help="play every scenario, never a restart from a state played before (the same "
            "records, slower: agentcore.harness.merge)",
        )
    a = sub.add_parser("audit", help="every design under every world model: one verdict each")
    a.add_argument("--job", default="triage", help="a job file, or 'triage' (default)")
    a.add_argument(
        "--design",
        action="append",
        default=[],
        metavar="D",
        help=f"a design (repeatable; default all: {', '.join(designs.DESIGNS)})",
    )
    a.add_argument("--bug", action="append", default=[], metavar="BUG", help="plant a bug in each design (tests)")
    a.add_argument(
        "--tracker",
        action="append",
        default=[],
        metavar="T",
        help=f"a tracker mode (repeatable; default all: {', '.join(MODES)})",
    )
    a.add_argument(
        "--world",
        action="append",
        default=[],
        metavar="W",
        help=f"a world model (repeatable; default all: {', '.join(w.name for w in audit.WORLDS)})",
    )
    a.add_argument("--workers", type=positive, default=1, help="worker processes (default 1)")
    a.add_argument(
        "--depth",
        type=int,
        choices=audit.AUDIT_DEPTHS,
        default=DEFAULT_SWEEP_DEPTH,
        help="crash once, or once and again (default 2)",
    )
    a.add_argument(
        "--format",
        choices=audit.AUDIT_FORMATS,
        default="text",
        help="text or json: the verdicts (a broken design's later worlds are not swept); "
        "markdown: the table of every design under every world (every cell swept)",
    )
    a.add_argument("--site", default=SITE, help=f"the dashboard the witness links go to (default {SITE})")
    add_target_options(a)
    k = sub.add_parser("key", help="the idempotency key of one call")
    k.add_argument("run_id")
    k.add_argument("call_id")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.command == "key":
            print(key(args.run_id, args.call_id))
            return 0
        if args.target:  # a user's loop through the port (imported here: `import agentcore` loads none of it)
            from agentcore.port import commands

            if args.command == "audit":
                return commands.audit(args)
            given = list(sys.argv[1:] if argv is None else argv)
            return commands.sweep(args, given, args.target if args.command == "table" else [args.target])
        if args.command == "audit":
            return _audit(args)
        if args.command == "sweep" and not (args.design and args.tracker):
            raise BadInput("sweep needs --design and --tracker, or --target")
        job = jobs.load(args.job)
        conditions = option_conditions(vars(args))
        if args.command == "table":
            configs = sweep.table_configs(job, **conditions)
        else:
            design = designs.get(args.design, tuple(args.bug))
            configs = [sweep.Config(job, design, args.tracker, runs=args.runs, **conditions)]
        if args.records:
            check_writable(args.records)
        progress = Progress("sweeping")
        try:
            result = sweep.sweep(
                configs,
                depth=args.depth,
                workers=args.workers,
                collect=bool(args.records),
                progress=progress,
                merge=args.merge,
                keep=bool(args.records),
            )
        finally:
            progress.close()
        print(
            f"{result.scenarios} scenarios, {result.explored} played (the rest merged: equal states)", file=sys.stderr
        )
        if args.records:
            with open(args.records, "w") as f:
                for rec in sweep.each_record(result):
                    f.write(json.dumps(rec.to_dict()) + "\n")
        sys.stdout.write(report.render(result.rows, args.format))
        return 0
    except (AgentcoreError, OSError) as e:  # what agentcore refuses, and a file it cannot read or write
        print(f"agentcore: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("agentcore: interrupted", file=sys.stderr)
        return 130


def _audit(args: argparse.Namespace) -> int:
    """The audit command: checks every name first (one-line errors), then audits and prints."""
    chosen = [designs.get(d, tuple(args.bug)) for d in args.design or designs.DESIGNS]
    for t in args.tracker:
        if t not in MODES:
            raise ConfigError(f"unknown tracker mode {t!r} (choose from {', '.join(MODES)})")
    worlds = [audit.world(w) for w in args.world] if args.world else list(audit.WORLDS)
    job = jobs.load(args.job)
    shown: list[Progress] = []

    def progress(world: str) -> Callable[[int, int], None]:
        if shown:
            shown[-1].close()
        shown.append(Progress(f"auditing under {world}"))
        return shown[-1]

    start = time.monotonic()
    try:
        result = audit.audit(
            job,
            chosen,
            args.tracker or MODES,
            worlds,
            args.depth,
            args.workers,
            every=args.format == "markdown",
            site=args.site,
            progress=progress,
        )
    finally:
        if shown:
            shown[-1].close()
    sys.stdout.write(audit.render_audit(result, args.format))
    print(f"audit: {result.scenarios} scenarios in {time.monotonic() - start:.1f} s", file=sys.stderr)
    return 0
