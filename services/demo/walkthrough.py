"""The whole system on the simulator, in one command: what `make demo` runs.

1. start PostgreSQL (the embedded server, in a data directory of its own);
2. simulate the `mixed` scenario, ending now: a healthy cooperative group, an eager
   `range` group through a rolling restart, a crash-loop storm and a KIP-848 group;
3. run the streaming job over it (Spark local mode), once;
4. start the exporter;
5. print what an operator looks at first: the storm, each rebalance's churn against
   Kafka's sticky baseline and the minimum, the storm group's timeline, and the
   metrics URL. With `--serve` the exporter stays up until Ctrl-C.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import Engine, text

STEPS = 5


class Progress:
    """Numbered steps with elapsed times on stderr."""

    def __init__(self) -> None:
        self.started = time.monotonic()

    def step(self, number: int, what: str) -> None:
        elapsed = time.monotonic() - self.started
        print(f"[{number}/{STEPS} {elapsed:5.1f}s] {what}", file=sys.stderr, flush=True)


@contextmanager
def demo_database(args: argparse.Namespace, workdir: Path) -> Iterator[str]:
    """The demo's own embedded PostgreSQL (fresh each run), or --database-url."""
    if args.database_url:
        yield args.database_url
        return
    from services.store.embedded import EmbeddedPostgres

    pgdata = workdir / "pg"
    shutil.rmtree(pgdata, ignore_errors=True)
    with EmbeddedPostgres(pgdata) as server:
        yield server.uri()


def run(args: argparse.Namespace) -> int:
    from services import shutdown
    from services.cli import UsageError

    workdir: Path = args.workdir
    progress = Progress()
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be 0-65535, got {args.port}")
    workdir.mkdir(parents=True, exist_ok=True)
    progress.step(1, "starting PostgreSQL" + ("" if args.database_url else f" in {workdir}/pg"))
    with demo_database(args, workdir) as url:
        capture = _simulate(workdir, args.seed, progress)
        if shutdown.requested():
            return 0
        _stream(capture, url, workdir, progress)
        if shutdown.requested():
            return 0
        from services.exporter.app import Exporter, ExporterConfig
        from services.store.database import create_store_engine

        engine = create_store_engine(url)
        try:
            progress.step(4, "starting the exporter")
            exporter = Exporter(ExporterConfig(host=args.host, port=args.port), engine)
            try:
                exporter.start()
            except OSError:  # the port is taken: any free one will do for a demo
                exporter = Exporter(ExporterConfig(host=args.host, port=0), engine)
                exporter.start()
            try:
                progress.step(5, "what groupscope found")
                report(engine, exporter, workdir, args)
                if args.serve:
                    print("\nServing metrics until Ctrl-C ...", file=sys.stderr, flush=True)
                    while not shutdown.wait(1.0):
                        pass
            finally:
                exporter.stop()
        finally:
            engine.dispose()
    return 0


def _simulate(workdir: Path, seed: int, progress: Progress) -> Path:
    from services.simulator import Params, ReplayDirectory, build, simulate

    capture = workdir / "capture"
    shutil.rmtree(capture, ignore_errors=True)
    specs, duration = build(["mixed"], Params(), None)
    now_ms = int(time.time() * 1000)
    progress.step(
        2,
        f"simulating the mixed scenario ({len(specs)} groups, the last "
        f"{duration // 60_000} minutes) into {capture}",
    )
    summary = simulate(
        specs,
        ReplayDirectory(capture),
        str(capture),
        duration,
        seed=seed,
        start_ms=now_ms - duration,
        label="mixed",
    )
    print(f"        {summary['records']} records of __consumer_offsets", file=sys.stderr)
    return capture


def _stream(capture: Path, url: str, workdir: Path, progress: Progress) -> None:
    from services.cli import build_parser
    from spark_jobs.stream import run as run_stream

    checkpoint = workdir / "checkpoint"
    shutil.rmtree(checkpoint, ignore_errors=True)
    progress.step(3, "running the streaming job over it (Spark local mode, until caught up)")
    args = build_parser().parse_args(
        [
            "stream",
            "--source",
            "replay",
            str(capture),
            "--once",
            "--database-url",
            url,
            "--checkpoint",
            str(checkpoint),
            "--master",
            "local[2]",
        ]
    )
    run_stream(args)


CHURN = """
SELECT r.group_name, r.from_generation, r.to_generation, r.time, r.members_joined,
    r.members_left, r.partitions_moved, r.baseline_moves, r.baseline_assignor,
    r.minimum_moves, r.disruptive, g.assignor
FROM rebalances r JOIN generations g ON g.id = r.to_generation_pk
ORDER BY r.group_name, r.time
"""


def report(engine: Engine, exporter, workdir: Path, args: argparse.Namespace) -> None:
    """Storms, churn per rebalance, the storm group's timeline, and the metrics URL."""
    from services.postmortem.queries import storms, timeline
    from services.postmortem.render import storms_text, table, timeline_text

    with engine.connect() as conn:
        found = storms(conn, None, None, timedelta(minutes=10), 5)
        churn = conn.execute(text(CHURN)).all()
        excess = {r.group_name: 0 for r in churn}
        for r in churn:
            excess[r.group_name] += r.partitions_moved - (r.baseline_moves or 0)
        # the storm that cost the most moves beyond the baseline
        stormy = max((s.group for s in found), key=lambda g: excess.get(g, 0), default=None)
        since = datetime.now(UTC) - timedelta(minutes=15)
        entries = timeline(conn, stormy, None, None) if stormy else []
    print("\nRebalance storms (5 or more disruptive rebalances within 10 minutes)")
    print(storms_text(found) if found else "  none")
    print("\nChurn of every rebalance: partitions moved, against Kafka's sticky assignor")
    rows = [
        [
            r.group_name,
            f"{r.from_generation} -> {r.to_generation}",
            r.time.astimezone().strftime("%H:%M:%S"),
            f"+{r.members_joined}/-{r.members_left}",
            r.assignor or "-",
            r.partitions_moved,
            "-" if r.baseline_moves is None else f"{r.baseline_moves} ({r.baseline_assignor})",
            "-" if r.minimum_moves is None else r.minimum_moves,
            "-" if r.baseline_moves is None else r.partitions_moved - r.baseline_moves,
            "yes" if r.disruptive else "no",
        ]
        for r in churn
    ]
    headers = ["group", "generations", "at", "members", "assignor", "moved", "baseline"]
    print(table([*headers, "minimum", "excess", "disrupts"], rows))
    print(
        "disrupts: running members lost partitions; only those rebalances count in storms\n"
        "(a group forming, members leaving a cooperative or KIP-848 group and epochs that\n"
        "move nothing do not)."
    )
    by_group: dict[str, list[int]] = {}
    for r in churn:
        if r.baseline_moves is not None:
            totals = by_group.setdefault(r.group_name, [0, 0, 0])
            totals[0] += 1
            totals[1] += r.partitions_moved
            totals[2] += r.baseline_moves
    print("\nPer group: moves above the sticky baseline are the churn a different assignor")
    print("(cooperative-sticky) or static membership (group.instance.id) would have saved.")
    print(
        table(
            ["group", "rebalances", "moved", "baseline", "excess"],
            [[g, n, moved, base, moved - base] for g, (n, moved, base) in by_group.items()],
        )
    )
    if stormy:
        recent = [e for e in entries if e.time >= since] or entries
        print(f"\nPostmortem timeline of {stormy} (groupscope postmortem {stormy})")
        print(timeline_text(stormy, recent[-8:]))
    url = exporter.metrics_url
    exposition = exporter.exposition.plain.decode()
    key = [
        line
        for line in exposition.splitlines()
        if line.startswith(("groupscope_group_storm{", "groupscope_pipeline_caught_up"))
    ]
    print(f"\nMetrics: {url} ({exporter.exposition.samples} samples), e.g.")
    print("\n".join("  " + line for line in key))
    print(
        f"\nAsk more: GROUPSCOPE_DATA_DIR={workdir} groupscope storms | postmortem GROUP | "
        "owner TOPIC PARTITION --at TIME"
    )
    if not args.serve:
        print("Run `groupscope demo --serve` to keep the exporter up for Prometheus.")
