#!/bin/sh
# Entry point of the groupscope image.
#
#   job ARGS...      the streaming job (spark_jobs/stream.py) under spark-submit, with
#                    Spark's official Kafka connector: spark-sql-kafka-0-10 for the Scala
#                    and Spark versions of the installed pyspark (or the nearest Maven
#                    Central serves), fetched on first start and cached in
#                    $GROUPSCOPE_IVY_DIR
#   kafka-package    print that connector's Maven coordinate
#   anything else    the groupscope command: exporter ..., workload ..., db upgrade, ...
#
# Environment: GROUPSCOPE_SPARK_MASTER (default local[*]), GROUPSCOPE_DRIVER_MEMORY
# (default 2g), GROUPSCOPE_IVY_DIR (default /var/cache/groupscope/ivy), PYTHON (the
# interpreter that has pyspark and groupscope; default python).
set -eu

PYTHON=${PYTHON:-python}

kafka_package() {
    # spark-sql-kafka-0-10 of the installed pyspark's Scala and Spark versions, or the
    # nearest Maven Central serves (spark_jobs/connector.py says which and why)
    "$PYTHON" -m spark_jobs.connector
}

case "${1:-}" in
    job)
        shift
        package=$(kafka_package)
        script=$("$PYTHON" -c 'import spark_jobs.stream as s; print(s.__file__)')
        echo "groupscope-entrypoint: spark-submit --packages $package $script" >&2
        exec spark-submit \
            --master "${GROUPSCOPE_SPARK_MASTER:-local[*]}" \
            --driver-memory "${GROUPSCOPE_DRIVER_MEMORY:-2g}" \
            --packages "$package" \
            --conf "spark.jars.ivy=${GROUPSCOPE_IVY_DIR:-/var/cache/groupscope/ivy}" \
            "$script" "$@"
        ;;
    kafka-package)
        kafka_package
        ;;
    "")
        exec groupscope --help
        ;;
    *)
        exec groupscope "$@"
        ;;
esac
