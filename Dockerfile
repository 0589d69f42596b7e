# syntax=docker/dockerfile:1
# One image for the whole groupscope stack: the streaming job (Spark 4 on Java 17), the
# exporter, the workload and every other `groupscope` command.
#
#   docker build -t groupscope .
#   docker run --rm groupscope --help                 # any groupscope command
#   docker run --rm groupscope job --source spark-kafka --bootstrap-servers b:9092 ...
#
# docker/entrypoint.sh dispatches: `job` runs spark_jobs/stream.py under spark-submit with
# Spark's Kafka connector (its Maven coordinate computed from the installed pyspark);
# anything else runs `groupscope ...`.

# Debian bookworm: its default JDK is 17 (trixie no longer ships openjdk-17).
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# --- build: the groupscope wheel, with the codec's optional C accelerator when the
# sources have one (a compiler is only needed here).
FROM ${PYTHON_IMAGE} AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml README.md ./
COPY services ./services
COPY spark_jobs ./spark_jobs
COPY migrations ./migrations
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

# --- runtime
FROM ${PYTHON_IMAGE}
# The JRE for Spark; procps because Spark's launch scripts and health checks use ps.
# (/usr/share/man/man1 must exist for the JRE's postinst on slim images.)
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
    && rm -rf /var/lib/apt/lists/*

# No SPARK_LOCAL_IP: in local mode the job binds its driver to the loopback address by
# itself; pointed at a Spark master (GROUPSCOPE_SPARK_MASTER), the executors must reach
# the driver at the container's own address.
ENV PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYSPARK_PYTHON=python

# Dependencies first (pyspark is the big one): this layer is reused until
# pyproject.toml changes, whatever happens to the sources.
COPY pyproject.toml /tmp/pyproject.toml
RUN python -c "import tomllib; deps = tomllib.load(open('/tmp/pyproject.toml', 'rb'))['project']['dependencies']; print('\n'.join(deps))" > /tmp/requirements.txt \
    && pip install --no-cache-dir -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt /tmp/pyproject.toml

COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-deps /wheels/*.whl \
    && rm -rf /wheels \
    && groupscope --version

COPY docker/entrypoint.sh /usr/local/bin/groupscope-entrypoint

# An unprivileged user; the job's checkpoint and the connector's download cache live
# in directories it owns (compose mounts named volumes there).
RUN useradd --create-home --uid 10001 groupscope \
    && mkdir -p /var/lib/groupscope/checkpoint /var/cache/groupscope/ivy \
    && chown -R groupscope /var/lib/groupscope /var/cache/groupscope
USER groupscope
WORKDIR /home/groupscope

# the exporter's /metrics
EXPOSE 9308
ENTRYPOINT ["groupscope-entrypoint"]
CMD ["--help"]
