"""The Grafana dashboards and provisioning, checked structurally (Grafana cannot be
installed here): layout, data sources, variables, links, every PromQL expression on the
exporter's catalogue and valid for a real Prometheus, every SQL query valid on the
migrated history store."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

import psycopg
import pytest
import yaml

from services.exporter.catalogue import BY_NAME
from tests.dashboards.grafana import (
    DASHBOARD_FILES,
    DATASOURCES,
    PROMQL_BUILTINS,
    PROVIDERS,
    all_panels,
    dashboards,
    every_query,
    metric_names,
    resolve_datasource,
    substitute_promql,
    substitute_sql,
    textbox_defaults,
    variables,
    variables_used,
)
from tests.fixtures.prometheus import Prometheus

GRAFANA_VARIABLES = {"__url_time_range", "__value", "__field", "__data", "__all_variables"}
SQL_MACROS = {"__timeFilter", "__timeFrom", "__timeTo"}


def provisioned() -> dict[str, dict]:
    return {ds["uid"]: ds for ds in yaml.safe_load(DATASOURCES.read_text())["datasources"]}


def test_datasources_are_provisioned_as_the_stack_needs() -> None:
    sources = provisioned()
    assert set(sources) == {"prometheus", "groupscope-postgres"}
    prom = sources["prometheus"]
    assert (prom["type"], prom["url"], prom["access"]) == (
        "prometheus",
        "http://prometheus:9090",
        "proxy",
    )
    pg = sources["groupscope-postgres"]
    assert (pg["type"], pg["url"], pg["user"]) == ("postgres", "postgres:5432", "groupscope")
    assert pg["jsonData"]["database"] == "groupscope"
    assert pg["jsonData"]["sslmode"] == "disable"
    assert pg["secureJsonData"]["password"] == "groupscope"
    assert yaml.safe_load(DATASOURCES.read_text())["apiVersion"] == 1


def test_dashboards_are_provisioned_from_the_mounted_folder() -> None:
    config = yaml.safe_load(PROVIDERS.read_text())
    assert config["apiVersion"] == 1
    [provider] = config["providers"]
    assert provider["type"] == "file"
    assert provider["options"]["path"] == "/var/lib/grafana/dashboards"


def test_dashboards_have_unique_uids_and_a_current_schema() -> None:
    boards = dashboards()
    assert set(boards) == {"overview.json", "group.json"}
    uids = [d["uid"] for d in boards.values()]
    assert len(set(uids)) == len(uids) and all(uids)
    for d in boards.values():
        assert d["schemaVersion"] >= 36 and d["title"].startswith("groupscope")
        assert "groupscope" in d["tags"]


@pytest.mark.parametrize("path", DASHBOARD_FILES, ids=lambda p: p.name)
def test_panels_have_unique_ids_and_a_grid_without_overlaps(path) -> None:
    d = dashboards()[path.name]
    panels = list(all_panels(d))
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids)) and len(ids) >= 10
    cells: set[tuple[int, int]] = set()
    for p in panels:
        grid = p["gridPos"]
        assert all(isinstance(grid[k], int) for k in ("h", "w", "x", "y")), p["title"]
        assert grid["w"] > 0 and grid["h"] > 0 and grid["x"] + grid["w"] <= 24, p["title"]
        mine = set(
            itertools.product(
                range(grid["x"], grid["x"] + grid["w"]), range(grid["y"], grid["y"] + grid["h"])
            )
        )
        assert not cells & mine, f"{p['title']} overlaps another panel"
        cells |= mine
        assert p["title"]
        if p["type"] != "row":
            assert p.get("targets"), f"{p['title']} has no query"
            assert p.get("description"), f"{p['title']} has no description"


def test_every_query_uses_a_provisioned_datasource() -> None:
    """Through a datasource variable (no fixed uid), whose default is provisioned."""
    sources = provisioned()
    boards = dashboards()
    for q in every_query():
        assert re.fullmatch(r"\$\{\w+\}", q.datasource["uid"]), q
        ds = resolve_datasource(boards[q.dashboard], q.datasource)
        assert ds["uid"] in sources, q
        assert ds["type"] == sources[ds["uid"]]["type"], q
        assert q.text and q.text.strip(), q
    for d in boards.values():
        for p in all_panels(d):
            if p["type"] != "row":
                assert resolve_datasource(d, p["datasource"])["uid"] in sources, p["title"]
        for v in variables(d, "query"):
            assert resolve_datasource(d, v["datasource"])["uid"] == "prometheus", v["name"]


def test_the_data_sources_are_variables_defaulting_to_the_provisioned_ones() -> None:
    sources = provisioned()
    for name, d in dashboards().items():
        chosen = {v["name"]: v for v in variables(d, "datasource")}
        assert chosen["datasource"]["query"] == "prometheus", name
        for v in chosen.values():
            assert sources[v["current"]["value"]]["type"] == v["query"], v["name"]
        used = {q.datasource["uid"] for q in every_query() if q.dashboard == name}
        assert used == {"${" + v + "}" for v in chosen}, name


def test_variables_group_and_topic_are_prometheus_queries_over_the_catalogue() -> None:
    for name, d in dashboards().items():
        queried = {v["name"]: v for v in variables(d, "query")}
        assert {"group", "topic"} <= set(queried), name
        for v in queried.values():
            assert v["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, v["name"]
            m = re.fullmatch(r"label_values\((.+), (\w+)\)", v["definition"])
            assert m and m.group(2) == v["name"], v["definition"]
            assert v["query"] == v["definition"]  # the string form every Grafana reads
            assert metric_names(m.group(1)) <= set(BY_NAME), v["definition"]
        assert "$group" in queried["topic"]["definition"]  # topics of the chosen groups


def test_the_storm_panels_follow_the_exporter_s_storm_settings() -> None:
    """No storm threshold is a fixed number: the live panels read the exporter's storm flag,
    the history store's storm table two variables defaulting to the exporter's defaults."""
    from services.dashboards.panels import POSTGRES_UID
    from services.durations import duration_ms
    from services.exporter.app import ExporterConfig

    config = ExporterConfig()
    boards = dashboards()
    storm = [q for q in every_query() if "storm" in q.text]
    assert storm
    for q in storm:
        if q.is_sql:
            assert "${storm_window:sqlstring}" in q.text, q
            assert "${storm_rebalances:sqlstring}" in q.text, q
        elif "rebalances_in_storm_window" in q.text and "groupscope_group_storm" not in q.text:
            # plain counts: no threshold drawn at a fixed number
            panel = next(
                p
                for p in all_panels(boards[q.dashboard])
                if p["type"] != "row" and p["title"] == q.panel
            )
            steps = panel["fieldConfig"]["defaults"]["thresholds"]["steps"]
            assert [s["value"] for s in steps] == [None] or panel["type"] == "table", q
    defaults = textbox_defaults()
    assert defaults["storm_rebalances"] == [str(config.storm_rebalances)]
    [window] = defaults["storm_window"]
    assert duration_ms(window) == config.storm_window_s * 1000
    assert POSTGRES_UID in provisioned()


def test_every_variable_a_query_or_link_uses_is_defined() -> None:
    for name, d in dashboards().items():
        defined = {v["name"] for v in d["templating"]["list"]}
        known = defined | set(PROMQL_BUILTINS) | GRAFANA_VARIABLES | SQL_MACROS
        for q in every_query():
            if q.dashboard == name:
                assert variables_used(q.text) <= known, q
        for url in links(d):
            used = {re.split(r"[.:]", v)[0] for v in re.findall(r"\$\{([^}]+)\}", url)}
            assert used <= known, url


def test_every_promql_query_selects_only_catalogue_metrics() -> None:
    used: set[str] = set()
    prom = [q for q in every_query() if not q.is_sql]
    assert len(prom) >= 40
    for q in prom:
        names = metric_names(q.text)
        assert names, f"{q}: selects no metric"
        unknown = names - set(BY_NAME)
        assert not unknown, f"{q}: {unknown} are not in services/exporter/catalogue.py"
        per_partition = {n for n in names if BY_NAME[n].per_partition}
        assert not per_partition, f"{q}: {per_partition} exist only with --per-partition"
        used |= names
    # The overview covers groups, storms, churn against the baseline, lag and the pipeline.
    for metric in (
        "groupscope_group_info",
        "groupscope_group_storm",
        "groupscope_group_partition_moves_total",
        "groupscope_lag_seconds",
        "groupscope_lag_sum",
        "groupscope_pipeline_caught_up",
        "groupscope_pipeline_status_age_seconds",
        "groupscope_decode_failures_total",
        "groupscope_group_generation",
        "groupscope_group_members",
        "groupscope_group_commits_total",
    ):
        assert metric in used, metric


def test_the_group_dashboard_reads_the_postmortem_views() -> None:
    sql = " ".join(q.text for q in every_query() if q.is_sql and q.dashboard == "group.json")
    for view in (
        "group_timeline",
        "partition_ownership",
        "rebalance_storms_between",
        "offset_history_entries",
    ):
        assert view in sql, view
    assert not [q for q in every_query() if q.is_sql and q.dashboard != "group.json"]


def links(d: dict) -> Iterator[str]:
    for link in d.get("links", []):
        yield link["url"]
    for p in all_panels(d):
        config = p.get("fieldConfig", {})
        for link in config.get("defaults", {}).get("links", []):
            yield link["url"]
        for override in config.get("overrides", []):
            for prop in override["properties"]:
                if prop["id"] == "links":
                    yield from (link["url"] for link in prop["value"])


def test_links_connect_the_two_dashboards() -> None:
    boards = dashboards()
    uids = {d["uid"] for d in boards.values()}
    targets = {}
    for name, d in boards.items():
        urls = list(links(d))
        assert urls, name
        for url in urls:
            m = re.match(r"/d/([\w-]+)", url)
            assert m and m.group(1) in uids, url
        targets[name] = {re.match(r"/d/([\w-]+)", u).group(1) for u in urls}
    assert boards["group.json"]["uid"] in targets["overview.json"]
    assert boards["overview.json"]["uid"] in targets["group.json"]
    # Drill-downs pass the group they were clicked on.
    assert any("var-group=" in u for u in links(boards["overview.json"]))


@pytest.fixture(scope="module")
def idle_prometheus(start_prometheus) -> Prometheus:
    return start_prometheus("127.0.0.1:9")


def test_every_promql_query_is_valid_for_prometheus(idle_prometheus: Prometheus) -> None:
    """Real Prometheus parses every expression (a syntax error is an HTTP 400), with the
    variables substituted as Grafana does; the end-to-end test checks that they return data."""
    values = {"cluster": "default", "group": "billing", "topic": "orders"}
    for q in every_query():
        if not q.is_sql:
            idle_prometheus.query(substitute_promql(q.text, values))


def test_every_sql_query_runs_on_the_migrated_store(database_url: str) -> None:
    values = {
        "cluster": ["default"],
        "group": ["billing"],
        "topic": ["orders", "it's"],
        **textbox_defaults(),
    }
    sql_queries = [q for q in every_query() if q.is_sql]
    assert len(sql_queries) >= 6
    with psycopg.connect(database_url) as conn:
        for q in sql_queries:
            text = substitute_sql(q.text, values, "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z")
            cursor = conn.execute(text)
            columns = [c.name for c in cursor.description]
            assert cursor.fetchall() == [], q  # an empty store
            if q.fmt == "time_series" or q.panel.startswith("annotation"):
                assert columns[0] == "time", q
            if q.panel.startswith("annotation"):
                assert "text" in columns, q
