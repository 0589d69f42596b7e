"""The `groupscope` command.

Each area of the project owns its subcommands in a `commands` module that exposes
`register(subparsers)`. Those modules import only argparse-level things at import time
and load their heavy dependencies inside the command functions, so `groupscope --help`
stays fast and one area's missing extra never breaks another's command.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

from services import __version__

COMMAND_MODULES: tuple[str, ...] = (
    "services.codec.commands",
    "services.demo.commands",
    "spark_jobs.commands",
    "services.assignor.commands",
    "services.store.commands",
    "services.postmortem.commands",
    "services.simulator.commands",
    "services.exporter.commands",
    "services.exporter.status_command",
    "services.workload.commands",
)


class UsageError(Exception):
    """Bad command-line input: printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line (where to look for help included) instead of
    the usage block and the error; its subcommands' parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="groupscope",
        description=(
            "Observability for Apache Kafka consumer groups: decode __consumer_offsets, "
            "keep every generation's members and assignment, and measure each "
            "rebalance's partition churn against Kafka's sticky assignor."
        ),
        epilog="Run 'groupscope COMMAND --help' for a command's options and examples.",
    )
    parser.add_argument("--version", action="version", version=f"groupscope {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        print(f"groupscope {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    # Run the imported module's main, so that `services.cli.UsageError` raised by the
    # commands is the class caught there (not a copy living in __main__).
    from services.cli import main as _main

    sys.exit(_main())
