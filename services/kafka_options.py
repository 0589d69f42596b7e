"""Kafka connection flags shared by the commands that talk to a cluster.

`--bootstrap-servers` (env GROUPSCOPE_BOOTSTRAP_SERVERS), and client properties for
SASL/SSL and the like as repeated `--kafka-config KEY=VALUE` or a Java-style
`--kafka-config-file`. Secrets never reach the logs: log `redact(config)`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from services.settings import env

SECRET_HINTS = ("password", "secret", "token", "key")


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


def kafka_config(args: argparse.Namespace) -> dict[str, str]:
    """Client properties from the file, then the flags (flags win)."""
    from services.cli import UsageError

    config: dict[str, str] = {}
    if args.kafka_config_file:
        try:
            lines = args.kafka_config_file.read_text().splitlines()
        except OSError as exc:
            raise UsageError(f"cannot read {args.kafka_config_file}: {exc.strerror}") from None
        for line in lines:
            line = line.strip()
            if line and not line.startswith(("#", "!")):
                key, sep, value = line.partition("=")
                if not sep:
                    raise UsageError(f"{args.kafka_config_file}: not KEY=VALUE: {line!r}")
                config[key.strip()] = value.strip()
    for item in args.kafka_config:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--kafka-config expects KEY=VALUE, got {item!r}")
        config[key.strip()] = value
    return config


def redact(config: dict[str, str]) -> dict[str, str]:
    """Client properties safe to log: secrets never appear in logs."""
    return {k: "***" if any(h in k.lower() for h in SECRET_HINTS) else v for k, v in config.items()}
