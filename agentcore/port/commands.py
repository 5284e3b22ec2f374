"""The command line's target commands (agentcore.cli parses, these run): `sweep --target`, `table
--target ... --target ...` (a row per target, under the same conditions) and `audit --target`.

Rules:
- A target takes the conditions agentcore.conditions.TARGET_TAKES names; a flag of another, or a
  design's option (--design, --tracker, --bug, --runs), is refused, never ignored.
- Its model is "fresh-ids", a real provider's, unless --model is given on the command line.
- A row of a target that is not deterministic, or played in passes, is marked "[sampled, k=K]" and
  followed by its rates with their Wilson intervals: never an exact count.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable

from agentcore import CONDITIONS, BadInput, jobs, report
from agentcore.checker.worlds import WORLDS, world
from agentcore.conditions import TARGET_TAKES
from agentcore.port.audit import audit_target, render
from agentcore.port.sampled import summary
from agentcore.port.sweep import runtime_of, sweep_target
from agentcore.progress import Progress
from agentcore.records import check_writable, table_row


def _refused(args: argparse.Namespace) -> None:
    unusable = [c.flag for c in CONDITIONS if c.name not in TARGET_TAKES and getattr(args, c.name) != c.text(c.default)]
    design = getattr(args, "design", None)
    given = (
        ["--design"] * bool(design)
        + ["--tracker"] * bool(getattr(args, "tracker", None))
        + ["--bug"] * bool(getattr(args, "bug", None))
        + ["--runs"] * (getattr(args, "runs", 1) != 1)
        + unusable
    )
    if given:
        raise BadInput(
            f"--target takes none of {', '.join(given)} (a target's sweep has the panic crash model and the "
            "chapter's world but for the model, its seed, the tracker's fault and the person's)"
        )


def sweep(args: argparse.Namespace, argv: list[str], targets: list[str]) -> int:
    """`sweep --target T` (one) or `table --target A --target B` (a row each)."""
    _refused(args)
    if args.records:
        check_writable(args.records)
    model = args.model if any(a == "--model" or a.startswith("--model=") for a in argv) else "fresh-ids"
    job = jobs.load(args.job)
    rows, notes, records = [], [], []
    for target in targets:
        progress = Progress(f"sweeping {target}" if len(targets) > 1 else "sweeping", unit="scenarios")
        try:
            result = sweep_target(
                target,
                job,
                args.job,
                depth=args.depth,
                workers=args.workers,
                python=args.python,
                model=model,
                seed=int(args.seed),
                timeout=args.timeout,
                samples=args.samples,
                progress=progress,
                tracker_fault=args.tracker_fault,
                person_faults=args.person_faults,
            )
        finally:
            progress.close()
        print(
            (f"{target}: " if len(targets) > 1 else "")
            + f"{len(result.records)} scenarios over {len(result.labels)} points; model {model}; "
            f"children's network: {result.hello['network']}; Python {result.hello['python']}; runtime: "
            f"{runtime_of(result.hello.get('versions', {}))}",
            file=sys.stderr,
        )
        records += result.records
        sampled = result.samples > 1 or not result.ordered
        name = f"{target} [sampled, k={result.samples}]" if sampled else target
        rows.append(table_row(name, result.records))
        if sampled:
            notes.append((f"{target}: " if len(targets) > 1 else "") + summary(result.records, result.samples))
    if args.records:
        with open(args.records, "w") as f:
            f.writelines(json.dumps(rec.to_dict()) + "\n" for rec in records)
    sys.stdout.write(report.render(rows, args.format))
    for note in notes:
        print(note, file=sys.stdout if args.format == "text" else sys.stderr)
    return 0


def audit(args: argparse.Namespace) -> int:
    """`audit --target T`: the target under every world that applies (agentcore.port.audit)."""
    if args.design or args.tracker or args.bug or args.format == "markdown":
        raise BadInput("audit --target takes no --design, --tracker, --bug or --format markdown")
    worlds = tuple(world(w) for w in args.world) if args.world else WORLDS
    shown: list[Progress] = []

    def progress(name: str) -> Callable[[int, int], None]:
        if shown:
            shown[-1].close()
        shown.append(Progress(f"auditing under {name}", unit="scenarios"))
        return shown[-1]

    start = time.monotonic()
    try:
        result = audit_target(
            args.target,
            jobs.load(args.job),
            args.job,
            worlds=worlds,
            depth=args.depth,
            progress=progress,
            workers=args.workers,
            python=args.python,
            timeout=args.timeout,
            samples=args.samples,
        )
    finally:
        if shown:
            shown[-1].close()
    sys.stdout.write(render(result, args.format))
    played = sum(len(r.sweep.records) for r in result.rows)
    print(f"audit: {played} scenarios in {time.monotonic() - start:.1f} s", file=sys.stderr)
    return 0
