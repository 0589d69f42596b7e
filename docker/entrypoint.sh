#!/bin/sh
# Entry point of the groupscope image.
#
#   job ARGS...      the streaming job (spark_jobs/stream.py) under spark-submit, with
#                    Spark's official Kafka connector: spark-sql-kafka-0-10 for the Scala
#                    and Spark versions of the installed pyspark, fetched from Maven
#                    Central on first start and cached in $GROUPSCOPE_IVY_DIR
#   kafka-package    print that connector's Maven coordinate
#   anything else    the groupscope command: exporter ..., workload ..., db upgrade, ...
#
# Environment: GROUPSCOPE_SPARK_MASTER (default local[*]), GROUPSCOPE_DRIVER_MEMORY
# (default 2g), GROUPSCOPE_IVY_DIR (default /var/cache/groupscope/ivy), PYTHON (the
# interpreter that has pyspark and groupscope; default python).
set -eu

PYTHON=${PYTHON:-python}

kafka_package() {
    # The jar names carry both versions: pyspark/jars/spark-core_2.13-4.3.0.jar
    jars=$("$PYTHON" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')
    core=$(ls "$jars"/spark-core_*.jar 2>/dev/null | head -n 1)
    if [ -z "$core" ]; then
        echo "groupscope-entrypoint: no spark-core jar in $jars" >&2
        return 1
    fi
    name=${core##*/spark-core_}
    scala=${name%%-*}
    version=${name#*-}
    version=${version%.jar}
    echo "org.apache.spark:spark-sql-kafka-0-10_${scala}:${version}"
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
