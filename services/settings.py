"""The one place `services/` reads a `GROUPSCOPE_*` variable.

Flags take their defaults from variables when the parser is built (`env`), so
`services.docgen.flags` still finds which flag reads which variable by building the
parser with each variable set. A call names the whole variable (`GROUPSCOPE_...`),
so `services.docgen.environment` finds every name in the code by text.

The Spark glue's own knobs are `spark_jobs.settings.SparkSettings`; the typed configs
of components (`ExporterConfig`, `WorkloadConfig`, `StreamConfig`) are built from the
parsed flags.
"""

from __future__ import annotations

import os
from typing import overload

PREFIX = "GROUPSCOPE_"


@overload
def env(name: str, default: str) -> str: ...


@overload
def env(name: str, default: None = None) -> str | None: ...


def env(name: str, default: str | None = None) -> str | None:
    """The value of the variable `name` (a `GROUPSCOPE_*` one), else `default`. An
    empty value is a value, as with `os.environ.get`."""
    if not name.startswith(PREFIX):
        raise ValueError(f"{name}: not a {PREFIX}* variable")
    return os.environ.get(name, default)
