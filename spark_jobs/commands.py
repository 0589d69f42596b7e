"""`groupscope stream`: the streaming job; `groupscope package`: the job for a cluster."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    from spark_jobs.stream import EPILOG, add_arguments

    parser = subparsers.add_parser(
        "stream",
        help="run the streaming job: __consumer_offsets -> history store",
        description="Read __consumer_offsets (or a replay directory) with Spark Structured "
        "Streaming, and record every generation, rebalance (with churn against Kafka's "
        "sticky assignor) and committed offset in the history store. Locally it runs Spark "
        "in local mode with the embedded PostgreSQL unless --database-url is given.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    parser.set_defaults(func=run)
    from spark_jobs import package

    package.register(subparsers)


def run(args: argparse.Namespace) -> int:
    from services.shutdown import stoppable
    from services.store.options import store_command
    from spark_jobs.stream import run as run_stream

    return stoppable(store_command(run_stream))(args)
