# groupscope: every entry point sets up its own virtualenv first.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

# Debian packages: Prometheus (promtool too) for the rules and dashboard tests, and a C
# compiler for the codec's optional accelerator. Installed when missing and we may
# (root, or sudo without a password); otherwise those tests skip and say why.
APT_PACKAGES := prometheus:prometheus gcc:gcc
# For the benchmarks only (`make bench`; no test needs them): Burrow 1.2.1 and the
# ZooKeeper it needs, the stream benchmark's race (benchmarks/race.py).
BENCH_APT_PACKAGES := burrow:Burrow zookeeper:/usr/share/zookeeper/bin/zkServer.sh

.PHONY: setup system-deps bench-deps kafka demo test test-fast lint format docs dashboards bench dist clean

system-deps:
	@missing=""; for pair in $(APT_PACKAGES); do \
	  command -v "$${pair#*:}" >/dev/null 2>&1 || missing="$$missing $${pair%%:*}"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then sudo=""; \
	  elif sudo -n true 2>/dev/null; then sudo="sudo -n"; \
	  else echo "not installed:$$missing (apt-get install them to run every test)"; exit 0; fi; \
	  echo "installing:$$missing"; \
	  $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    $$sudo apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

bench-deps:
	@$(MAKE) --no-print-directory system-deps APT_PACKAGES="$(BENCH_APT_PACKAGES)"

$(STAMP): pyproject.toml services/codec/_speedups.c spark_jobs/_kafka_read.c
	@$(MAKE) --no-print-directory system-deps
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

# The driver JVM's class-data-sharing archive (spark_jobs/jvm_archive.py): built once,
# in about 30 s; every later start of the job saves about 3 s.
setup: $(STAMP)
	@$(BIN)/python -m spark_jobs.jvm_archive

# Apache Kafka (broker, Java clients, the coordinator's assignors and specs) from Maven
# Central into Maven's own cache, for the tests marked real_kafka (tests/kafka/pom.xml).
# The classpath goes beside the virtualenv; nothing of Kafka enters the repository.
# Without Maven or its registry the target says so, and those tests skip (or fail, where
# GROUPSCOPE_REQUIRE_KAFKA is set, as in CI).
KAFKA_CLASSPATH := $(VENV)/share/groupscope/kafka.classpath

$(KAFKA_CLASSPATH): tests/kafka/pom.xml
	@mkdir -p $(dir $@)
	@if command -v mvn >/dev/null 2>&1 && mvn -q -B -f tests/kafka/pom.xml \
	    dependency:build-classpath -Dmdep.outputFile=$(abspath $@).tmp >$(VENV)/kafka-maven.log 2>&1; \
	then mv $@.tmp $@; echo "kafka: classpath in $@"; \
	else rm -f $@.tmp; echo "kafka: not resolved (see $(VENV)/kafka-maven.log); real_kafka tests will skip"; fi

# Spark's Kafka connector for `--source spark-kafka` (spark_jobs/connector.py: the
# installed PySpark's version, or the nearest Maven Central serves), with its
# dependencies, into Maven's cache: the job's Ivy resolution takes it from there without
# the network, into Ivy's own cache (~/.ivy2.5.2). The stamp names what was fetched.
CONNECTOR_STAMP := $(VENV)/share/groupscope/spark-kafka.coordinate

$(CONNECTOR_STAMP): spark_jobs/connector.py | $(STAMP)
	@mkdir -p $(dir $@)
	@coordinate=$$($(BIN)/python -m spark_jobs.connector); \
	if command -v mvn >/dev/null 2>&1 && $(BIN)/python -m spark_jobs.connector --fetch \
	    >$(VENV)/connector-maven.log 2>&1; \
	then echo "$$coordinate" >$@; echo "kafka: Spark's connector $$coordinate in Maven's cache"; \
	else echo "kafka: $$coordinate not resolved (see $(VENV)/connector-maven.log); the spark-kafka tests will skip"; fi

kafka: $(STAMP) $(KAFKA_CLASSPATH) $(CONNECTOR_STAMP)

demo: setup
	$(BIN)/groupscope demo

# Every test, in two passes: the unit tier on two workers (it starts nothing real, so it
# parallelises cleanly), then every other tier one test at a time (Spark, brokers and
# timed outages share the two cores badly), with the slowest listed.
test: setup system-deps kafka lint
	$(BIN)/python -m pytest -m unit -n 2 -q
	$(BIN)/python -m pytest -m "not unit" --durations=30

# The quick loop (docs/testing.md, "Running them"): ruff, then only the tests marked
# `unit`, which start no Spark, PostgreSQL, broker, Prometheus or JVM, on two workers
# (pytest-xdist; CI has 2 cores). No mypy and no `setup` (the JVM archive): the unit
# tier needs neither. `make test` runs everything.
test-fast: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -m unit -q -n 2

# mypy checks services/ and spark_jobs/ as [tool.mypy] in pyproject.toml says; its cache
# (.mypy_cache) makes a run after a small change take seconds.
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: setup
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# docs/metrics.md and docs/configuration.md, generated from the code (services/docgen);
# tests/docs/ fails when the committed pages differ.
docs: setup
	$(BIN)/python -m services.docgen

# dashboards/grafana/dashboards/*.json, generated from the code (services/dashboards);
# tests/dashboards/test_generated.py fails when the committed files differ.
dashboards: setup
	$(BIN)/python -m services.dashboards

bench: setup kafka bench-deps
	$(BIN)/python -m benchmarks

# The job for a Spark cluster: groupscope's code with its C extensions and the
# executors' Python dependencies, packed for spark-submit --archives
# (docs/operations.md, "Running on a Spark cluster").
dist: setup
	$(BIN)/groupscope package --out dist/groupscope-env.tar.gz

clean:
	rm -rf $(VENV) .groupscope .pytest_cache .mypy_cache dist
