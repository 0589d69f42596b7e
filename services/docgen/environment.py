"""The `GROUPSCOPE_*` variables the code reads outside a flag's default, documented here.

Most variables stand behind a flag (`services.docgen.flags` finds which). The rest are
read directly (the Spark session's settings, the docker image's entry point, the test
fixtures and the benchmarks), and each needs a line here: `tests/docs/` fails when the
code mentions a `GROUPSCOPE_*` name that is neither a flag's variable nor listed below,
and when one listed here is no longer in the code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent  # this table is no evidence of a read
ROOT = HERE.parents[1]

# Where variables are read: the product, its container files, and the developer tools.
PRODUCT = ("services", "spark_jobs", "docker", "docker-compose.yml", "Dockerfile")
DEVELOPMENT = ("benchmarks", "tests", "Makefile", ".ci")
SUFFIXES = {".py", ".sh", ".yml", ".yaml", ""}

NAME = re.compile(r"\bGROUPSCOPE_[A-Z0-9_]*[A-Z0-9]\b")


@dataclass(frozen=True)
class Variable:
    name: str
    default: str
    help: str
    development: bool = False  # read by tests or benchmarks, not by groupscope


VARIABLES: tuple[Variable, ...] = (
    Variable(
        "GROUPSCOPE_DATA_DIR",
        ".groupscope",
        "The data directory: the embedded PostgreSQL's cluster (`pg/`), the streaming "
        "job's default checkpoints (`checkpoints/`) and the demo's work directory "
        "(`demo/`).",
    ),
    Variable(
        "GROUPSCOPE_DRIVER_MEMORY",
        "2g",
        "`spark.driver.memory` when the job starts the JVM itself (any master), unless "
        "`--conf spark.driver.memory` or `spark-defaults.conf` sets it. Under "
        "`spark-submit` the submit command's `--driver-memory` applies; the docker image's "
        "entry point passes this variable there.",
    ),
    Variable(
        "GROUPSCOPE_DRIVER_JAVA_OPTIONS",
        "-XX:+UseParallelGC",
        "The driver JVM's options when the job starts the JVM itself; the "
        "class-data archive's options are appended. Ignored under `spark-submit`.",
    ),
    Variable(
        "GROUPSCOPE_NODE_PYTHON",
        "python3.11 (the packing Python's minor version)",
        "Read on each Spark node by the packed environment's `bin/python` (`groupscope "
        "package`, `make dist`): the node's interpreter that runs the executors' Python "
        "workers with the packed site-packages first.",
    ),
    Variable(
        "GROUPSCOPE_JVM_ARCHIVE",
        "the archive `make setup` builds",
        "The driver JVM's class-data-sharing archive (`spark_jobs/jvm_archive.py`): a "
        "path, or `off`. A JVM that cannot start with it is started again without.",
    ),
    Variable(
        "GROUPSCOPE_KAFKA_READER",
        "auto",
        "The Kafka source's range reader: `auto` (the native reader where it is built), "
        "`native` (fail if it is not built) or `python` (confluent-kafka's API). Read on "
        "the driver; the choice travels with each range to the executors.",
    ),
    Variable(
        "GROUPSCOPE_SPARK_KAFKA_VERSION",
        "the installed PySpark's (4.2.0 for 4.3.0)",
        "The version of Spark's Kafka connector (`spark-sql-kafka-0-10`) that "
        "`--source spark-kafka` and the docker image's entry point load. By default the "
        "installed PySpark's, or the nearest Maven Central serves where it lacks that one "
        "(`spark_jobs/connector.py`).",
    ),
    Variable(
        "GROUPSCOPE_SHUFFLE",
        "4",
        "`spark.sql.shuffle.partitions` where no setting given to the job sets it.",
    ),
    Variable(
        "GROUPSCOPE_SPARK_LOG_LEVEL",
        "WARN",
        "The Spark context's log level (`ERROR`, `WARN`, `INFO`, ...).",
    ),
    Variable(
        "GROUPSCOPE_SPARK_MASTER",
        "local[*]",
        "The Spark master (`groupscope stream --master`), and the docker image's "
        "`spark-submit --master`. Under `spark-submit` a different one is refused in one "
        "line.",
    ),
    Variable(
        "GROUPSCOPE_IVY_DIR",
        "/var/cache/groupscope/ivy",
        "The docker image's entry point: where `spark-submit` caches Spark's Kafka "
        "connector, downloaded from Maven Central on the first start.",
    ),
    Variable(
        "GROUPSCOPE_POSTGRES_PORT",
        "5432",
        "`docker compose`: the host port of the `postgres` service.",
    ),
    Variable(
        "GROUPSCOPE_TEST_DATABASE_URL",
        "the embedded PostgreSQL",
        "Tests: a maintenance database of an external PostgreSQL server to run the store "
        "tests against (e.g. `postgresql://postgres@localhost/postgres`).",
        development=True,
    ),
    Variable(
        "GROUPSCOPE_TEST_BOOTSTRAP_SERVERS",
        "a tansu broker started by the tests",
        "Tests: a running Kafka-protocol broker to use instead of tansu.",
        development=True,
    ),
    Variable(
        "GROUPSCOPE_REQUIRE_KAFKA",
        "unset",
        "Tests: set (as in CI), the tests marked `real_kafka` fail instead of skipping "
        "where Apache Kafka (`make kafka`) or Java is missing.",
        development=True,
    ),
    Variable(
        "GROUPSCOPE_REQUIRE_PROMETHEUS",
        "unset",
        "Tests: set (as in CI), the Prometheus tests fail instead of skipping where "
        "`prometheus` is not installed.",
        development=True,
    ),
    Variable(
        "GROUPSCOPE_BENCH_CLUSTER_RECORDS",
        "4000000",
        "`python -m benchmarks cluster`: offset commits in the throughput case.",
        development=True,
    ),
    Variable(
        "GROUPSCOPE_BENCH_SIZING_SCALE",
        "1",
        "`python -m benchmarks sizing`: a factor on the groups and generations written "
        "(below 1 for a quick run).",
        development=True,
    ),
    Variable(
        "GROUPSCOPE_BENCH_PRUNE_GROUPS",
        "100",
        "`python -m benchmarks prune`: groups (of 10 partitions) in the offset history "
        "and generations pruned.",
        development=True,
    ),
    Variable(
        "GROUPSCOPE_BENCH_PRUNE_DAYS",
        "8",
        "`python -m benchmarks prune`: full days of history before today; a prune with a "
        "retention of one day drops all but the last whole.",
        development=True,
    ),
    Variable(
        "GROUPSCOPE_BENCH_CASES",
        "commits,rebalances,restart,broker",
        "`python -m benchmarks stream`: the cases to run (`sources` too: the race of both "
        "Kafka sources and Burrow on Apache Kafka; `filter`: the commits with group "
        "filters; `backfill`: a backlog read as one batch).",
        development=True,
    ),
    Variable(
        "GROUPSCOPE_BENCH_SOURCES",
        "kafka,spark-kafka,burrow",
        "`python -m benchmarks stream`: the contenders of the `sources` case (the race), "
        "one after another: groupscope's Kafka sources and Burrow (`make bench-deps`).",
        development=True,
    ),
    Variable(
        "GROUPSCOPE_BENCH_KAFKA_VERSIONS",
        "the project's Kafka (4.3.1)",
        "`python -m benchmarks stream`: the Apache Kafka releases the `sources` case races "
        "on, each a broker of its own (another release than the project's is resolved "
        "with Maven); Burrow 1.2.1 reads from 3.9.1, not from Kafka 4.",
        development=True,
    ),
    Variable(
        "GROUPSCOPE_BENCH_RECORDS",
        "20000000",
        "`python -m benchmarks stream`: offset commits in the commits and broker cases; "
        "about as many simulated records (commits and group records) in the `sources` case.",
        development=True,
    ),
    Variable(
        "GROUPSCOPE_BENCH_FILES",
        "1000000",
        "`python -m benchmarks stream`: records per replay file.",
        development=True,
    ),
    Variable(
        "GROUPSCOPE_BENCH_BACKLOG",
        "4000000",
        "`python -m benchmarks stream`: records left behind for the restart case.",
        development=True,
    ),
    Variable(
        "GROUPSCOPE_BENCH_BACKFILL_MINUTES",
        "10",
        "`python -m benchmarks stream`: simulated minutes the backfill case reads as one batch.",
        development=True,
    ),
    Variable(
        "GROUPSCOPE_BENCH_COMMIT_SECONDS",
        "unset",
        "`python -m benchmarks stream`: each partition commits every N seconds of commit "
        "time (unset: commit times advance 1 ms per 1,000 records), so that a backlog "
        "batch spans minutes of offset history.",
        development=True,
    ),
    Variable(
        "GROUPSCOPE_BENCH_ASSIGNOR",
        "range,roundrobin,sticky,cooperative-sticky,uniform,server-range",
        "`python -m benchmarks assignor`: the assignors to measure (the small table and "
        "the cases at scale).",
        development=True,
    ),
    Variable(
        "GROUPSCOPE_BENCH_ASSIGNOR_SHAPE",
        "500x2000",
        "`python -m benchmarks assignor`: topics x partitions of the cases at scale.",
        development=True,
    ),
    Variable(
        "GROUPSCOPE_BENCH_GROUPS",
        "10000",
        "`python -m benchmarks exporter`: consumer groups in the store.",
        development=True,
    ),
    Variable(
        "GROUPSCOPE_BENCH_FLEET_GROUPS",
        "100000",
        "`python -m benchmarks fleet`: groups of the simulated `many-groups` fleet (a "
        "topic each) put through the job, the store, the query commands and the exporter.",
        development=True,
    ),
    Variable(
        "GROUPSCOPE_BENCH_FLEET_MINUTES",
        "2",
        "`python -m benchmarks fleet`: simulated minutes of the fleet's records.",
        development=True,
    ),
    Variable(
        "GROUPSCOPE_BENCH_DATABASE_URL",
        "the embedded PostgreSQL",
        "`python -m benchmarks store` and `exporter`: an external PostgreSQL to measure.",
        development=True,
    ),
)


def _files(roots: tuple[str, ...]) -> list[Path]:
    found: list[Path] = []
    for name in roots:
        path = ROOT / name
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            found.extend(
                p
                for p in sorted(path.rglob("*"))
                if p.is_file()
                and p.suffix in SUFFIXES
                and "__pycache__" not in p.parts
                and not p.is_relative_to(HERE)
            )
    return found


def mentioned(roots: tuple[str, ...] = PRODUCT + DEVELOPMENT) -> dict[str, list[str]]:
    """Every GROUPSCOPE_* name in the files under `roots`, with the files (repo-relative)."""
    where: dict[str, list[str]] = {}
    for path in _files(roots):
        text = path.read_text(errors="replace")
        names = set(NAME.findall(text))
        for name in names:
            where.setdefault(name, []).append(str(path.relative_to(ROOT)))
    return dict(sorted(where.items()))
