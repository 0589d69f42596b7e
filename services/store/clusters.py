"""Clusters: one store and one exporter for the `__consumer_offsets` of several Kafka
clusters (migration 0010).

Every fact the store keeps belongs to a named cluster: the `cluster` column leads every
key and unique index that holds a group name or a source position, so the same group
name (or the same record position) on two clusters never mixes. Each cluster has its
own streaming job (`groupscope stream --cluster NAME`, its own checkpoint), writing
through a `HistoryStore` bound to that name; the query commands read one cluster
(`--cluster`, by default the only one); the exporter publishes them all, each series
with a `cluster` label.

A store from before 0010 held one cluster: the upgrade names its rows `default`
(`DEFAULT_CLUSTER`), or the name `groupscope db upgrade --cluster NAME` gives.
"""

from __future__ import annotations

import re

from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError

from services.store.errors import ClusterChoiceError, StoreUnavailableError, first_line

DEFAULT_CLUSTER = "default"
# A Prometheus label value, a Grafana variable value and part of a checkpoint's name:
# letters, digits, '.', '_' and '-', starting with a letter or digit.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")

KNOWN = text(
    """
SELECT cluster FROM groups
UNION
SELECT cluster FROM pipeline_status
ORDER BY 1
"""
)


def check_name(name: str, flag: str = "--cluster") -> str:
    """`name` if it is a valid cluster name, else `ClusterChoiceError` saying why."""
    if not _NAME.fullmatch(name):
        raise ClusterChoiceError(
            f"{flag} {name!r}: a cluster name is 1 to 63 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


def known_clusters(engine: Engine) -> list[str]:
    """The clusters the store has groups or a pipeline status of, sorted."""
    try:
        with engine.connect() as conn:
            return [name for (name,) in conn.execute(KNOWN)]
    except DBAPIError as exc:
        raise StoreUnavailableError(f"clusters not read: {first_line(exc)}") from exc


def choose(given: str | None, known: list[str]) -> str:
    """The cluster a query command reads: `given` (checked), else the only known one.

    With several known and none given, or one given that the store does not know,
    `ClusterChoiceError` lists them. With none known (an empty store), `given` or the
    default name: the answer is then "no such group" as before.
    """
    if given is not None:
        check_name(given)
        if known and given not in known:
            raise ClusterChoiceError(
                f"--cluster {given!r}: the store holds no such cluster; it holds {', '.join(known)}"
            )
        return given
    if len(known) > 1:
        raise ClusterChoiceError(
            f"the store holds {len(known)} clusters ({', '.join(known)}): give --cluster NAME"
        )
    return known[0] if known else DEFAULT_CLUSTER
