"""`services.cli.COMMANDS` names the module that registers each command, and running a
command imports only that module."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys

from services.cli import COMMAND_MODULES, COMMANDS, build_parser


def registered_by(module: str) -> set[str]:
    parser = argparse.ArgumentParser()
    importlib.import_module(module).register(parser.add_subparsers())
    [action] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return set(action.choices)


def test_each_command_maps_to_the_module_that_registers_it() -> None:
    for module in COMMAND_MODULES:
        assert registered_by(module) == {c for c, m in COMMANDS.items() if m == module}


def test_a_command_line_builds_its_command_and_its_siblings_only() -> None:
    [action] = [
        a for a in build_parser(["storms"])._actions if isinstance(a, argparse._SubParsersAction)
    ]
    assert set(action.choices) == {"postmortem", "owner", "storms"}
    [every] = [a for a in build_parser([])._actions if isinstance(a, argparse._SubParsersAction)]
    assert set(every.choices) == set(COMMANDS)


def test_a_query_command_does_not_import_the_job_the_assignors_or_the_simulator() -> None:
    probe = (
        "import sys\n"
        "from services.cli import main\n"
        "try:\n"
        "    main(['storms', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in ('spark_jobs.stream', 'services.assignor.api', "
        "'services.simulator.runner') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_an_unknown_command_still_lists_every_command() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "services.cli", "postmortm"], capture_output=True, text=True
    )
    assert out.returncode == 2
    assert "invalid choice: 'postmortm'" in out.stderr
    assert all(f"'{c}'" in out.stderr for c in COMMANDS)
