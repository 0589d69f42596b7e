"""The exporter's clusters: each one's brokers and Kafka client properties, from the flags.

One exporter polls the log-end offsets of every cluster it is given brokers for
(`--cluster` with `--bootstrap-servers`, and each `--cluster-bootstrap NAME=SERVERS`).
A fleet's clusters rarely share credentials or trust stores, so each cluster may have
client properties of its own, layered key by key on the shared ones, later wins:

1. `--kafka-config-file`, then each `--kafka-config KEY=VALUE` (every cluster);
2. the cluster's `--cluster-kafka-config-file NAME=FILE`, then each of its
   `--cluster-kafka-config NAME:KEY=VALUE`;
3. `bootstrap.servers`: always the cluster's brokers from the flags above.

As with the shared flags, the properties file is the place for secrets (a flag's value
is visible to every user of the machine in the process list), so the file flag reads
`GROUPSCOPE_CLUSTER_KAFKA_CONFIG_FILE` (pairs separated by ';', as
`GROUPSCOPE_CLUSTER_BOOTSTRAP`) and the KEY=VALUE one, like `--kafka-config`, reads no
variable. Properties given for a cluster without brokers, a cluster's file given twice,
a file that cannot be read or a line that is not KEY=VALUE are one-line usage errors.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from services.settings import env


def add_cluster_arguments(parser: argparse.ArgumentParser) -> None:
    """--cluster, --cluster-bootstrap, --cluster-kafka-config-file and
    --cluster-kafka-config."""
    parser.add_argument(
        "--cluster",
        metavar="NAME",
        default=env("GROUPSCOPE_CLUSTER", "default"),
        help="the cluster --bootstrap-servers belongs to, as its job's --cluster names it "
        "(env GROUPSCOPE_CLUSTER; default: default)",
    )
    _pairs(
        parser,
        "--cluster-bootstrap",
        "NAME=SERVERS",
        "GROUPSCOPE_CLUSTER_BOOTSTRAP",
        "another cluster's bootstrap servers, to poll its log-end offsets for lag",
    )
    _pairs(
        parser,
        "--cluster-kafka-config-file",
        "NAME=FILE",
        "GROUPSCOPE_CLUSTER_KAFKA_CONFIG_FILE",
        "a Java-style properties file of one cluster's own client properties (SASL, SSL, "
        "...), on top of --kafka-config-file and --kafka-config; one per cluster",
    )
    parser.add_argument(
        "--cluster-kafka-config",
        action="append",
        default=[],
        metavar="NAME:KEY=VALUE",
        help="one client property of one cluster, on top of its --cluster-kafka-config-file; "
        "repeatable",
    )


def _pairs(
    parser: argparse.ArgumentParser, flag: str, metavar: str, variable: str, help: str
) -> None:
    """A repeatable NAME=... flag whose default is `variable`'s pairs, split at ';'."""
    parser.add_argument(
        flag,
        action="append",
        default=[p for p in env(variable, "").split(";") if p],
        metavar=metavar,
        help=f"{help}; repeatable (env {variable}, pairs separated by ';')",
    )


def _name(name: str, flag: str) -> str:
    from services.cli import UsageError
    from services.store.clusters import check_name
    from services.store.errors import ClusterChoiceError

    try:
        return check_name(name, flag)
    except ClusterChoiceError as exc:
        raise UsageError(str(exc)) from None


def cluster_brokers(args: argparse.Namespace) -> dict[str, str]:
    """{cluster: bootstrap servers} from --cluster with --bootstrap-servers and each
    --cluster-bootstrap; a bad pair is a one-line UsageError."""
    from services.cli import UsageError

    pairs = [("--cluster", args.cluster, args.bootstrap_servers)] if args.bootstrap_servers else []
    for pair in args.cluster_bootstrap:
        name, _, servers = pair.partition("=")
        if not servers:
            raise UsageError(f"--cluster-bootstrap expects NAME=SERVERS, not {pair!r}")
        pairs.append(("--cluster-bootstrap", name, servers))
    brokers: dict[str, str] = {}
    for flag, name, servers in pairs:
        _name(name, flag)
        if name in brokers:
            raise UsageError(f"{flag} {name}: the cluster's brokers are given twice")
        brokers[name] = servers
    return brokers


def own_configs(args: argparse.Namespace) -> dict[str, tuple[str, dict[str, str]]]:
    """{cluster: (the flag that named it first, its own client properties)}: its
    --cluster-kafka-config-file, then its --cluster-kafka-config (flags win)."""
    from services.cli import UsageError
    from services.kafka_options import property_item, read_properties

    flag = "--cluster-kafka-config-file"
    own: dict[str, tuple[str, dict[str, str]]] = {}
    for pair in args.cluster_kafka_config_file:
        name, _, path = pair.partition("=")
        if not path:
            raise UsageError(f"{flag} expects NAME=FILE, not {pair!r}")
        if _name(name, flag) in own:
            raise UsageError(f"{flag} {name}: the cluster's properties file is given twice")
        own[name] = (flag, read_properties(Path(path), f"{flag} {name}"))
    flag = "--cluster-kafka-config"
    for item in args.cluster_kafka_config:
        name, sep, entry = item.partition(":")
        if not sep:
            raise UsageError(f"{flag} expects NAME:KEY=VALUE, got {item!r}")
        key, value = property_item(entry, flag, "NAME:KEY=VALUE", item)
        own.setdefault(_name(name, flag), (flag, {}))[1][key] = value
    return own


def cluster_clients(args: argparse.Namespace, shared: dict[str, str]) -> dict[str, dict[str, str]]:
    """{cluster: its client properties} for every cluster with brokers: `shared` (the
    --kafka-config* ones), its own on top, its brokers as `bootstrap.servers`. Own
    properties of a cluster without brokers are a UsageError: they would poll nothing."""
    from services.cli import UsageError

    brokers = cluster_brokers(args)
    own = own_configs(args)
    for name, (flag, _) in own.items():
        if name not in brokers:
            raise UsageError(
                f"{flag} {name}: no brokers for cluster {name!r}; give "
                f"--cluster-bootstrap {name}=SERVERS (or --cluster {name} with "
                "--bootstrap-servers)"
            )
    return {
        name: {**shared, **own.get(name, ("", {}))[1], "bootstrap.servers": servers}
        for name, servers in brokers.items()
    }
