"""A class-data-sharing archive for the local driver JVM, for a faster start-up.

Java 17 can dump the classes a run loaded (`-XX:ArchiveClassesAtExit`) and map them at
the next start (`-XX:SharedArchiveFile`) instead of loading and verifying them from
Spark's jars again, which shortens the session's start-up and its first Spark job
(docs/performance.md, "Design measurements": class-data archive).

`make setup` builds the archive once (`python -m spark_jobs.jvm_archive`) with a short
streaming query over the job's own batch reduction, in a JVM that exits cleanly. A JVM
given a truncated archive dies of SIGBUS, so the archive is written under a temporary
name, a second JVM must start with it, and only then is it renamed into place. The
archive is keyed on the Java binary and the Spark version; `GROUPSCOPE_JVM_ARCHIVE`
names another path, or `off`.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from spark_jobs.settings import SparkSettings

ENV = "GROUPSCOPE_JVM_ARCHIVE"
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"  # Spark's signed jars are skipped, loudly


def _java() -> Path | None:
    """The java that spark-submit runs: $JAVA_HOME/bin/java, else the one on PATH
    (JAVA_HOME is Java's own variable, read here as spark-submit reads it)."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def archive_path(settings: SparkSettings | None = None) -> Path | None:
    """Where this Java and this Spark keep their archive (`GROUPSCOPE_JVM_ARCHIVE`,
    `SparkSettings.jvm_archive`); None when switched off or there is no java to key it
    on."""
    from spark_jobs.settings import current

    setting = current(settings).jvm_archive
    if setting == "off":
        return None
    if setting:
        return Path(setting)
    java = _java()
    if java is None:
        return None
    import pyspark

    stat = java.stat()
    key = f"{java}|{stat.st_size}|{stat.st_mtime_ns}|{pyspark.__version__}|{sys.prefix}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return Path(sys.prefix) / "share" / "groupscope" / f"jvm-{digest}.jsa"


def archive_options(settings: SparkSettings | None = None) -> str:
    """JVM options that map the archive, or "" when there is none."""
    path = archive_path(settings)
    if path is None or not path.is_file():
        return ""
    # Should the archive still be unusable, the crash report goes to the temp directory,
    # not the working one, and `spark_session` starts the JVM again without it.
    crash = Path(tempfile.gettempdir()) / "groupscope-jvm-%p.log"
    return f"-XX:SharedArchiveFile={path} {QUIET} -XX:ErrorFile={crash}"


def _train(target: Path) -> None:
    """Run a short query like the job's in a JVM that dumps its classes to `target` at
    exit, and wait for that JVM to exit."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from services.codec import encode_key, encode_value
    from spark_jobs.batch import reduce_batch
    from spark_jobs.session import spark_session
    from spark_jobs.settings import SparkSettings
    from spark_jobs.sources import replay

    settings = replace(SparkSettings.from_environment(), jvm_archive="off")
    key = encode_key("offset_commit", {"group": "g", "topic": "t", "partition": 0})
    value = encode_value("offset_commit", 3, {"offset": 1, "commit_timestamp": 1})
    with tempfile.TemporaryDirectory(prefix="gs-jvm-archive-") as tmp:
        records = Path(tmp) / "capture" / "records"
        records.mkdir(parents=True)
        table = pa.table(
            {
                "topic": ["__consumer_offsets"] * 2,
                "partition": pa.array([0, 0], pa.int32()),
                "offset": pa.array([0, 1], pa.int64()),
                "timestamp": pa.array([0, 0], pa.timestamp("ms", tz="UTC")),
                "key": pa.array([key, b"\x00\x63x"], pa.binary()),
                "value": pa.array([value, None], pa.binary()),
            }
        )
        pq.write_table(table, records / "part-00000.parquet")
        spark = spark_session(
            "local[2]",
            app_name="groupscope-jvm-archive",
            extra_java_options=f"-XX:ArchiveClassesAtExit={target} {QUIET}",
            settings=settings,
        )

        def reduce_to_arrow(df: DataFrame, _: int) -> None:
            reduce_batch(df).toArrow()

        query = (
            replay(spark, records.parent)
            .writeStream.foreachBatch(reduce_to_arrow)
            .option("checkpointLocation", str(Path(tmp) / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        gateway = spark.sparkContext._gateway
        if gateway is None:
            raise RuntimeError("the Spark session has no JVM gateway")
        process = gateway.proc
        spark.stop()
        process.stdin.close()  # the JVM exits when its stdin closes, and dumps then
        process.wait(300)


def _check() -> None:
    """Start a session with the archive that `GROUPSCOPE_JVM_ARCHIVE` names, run a job."""
    from spark_jobs.session import spark_session

    spark = spark_session("local[1]", app_name="groupscope-jvm-archive-check")
    assert spark.range(3).count() == 3
    spark.stop()


def build(target: Path) -> bool:
    """Build the archive at `target`: dump, check, rename. False (and nothing left
    behind) when Java could not dump it or a JVM could not start with it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    try:
        for step in ("--train", "--check"):
            env = {**os.environ, ENV: str(partial)}
            done = subprocess.run(
                [sys.executable, "-m", "spark_jobs.jvm_archive", step, str(partial)],
                env=env,
                capture_output=True,
                text=True,
            )
            if done.returncode or not partial.is_file():
                print(f"jvm archive: {step[2:]} failed: {done.stderr[-1500:]}", file=sys.stderr)
                return False
        os.replace(partial, target)
        return True
    finally:
        partial.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "--train":
        _train(Path(args[1]))
        return 0
    if args and args[0] == "--check":
        _check()
        return 0
    target = archive_path()
    if target is None:
        print("jvm archive: off, or no java found", file=sys.stderr)
        return 0
    if target.is_file():
        return 0
    print(f"jvm archive: building {target} ...", file=sys.stderr, flush=True)
    try:
        built = build(target)
    except OSError as exc:  # a read-only install, a full disk: run without
        print(f"jvm archive: {exc}", file=sys.stderr)
        built = False
    print(
        f"jvm archive: {'built' if built else 'not built; the job runs without it'}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
