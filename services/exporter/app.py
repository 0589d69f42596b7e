"""The exporter process: a refresh loop and an HTTP server for /metrics, /healthz, /readyz.

Every `interval` the refresh loop reads a snapshot of the history store (every cluster
it holds), polls the log-end offsets of every committed partition from each cluster's
brokers that it was given, computes lag, and renders the
exposition once (plain and gzip). Scrapes are served from those bytes, so a scrape
never waits for the database or the cluster, and costs the same with 10 groups or
10,000. Only the families that follow the clock (seconds since a stored time, the
exporter's own counters) are rendered per scrape.

The server starts before the store is there. If the store is unreachable or not
migrated (at start or later), the previous metrics stay up, the age gauges (counting
from a stored moment) keep moving, `groupscope_exporter_refresh_errors_total` counts
every failed refresh, and /readyz says why; the loop retries every interval, each
attempt bounded by the engine's connect timeout. Each change of state is logged once.

- `/metrics`: the exposition (gzip when the scraper accepts it), plus prometheus-client's
  standard process and Python collectors under their usual names (`process_*`,
  `python_info`, `python_gc_*`), which node and process dashboards expect.
- `/healthz`: 200 while the refresh loop is alive (liveness).
- `/readyz`: 200 once a refresh has succeeded and every live source of the streaming
  job (one that reported within `source_stale_after_s`) has caught up with
  `__consumer_offsets` and is not degraded; 503 with the reason otherwise.
- `/status`: lag status by Burrow's rules as JSON (`services.exporter.status`), every
  group or `?group=NAME` with its partitions' windows; 503 before the first refresh
  with lag, or without `--bootstrap-servers`.
"""

from __future__ import annotations

import gzip
import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs

import numpy as np
from prometheus_client import (
    CollectorRegistry,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from sqlalchemy import Engine

from services.exporter.exposition import ExporterStats, Options, Rendered, prepare
from services.exporter.lag import Fetch, LagPollError, LagResult, OffsetHistory
from services.exporter.lagstatus import CommitWindows
from services.exporter.rebalancelag import RebalanceLagWatch
from services.exporter.server import BoundedHTTPServer
from services.exporter.snapshot import (
    Offsets,
    PipelineRow,
    StoreSnapshot,
    only_groups,
    read_snapshot,
)
from services.exporter.status import (
    AmbiguousGroupError,
    StatusView,
    group_document,
    groups_document,
)
from services.groupfilter import KEEP_ALL, GroupFilter
from services.store.clusters import DEFAULT_CLUSTER
from services.store.errors import SchemaOutdatedError, StoreError
from services.store.revision import head_revision

log = logging.getLogger("groupscope.exporter")


@dataclass(frozen=True)
class ExporterConfig:
    host: str = "0.0.0.0"
    port: int = 9308
    interval_s: float = 15.0
    storm_rebalances: int = 5
    storm_window_s: float = 600.0
    per_partition: bool = False
    history_depth: int = 16
    # A source whose status is older than this does not count for readiness.
    source_stale_after_s: float = 600.0
    # HTTP: a request must arrive (and a response be written) within the timeout.
    http_timeout_s: float = 10.0
    max_connections: int = 64
    # --groups-include, --groups-exclude: the groups whose series are published.
    groups: GroupFilter = KEEP_ALL
    http_workers: int = 4
    # A refresh still waiting on the store after this (or two intervals) counts as failed.
    stall_s: float = 30.0


EMPTY = prepare(StoreSnapshot(0.0, [], {}, {}, [], [], Offsets()), None, Options())


@dataclass
class Exposition:
    """What every scrape gets until the next refresh (plus the clocked families)."""

    plain: bytes = EMPTY.static
    gzipped: bytes = gzip.compress(EMPTY.static, 1)
    rendered: Rendered = field(default_factory=lambda: EMPTY)

    @property
    def samples(self) -> int:
        return self.rendered.samples


@dataclass(frozen=True)
class Readiness:
    ready: bool = False
    reason: str = "no refresh has completed yet"
    state: str = ""  # what a change of state is judged by when the reason carries numbers

    @property
    def key(self) -> str:
        return self.state or self.reason


class Exporter:
    """Refreshes metrics from the store (and Kafka) and serves them over HTTP."""

    def __init__(
        self,
        config: ExporterConfig,
        engine: Engine,
        fetch_log_end: Mapping[str, Fetch] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`fetch_log_end` polls log-end offsets, per cluster; the partitions of a
        cluster without one get no lag."""
        self.config = config
        self.engine = engine
        self.fetch_log_end = dict(fetch_log_end or {})
        self.clock = clock
        self.history = OffsetHistory(config.history_depth)
        self.windows = CommitWindows()
        self.rebalance_lag = RebalanceLagWatch()
        self.status_view: StatusView | None = None
        self._status_lock = threading.Lock()  # the windows: refresh writes, /status reads
        self.stats = ExporterStats()
        self.exposition = Exposition()
        self.readiness = Readiness()
        self.options = Options(
            config.per_partition, config.storm_rebalances, config.source_stale_after_s
        )
        self.schema = head_revision()
        self.sources: dict[str, tuple[bool, str | None]] = {}  # source: (stale, degraded)
        self._first_refresh = threading.Event()
        self.process = CollectorRegistry(auto_describe=True)
        # Without a namespace, as every Python exporter publishes them.
        ProcessCollector(registry=self.process)
        PlatformCollector(registry=self.process)
        GCCollector(registry=self.process)
        self._stop = threading.Event()
        self._loop: threading.Thread | None = None
        self._server: BoundedHTTPServer | None = None
        self._lock = threading.Lock()

    # -- refreshing ---------------------------------------------------------------------
    def refresh(self) -> bool:
        """One refresh; returns False (keeping the previous metrics) if the store failed."""
        started = time.perf_counter()
        now = self.clock()
        try:
            snapshot = read_snapshot(
                self.engine,
                self.config.storm_window_s,
                datetime.fromtimestamp(now, UTC),
                self.schema,
            )
        except SchemaOutdatedError as exc:
            self.stats.refresh_errors += 1
            self._set_readiness(Readiness(False, str(exc)))
            return False
        except StoreError as exc:
            # The message varies within one outage (a dropped connection, then refused
            # ones): the state is "unavailable", logged once with its first message.
            self.stats.refresh_errors += 1
            self._set_readiness(Readiness(False, str(exc), type(exc).__name__))
            return False
        snapshot = only_groups(snapshot, self.config.groups)
        lag = self._lag(snapshot, now)
        self.stats.refresh_seconds = time.perf_counter() - started
        self.stats.last_refresh = now
        rendered = prepare(snapshot, lag, self.options)
        with self._lock:
            self.exposition = Exposition(
                rendered.static, gzip.compress(rendered.static, 1), rendered
            )
        self._note_sources(snapshot)
        self._set_readiness(_readiness(snapshot, self.config.source_stale_after_s))
        return True

    def _set_readiness(self, readiness: Readiness) -> None:
        """Keep the readiness; log it when its state changed (not on every refresh)."""
        previous, self.readiness = self.readiness, readiness
        if readiness.key == previous.key:
            return
        if readiness.ready:
            log.info("ready: %s", readiness.reason)
        else:
            log.warning("not ready: %s", readiness.reason)

    def _note_sources(self, snapshot: StoreSnapshot) -> None:
        """Log each source turning stale or degraded, and back, once."""
        stale_after = self.config.source_stale_after_s
        seen: dict[str, tuple[bool, str | None]] = {}
        for p in snapshot.pipeline:
            stale = snapshot.taken_at - p.updated_at > stale_after
            degraded = (p.degraded_reason or "no reason given") if p.degraded else None
            seen[p.source] = (stale, degraded)
            was_stale, was_degraded = self.sources.get(p.source, (False, None))
            if stale and not was_stale:
                log.warning(
                    "source %s has not reported for %s (--source-stale-after %s): it no "
                    "longer counts for /readyz; 'groupscope db forget-source %s --cluster %s' "
                    "removes it",
                    p.source,
                    _duration(snapshot.taken_at - p.updated_at),
                    _duration(stale_after),
                    p.source,
                    p.cluster,
                )
            elif was_stale and not stale:
                log.info("source %s reports again", p.source)
            if degraded != was_degraded:
                if degraded is None:
                    log.info("source %s is no longer degraded", p.source)
                else:
                    log.warning("source %s is degraded: %s", p.source, degraded)
        self.sources = seen

    def _lag(self, snapshot: StoreSnapshot, now: float) -> LagResult | None:
        if not self.fetch_log_end:
            return None
        offsets = snapshot.offsets
        topic_index, partitions = offsets.distinct_partitions()
        names = [topic for _, topic in offsets.topics]
        ends = np.full(len(partitions), -1, np.int64)
        polled = 0
        started = time.perf_counter()
        for cluster, fetch in self.fetch_log_end.items():
            ours = np.fromiter((c == cluster for c, _ in offsets.topics), bool, len(names))
            mine = ours[topic_index]
            if not mine.any():
                continue
            polled += int(mine.sum())
            try:
                ends[mine] = fetch(names, topic_index[mine], partitions[mine])
            except LagPollError as exc:  # a cluster outage must not stop the store's metrics
                self.stats.lag_poll_errors += 1
                log.warning("%s", exc if cluster == DEFAULT_CLUSTER else f"{cluster}: {exc}")
                ends[mine] = exc.ends
        self.stats.lag_poll_seconds = time.perf_counter() - started
        self.stats.lag_partitions = polled
        # A topic's history is its cluster's: "cluster/topic" (no cluster name has a '/').
        topics = [f"{cluster}/{topic}" for cluster, topic in offsets.topics]
        self.history.record(self.history.keys(topics, topic_index, partitions), ends, now)
        rows = self.history.rows_of(self.history.keys(topics, offsets.topic, offsets.partition))
        lag = self.history.lag(rows, offsets.committed, now)
        # Which committed rows' log ends this poll read (-1: not read).
        keys = (topic_index << 32) | partitions  # sorted, as distinct_partitions gives them
        read = ends[np.searchsorted(keys, (offsets.topic << 32) | offsets.partition)] >= 0
        lag.rebalance = self.rebalance_lag.update(snapshot, lag, read, now)
        with self._status_lock:
            lag.status = self._lag_status(offsets, rows, lag, now)
        return lag

    def _lag_status(
        self, offsets: Offsets, rows: np.ndarray, lag: LagResult, now: float
    ) -> np.ndarray:
        """Burrow's status of every committed partition: each refresh adds the commits it
        finds new to the windows (with the lag seen now), then judges them; the log end
        counts as recent over as many polls as a window holds commits."""
        keys = self.windows.keys(offsets.pairs, offsets.pair, offsets.partition)
        has_time = offsets.commit_ms >= 0
        window_rows = np.full(len(offsets), -1, np.int64)
        window_rows[has_time] = self.windows.observe(
            keys[has_time],
            offsets.committed[has_time],
            offsets.commit_ms[has_time].astype(np.float64),
            lag.lag[has_time],
        )
        status = np.zeros(len(offsets), np.int64)
        recent = self.history.lowest_recent(rows[has_time], self.windows.intervals)
        status[has_time] = self.windows.evaluate(
            window_rows[has_time], lag.lag[has_time], recent, now
        )
        self.status_view = StatusView(now, offsets, lag.lag, status, window_rows, lag.rebalance)
        return status

    def lag_status(
        self, group: str | None, cluster: str | None = None
    ) -> tuple[int, dict[str, Any]]:
        """(HTTP status, document) for /status (every group) or /status?group=NAME
        (&cluster=NAME)."""
        with self._status_lock:
            view = self.status_view
            if view is None:
                reason = (
                    "no lag status yet: the first refresh has not finished"
                    if self.fetch_log_end
                    else "no lag status: the exporter polls no log-end offsets "
                    "(start it with --bootstrap-servers)"
                )
                return 503, {"error": reason}
            if group is None:
                return 200, groups_document(view)
            try:
                document = group_document(view, self.windows, group, cluster)
            except AmbiguousGroupError as exc:
                return 400, {"error": str(exc)}
        if document is None:
            return 404, {"error": f"group {group!r} has no partition with a lag status"}
        return 200, document

    def _run(self) -> None:
        while not self._stop.is_set():
            attempt = threading.Thread(target=self.refresh, name="refresh-attempt", daemon=True)
            attempt.start()
            self._watch(attempt)
            self._first_refresh.set()
            self._stop.wait(self.config.interval_s)

    def _watch(self, attempt: threading.Thread) -> None:
        """Wait for a refresh, counting each `stall_s` it hangs as a failed refresh.

        Connecting is bounded by the engine's connect timeout, but a query to a database
        that froze (a paused VM, a partition that drops packets) waits for TCP to give
        up, or forever on a Unix socket: meanwhile the errors count and /readyz says so.
        """
        started = time.monotonic()
        stall = max(self.config.stall_s, 2 * self.config.interval_s)
        deadline = started + stall
        while attempt.is_alive() and not self._stop.is_set():
            attempt.join(0.5)
            if attempt.is_alive() and time.monotonic() >= deadline:
                deadline += stall
                self.stats.refresh_errors += 1
                waited = _duration(time.monotonic() - started)
                self._set_readiness(
                    Readiness(
                        False,
                        f"the history store has not answered a refresh for {waited}",
                        "stalled",
                    )
                )
                self._first_refresh.set()

    # -- serving ------------------------------------------------------------------------
    def start(self, wait: bool = True) -> None:
        """Serve, then refresh in a background loop; with `wait`, return once the first
        refresh has been tried (it may have failed: the loop retries).

        Raises `OSError` when the address cannot be listened on.
        """
        c = self.config
        self._server = BoundedHTTPServer(
            (c.host, c.port),
            _handler(self),
            workers=c.http_workers,
            max_connections=c.max_connections,
            timeout=c.http_timeout_s,
        )
        threading.Thread(target=self._server.serve_forever, name="http", daemon=True).start()
        self._loop = threading.Thread(target=self._run, name="refresh", daemon=True)
        self._loop.start()
        while wait and not self._first_refresh.wait(0.5) and self._loop.is_alive():
            pass

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the exporter is not serving")
        return self._server.server_address[1]

    @property
    def metrics_url(self) -> str:
        """Where to scrape, as a person on this machine would open it."""
        host = self.config.host
        shown = "localhost" if host in ("0.0.0.0", "::", "") else host
        if ":" in shown:
            shown = f"[{shown}]"  # an IPv6 address
        return f"http://{shown}:{self.port}/metrics"

    def stop(self) -> None:
        """Stop serving and refreshing; calling it again does nothing."""
        self._stop.set()
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._loop is not None:
            self._loop.join(timeout=30)

    def wait(self) -> None:
        """Block until stopped (Ctrl-C or SIGTERM in the command)."""
        while not self._stop.wait(1.0):
            pass

    def alive(self) -> bool:
        return self._loop is not None and self._loop.is_alive()

    def metrics(self, accept_gzip: bool) -> tuple[tuple[bytes, bytes], bool]:
        """The body for a scrape, as the refresh's part and the clock's, sent one after
        the other (at 100,000 groups the refresh's part is 150 MB of text: a copy per
        scrape to join them would double it); and whether it is gzipped (two gzip
        members, which a reader decompresses as one stream, RFC 1952)."""
        with self._lock:
            current = self.exposition
        live = current.rendered.clocked(self.stats, self.clock()) + generate_latest(self.process)
        if accept_gzip:
            return (current.gzipped, gzip.compress(live, 1)), True
        return (current.plain, live), False


def _readiness(snapshot: StoreSnapshot, stale_after_s: float) -> Readiness:
    """Ready when every live source (one that reported within `stale_after_s`) has
    caught up and is not degraded; sources that stopped reporting do not count."""
    if not snapshot.pipeline:
        return Readiness(False, "the streaming job has not reported yet (no pipeline_status)")
    now = snapshot.taken_at
    live: list[PipelineRow] = []
    stale: list[str] = []
    for p in snapshot.pipeline:
        if now - p.updated_at > stale_after_s:
            stale.append(p.source)
        else:
            live.append(p)
    if not live:
        age = min(now - p.updated_at for p in snapshot.pipeline)
        return Readiness(
            False,
            f"no source of the streaming job has reported for {_duration(age)} "
            f"(--source-stale-after {_duration(stale_after_s)}): is the job running?",
            "stale",
        )
    degraded = [p for p in live if p.degraded]
    if degraded:
        first = degraded[0]
        since = ""
        if first.degraded_since is not None:
            since = f" since {datetime.fromtimestamp(first.degraded_since, UTC):%Y-%m-%d %H:%M:%SZ}"
        return Readiness(
            False,
            f"the streaming job is degraded on {first.source}{since}: "
            f"{first.degraded_reason or 'no reason given'}",
        )
    behind = [p for p in live if not p.caught_up]
    if behind:
        first = behind[0]
        count = "" if first.records_behind is None else f", {first.records_behind} records behind"
        return Readiness(
            False,
            f"the streaming job is catching up on {first.source}{count}",
            f"catching up on {first.source}",
        )
    ignored = ""
    if stale:
        ignored = (
            f" (not counted, no report for over {_duration(stale_after_s)}: {', '.join(stale)})"
        )
    return Readiness(True, "the streaming job has caught up" + ignored)


def _duration(seconds: float) -> str:
    """`42s`, `10m`, `3h5m`: how long, for a person."""
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m" + (f"{s % 60}s" if s % 60 else "")
    return f"{s // 3600}h" + (f"{s % 3600 // 60}m" if s % 3600 // 60 else "")


def _handler(exporter: Exporter) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "groupscope-exporter"

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                accept = "gzip" in (self.headers.get("Accept-Encoding") or "")
                parts, gzipped = exporter.metrics(accept)
                self._send(200, parts, CONTENT_TYPE_LATEST, gzipped)
            elif path == "/healthz":
                ok = exporter.alive()
                self._send(200 if ok else 503, b"ok\n" if ok else b"refresh loop stopped\n")
            elif path == "/readyz":
                r = exporter.readiness
                self._send(200 if r.ready else 503, (r.reason + "\n").encode())
            elif path == "/status":
                query = parse_qs(self.path.split("?", 1)[1]) if "?" in self.path else {}
                groups, clusters = query.get("group"), query.get("cluster")
                code, document = exporter.lag_status(
                    groups[0] if groups else None, clusters[0] if clusters else None
                )
                body = (json.dumps(document) + "\n").encode()
                self._send(code, body, "application/json")
            elif path == "/":
                self._send(200, INDEX, "text/html; charset=utf-8")
            else:
                self._send(404, b"not found: try /metrics, /status, /healthz or /readyz\n")

        def _send(
            self,
            status: int,
            body: bytes | tuple[bytes, ...],
            content_type: str = "text/plain; charset=utf-8",
            gzipped: bool = False,
        ) -> None:
            parts = (body,) if isinstance(body, bytes) else body
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(sum(len(p) for p in parts)))
            if gzipped:
                self.send_header("Content-Encoding", "gzip")
            self.end_headers()
            for part in parts:
                self.wfile.write(part)

        def log_message(self, format: str, *args: object) -> None:
            log.debug("%s %s", self.address_string(), format % args)

    return Handler


INDEX = b"""<html><head><title>groupscope exporter</title></head><body>
<h1>groupscope exporter</h1>
<ul><li><a href="/metrics">/metrics</a></li><li><a href="/healthz">/healthz</a></li>
<li><a href="/readyz">/readyz</a></li>
<li><a href="/status">/status</a> (lag status by Burrow's rules)</li></ul></body></html>
"""
