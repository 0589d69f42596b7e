"""Every flag of every `groupscope` subcommand, with the `GROUPSCOPE_*` variable behind it.

A flag's variable is found by what it does, not by what its help says: the parser is
built once with no `GROUPSCOPE_*` variable set, then with each candidate variable set to
marker values, and a flag whose default changes reads that variable. Building with a clean
environment also keeps the documented defaults independent of the shell that generates
them.
"""

from __future__ import annotations

import argparse
import functools
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

PREFIX = "GROUPSCOPE_"
# A value no default holds, and one that switches a boolean flag on.
MARKERS = ("docgen-marker", "1")


@dataclass(frozen=True)
class Flag:
    """One argument of one command (an option, or a positional when `options` is empty)."""

    command: str
    options: tuple[str, ...]
    dest: str
    metavar: str
    default: object
    help: str
    variables: tuple[str, ...] = ()


@dataclass(frozen=True)
class Command:
    name: str
    description: str
    flags: tuple[Flag, ...]


@contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    """os.environ without any GROUPSCOPE_* variable but `values`, restored afterwards."""
    saved = {k: v for k, v in os.environ.items() if k.startswith(PREFIX)}
    for name in saved:
        del os.environ[name]
    os.environ.update(values)
    try:
        yield
    finally:
        for name in values:
            os.environ.pop(name, None)
        os.environ.update(saved)


def _parser(values: dict[str, str]) -> argparse.ArgumentParser:
    from services.cli import build_parser

    with environment(values):
        return build_parser()


def _help(action: argparse.Action, prog: str) -> str:
    text = action.help or ""
    if "%" in text:
        text = text % {**vars(action), "prog": prog}
    return " ".join(text.split())


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> Iterator[Command]:
    flags = []
    subcommands = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            subcommands.append(action)
        elif action.help != argparse.SUPPRESS and action.dest not in ("help", "version"):
            metavar = action.metavar if isinstance(action.metavar, str) else None
            if isinstance(action.metavar, tuple):
                metavar = " ".join(action.metavar)
            flags.append(
                Flag(
                    command=" ".join(path),
                    options=tuple(action.option_strings),
                    dest=action.dest,
                    metavar=metavar or action.dest.upper(),
                    default=action.default,
                    help=_help(action, parser.prog),
                )
            )
    if path and (flags or not subcommands):
        yield Command(" ".join(path), " ".join((parser.description or "").split()), tuple(flags))
    for action in subcommands:
        for name, sub in action.choices.items():
            yield from _walk(sub, (*path, name))


def _defaults(parser: argparse.ArgumentParser) -> dict[tuple[str, str], object]:
    return {(c.name, f.dest): f.default for c in _walk(parser, ()) for f in c.flags}


def commands(candidates: Iterable[str]) -> list[Command]:
    """Every subcommand with its flags, each flag with the variables its default reads."""
    return list(_commands(tuple(sorted(set(candidates)))))


@functools.cache
def _commands(candidates: tuple[str, ...]) -> tuple[Command, ...]:
    base = list(_walk(_parser({}), ()))
    clean = _defaults(_parser({}))
    bound: dict[tuple[str, str], list[str]] = {}
    for name in candidates:
        changed = {
            key
            for marker in MARKERS
            for key, value in _defaults(_parser({name: marker})).items()
            if value != clean[key]
        }
        for key in changed:
            bound.setdefault(key, []).append(name)
    return tuple(
        Command(
            c.name,
            c.description,
            tuple(
                Flag(**{**vars(f), "variables": tuple(bound.get((c.name, f.dest), ()))})
                for f in c.flags
            ),
        )
        for c in base
    )
