"""The job's Spark settings: what the user gave, and the defaults it fills in when unset.

Spark's own precedence holds: `--conf` and `--master` of `groupscope stream` (or of
spark-submit), then `spark-defaults.conf` (in `$SPARK_CONF_DIR`, else
`$SPARK_HOME/conf`), then the defaults below. A default never replaces a setting given
anywhere else.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spark_jobs.settings import SparkSettings

# local, local[N], local[*], local[N,F], local-cluster[N,C,M], spark://h:p[,h:p], yarn,
# k8s://URL: the masters Spark 4 accepts (SparkContext.createTaskScheduler).
_MASTER = re.compile(
    r"local(\[(\*|[1-9]\d*)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]"
    r"|spark://[^/\s,]+:\d+(,[^/\s,]+:\d+)*|yarn|k8s://\S+"
)

# Settings that act only when this process starts the driver JVM (not under spark-submit).
LAUNCH_KEYS = ("spark.driver.memory", "spark.driver.extraJavaOptions")


def defaults(local: bool, settings: SparkSettings | None = None) -> dict[str, str]:
    """The settings the job fills in where nobody set them, and why:

    - shuffle partitions 4 (`GROUPSCOPE_SHUFFLE`): a batch's reduction shuffles a few
      thousand winners at most; Spark's 200 would cost 200 tasks a batch;
    - Arrow for PySpark: the batch reaches the driver with `toArrow()`;
    - the session time zone UTC: stored times do not depend on the driver's zone;
    - a hash aggregate holding 100,000 keys before it sorts (Spark: 128), one key per
      committed partition (`spark_jobs.batch`);
    - temporary checkpoints deleted (the AvailableNow check queries);
    - no console progress bar: the job prints its own progress on stderr;
    - in local mode only: no web UI (a port and start-up time saved;
      `--conf spark.ui.enabled=true` brings it back), and the driver on the loopback
      address unless `SPARK_LOCAL_IP` says otherwise, since nothing outside reaches it.
    """
    from spark_jobs.settings import current

    shuffle = current(settings).shuffle_partitions
    filled = {
        "spark.sql.shuffle.partitions": str(shuffle),
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.objectHashAggregate.sortBased.fallbackThreshold": "100000",
        "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
        "spark.ui.showConsoleProgress": "false",
    }
    if local:
        filled["spark.ui.enabled"] = "false"
        if not os.environ.get("SPARK_LOCAL_IP"):  # Spark's own variable
            filled |= {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}
    return filled


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


def check_master(master: str) -> str:
    """A master URL Spark accepts, else a one-line UsageError."""
    from services.cli import UsageError

    if not _MASTER.fullmatch(master.strip()):
        raise UsageError(
            f"--master {master!r}: expected local[N], local[*], spark://HOST:PORT, yarn "
            "or k8s://URL"
        )
    return master.strip()


def parse_conf(items: Iterable[str]) -> dict[str, str]:
    """Repeated `--conf KEY=VALUE` (Spark properties), as spark-submit takes them."""
    from services.cli import UsageError

    settings: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"--conf expects KEY=VALUE, got {item!r}")
        if not key.startswith("spark."):
            raise UsageError(f"--conf {key}: not a Spark property (they start with 'spark.')")
        settings[key] = value
    if "spark.master" in settings:
        settings["spark.master"] = check_master(settings["spark.master"])
    return settings


def spark_defaults_file() -> Path | None:
    """`spark-defaults.conf` as spark-submit finds it: $SPARK_CONF_DIR, else
    $SPARK_HOME/conf (for a pip-installed PySpark, the pyspark package's folder)."""
    conf_dir = os.environ.get("SPARK_CONF_DIR")
    if not conf_dir:
        home = os.environ.get("SPARK_HOME")
        if not home:
            from pyspark.find_spark_home import _find_spark_home

            home = _find_spark_home()
        conf_dir = str(Path(home) / "conf")
    path = Path(conf_dir) / "spark-defaults.conf"
    return path if path.is_file() else None


def read_properties(path: Path) -> dict[str, str]:
    """A Java properties file's `key value` / `key=value` lines (no continuations)."""
    settings: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", "!")):
            continue
        match = re.match(r"([^\s=:]+)\s*[\s=:]\s*(.*)", line)
        if match:
            settings[match.group(1)] = match.group(2).strip()
    return settings


def submit_args_settings(text: str) -> dict[str, str]:
    """The launch settings in PYSPARK_SUBMIT_ARGS (the arguments PySpark passes to the
    spark-submit that starts its JVM): `--conf K=V`, `--driver-memory`,
    `--driver-java-options`, `--master`, `--packages`, `--jars`, `--exclude-packages`."""
    flags = {
        "--driver-memory": "spark.driver.memory",
        "--driver-java-options": "spark.driver.extraJavaOptions",
        "--master": "spark.master",
        "--packages": "spark.jars.packages",
        "--jars": "spark.jars",
        "--exclude-packages": "spark.jars.excludes",
    }
    settings: dict[str, str] = {}
    words = shlex.split(text)
    for i, flag in enumerate(words):
        value = words[i + 1] if i + 1 < len(words) else ""
        if flag in ("--conf", "-c"):
            key, _, val = value.partition("=")
            settings[key] = val
        elif flag in flags:
            settings[flags[flag]] = value
        elif "=" in flag and flag.split("=", 1)[0] in flags:
            name, val = flag.split("=", 1)
            settings[flags[name]] = val
    return settings


def configured_before_launch(user: Mapping[str, str]) -> dict[str, str]:
    """What a JVM this process starts will have been given, before the job's defaults:
    spark-defaults.conf, PYSPARK_SUBMIT_ARGS, then the user's `--master`/`--conf`."""
    path = spark_defaults_file()
    found = read_properties(path) if path else {}
    found |= submit_args_settings(os.environ.get("PYSPARK_SUBMIT_ARGS", ""))
    return found | dict(user)
