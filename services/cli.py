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

# The module that registers each command. Running a command imports only its own module:
# registering every one imports what their options need (the job's Spark settings, the
# assignors, the simulator), 0.1-0.3 s that a query command would pay on every call.
# tests/test_cli.py checks this against what each module registers.
COMMANDS: dict[str, str] = {
    "decode": "services.codec.commands",
    "partition-for": "services.codec.commands",
    "demo": "services.demo.commands",
    "stream": "spark_jobs.commands",
    "package": "spark_jobs.commands",
    "assign": "services.assignor.commands",
    "whatif": "services.assignor.commands",
    "db": "services.store.commands",
    "postmortem": "services.postmortem.commands",
    "owner": "services.postmortem.commands",
    "storms": "services.postmortem.commands",
    "simulate": "services.simulator.commands",
    "exporter": "services.exporter.commands",
    "lag-status": "services.exporter.status_command",
    "workload": "services.workload.commands",
}
COMMAND_MODULES: tuple[str, ...] = tuple(dict.fromkeys(COMMANDS.values()))


class UsageError(Exception):
    """Bad command-line input: printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line (where to look for help included) instead of
    the usage block and the error; its subcommands' parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see '{self.prog} --help')\n")


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The whole command line; with `argv` that names a command first, only that
    command's module is registered (its parser and its siblings')."""
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
    first = argv[0] if argv else None
    for name in (COMMANDS[first],) if first in COMMANDS else COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv)
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
