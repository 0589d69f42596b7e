"""Spark's official Kafka connector for `--source spark-kafka`: which build, and how the
job loads it.

The connector is `org.apache.spark:spark-sql-kafka-0-10_<scala>:<version>` of the
installed PySpark's Scala and Spark versions, from Maven Central. When this process
starts the JVM, the job adds it to `spark.jars.packages` (Ivy resolves it with its
dependencies into Ivy's cache, `~/.ivy2.5.2` or `spark.jars.ivy`, never into the
repository) unless `spark.jars.packages`/`--packages` or `spark.jars`/`--jars` already
name it. Under spark-submit the JVM has started: a cluster passes `--packages` itself,
and a job without the connector ends with one line saying so.

Where Central does not serve the exact version (PySpark 4.3.0: on PyPI, while Central's
newest Spark is 4.2.0), `SUBSTITUTES` names the nearest that is served and works;
docs/operations.md says why. `python -m spark_jobs.connector` prints the coordinate;
`--fetch` resolves it into Maven's cache (`make kafka`), where Ivy finds it offline.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spark_jobs.settings import SparkSettings

GROUP = "org.apache.spark"
ARTIFACT = "spark-sql-kafka-0-10"
PROVIDER = "org.apache.spark.sql.kafka010.KafkaSourceProvider"

# Spark versions whose connector Maven Central does not serve -> the nearest that it
# does. PySpark 4.3.0 is on PyPI, but on 2026-11-25 Central had no Spark 4.3.0 artifact
# at all (`mvn dependency:get` of spark-sql-kafka-0-10_2.13:4.3.0: "Missing POM"; its
# newest Spark is 4.2.0). The 4.2.0 connector reads with Spark 4.3.0's DataSource V2
# API unchanged, and its dependencies are the jars PySpark 4.3.0 ships (kafka-clients
# 3.9.2 and commons-pool2 aside): tests/job/test_real_kafka.py runs it end to end.
SUBSTITUTES = {"4.3.0": "4.2.0"}

# Dependencies of the connector that PySpark's own jars/ already holds, at the same
# versions: left out of the Ivy resolution (about 60 MB not downloaded, no jar twice on
# the classpath).
SHIPPED = (
    "org.apache.hadoop:hadoop-client-runtime",
    "org.apache.hadoop:hadoop-client-api",
    "at.yawk.lz4:lz4-java",
    "org.xerial.snappy:snappy-java",
    "org.slf4j:slf4j-api",
    "com.google.code.findbugs:jsr305",
    "org.scala-lang.modules:scala-parallel-collections_2.13",
)


class ConnectorMissingError(RuntimeError):
    """The running Spark has no Kafka connector on its classpath."""


def installed() -> tuple[str, str]:
    """(Scala version, Spark version) of the installed PySpark, from its jar names
    (`pyspark/jars/spark-core_2.13-4.3.0.jar`)."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    for jar in sorted(jars.glob("spark-core_*.jar")):
        scala, _, version = jar.stem.removeprefix("spark-core_").partition("-")
        return scala, version
    return "2.13", pyspark.__version__  # Spark 4 is built for Scala 2.13 only


def coordinate(
    scala: str | None = None, version: str | None = None, settings: SparkSettings | None = None
) -> str:
    """The connector's Maven coordinate for a Spark version (default: the installed
    one), substituted where Central lacks it."""
    if scala is None or version is None:
        found_scala, found_version = installed()
        scala, version = scala or found_scala, version or found_version
    from spark_jobs.settings import current

    version = current(settings).spark_kafka_version or SUBSTITUTES.get(version, version)
    return f"{GROUP}:{ARTIFACT}_{scala}:{version}"


def named(settings: Mapping[str, str]) -> bool:
    """`spark.jars.packages` or `spark.jars` already names the connector."""
    return any(ARTIFACT in settings.get(key, "") for key in ("spark.jars.packages", "spark.jars"))


def with_connector(
    conf: Mapping[str, str], given: Mapping[str, str], settings: SparkSettings | None = None
) -> dict[str, str]:
    """`conf` (the user's `--conf`) plus the connector in `spark.jars.packages`, after
    whatever packages `given` (everything the JVM will be started with) already has,
    and the jars PySpark ships excluded unless `spark.jars.excludes` is set. Unchanged
    where the connector is named already."""
    out = dict(conf)
    if named(given):
        return out
    packages = given.get("spark.jars.packages", "").strip().strip(",")
    out["spark.jars.packages"] = ",".join(p for p in (packages, coordinate(settings=settings)) if p)
    if "spark.jars.excludes" not in given:
        out["spark.jars.excludes"] = ",".join(SHIPPED)
    return out


def loaded(spark: object) -> bool:
    """The session's JVM can load the connector's data source."""
    from py4j.protocol import Py4JJavaError

    jvm = spark.sparkContext._jvm  # type: ignore[attr-defined]
    try:
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName(PROVIDER, False, loader)
    except Py4JJavaError:  # a ClassNotFoundException in the JVM
        return False
    return True


def missing_message() -> str:
    return (
        "--source spark-kafka: Spark's Kafka connector is not on the classpath; give "
        f"spark-submit --packages {coordinate()} (or drop --source to use groupscope's "
        "own Kafka source)"
    )


def m2_jar(coord: str | None = None, root: Path | None = None) -> Path:
    """Where Maven's cache (`root`, default `~/.m2/repository`) keeps the connector's
    jar (`--fetch` puts it there)."""
    group, artifact, version = (coord or coordinate()).split(":")
    root = root or Path.home() / ".m2" / "repository"
    return root.joinpath(*group.split("."), artifact, version, f"{artifact}-{version}.jar")


POM = """<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.groupscope</groupId>
  <artifactId>groupscope-spark-kafka</artifactId>
  <version>0</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>{group}</groupId>
      <artifactId>{artifact}</artifactId>
      <version>{version}</version>
    </dependency>
  </dependencies>
</project>
"""


def fetch(coord: str | None = None) -> int:
    """Maven resolves the connector and its runtime dependencies into its cache, where
    Spark's Ivy finds them without the network (its first resolver is the local Maven
    repository). Through a one-dependency POM: `mvn dependency:get` would also want the
    connector's test jars."""
    import tempfile

    group, artifact, version = (coord or coordinate()).split(":")
    with tempfile.TemporaryDirectory(prefix="groupscope-connector-") as tmp:
        pom = Path(tmp) / "pom.xml"
        pom.write_text(POM.format(group=group, artifact=artifact, version=version))
        done = subprocess.run(
            ["mvn", "-q", "-B", "-f", str(pom), "dependency:resolve"], check=False
        )
    return done.returncode


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--fetch"]:
        return fetch()
    if args:
        print("usage: python -m spark_jobs.connector [--fetch]", file=sys.stderr)
        return 2
    print(coordinate())
    return 0


if __name__ == "__main__":
    sys.exit(main())
