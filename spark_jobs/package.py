"""`groupscope package` (`make dist`): the job's code and its executors' Python
dependencies, packed for spark-submit's `--archives`, as PySpark documents for packed
environments ("Python Package Management": venv-pack / conda-pack):

    spark-submit --archives groupscope-env.tar.gz#environment \\
        --conf spark.pyspark.python=./environment/bin/python ...

Spark unpacks the archive in each executor's working directory. `bin/python` runs the
node's own `pythonX.Y` (the same minor version as this one: compiled modules are built
for it) with the packed `site-packages` first on its path; PySpark itself comes from the
node's Spark, which puts its `pyspark.zip` on the workers' path. Packed: groupscope's
packages (with the C extensions built here, `_speedups` and `_kafka_read`), and the
distributions the executors import, with their requirements: pyarrow, pandas, numpy,
confluent-kafka, at the versions installed here. An executor that cannot load a C
extension falls back to the pure-Python code and logs it once (`range_reader`).
"""

from __future__ import annotations

import argparse
import importlib.metadata as metadata
import io
import re
import sys
import sysconfig
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

# What the executors import: the Kafka source's Arrow batches and consumer, and what
# PySpark's Arrow code loads beside them. PySpark and py4j come from the node's Spark.
EXECUTOR_DISTRIBUTIONS = ("pyarrow", "pandas", "numpy", "confluent-kafka")
FROM_SPARK = {"pyspark", "py4j"}
PROJECT_PACKAGES = ("services", "spark_jobs")
SKIPPED_DIRS = {"__pycache__", "tests", "include"}
DEFAULT_OUT = Path("dist/groupscope-env.tar.gz")


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(names: tuple[str, ...]) -> list[metadata.Distribution]:
    """The installed distributions `names` need, their requirements included (extras
    left out; one whose environment marker excludes it here is not installed, and
    skipped), without PySpark's own."""
    found: dict[str, metadata.Distribution] = {}
    todo = [(name, "") for name in names]
    while todo:
        name, marker = todo.pop()
        name = _canonical(name)
        if name in found or name in FROM_SPARK:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            if marker:
                continue
            raise
        found[name] = dist
        for text in dist.requires or []:
            requirement, _, condition = text.partition(";")
            if "extra" not in condition:
                todo.append((re.split(r"[\s\[<>=!~(]", requirement.strip())[0], condition))
    return sorted(found.values(), key=lambda d: _canonical(d.metadata["Name"]))


def _distribution_files(dist: metadata.Distribution) -> Iterator[tuple[Path, str]]:
    """(file on disk, path under site-packages) of one installed distribution."""
    for entry in dist.files or []:
        parts = Path(entry).parts
        if not parts or parts[0] == ".." or SKIPPED_DIRS.intersection(parts[:-1]):
            continue
        source = Path(str(dist.locate_file(entry)))  # a pathlib.Path for files on disk
        if source.is_file():
            yield source, str(entry)


def _project_files() -> Iterator[tuple[Path, str]]:
    """groupscope's modules and the C extensions built for this interpreter, from where
    they are imported (a source tree after `make setup`, or site-packages)."""
    import services

    root = Path(services.__file__).resolve().parent.parent
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    for package in PROJECT_PACKAGES:
        for source in sorted((root / package).rglob("*")):
            relative = source.relative_to(root)
            if SKIPPED_DIRS.intersection(relative.parts[:-1]) or not source.is_file():
                continue
            if source.suffix == ".py" or source.name.endswith(suffix):
                yield source, str(relative)


def launcher(version: str) -> str:
    """`bin/python`: the node's pythonX.Y with the packed packages first on its path."""
    return f"""#!/bin/sh
# groupscope's packed environment (groupscope package): this node's Python {version}
# with the packed site-packages first; PySpark comes from the node's Spark.
here=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH="$here/site-packages${{PYTHONPATH:+:$PYTHONPATH}}"
exec "${{GROUPSCOPE_NODE_PYTHON:-python{version}}}" "$@"
"""


def build(out: Path, compresslevel: int = 1) -> dict[str, int]:
    """Write the archive to `out` (through a temporary name); what it holds, counted.
    gzip's fastest level: 3x faster than its default, for an archive a fifth larger
    that each executor fetches once."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    counts = {"files": 0, "bytes": 0, "distributions": 0}
    with tarfile.open(partial, "w:gz", compresslevel=compresslevel) as tar:
        script = launcher(version).encode()
        info = tarfile.TarInfo("bin/python")
        info.size, info.mode, info.mtime = len(script), 0o755, int(time.time())
        tar.addfile(info, io.BytesIO(script))
        dists = closure(EXECUTOR_DISTRIBUTIONS)
        counts["distributions"] = len(dists)
        sources = [f for d in dists for f in _distribution_files(d)]
        for source, name in [*sources, *_project_files()]:
            tar.add(source, arcname=f"site-packages/{name}", recursive=False)
            counts["files"] += 1
            counts["bytes"] += source.stat().st_size
    partial.replace(out)
    return counts


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "package",
        help="pack the job and its executors' Python dependencies for spark-submit --archives",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help=f"the archive to write (default: {DEFAULT_OUT})",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from services.cli import UsageError

    started = time.monotonic()
    try:
        counts = build(args.out)
    except OSError as exc:
        raise UsageError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    except metadata.PackageNotFoundError as exc:
        raise UsageError(f"not installed here, cannot pack it: {exc}") from None
    size = args.out.stat().st_size
    print(
        f"{args.out}: {counts['distributions']} distributions and groupscope, "
        f"{counts['files']} files, {counts['bytes'] / 2**20:.0f} MiB unpacked, "
        f"{size / 2**20:.0f} MiB packed, in {time.monotonic() - started:.1f} s",
        file=sys.stderr,
    )
    return 0
