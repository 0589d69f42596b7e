"""Every `groupscope COMMAND` that a command's --help text mentions exists."""

from __future__ import annotations

import argparse
import re

from services.cli import build_parser


def helps(parser: argparse.ArgumentParser, path: str = "groupscope") -> dict[str, str]:
    found = {path: parser.format_help()}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.update(helps(sub, f"{path} {name}"))
    return found


def test_help_texts_name_only_commands_that_exist() -> None:
    parser = build_parser()
    texts = helps(parser)
    commands = {path.split()[1] for path in texts if " " in path}
    named = {
        (path, word)
        for path, text in texts.items()
        for word in re.findall(r"(?<![\w/.-])groupscope ([a-z][a-z-]*)\b", text)
    }
    assert {(path, word) for path, word in named if word not in commands} == set()
