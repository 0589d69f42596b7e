"""docker-compose.yml, checked for structure (no Docker engine runs here): services,
pinned official images, ports, health checks, dependencies, volumes, and every mounted
host path present in the repository."""

from __future__ import annotations

import re

import pytest
import yaml

from services.cli import build_parser
from tests.compose.stack import (
    OWN_CLUSTER_FILE,
    ROOT,
    command,
    flag,
    interpolate,
    load,
    mounts,
    ports,
)
from tests.kafka.version import kafka_version

STORE_URL = "postgresql://groupscope:groupscope@postgres:5432/groupscope"
OFFICIAL_IMAGES = {
    "kafka": "apache/kafka",
    "postgres": "postgres",
    "prometheus": "prom/prometheus",
    "grafana": "grafana/grafana",
}
OURS = ("migrate", "job", "exporter", "workload")
ONE_SHOT = ("migrate",)
PINNED_TAG = re.compile(r"^v?\d+\.\d+(\.\d+)?$")  # PostgreSQL: MAJOR.MINOR is exact


@pytest.fixture(scope="module")
def compose() -> dict:
    return load()


@pytest.fixture(scope="module")
def services(compose) -> dict:
    return compose["services"]


def test_the_stack_has_every_service(services):
    assert set(services) == set(OFFICIAL_IMAGES) | set(OURS)


def test_third_party_services_use_official_images_with_pinned_versions(services):
    for name, repository in OFFICIAL_IMAGES.items():
        image, _, tag = services[name]["image"].partition(":")
        assert image == repository, name
        assert PINNED_TAG.match(tag), f"{name}: tag {tag!r} is not an exact version"
        assert "build" not in services[name]


def test_the_kafka_image_is_the_release_the_tests_run(services):
    """The broker in the stack is the Apache Kafka the real-Kafka tests prove."""
    assert services["kafka"]["image"] == f"apache/kafka:{kafka_version()}"


def test_groupscope_services_run_the_image_built_from_this_repository(services):
    images = set()
    for name in OURS:
        build = services[name]["build"]
        assert build["context"] == "."
        assert (ROOT / build["dockerfile"]).is_file()
        images.add(services[name]["image"])
    assert len(images) == 1  # one image for every role


def test_published_ports(services):
    assert ports(services["kafka"]) == {9094: 9094}
    assert ports(services["postgres"]) == {5432: 5432}
    assert ports(services["exporter"]) == {9308: 9308}
    assert ports(services["prometheus"]) == {9090: 9090}
    assert ports(services["grafana"]) == {3000: 3000}
    for name in ("migrate", "job", "workload"):
        assert not ports(services[name]), name


def test_long_running_services_have_a_health_check_and_a_restart_policy(services):
    for name, service in services.items():
        if name in ONE_SHOT:
            assert service["restart"] == "no" and "healthcheck" not in service
            continue
        assert service["restart"] in ("unless-stopped", "always", "on-failure"), name
        check = service["healthcheck"]
        assert check["test"][0] in ("CMD", "CMD-SHELL") and len(check["test"]) > 1, name
        for key in ("interval", "timeout", "retries"):
            assert key in check, (name, key)


def _probe(service: dict) -> str:
    return " ".join(service["healthcheck"]["test"][1:])


def test_health_checks_probe_what_each_service_serves(services):
    assert "pg_isready -U groupscope -d groupscope" in _probe(services["postgres"])
    assert "kafka-broker-api-versions.sh --bootstrap-server localhost:9092" in _probe(
        services["kafka"]
    )
    assert "http://127.0.0.1:9308/healthz" in _probe(services["exporter"])
    assert "http://localhost:9090/-/healthy" in _probe(services["prometheus"])
    assert "http://localhost:3000/api/health" in _probe(services["grafana"])
    # the workload touches the file its health check reads
    health_file = flag(command(services["workload"]), "--health-file")
    assert f"'{health_file}'" in _probe(services["workload"])
    # the job is healthy while it commits micro-batches to its checkpoint
    checkpoint = flag(command(services["job"]), "--checkpoint")
    assert f"{checkpoint}/commits" in _probe(services["job"])


def test_dependencies_wait_for_health_and_for_the_migration(services):
    conditions = {
        name: {dep: spec["condition"] for dep, spec in service.get("depends_on", {}).items()}
        for name, service in services.items()
    }
    ready = {
        "kafka": "service_healthy",
        "postgres": "service_healthy",
        "migrate": "service_completed_successfully",
    }
    assert conditions["job"] == ready
    assert conditions["exporter"] == ready
    assert conditions["migrate"] == {"postgres": "service_healthy"}
    assert conditions["workload"] == {"kafka": "service_healthy"}
    assert conditions["grafana"] == {
        "prometheus": "service_healthy",
        "postgres": "service_healthy",
    }
    assert conditions["prometheus"] == {"exporter": "service_started"}
    for name, deps in conditions.items():
        for dep, condition in deps.items():
            if condition == "service_healthy":  # only a health check can make it so
                assert "healthcheck" in services[dep], (name, dep)


def test_named_volumes_keep_the_state(compose, services):
    assert mounts(services["kafka"])["/var/lib/kafka/data"] == "kafka-data"
    assert interpolate(services["kafka"]["environment"])["KAFKA_LOG_DIRS"] == (
        "/var/lib/kafka/data"
    )
    # PostgreSQL 18 images: the volume goes on /var/lib/postgresql, not .../data
    assert mounts(services["postgres"])["/var/lib/postgresql"] == "postgres-data"
    checkpoint = flag(command(services["job"]), "--checkpoint")
    assert mounts(services["job"])[checkpoint] == "job-checkpoint"
    assert mounts(services["job"])["/var/cache/groupscope/ivy"] == "ivy-cache"
    assert mounts(services["prometheus"])["/prometheus"] == "prometheus-data"
    assert mounts(services["grafana"])["/var/lib/grafana"] == "grafana-data"
    used = {
        source
        for service in services.values()
        for source in mounts(service).values()
        if not source.startswith((".", "/"))
    }
    assert used == set(compose["volumes"])


def test_prometheus_and_grafana_mount_the_dashboards_folder():
    services = load()["services"]
    assert mounts(services["prometheus"]) == {
        "/etc/prometheus/prometheus.yml": "./dashboards/prometheus/prometheus.yml",
        "/etc/prometheus/rules.yml": "./dashboards/prometheus/rules.yml",
        "/prometheus": "prometheus-data",
    }
    grafana = mounts(services["grafana"])
    assert grafana["/etc/grafana/provisioning"] == "./dashboards/grafana/provisioning"
    assert grafana["/var/lib/grafana/dashboards"] == "./dashboards/grafana/dashboards"


def test_every_mounted_host_path_exists_in_the_repository(services):
    host_paths = [
        (name, source)
        for name, service in services.items()
        for source in mounts(service).values()
        if source.startswith(".")
    ]
    assert len(host_paths) == 4
    missing = [(name, p) for name, p in host_paths if not (ROOT / p).exists()]
    assert not missing, f"mounted but not in the repository: {missing}"
    assert (ROOT / "dashboards/grafana/provisioning").is_dir()
    assert (ROOT / "dashboards/grafana/dashboards").is_dir()


def test_grafana_home_dashboard_is_a_mounted_file(services):
    grafana = services["grafana"]
    home = grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    for target, source in mounts(grafana).items():
        if home.startswith(target + "/"):
            assert (ROOT / source / home[len(target) + 1 :]).is_file(), home
            break
    else:
        pytest.fail(f"{home} is not under a mounted host folder")
    env = grafana["environment"]
    assert env["GF_AUTH_ANONYMOUS_ENABLED"] == "true"
    assert env["GF_AUTH_ANONYMOUS_ORG_ROLE"] == "Viewer"


def test_the_job_reads_kafka_with_sparks_official_connector(services):
    argv = command(services["job"])
    assert argv[0] == "job"  # the image's spark-submit entry point (docker/entrypoint.sh)
    assert flag(argv, "--source") == "spark-kafka"
    assert flag(argv, "--bootstrap-servers") == "kafka:9092"
    assert flag(argv, "--database-url") == STORE_URL
    assert flag(argv, "--offsets-partitions") == "50"


def test_commands_and_flags_exist_in_the_groupscope_cli(services):
    """Every service but the job runs `groupscope ...`: its command parses."""
    parser = build_parser()
    for name in ("migrate", "exporter", "workload"):
        args = parser.parse_args(command(services[name]))
        assert callable(args.func), name
    exporter = command(services["exporter"])
    assert (flag(exporter, "--port"), flag(exporter, "--database-url")) == ("9308", STORE_URL)
    assert flag(command(services["migrate"]), "--database-url") == STORE_URL
    assert "--kip848" in command(services["workload"])


def test_postgres_credentials_match_the_store_url(services):
    env = services["postgres"]["environment"]
    user, password, db = env["POSTGRES_USER"], env["POSTGRES_PASSWORD"], env["POSTGRES_DB"]
    assert f"postgresql://{user}:{password}@postgres:5432/{db}" == STORE_URL


def test_kafka_runs_kraft_with_inside_and_host_listeners_and_50_offsets_partitions(services):
    env = {k: str(v) for k, v in interpolate(services["kafka"]["environment"]).items()}
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert env["KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS"] == "50"
    assert "ZOOKEEPER" not in " ".join(env)
    advertised = dict(item.split("://") for item in env["KAFKA_ADVERTISED_LISTENERS"].split(","))
    assert advertised["INTERNAL"] == "kafka:9092"
    host_port = int(advertised["EXTERNAL"].rpartition(":")[2])
    assert advertised["EXTERNAL"].startswith("localhost:")
    assert ports(services["kafka"]) == {host_port: host_port}
    listeners = dict(item.split("://") for item in env["KAFKA_LISTENERS"].split(","))
    assert set(listeners) == {"INTERNAL", "EXTERNAL", "CONTROLLER"}
    controller_port = listeners["CONTROLLER"].rpartition(":")[2]
    voters = f"{env['KAFKA_NODE_ID']}@kafka:{controller_port}"
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == voters


def test_prometheus_scrapes_the_exporter_service_and_loads_the_mounted_rules(services):
    config = yaml.safe_load((ROOT / "dashboards/prometheus/prometheus.yml").read_text())
    targets = {
        target
        for job in config["scrape_configs"]
        for static in job.get("static_configs", [])
        for target in static["targets"]
    }
    assert f"exporter:{flag(command(services['exporter']), '--port')}" in targets
    assert config["rule_files"] == ["/etc/prometheus/rules.yml"]
    rules = yaml.safe_load((ROOT / "dashboards/prometheus/rules.yml").read_text())
    assert rules["groups"]


def test_grafana_data_sources_name_the_compose_services():
    folder = ROOT / "dashboards/grafana/provisioning/datasources"
    sources = [
        source
        for path in sorted(folder.glob("*.y*ml"))
        for source in yaml.safe_load(path.read_text())["datasources"]
    ]
    urls = {source["type"]: source["url"] for source in sources}
    assert urls["prometheus"] == "http://prometheus:9090"
    assert urls["postgres"] in ("postgres:5432", "postgresql://postgres:5432")


def test_the_own_cluster_override_leaves_out_kafka_and_the_workload():
    override = load(OWN_CLUSTER_FILE)["services"]
    assert override["kafka"]["profiles"] == override["workload"]["profiles"]
    services = load()["services"]
    for name in ("job", "exporter"):
        deps = override[name]["depends_on"]
        assert "kafka" not in deps
        assert {d: s["condition"] for d, s in deps.items()} == {
            d: s["condition"] for d, s in services[name]["depends_on"].items() if d != "kafka"
        }
    # the job and the exporter take the cluster from the environment
    text = (ROOT / "docker-compose.yml").read_text()
    assert text.count("${GROUPSCOPE_BOOTSTRAP_SERVERS:-kafka:9092}") == 2


def test_the_job_can_be_pointed_at_a_spark_master_with_one_variable():
    job = load()["services"]["job"]
    assert job["environment"]["GROUPSCOPE_SPARK_MASTER"] == "${GROUPSCOPE_SPARK_MASTER:-local[*]}"
    assert interpolate(job["environment"])["GROUPSCOPE_SPARK_MASTER"] == "local[*]"


def test_group_filters_pass_through_and_default_to_every_group(services, monkeypatch):
    """The job and the exporter take their group filters from the host's variables of the
    same names (empty: every group), and the exporter's command reads them."""
    from services.groupfilter import group_filter

    variables = {
        "job": ("GROUPSCOPE_STREAM_GROUPS_INCLUDE", "GROUPSCOPE_STREAM_GROUPS_EXCLUDE"),
        "exporter": ("GROUPSCOPE_EXPORTER_GROUPS_INCLUDE", "GROUPSCOPE_EXPORTER_GROUPS_EXCLUDE"),
    }
    for name, pair in variables.items():
        env = services[name]["environment"]
        for variable in pair:
            assert env[variable] == f"${{{variable}:-}}", name
            assert interpolate(env)[variable] == ""
    for variable, value in interpolate(services["exporter"]["environment"]).items():
        monkeypatch.setenv(variable, value)
    exporter = command(services["exporter"])
    assert not group_filter(build_parser().parse_args(exporter)).active
    monkeypatch.setenv("GROUPSCOPE_EXPORTER_GROUPS_INCLUDE", "^payments-")
    kept = group_filter(build_parser().parse_args(exporter))
    assert kept.keeps("payments-eu") and not kept.keeps("billing")
