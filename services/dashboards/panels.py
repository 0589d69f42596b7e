"""The building blocks of groupscope's dashboards, on grafana-foundation-sdk's builders:
data sources taken from template variables, Prometheus and PostgreSQL queries, and the
four panel types with the settings every panel of a type shares."""

from __future__ import annotations

import typing
from collections.abc import Sequence

from grafana_foundation_sdk.builders import bargauge, stat, table, timeseries
from grafana_foundation_sdk.builders import common as common_builders
from grafana_foundation_sdk.builders import dashboard as builders
from grafana_foundation_sdk.builders import prometheus as prometheus_builders
from grafana_foundation_sdk.cog import builder as cogbuilder
from grafana_foundation_sdk.cog import variants as cogvariants
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as models
from grafana_foundation_sdk.models import prometheus as prometheus_models

# The data sources are template variables (a `datasource` variable per type), so the
# dashboards work on any Grafana; their defaults are the uids that
# dashboards/grafana/provisioning/datasources/groupscope.yml provisions.
PROMETHEUS_VARIABLE = "datasource"
POSTGRES_VARIABLE = "postgres_datasource"
PROMETHEUS_UID = "prometheus"
POSTGRES_UID = "groupscope-postgres"
PROMETHEUS = common.DataSourceRef(type_val="prometheus", uid="${" + PROMETHEUS_VARIABLE + "}")
POSTGRES = common.DataSourceRef(type_val="postgres", uid="${" + POSTGRES_VARIABLE + "}")

GROUP_DASHBOARD = "/d/groupscope-group/groupscope-group"
OVERVIEW_DASHBOARD = "/d/groupscope-overview/groupscope-overview"

Query = cogbuilder.Builder[cogvariants.Dataquery]
Steps = Sequence[tuple[float | None, str]]
BASE: Steps = ((None, "green"),)


# --- queries ----------------------------------------------------------------------------
def prom(expr: str, legend: str = "__auto", *, table_format: bool = False) -> Query:
    """A PromQL target; instant or range, and its refId, are set by the panel."""
    fmt = prometheus_models.PromQueryFormat.TABLE if table_format else None
    query = (
        prometheus_builders.Dataquery()
        .datasource(PROMETHEUS)
        .expr(expr)
        .legend_format(legend)
        .format(fmt or prometheus_models.PromQueryFormat.TIME_SERIES)
    )
    return query


class SqlQuery(cogvariants.Dataquery):
    """A raw SQL target of Grafana's PostgreSQL data source (the SDK has no builder for
    it; the JSON is the one Grafana's code editor saves)."""

    def __init__(self, sql: str, fmt: str) -> None:
        self.ref_id = "A"
        self.sql = sql
        self.fmt = fmt

    def to_json(self) -> dict[str, object]:
        return {
            "refId": self.ref_id,
            "datasource": POSTGRES.to_json(),
            "editorMode": "code",
            "format": self.fmt,
            "rawQuery": True,
            "rawSql": self.sql,
        }


class Sql(cogbuilder.Builder[cogvariants.Dataquery]):
    def __init__(self, sql: str, *, time_series: bool = False) -> None:
        self._query = SqlQuery(sql, "time_series" if time_series else "table")

    def ref_id(self, ref_id: str) -> typing.Self:
        self._query.ref_id = ref_id
        return self

    def build(self) -> cogvariants.Dataquery:
        return self._query


class SqlAnnotationTarget(models.AnnotationTarget):
    """An annotation's SQL query (the SDK types annotation targets for Grafana's own
    data source only)."""

    def __init__(self, sql: str) -> None:
        super().__init__()
        self.sql = sql

    def to_json(self) -> dict[str, object]:
        return SqlQuery(self.sql, "table").to_json() | {"refId": "Anno"}


class SqlAnnotation(cogbuilder.Builder[models.AnnotationTarget]):
    def __init__(self, sql: str) -> None:
        self._target = SqlAnnotationTarget(sql)

    def build(self) -> models.AnnotationTarget:
        return self._target


# --- field settings ---------------------------------------------------------------------
def thresholds(steps: Steps) -> builders.ThresholdsConfig:
    return (
        builders.ThresholdsConfig()
        .mode(models.ThresholdsMode.ABSOLUTE)
        .steps([models.Threshold(value=v, color=c) for v, c in steps])
    )


def levels(orange: float | None = None, red: float | None = None) -> Steps:
    """Green, then orange and red from these values on."""
    steps: list[tuple[float | None, str]] = [(None, "green")]
    steps += [(value, colour) for value, colour in ((orange, "orange"), (red, "red")) if value]
    return tuple(steps)


FLAG = levels(red=1)  # a 0/1 flag, or a count that should be 0
TIME_LAG = levels(orange=60, red=300)  # seconds; GroupscopeTimeLagHigh fires at 300
CHURN = levels(orange=0.5, red=0.9)  # share of partitions moved
EXCESS = levels(orange=1, red=10)  # moves beyond the sticky baseline


def value_map(*texts: tuple[str, str]) -> list[models.ValueMapping]:
    """Values 0, 1, ... shown as these (text, colour) pairs."""
    options = {
        str(i): models.ValueMappingResult(text=text, color=color, index=i)
        for i, (text, color) in enumerate(texts)
    }
    return [models.ValueMap(options=options)]


def drill_down(by: str = "${__field.labels.group}") -> builders.DashboardLink:
    """A data link to the group dashboard for the group of the clicked series or cell."""
    return (
        builders.DashboardLink(f"Drill down into {by}")
        .url(f"{GROUP_DASHBOARD}?var-group={by}&${{__url_time_range}}")
        .target_blank(False)
    )


def unit(name: str) -> models.DynamicConfigValue:
    return models.DynamicConfigValue(id_val="unit", value=name)


def cell_colour(mode: str, steps: Steps) -> list[models.DynamicConfigValue]:
    """Colour a table column's cells ("color-text", "color-background") by thresholds."""
    return [
        models.DynamicConfigValue(id_val="custom.cellOptions", value={"type": mode}),
        models.DynamicConfigValue(id_val="thresholds", value=thresholds(steps).build()),
    ]


PanelBuilder = typing.TypeVar(
    "PanelBuilder", stat.Panel, timeseries.Panel, bargauge.Panel, table.Panel
)


def _common(
    panel: PanelBuilder,
    title: str,
    description: str,
    targets: Sequence[Query],
    size: tuple[int, int],
    datasource: common.DataSourceRef,
    *,
    instant: bool,
) -> PanelBuilder:
    width, height = size
    panel = panel.title(title).description(description).datasource(datasource)
    for ref, target in zip("ABCDEFGHIJ", targets, strict=False):
        if isinstance(target, prometheus_builders.Dataquery):
            target = target.instant() if instant else target.range()
            target.ref_id(ref)
        elif isinstance(target, Sql):
            target.ref_id(ref)
        panel = panel.with_target(target)
    return panel.span(width).height(height)


def _data_source(targets: Sequence[Query]) -> common.DataSourceRef:
    return POSTGRES if all(isinstance(t, Sql) for t in targets) else PROMETHEUS


# --- panels -----------------------------------------------------------------------------
def row(title: str) -> builders.Row:
    return builders.Row(title).collapsed(False)


def stat_panel(
    title: str,
    description: str,
    targets: Sequence[Query],
    size: tuple[int, int],
    *,
    unit: str | None = None,
    decimals: int | None = None,
    steps: Steps = BASE,
    mappings: list[models.ValueMapping] | None = None,
    no_value: str | None = None,
    show_name: bool = False,
) -> stat.Panel:
    """A single value (the last non-null one of an instant query)."""
    panel = _common(
        stat.Panel(), title, description, targets, size, _data_source(targets), instant=True
    )
    panel = (
        panel.thresholds(thresholds(steps))
        .color_scheme(builders.FieldColor().mode(models.FieldColorModeId.THRESHOLDS))
        .mappings(mappings or [])
        .reduce_options(
            common_builders.ReduceDataOptions().calcs(["lastNotNull"]).fields("").values(False)
        )
        .color_mode(common.BigValueColorMode.VALUE)
        .graph_mode(common.BigValueGraphMode.NONE)
        .justify_mode(common.BigValueJustifyMode.AUTO)
        .orientation(common.VizOrientation.AUTO)
        .text_mode(common.BigValueTextMode.NAME if show_name else common.BigValueTextMode.AUTO)
    )
    if unit is not None:
        panel = panel.unit(unit)
    if decimals is not None:
        panel = panel.decimals(decimals)
    if no_value is not None:
        panel = panel.no_value(no_value)
    return panel


def timeseries_panel(
    title: str,
    description: str,
    targets: Sequence[Query],
    size: tuple[int, int],
    *,
    unit: str | None = None,
    draw: common.GraphDrawStyle = common.GraphDrawStyle.LINE,
    step: bool = False,
    stacked: bool = False,
    steps: Steps = BASE,
    links: Sequence[builders.DashboardLink] = (),
    overrides: Sequence[tuple[str, list[models.DynamicConfigValue]]] = (),
    overrides_by_query: Sequence[tuple[str, list[models.DynamicConfigValue]]] = (),
) -> timeseries.Panel:
    """A graph over the time range: lines, bars (fill 80%) or points; thresholds beyond
    the base colour are drawn as dashed lines."""
    panel = _common(
        timeseries.Panel(), title, description, targets, size, _data_source(targets),
        instant=False,
    )  # fmt: skip
    interpolation = common.LineInterpolation.STEP_AFTER if step else common.LineInterpolation.LINEAR
    panel = (
        panel.draw_style(draw)
        .line_interpolation(interpolation)
        .line_width(1)
        .fill_opacity(80 if draw == common.GraphDrawStyle.BARS else 10)
        .show_points(
            common.VisibilityMode.AUTO
            if draw == common.GraphDrawStyle.POINTS
            else common.VisibilityMode.NEVER
        )
        .point_size(6)
        .span_nulls(False)
        .stacking(
            common_builders.StackingConfig()
            .mode(common.StackingMode.NORMAL if stacked else common.StackingMode.NONE)
            .group("A")
        )
        .thresholds_style(
            common_builders.GraphThresholdsStyleConfig().mode(
                common.GraphThresholdsStyleMode.DASHED
                if len(steps) > 1
                else common.GraphThresholdsStyleMode.OFF
            )
        )
        .axis_placement(common.AxisPlacement.AUTO)
        .thresholds(thresholds(steps))
        .color_scheme(builders.FieldColor().mode(models.FieldColorModeId.PALETTE_CLASSIC))
        .legend(
            common_builders.VizLegendOptions()
            .display_mode(common.LegendDisplayMode.LIST)
            .placement(common.LegendPlacement.BOTTOM)
            .show_legend(True)
        )
        .tooltip(
            common_builders.VizTooltipOptions()
            .mode(common.TooltipDisplayMode.MULTI)
            .sort(common.SortOrder.DESCENDING)
        )
    )
    if unit is not None:
        panel = panel.unit(unit)
    if links:
        panel = panel.data_links(list(links))
    for name, properties in overrides:
        panel = panel.override_by_name(name, properties)
    for ref, properties in overrides_by_query:
        panel = panel.override_by_query(ref, properties)
    return panel


def bargauge_panel(
    title: str,
    description: str,
    targets: Sequence[Query],
    size: tuple[int, int],
    *,
    unit: str | None = None,
    steps: Steps = BASE,
) -> bargauge.Panel:
    """Horizontal bars, one per series, each linking to its group's dashboard."""
    panel = _common(bargauge.Panel(), title, description, targets, size, PROMETHEUS, instant=True)
    panel = (
        panel.min(0)
        .thresholds(thresholds(steps))
        .color_scheme(builders.FieldColor().mode(models.FieldColorModeId.THRESHOLDS))
        .data_links([drill_down()])
        .reduce_options(
            common_builders.ReduceDataOptions().calcs(["lastNotNull"]).fields("").values(False)
        )
        .orientation(common.VizOrientation.HORIZONTAL)
        .display_mode(common.BarGaugeDisplayMode.GRADIENT)
        .value_mode(common.BarGaugeValueMode.COLOR)
        .show_unfilled(True)
    )
    return panel.unit(unit) if unit is not None else panel


def table_panel(
    title: str,
    description: str,
    targets: Sequence[Query],
    size: tuple[int, int],
    *,
    overrides: Sequence[tuple[str, list[models.DynamicConfigValue]]] = (),
    transformations: Sequence[models.DataTransformerConfig] = (),
) -> table.Panel:
    """A filterable table; `overrides` set units, colours and links of named columns."""
    panel = _common(
        table.Panel(), title, description, targets, size, _data_source(targets), instant=True
    )
    panel = (
        panel.align(common.FieldTextAlignment.AUTO)
        .filterable(True)
        .thresholds(thresholds(BASE))
        .show_header(True)
        .cell_height(common.TableCellHeight.SM)
        .footer(common_builders.TableFooterOptions().show(False).reducer(["sum"]).fields([]))
        .transformations(list(transformations))
    )
    for name, properties in overrides:
        panel = panel.override_by_name(name, properties)
    return panel


def data_links(*links: builders.DashboardLink) -> models.DynamicConfigValue:
    """An override's data links (a table column's drill-down)."""
    return models.DynamicConfigValue(id_val="links", value=[link.build() for link in links])


# --- dashboards -------------------------------------------------------------------------
def dashboard(uid: str, title: str, description: str) -> builders.Dashboard:
    """A groupscope dashboard: the last 3 hours, refreshed every 30 s, shared crosshair."""
    return (
        builders.Dashboard(title)
        .uid(uid)
        .description(description)
        .tags(["groupscope", "kafka"])
        .editable()
        .tooltip(models.DashboardCursorSync.CROSSHAIR)
        .time("now-3h", "now")
        .refresh("30s")
        .timezone("")
        .fiscal_year_start_month(0)
        .live_now(False)
        .week_start("")
        .version(1)
        .annotation(
            builders.AnnotationQuery()
            .name("Annotations & Alerts")
            .datasource(common.DataSourceRef(type_val="grafana", uid="-- Grafana --"))
            .built_in(1)
            .enable(True)
            .hide(True)
            .icon_color("rgba(0, 211, 255, 1)")
            .type("dashboard")
        )
    )


def link(title: str, url: str, tooltip: str) -> builders.DashboardLink:
    """A link in the dashboard's header, keeping the time range."""
    return (
        builders.DashboardLink(title)
        .type(models.DashboardLinkType.LINK)
        .url(url)
        .icon("dashboard")
        .tooltip(tooltip)
        .keep_time(True)
        .include_vars(False)
        .target_blank(False)
        .as_dropdown(False)
        .tags([])
    )


def datasource_variable(
    name: str, plugin: str, uid: str, label: str
) -> builders.DatasourceVariable:
    """The data source of a type to query, the provisioned one by default."""
    return (
        builders.DatasourceVariable(name)
        .label(label)
        .type(plugin)
        .current(models.VariableOption(selected=True, text=uid, value=uid))
    )


def query_variable(
    name: str, description: str, query: str, *, multi: bool, all_value: str | None = None
) -> builders.QueryVariable:
    """A variable offering the values of a label (`label_values(selector, name)`)."""
    variable = (
        builders.QueryVariable(name)
        .label(name)
        .description(description)
        .datasource(PROMETHEUS)
        .query(query)
        .refresh(models.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(models.VariableSort.ALPHABETICAL_ASC)
        .multi(multi)
        .include_all(multi)
    )
    return variable.all_value(all_value) if all_value is not None else variable


# --- rebalance storms -------------------------------------------------------------------
# The exporter's defaults (services/exporter/commands.py: --storm-rebalances,
# --storm-window), for the history store's storm table only: the live panels read the
# exporter's own storm flag, groupscope_group_storm, which follows its settings.
STORM_REBALANCES = "5"
STORM_WINDOW = "10m"


def in_a_storm(matcher: str, legend: str) -> Query:
    """Rebalances within the storm window, only while the exporter flags a storm."""
    return prom(
        f"groupscope_group_rebalances_in_storm_window{{{matcher}}} "
        f"and on (cluster, group) (groupscope_group_storm{{{matcher}}} == 1)",
        legend,
    )


def storm_series() -> list[models.DynamicConfigValue]:
    """The in-a-storm series: red, thick, on top."""
    return [
        models.DynamicConfigValue(id_val="color", value={"mode": "fixed", "fixedColor": "red"}),
        models.DynamicConfigValue(id_val="custom.lineWidth", value=3),
    ]


def storm_cells() -> list[models.DynamicConfigValue]:
    """A table column of the storm flag: STORM on red, nothing otherwise."""
    return [
        models.DynamicConfigValue(
            id_val="mappings", value=value_map(("", "transparent"), ("STORM", "red"))
        ),
        models.DynamicConfigValue(id_val="custom.cellOptions", value={"type": "color-background"}),
    ]


def storm_variable(name: str, default: str, what: str) -> builders.TextBoxVariable:
    """A storm setting for the history store's storm table, which cannot read the
    exporter's flags: set it to the exporter's --storm-rebalances or --storm-window."""
    return (
        builders.TextBoxVariable(name)
        .label(f"storm {what}")
        .description(f"The exporter's --{name.replace('_', '-')} (default {default})")
        .default_value(default)
        .current(models.VariableOption(selected=True, text=default, value=default))
    )
