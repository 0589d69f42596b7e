"""Burrow (LinkedIn's consumer lag checker; Debian's `burrow` 1.2.1) as a contender in
the stream benchmark's race, with the ZooKeeper it needs (Debian's `zookeeper`).

`run_burrow(directory, bootstrap, topic, expected, tails)` writes ZooKeeper's config
(its own data directory, a free loopback port) and Burrow's TOML (one cluster, a
consumer module of class `kafka` reading `topic` from the oldest offset, the HTTP server
on a free loopback port, `expire-group` longer than the commits' age, logging to a
file), starts both, and waits until Burrow's HTTP API
(`/v3/kafka/<cluster>/consumer/<group>`) shows, for every group of `expected`, its
final committed offset of every partition. It polls the `tails` (the groups whose
commit is the last offset commit of a log partition) until they are complete, then
checks every group. The first record is taken as seen when the consumer list first
has a group.

Burrow learns a topic's partitions from its cluster module's ListOffsets requests and
drops every commit for a topic it does not know ("no topic"), so the consumed topics
must exist before it starts. Burrow 1.2.1 sends ListOffsets v0, which Kafka 4 no
longer serves (KIP-896): against Kafka 4 no commit ever shows; `run_burrow` then
returns a result with `error` set to what Burrow's log and the broker's say.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from benchmarks.proctree import Sampler

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
CLUSTER = "bench"
# Sarama's protocol versions for Kafka 2.1, the newest release Burrow 1.2.1 names
# (2.2.0 and later: "Unknown Kafka Version"); 0.10.x makes it fetch with Fetch v3 or
# older, which Kafka 4 refuses as well.
KAFKA_VERSION = "2.1.0"
FIRST_TIMEOUT_S = 90.0  # for the first group to show: Burrow fetches offsets every 10 s
STALL_TIMEOUT_S = 120.0  # for the offsets shown to move, once groups show

# {group: {(topic, partition): committed offset}}
Offsets = Mapping[str, Mapping[tuple[str, int], int]]


class BurrowUnavailableError(RuntimeError):
    """Burrow or ZooKeeper is not installed (`make bench-deps`)."""


@dataclass
class BurrowRun:
    """One run of Burrow (and its ZooKeeper) over the records: seconds from launch."""

    first: float | None  # the first group shown
    last: float | None  # every group's final offsets shown
    wall: float  # launch to both processes' exit
    cpu: float  # Burrow's and ZooKeeper's processes, seconds
    peak: int
    load: str
    breakdown: str
    error: str | None = None  # why it never showed every group's final offsets
    log: str = ""  # Burrow's warnings and errors, and the broker's refusals (`diagnose`)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def check_installed() -> str:
    burrow = shutil.which("Burrow")
    if burrow is None or not ZOOKEEPER_JAR.is_file() or shutil.which("java") is None:
        raise BurrowUnavailableError(
            "Burrow, ZooKeeper or Java missing: `make bench-deps` (apt-get install burrow "
            "zookeeper)"
        )
    return burrow


def zookeeper_config(directory: Path, port: int) -> Path:
    (directory / "zookeeper").mkdir(parents=True)
    path = directory / "zoo.cfg"
    path.write_text(
        f"tickTime=2000\ndataDir={directory / 'zookeeper'}\nclientPort={port}\n"
        "clientPortAddress=127.0.0.1\nadmin.enableServer=false\n"
    )
    return path


def burrow_config(
    directory: Path, bootstrap: str, topic: str, zookeeper: int, http: int, expire: int
) -> None:
    """`burrow.toml` in `directory` (Burrow reads `--config-dir`)."""
    servers = json.dumps([bootstrap])
    (directory / "burrow.toml").write_text(
        f"""[general]
pidfile="{directory / "burrow.pid"}"

[logging]
filename="{directory / "burrow.log"}"
level="info"

[zookeeper]
servers=["127.0.0.1:{zookeeper}"]
timeout=6
root-path="/burrow"

[client-profile.bench]
client-id="burrow-bench"
kafka-version="{KAFKA_VERSION}"

[cluster.{CLUSTER}]
class-name="kafka"
servers={servers}
client-profile="bench"
topic-refresh=60
offset-refresh=10

[consumer.{CLUSTER}]
class-name="kafka"
cluster="{CLUSTER}"
servers={servers}
client-profile="bench"
offsets-topic="{topic}"
start-latest=false
group-blacklist=""

[httpserver.default]
address="127.0.0.1:{http}"

[storage.default]
class-name="inmemory"
workers=20
intervals=10
expire-group={expire}
min-distance=1
"""
    )


def wait_serving(port: int, process: subprocess.Popen, timeout: float = 60.0) -> None:
    """Until ZooKeeper answers its `srvr` command (it listens before it serves)."""
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"ZooKeeper exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as connection:
                connection.sendall(b"srvr")
                if b"Mode: standalone" in connection.makefile("rb").read():
                    return
                raise OSError("not serving yet")
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"ZooKeeper did not listen on {port} in {timeout:.0f}s"
                ) from None
            time.sleep(0.1)


class Api:
    """Burrow's HTTP API, v3."""

    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}/v3/kafka/{CLUSTER}"

    def _get(self, path: str) -> dict | None:
        try:
            with urllib.request.urlopen(self.base + path, timeout=10) as response:
                return json.load(response)
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return None  # not listening yet

    def groups(self) -> list[str]:
        body = self._get("/consumer")
        return list(body.get("consumers") or []) if body else []

    def offsets(self, group: str) -> dict[tuple[str, int], int]:
        """The newest offset Burrow holds for each of the group's partitions."""
        body = self._get(f"/consumer/{urllib.request.quote(group, safe='')}")
        out: dict[tuple[str, int], int] = {}
        for topic, partitions in ((body or {}).get("topics") or {}).items():
            for p, partition in enumerate(partitions or []):
                ring = [o for o in (partition or {}).get("offsets") or [] if o]
                if ring:
                    out[(topic, p)] = ring[-1]["offset"]
        return out


def diagnose(directory: Path, broker_log: Path) -> str:
    """Burrow's distinct warnings and errors, and the broker's refusals of its requests."""
    lines = []
    seen: dict[tuple, int] = {}
    log = directory / "burrow.log"
    for line in log.read_text(errors="replace").splitlines() if log.exists() else []:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if entry.get("level") in ("warn", "error", "panic", "fatal"):
            key = (
                entry["level"],
                entry.get("msg"),
                entry.get("sarama_error") or entry.get("error") or entry.get("reason"),
            )
            seen[key] = seen.get(key, 0) + 1
    for (level, msg, why), n in seen.items():
        lines.append(f"burrow.log: {n} x {level} {msg!r} {why or ''}".rstrip())
    out = directory / "burrow.out"
    if out.exists():
        lines += [f"burrow stdout: {x}" for x in out.read_text().splitlines()[:3]]
    refused = [
        x.strip()
        for x in broker_log.read_text(errors="replace").splitlines()
        if "UnsupportedVersionException" in x
    ]
    if refused:
        lines.append(f"broker: {len(refused)} x {sorted(set(refused))[0][:200]}")
    return "\n".join(lines)


def run_burrow(
    directory: Path,
    bootstrap: str,
    topic: str,
    expected: Offsets,
    tails: list[str],
    oldest_commit_ms: int,
    broker_log: Path,
) -> BurrowRun:
    burrow = check_installed()
    directory.mkdir(parents=True)
    zk_port, http_port = free_port(), free_port()
    expire = int(time.time() - oldest_commit_ms / 1000) + 86_400
    zoo = zookeeper_config(directory, zk_port)
    burrow_config(directory, bootstrap, topic, zk_port, http_port, expire)
    api = Api(http_port)
    launched = time.monotonic()
    with open(directory / "zookeeper.out", "wb") as zk_out:
        zookeeper = subprocess.Popen(
            [
                "java",
                "-Xmx256m",
                "-cp",
                str(ZOOKEEPER_JAR),
                "org.apache.zookeeper.server.ZooKeeperServerMain",
                str(zoo),
            ],
            stdout=zk_out,
            stderr=subprocess.STDOUT,
        )
    tree = Sampler(zookeeper.pid, root="zookeeper")
    first = last = None
    error = None
    process = None
    try:
        wait_serving(zk_port, zookeeper)
        with open(directory / "burrow.out", "wb") as out:
            process = subprocess.Popen(
                [burrow, "--config-dir", str(directory)],
                cwd=directory,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        tree.add(process.pid)
        first, last, error = _watch(api, process, expected, tails, launched)
    finally:
        for p in (process, zookeeper):
            if p is not None and p.poll() is None:
                p.terminate()
        for p in (process, zookeeper):
            if p is not None:
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        wall = time.monotonic() - launched
        tree.stop()
    if error:
        error += "\n" + diagnose(directory, broker_log)
    return BurrowRun(first, last, wall, tree.cpu, tree.peak, tree.load(), tree.breakdown(), error)


def _watch(
    api: Api, process: subprocess.Popen, expected: Offsets, tails: list[str], launched: float
) -> tuple[float | None, float | None, str | None]:
    """(first, last, error): seconds from launch until the first group and until every
    group's final offsets show; error when that did not happen."""
    first = None
    while first is None:
        if process.poll() is not None:
            return None, None, f"Burrow exited with {process.returncode}"
        if api.groups():
            first = time.monotonic() - launched
        elif time.monotonic() - launched > FIRST_TIMEOUT_S:
            return None, None, f"no consumer group shown in {FIRST_TIMEOUT_S:.0f}s"
        else:
            time.sleep(0.1)
    pending = list(tails)
    progress = time.monotonic()
    tails_done = None
    seen: dict[str, dict[tuple[str, int], int]] = {}
    while True:
        if process.poll() is not None:
            return first, None, f"Burrow exited with {process.returncode}"
        checked = time.monotonic()
        shown = {g: api.offsets(g) for g in pending}
        if any(shown[g] != seen.get(g) for g in pending):
            progress = checked  # Burrow is still moving the groups' offsets
        seen.update(shown)
        pending = [g for g in pending if shown[g] != expected[g]]
        if not pending:
            # the tails are the log partitions' last commits: once they show, Burrow has
            # read every record; the other groups are checked (again, while Burrow's
            # storage workers, which run apart, are behind)
            tails_done = tails_done or checked
            pending = [g for g in expected if api.offsets(g) != expected[g]]
            if not pending:
                return first, tails_done - launched, None
            tails_done = None
        if time.monotonic() - progress > STALL_TIMEOUT_S:
            wrong = pending[0]
            return (
                first,
                None,
                f"{len(pending):,} of {len(expected):,} groups without their final offsets "
                f"after {STALL_TIMEOUT_S:.0f}s without progress; e.g. {wrong}: Burrow "
                f"shows {len(api.offsets(wrong))} of its {len(expected[wrong])} partitions",
            )
        time.sleep(0.5)
