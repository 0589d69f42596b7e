"""The exporter process: a refresh loop and an HTTP server for /metrics, /healthz, /readyz.

Every `interval` the refresh loop reads a snapshot of the history store, polls the
log-end offsets of every committed partition from Kafka, computes lag, and renders the
exposition once (plain and gzip). Scrapes are served from those bytes, so a scrape
never waits for the database or the cluster, and costs the same with 10 groups or
10,000. If the store or the cluster is unreachable, the previous metrics stay up and
the error counters grow.

- `/metrics`: the exposition (gzip when the scraper accepts it), plus the process
  metrics of prometheus-client's ProcessCollector under `groupscope_exporter_`.
- `/healthz`: 200 while the refresh loop is alive (liveness).
- `/readyz`: 200 once a refresh has succeeded and the streaming job reports that it has
  caught up with `__consumer_offsets`; 503 with the reason otherwise.
"""

from __future__ import annotations

import gzip
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
from prometheus_client import CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from sqlalchemy import Engine

from services.exporter.exposition import ExporterStats, Options, render
from services.exporter.lag import Fetch, LagResult, OffsetHistory
from services.exporter.snapshot import StoreSnapshot, read_snapshot
from services.store.errors import StoreError

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


@dataclass
class Exposition:
    """What every scrape gets until the next refresh."""

    plain: bytes = b""
    gzipped: bytes = b""
    samples: int = 0


@dataclass
class Readiness:
    ready: bool = False
    reason: str = "no refresh has completed yet"


class Exporter:
    """Refreshes metrics from the store (and Kafka) and serves them over HTTP."""

    def __init__(
        self,
        config: ExporterConfig,
        engine: Engine,
        fetch_log_end: Fetch | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.engine = engine
        self.fetch_log_end = fetch_log_end
        self.clock = clock
        self.history = OffsetHistory(config.history_depth)
        self.stats = ExporterStats()
        self.exposition = Exposition()
        self.readiness = Readiness()
        self.options = Options(config.per_partition, config.storm_rebalances)
        self.process = CollectorRegistry(auto_describe=True)
        ProcessCollector(namespace="groupscope_exporter", registry=self.process)
        self._stop = threading.Event()
        self._loop: threading.Thread | None = None
        self._server: ThreadingHTTPServer | None = None
        self._lock = threading.Lock()

    # -- refreshing ---------------------------------------------------------------------
    def refresh(self) -> bool:
        """One refresh; returns False (keeping the previous metrics) if the store failed."""
        started = time.perf_counter()
        now = self.clock()
        try:
            snapshot = read_snapshot(
                self.engine, self.config.storm_window_s, datetime.fromtimestamp(now, UTC)
            )
        except StoreError as exc:
            self.stats.refresh_errors += 1
            self.readiness = Readiness(False, str(exc))
            log.warning("%s", exc)
            return False
        lag = self._lag(snapshot, now)
        self.stats.refresh_seconds = time.perf_counter() - started
        self.stats.last_refresh = now
        plain, samples = render(snapshot, lag, self.stats, self.options)
        with self._lock:
            self.exposition = Exposition(plain, gzip.compress(plain, 1), samples)
        self.readiness = _readiness(snapshot)
        return True

    def _lag(self, snapshot: StoreSnapshot, now: float) -> LagResult | None:
        if self.fetch_log_end is None:
            return None
        offsets = snapshot.offsets
        topic_index, partitions = offsets.distinct_partitions()
        started = time.perf_counter()
        try:
            ends = self.fetch_log_end(offsets.topics, topic_index, partitions)
        except Exception as exc:  # a cluster outage must not stop the store's metrics
            self.stats.lag_poll_errors += 1
            log.warning("log-end offsets not polled: %s", exc)
            ends = np.full(len(partitions), -1, np.int64)
        self.stats.lag_poll_seconds = time.perf_counter() - started
        self.stats.lag_partitions = len(partitions)
        self.history.record(self.history.keys(offsets.topics, topic_index, partitions), ends, now)
        rows = self.history.rows_of(
            self.history.keys(offsets.topics, offsets.topic, offsets.partition)
        )
        return self.history.lag(rows, offsets.committed, now)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.refresh()
            self._stop.wait(self.config.interval_s)

    # -- serving ------------------------------------------------------------------------
    def start(self) -> None:
        """Refresh once, then serve and keep refreshing in background threads."""
        self.refresh()
        handler = _handler(self)
        self._server = ThreadingHTTPServer((self.config.host, self.config.port), handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="http", daemon=True).start()
        self._loop = threading.Thread(target=self._run, name="refresh", daemon=True)
        self._loop.start()

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
        return f"http://{shown}:{self.port}/metrics"

    def stop(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._loop is not None:
            self._loop.join(timeout=30)

    def wait(self) -> None:
        """Block until stopped (Ctrl-C or SIGTERM in the command)."""
        while not self._stop.wait(1.0):
            pass

    def alive(self) -> bool:
        return self._loop is not None and self._loop.is_alive()

    def metrics(self, accept_gzip: bool) -> tuple[bytes, bool]:
        """The body for a scrape and whether it is gzipped."""
        with self._lock:
            current = self.exposition
        process = generate_latest(self.process)
        if accept_gzip:
            return current.gzipped + gzip.compress(process, 1), True
        return current.plain + process, False


def _readiness(snapshot: StoreSnapshot) -> Readiness:
    if not snapshot.pipeline:
        return Readiness(False, "the streaming job has not reported yet (no pipeline_status)")
    behind = [p for p in snapshot.pipeline if not p.caught_up]
    if behind:
        first = behind[0]
        count = "" if first.records_behind is None else f", {first.records_behind} records behind"
        return Readiness(False, f"the streaming job is catching up on {first.source}{count}")
    return Readiness(True, "the streaming job has caught up")


def _handler(exporter: Exporter) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "groupscope-exporter"

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                accept = "gzip" in (self.headers.get("Accept-Encoding") or "")
                body, gzipped = exporter.metrics(accept)
                self._send(200, body, CONTENT_TYPE_LATEST, gzipped)
            elif path == "/healthz":
                ok = exporter.alive()
                self._send(200 if ok else 503, b"ok\n" if ok else b"refresh loop stopped\n")
            elif path == "/readyz":
                r = exporter.readiness
                self._send(200 if r.ready else 503, (r.reason + "\n").encode())
            elif path == "/":
                self._send(200, INDEX, "text/html; charset=utf-8")
            else:
                self._send(404, b"not found: try /metrics, /healthz or /readyz\n")

        def _send(
            self,
            status: int,
            body: bytes,
            content_type: str = "text/plain; charset=utf-8",
            gzipped: bool = False,
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            if gzipped:
                self.send_header("Content-Encoding", "gzip")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            log.debug("%s %s", self.address_string(), format % args)

    return Handler


INDEX = b"""<html><head><title>groupscope exporter</title></head><body>
<h1>groupscope exporter</h1>
<ul><li><a href="/metrics">/metrics</a></li><li><a href="/healthz">/healthz</a></li>
<li><a href="/readyz">/readyz</a></li></ul></body></html>
"""
