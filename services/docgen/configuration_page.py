"""`docs/configuration.md`: every flag and `GROUPSCOPE_*` variable, from the code."""

from __future__ import annotations

from pathlib import PurePath

from services.docgen import environment, flags

HEADER = """\
# Configuration

<!-- Generated from the command line's registry (services/cli.py) and
     services/docgen/environment.py by `make docs`; do not edit. -->

For whoever deploys groupscope: every flag of every command, the `GROUPSCOPE_*`
variable that sets its default, and every other `GROUPSCOPE_*` variable the code reads.
A flag given on the command line wins over its variable. Bad values, from a flag or a
variable, get one line and exit status 2. `groupscope COMMAND --help` prints the same
help with examples. `spark-submit spark_jobs/stream.py` takes the flags of
`groupscope stream`.

Kafka client properties (SASL, SSL, timeouts) pass through `--kafka-config KEY=VALUE`
or a Java-style `--kafka-config-file`; properties whose names contain password, secret,
token or key are masked in logs.
"""


def cell(text: str) -> str:
    return text.replace("|", "\\|")


def default_text(value: object) -> str:
    if value is None or value == [] or value is False:
        return ""
    if value is True:
        return "on"
    if isinstance(value, PurePath):
        value = str(value)
    return f"`{value}`"


def flag_name(flag: flags.Flag) -> str:
    if not flag.options:
        return f"`{flag.metavar}` (argument)"
    takes_value = flag.default is not False and flag.default is not True
    suffix = f" {flag.metavar}" if takes_value else ""
    return " / ".join(f"`{o}{suffix}`" for o in flag.options)


def command_section(command: flags.Command) -> str:
    lines = [
        f"\n## `groupscope {command.name}`\n",
        f"\n{command.description}\n" if command.description else "",
    ]
    if not command.flags:
        return "".join([*lines, "\nNo flags.\n"])
    lines.append("\n| flag | variable | default | help |\n|---|---|---|---|\n")
    for f in command.flags:
        variables = ", ".join(f"`{v}`" for v in f.variables)
        lines.append(
            f"| {flag_name(f)} | {variables} | {cell(default_text(f.default))} | {cell(f.help)} |\n"
        )
    return "".join(lines)


def variables_section(
    title: str, intro: str, variables: list[environment.Variable], roots: tuple[str, ...]
) -> str:
    where = environment.mentioned(roots)
    lines = [f"\n## {title}\n\n{intro}\n\n| variable | default | read in | what it does |\n"]
    lines.append("|---|---|---|---|\n")
    for v in variables:
        files = ", ".join(f"`{p}`" for p in where.get(v.name, []))
        default = v.default if " " in v.default else f"`{v.default}`"  # prose or a value
        lines.append(f"| `{v.name}` | {cell(default)} | {files} | {cell(v.help)} |\n")
    return "".join(lines)


def render() -> str:
    commands = flags.commands(environment.mentioned())
    product = [v for v in environment.VARIABLES if not v.development]
    development = [v for v in environment.VARIABLES if v.development]
    return (
        HEADER
        + "".join(command_section(c) for c in commands)
        + variables_section(
            "Variables read outside the command line",
            "Read by the streaming job's Spark session, the data directory, and the "
            "container files. (`GROUPSCOPE_SPARK_MASTER` also sets `stream --master`.)",
            product,
            environment.PRODUCT,
        )
        + variables_section(
            "Variables for tests and benchmarks",
            "Read by `tests/` and `benchmarks/`, never by groupscope itself.",
            development,
            environment.PRODUCT + environment.DEVELOPMENT,
        )
    )
