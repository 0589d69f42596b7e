"""Reading docker-compose.yml as Compose would: YAML with Compose's merge tags, and
`${VAR:-default}` interpolation with an empty environment (the defaults)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
OWN_CLUSTER_FILE = ROOT / "docker" / "compose.own-cluster.yml"

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?[-?]([^}]*))?\}")


class ComposeLoader(yaml.SafeLoader):
    """SafeLoader that also reads Compose's `!override` and `!reset` tags."""


def _tagged(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)  # type: ignore[arg-type]


for _tag in ("!override", "!reset"):
    ComposeLoader.add_constructor(_tag, _tagged)


def interpolate(value: Any) -> Any:
    """`${VAR:-default}` -> default, recursively (no variable is set)."""
    if isinstance(value, str):
        return _VARIABLE.sub(lambda m: m.group(2) or "", value)
    if isinstance(value, list):
        return [interpolate(v) for v in value]
    if isinstance(value, dict):
        return {k: interpolate(v) for k, v in value.items()}
    return value


def load(path: Path = COMPOSE_FILE) -> dict[str, Any]:
    with open(path) as f:
        return yaml.load(f, Loader=ComposeLoader)


def command(service: dict[str, Any]) -> list[str]:
    cmd = interpolate(service.get("command", []))
    return cmd.split() if isinstance(cmd, str) else [str(c) for c in cmd]


def flag(argv: list[str], name: str) -> str:
    """The value after `name` in `argv`."""
    assert name in argv, f"{name} missing from {argv}"
    return argv[argv.index(name) + 1]


def ports(service: dict[str, Any]) -> dict[int, int]:
    """{container port: host port} of "HOST:CONTAINER" entries."""
    mapping = {}
    for entry in interpolate(service.get("ports", [])):
        host, _, container = str(entry).rpartition(":")
        mapping[int(container)] = int(host.rpartition(":")[2])
    return mapping


def mounts(service: dict[str, Any]) -> dict[str, str]:
    """{container path: source} of short-syntax volumes (source: a named volume or a
    host path as written)."""
    found = {}
    for entry in service.get("volumes", []):
        source, target = str(entry).split(":")[:2]
        found[target] = source
    return found
