"""The Spark session for the job: local mode by default, any cluster via spark-submit.

The job takes the master, deploy mode, memory, addresses and every other setting it is
given (spark-submit's flags, `spark-defaults.conf`, `--master` and `--conf` of
`groupscope stream`), and fills in only what is unset: `spark_conf.defaults`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pyspark import SparkConf, SparkContext
from pyspark.errors import PySparkRuntimeError
from pyspark.sql import SparkSession

from spark_jobs.settings import SparkSettings, current
from spark_jobs.spark_conf import configured_before_launch, defaults, is_local


class SubmittedMasterError(ValueError):
    """`--master` of the job disagrees with the master spark-submit was given."""


def java_options(archive: bool = True, settings: SparkSettings | None = None) -> str:
    """The driver JVM's options (in local mode the executors share it), with the
    class-data-sharing archive where `make setup` built one (`spark_jobs.jvm_archive`).
    They apply only when this process starts the JVM, not under spark-submit."""
    from spark_jobs.jvm_archive import archive_options

    settings = current(settings)
    options = settings.driver_java_options
    return f"{options} {archive_options(settings)}".strip() if archive else options


def under_spark_submit() -> bool:
    """spark-submit started this process and its JVM already runs (PySpark connects to
    it through the port spark-submit passes down; PySpark's own variable)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def _launch(
    user: Mapping[str, str], app_name: str, extra_java_options: str, knobs: SparkSettings
) -> None:
    """Start the driver JVM with the user's settings and the job's defaults where nobody
    set them: given at the start, since PySpark's launcher would otherwise set some of
    them itself (the app name `pyspark-shell`, a console progress bar), and the driver's
    memory and Java options act only then. A JVM that cannot start with the
    class-data-sharing archive is started again without."""
    given = configured_before_launch(user)
    fill = _fill(given.get("spark.master", "local[*]"), app_name, knobs)
    fill["spark.driver.memory"] = knobs.driver_memory
    settings = {k: v for k, v in fill.items() if k not in given} | dict(user)

    def options(archive: bool) -> str:
        base = given.get("spark.driver.extraJavaOptions") or java_options(archive, knobs)
        return f"{base} {extra_java_options}".strip()

    settings["spark.driver.extraJavaOptions"] = options(archive=True)
    try:
        SparkContext._ensure_initialized(
            conf=SparkConf(loadDefaults=False).setAll(list(settings.items()))
        )
    except PySparkRuntimeError as exc:
        if "SharedArchiveFile" not in settings["spark.driver.extraJavaOptions"]:
            raise
        print(
            f"JVM start-up failed with the class-data archive, retrying without: {exc}",
            file=sys.stderr,
        )
        settings["spark.driver.extraJavaOptions"] = options(archive=False)
        SparkContext._ensure_initialized(
            conf=SparkConf(loadDefaults=False).setAll(list(settings.items()))
        )


def _fill(master: str, app_name: str, settings: SparkSettings) -> dict[str, str]:
    return {"spark.master": master, "spark.app.name": app_name} | defaults(
        is_local(master), settings
    )


def spark_settings(
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    app_name: str = "groupscope",
    extra_java_options: str = "",
    settings: SparkSettings | None = None,
) -> dict[str, str]:
    """Every setting the session is created with: what the running (or newly started)
    driver JVM was given, then `conf` and `master`, then the job's defaults where unset.

    Under spark-submit `master`, when given, must be spark-submit's: the JVM, its
    deploy mode and its addresses are spark-submit's already. `settings`: the
    `GROUPSCOPE_*` knobs (default: read from the environment now).
    """
    settings = current(settings)
    user = dict(conf or {})
    if master:
        user["spark.master"] = master
    if under_spark_submit():
        SparkContext._ensure_initialized()
        submitted = SparkConf().get("spark.master")
        if "spark.master" in user and submitted and user["spark.master"] != submitted:
            raise SubmittedMasterError(
                f"--master {user['spark.master']} disagrees with spark-submit's "
                f"--master {submitted}: give the master to spark-submit only"
            )
    elif SparkContext._gateway is None:
        _launch(user, app_name, extra_java_options, settings)
    given = dict(SparkConf().getAll()) | user  # the JVM's: spark-defaults.conf, --conf
    fill = _fill(given.get("spark.master", "local[*]"), app_name, settings)
    return {k: v for k, v in fill.items() if k not in given} | user


def spark_session(
    master: str | None = None,
    app_name: str = "groupscope",
    extra_java_options: str = "",
    conf: Mapping[str, str] | None = None,
    settings: SparkSettings | None = None,
) -> SparkSession:
    """Get or create the session with `spark_settings`.

    Python workers run `spark.pyspark.python` where it is set, else $PYSPARK_PYTHON,
    else this interpreter (with pyarrow and the project installed), not the system
    Python, whose workers time out (docs/architecture.md, "The Kafka source"). On a
    cluster, a packed environment (`make dist`) passed with `--archives` is named this
    way.
    """
    knobs = current(settings)
    chosen = spark_settings(master, conf, app_name, extra_java_options, knobs)
    python = chosen.get("spark.pyspark.python") or SparkConf().get("spark.pyspark.python")
    if python:
        os.environ["PYSPARK_PYTHON"] = python
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder
    for key, value in chosen.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(knobs.log_level)
    return session
