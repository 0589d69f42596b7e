"""Kafka connection flags shared by the commands that talk to a cluster.

`--bootstrap-servers` (env GROUPSCOPE_BOOTSTRAP_SERVERS), and client properties for
SASL/SSL and the like as repeated `--kafka-config KEY=VALUE` or a Java-style
`--kafka-config-file`. Secrets never reach the logs: log `redact(config)`. The
exporter's per-cluster properties (services/exporter/clusters.py) use the same parsers.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from services.settings import env

# Property names that hold a secret contain one of these: passwords, keys and tokens,
# and the Java client's `sasl.jaas.config`, whose login module carries the password
# (`--source spark-kafka` passes Java properties).
SECRET_HINTS = ("password", "secret", "token", "key", "jaas")


def add_kafka_arguments(parser: argparse.ArgumentParser, purpose: str = "") -> None:
    """--bootstrap-servers, --kafka-config and --kafka-config-file."""
    parser.add_argument(
        "--bootstrap-servers",
        default=env("GROUPSCOPE_BOOTSTRAP_SERVERS"),
        help=f"Kafka bootstrap servers{purpose} (env GROUPSCOPE_BOOTSTRAP_SERVERS)",
    )
    parser.add_argument(
        "--kafka-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a librdkafka/Kafka client property (SASL, SSL, ...); repeatable",
    )
    parser.add_argument(
        "--kafka-config-file",
        type=Path,
        metavar="FILE",
        help="a Java-style properties file of client properties",
    )


def read_properties(path: Path, flag: str) -> dict[str, str]:
    """The KEY=VALUE lines of a Java-style properties file (blank lines and '#' or '!'
    comments skipped); an unreadable file or another line is a one-line UsageError that
    starts with `flag`."""
    from services.cli import UsageError

    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise UsageError(f"{flag}: cannot read {path}: {exc.strerror}") from None
    config: dict[str, str] = {}
    for line in lines:
        line = line.strip()
        if line and not line.startswith(("#", "!")):
            key, sep, value = line.partition("=")
            if not sep:
                raise UsageError(f"{flag}: {path}: not KEY=VALUE: {line!r}")
            config[key.strip()] = value.strip()
    return config


def property_item(
    item: str, flag: str, form: str = "KEY=VALUE", given: str | None = None
) -> tuple[str, str]:
    """(key, value) of a flag's `KEY=VALUE`; otherwise a UsageError saying the flag
    expects `form` and quoting `given` (the flag's whole value, by default `item`)."""
    from services.cli import UsageError

    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise UsageError(f"{flag} expects {form}, got {item if given is None else given!r}")
    return key.strip(), value


def kafka_config(args: argparse.Namespace) -> dict[str, str]:
    """Client properties from the file, then the flags (flags win)."""
    config: dict[str, str] = {}
    if args.kafka_config_file:
        config |= read_properties(args.kafka_config_file, "--kafka-config-file")
    for item in args.kafka_config:
        key, value = property_item(item, "--kafka-config")
        config[key] = value
    return config


def redact(config: dict[str, str]) -> dict[str, str]:
    """Client properties safe to log: secrets never appear in logs."""
    return {k: "***" if any(h in k.lower() for h in SECRET_HINTS) else v for k, v in config.items()}
