"""`groupscope demo`: the whole system on the simulator, or the codec on a sample."""

from __future__ import annotations

import argparse
from pathlib import Path

from services.settings import env

EPILOG = """\
what it does (about a minute; Spark's start-up is most of it):
  1. starts an embedded PostgreSQL in .groupscope/demo/pg (fresh each run)
  2. simulates the `mixed` scenario ending now: a cooperative-sticky group, a range
     group through a rolling restart, a crash-loop storm and a KIP-848 group
  3. runs the streaming job over it until caught up
  4. starts the exporter on --port
  5. prints the storm, each rebalance's churn against Kafka's sticky assignor and the
     minimum, the storm group's timeline, and the metrics URL

examples:
  groupscope demo                        # the whole system, then exit
  groupscope demo --serve                # ... and keep the exporter up for Prometheus
  groupscope demo --sample               # just decode the bundled capture (no Spark)
  groupscope demo --sample --input capture.jsonl --partitions 100

SIGTERM or Ctrl-C stops it cleanly (Spark, the exporter, the embedded PostgreSQL) and
exits 143 or 130.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    from services.store.options import add_database_url_argument

    parser = subparsers.add_parser(
        "demo",
        help="run the whole system on a simulated cluster and show what it finds",
        description="Simulate a cluster's __consumer_offsets with a rebalance storm, run "
        "the streaming job and the exporter over it, and print what an operator would "
        "look at first.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--serve", action="store_true", help="keep the exporter serving until Ctrl-C or SIGTERM"
    )
    parser.add_argument("--port", type=int, default=9308, help="exporter port (default 9308)")
    parser.add_argument("--host", default="127.0.0.1", help="exporter address (127.0.0.1)")
    parser.add_argument("--seed", type=int, default=7, help="the simulation's seed (7)")
    parser.add_argument(
        "--workdir",
        type=Path,
        default=Path(env("GROUPSCOPE_DATA_DIR", ".groupscope")) / "demo",
        help="where the demo keeps its database, capture and checkpoint (default .groupscope/demo)",
    )
    add_database_url_argument(parser)
    sample = parser.add_argument_group("codec only")
    sample.add_argument(
        "--sample", action="store_true", help="decode a capture with the codec only"
    )
    sample.add_argument("--input", type=Path, help="JSON Lines capture (default: bundled)")
    sample.add_argument("--partitions", type=int, default=50, help="offsets.topic.num.partitions")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.sample or args.input:
        from services.demo.sample import run as run_sample

        return run_sample(args)
    from services.demo.walkthrough import run as run_walkthrough
    from services.shutdown import stoppable
    from services.store.options import store_command

    return stoppable(store_command(run_walkthrough))(args)
