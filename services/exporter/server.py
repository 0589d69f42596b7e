"""An HTTP server with a bounded number of threads and connections, and timeouts.

`http.server.ThreadingHTTPServer` starts a thread per accepted connection and lets it
wait for a request forever: 400 clients that connected and sent nothing kept 404
threads of the exporter alive. Here a connection costs a thread only once its request
has started to arrive:

- one thread accepts connections and waits, with a selector, until each is readable;
- a fixed pool of `workers` threads serves readable connections, with `timeout` on
  every read and write, and a connection still being served after twice `timeout`
  (a request trickling in byte by byte) is shut down;
- a connection that sends nothing within `timeout` is closed, and when
  `max_connections` are open the oldest idle one is closed to admit the new one, so a
  flood of idle sockets cannot lock Prometheus out.

Requests are HTTP/1.0 (one per connection), as `BaseHTTPRequestHandler` speaks by default.
"""

from __future__ import annotations

import logging
import selectors
import socket
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import suppress
from http.server import BaseHTTPRequestHandler, HTTPServer

log = logging.getLogger("groupscope.exporter.http")

# How many new connections one turn of the accept loop takes before it looks at the
# readable ones again: a flood of connects cannot starve the requests already in.
ACCEPT_BATCH = 64


def address_family(host: str, port: int) -> socket.AddressFamily:
    """IPv4 or IPv6, as the listen address resolves ("::" and "::1" are IPv6).

    Raises `OSError` (socket.gaierror) for a name that does not resolve.
    """
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    return infos[0][0]


class BoundedHTTPServer(HTTPServer):
    """`HTTPServer` serving from a fixed worker pool; see the module docstring."""

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        *,
        workers: int,
        max_connections: int,
        timeout: float,
    ) -> None:
        self.address_family = address_family(*address)
        # listen()'s backlog (socketserver's default is 5): a scraper's connects beyond
        # it are dropped and retried only after TCP's one-second retransmission timeout.
        self.request_queue_size = max_connections
        super().__init__(address, handler)
        self.workers = workers
        self.max_connections = max_connections
        self.request_timeout = timeout
        self._idle: OrderedDict[socket.socket, tuple[object, float]] = OrderedDict()
        self._busy: dict[socket.socket, float] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._wake_r, self._wake_w = socket.socketpair()
        self._pool: ThreadPoolExecutor | None = None

    # -- the accept loop ----------------------------------------------------------------
    def serve_forever(self, poll_interval: float = 1.0) -> None:
        """Accept and dispatch until `shutdown()`."""
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="http-worker")
        selector = selectors.DefaultSelector()
        self.socket.setblocking(False)
        selector.register(self.socket, selectors.EVENT_READ)
        selector.register(self._wake_r, selectors.EVENT_READ)
        try:
            while not self._stopping.is_set():
                for key, _ in selector.select(self._next_deadline(poll_interval)):
                    if key.fileobj is self.socket:
                        self._accept(selector)
                    elif key.fileobj is self._wake_r:
                        self._wake_r.recv(64)
                    else:
                        self._dispatch(selector, key.data)
                self._expire(selector)
        finally:
            for conn in list(self._idle):
                selector.unregister(conn)
                self._close(conn)
            self._idle.clear()
            selector.close()
            self._pool.shutdown(wait=True)
            self._stopped.set()

    def _next_deadline(self, poll_interval: float) -> float:
        now = time.monotonic()
        with self._lock:
            deadlines = [deadline for _, deadline in self._idle.values()][:1]
            deadlines += list(self._busy.values())
        return max(0.0, min([now + poll_interval, *deadlines]) - now)

    def _accept(self, selector: selectors.BaseSelector) -> None:
        for _ in range(ACCEPT_BATCH):
            try:
                conn, client = self.socket.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # e.g. EMFILE: try again on the next turn
                log.warning("cannot accept a connection: %s", exc)
                return
            with self._lock:
                full = len(self._idle) + len(self._busy) >= self.max_connections
            if full and self._idle:
                with self._lock:
                    oldest, _ = self._idle.popitem(last=False)
                selector.unregister(oldest)
                self._close(oldest)
            elif full:
                log.debug("%s: every connection is busy; closed", client)
                self._close(conn)
                continue
            with self._lock:
                self._idle[conn] = (client, time.monotonic() + self.request_timeout)
            selector.register(conn, selectors.EVENT_READ, conn)  # data: the socket itself

    def _dispatch(self, selector: selectors.BaseSelector, conn: socket.socket) -> None:
        selector.unregister(conn)
        with self._lock:
            client, _ = self._idle.pop(conn)
            self._busy[conn] = time.monotonic() + 2 * self.request_timeout
        assert self._pool is not None
        self._pool.submit(self._serve, conn, client).add_done_callback(_log_failure)

    def _expire(self, selector: selectors.BaseSelector) -> None:
        now = time.monotonic()
        with self._lock:
            idle = [c for c, (_, deadline) in self._idle.items() if deadline <= now]
            for conn in idle:
                del self._idle[conn]
            stuck = [c for c, deadline in self._busy.items() if deadline <= now]
            for conn in stuck:
                self._busy[conn] = float("inf")  # shut down once
        for conn in idle:
            selector.unregister(conn)
            self._close(conn)
        for conn in stuck:
            with suppress(OSError):  # wakes the worker blocked on it; the worker closes it
                conn.shutdown(socket.SHUT_RDWR)

    # -- a worker -----------------------------------------------------------------------
    def _serve(self, conn: socket.socket, client: object) -> None:
        try:
            conn.settimeout(self.request_timeout)
            self.finish_request(conn, client)
        except OSError as exc:  # the client went away or was too slow
            log.debug("%s: %s", client, exc)
        finally:
            with self._lock:
                self._busy.pop(conn, None)
            self.shutdown_request(conn)

    # -- lifecycle ----------------------------------------------------------------------
    def open_connections(self) -> int:
        with self._lock:
            return len(self._idle) + len(self._busy)

    def shutdown(self) -> None:
        """Stop the accept loop and wait for the requests in progress (idempotent)."""
        if not self._stopping.is_set():
            self._stopping.set()
            self._wake_w.send(b"x")
        if self._pool is not None:
            self._stopped.wait()

    def server_close(self) -> None:
        super().server_close()
        self._wake_r.close()
        self._wake_w.close()

    @staticmethod
    def _close(conn: socket.socket) -> None:
        with suppress(OSError):
            conn.close()


def _log_failure(future: Future[None]) -> None:
    """A handler's unexpected exception is a bug: log it with its traceback."""
    exc = future.exception()
    if exc is not None:
        log.error("request failed", exc_info=exc)
