"""CPU, peak memory and the machine's load for a process tree, from /proc.

`Sampler(pid, ...)` samples, every `interval` seconds until `stop()`, the processes
under each root pid (children found by their parent pid in /proc/<pid>/stat):

- CPU: utime + stime of every live process of the tree, plus cutime + cstime, the CPU
  of the children each of them has reaped. At one instant that sum counts every
  process that ever belonged to the tree once (a reaped child's time moved into its
  parent's cutime), except descendants that outlived their parent (re-parented away
  from the tree, unless `adopt` names them). `stop()`, once the roots exited and were
  waited for, takes as the final figure the larger of the last sample and the CPU of
  the children this process reaped meanwhile, with their reaped descendants (`Reaped`),
  plus the adopted processes' as last sampled: that also holds what the roots ran
  between the last sample and the exit.
- Peak RSS: the largest sum of the tree's VmRSS seen.
- Load: the 1-minute load average (/proc/loadavg) at each sample, for the machine
  beside the measured processes.
- Where the CPU went (`breakdown()`): each process's own utime + stime as last seen,
  by role (the first root's as named, the others' by command name), and the Java
  processes' by thread name (digits dropped: executor tasks, JIT compiler, GC).
"""

from __future__ import annotations

import os
import re
import resource
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class Stat:
    """One process's /proc/<pid>/stat, the fields used here."""

    name: str
    parent: int
    own: int  # utime + stime, ticks
    reaped: int  # cutime + cstime: its reaped children's, ticks
    rss: int  # bytes


def _stat(path: str) -> Stat | None:
    try:
        text = Path(path, "stat").read_text()
    except OSError:
        return None  # gone in between
    head, tail = text.rsplit(")", 1)
    fields = tail.split()
    return Stat(
        head.split("(", 1)[1],
        int(fields[1]),
        int(fields[11]) + int(fields[12]),
        int(fields[13]) + int(fields[14]),
        int(fields[21]) * PAGE,
    )


def _stats() -> dict[int, Stat]:
    """Every process's `Stat`, by pid."""
    out = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and (stat := _stat(entry.path)) is not None:
            out[int(entry.name)] = stat
    return out


def _threads(pid: int) -> dict[int, Stat]:
    """A process's threads' `Stat`s, by thread id."""
    try:
        tasks = list(os.scandir(f"/proc/{pid}/task"))
    except OSError:
        return {}
    return {int(t.name): stat for t in tasks if (stat := _stat(t.path)) is not None}


def load_average() -> float:
    """The machine's 1-minute load average."""
    return float(Path("/proc/loadavg").read_text().split()[0])


class Reaped:
    """CPU seconds of this process's children reaped between `__init__` and `seconds()`
    (with their own reaped descendants): the exact CPU of a process tree that ran and
    was waited for in between, if nothing else was reaped meanwhile."""

    def __init__(self) -> None:
        self.start = self._now()

    @staticmethod
    def _now() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    def seconds(self) -> float:
        return self._now() - self.start


class Sampler(threading.Thread):
    """Samples the trees under `roots` (pids; `add()` more later) until `stop()`."""

    def __init__(
        self,
        *roots: int,
        root: str | None = None,
        adopt: str | None = None,
        interval: float = 0.25,
    ) -> None:
        super().__init__(daemon=True)
        self.roots = list(roots)
        self.root = root  # the first root's role (default: its command name)
        # processes outside the trees whose command line holds this text are roots too: a
        # daemon the tree started (the embedded PostgreSQL's postmaster, re-parented)
        self.adopt = adopt
        self.adopted_cpu = 0.0  # the adopted processes', at the last sample
        self.interval = interval
        self.peak = 0  # bytes
        self.cpu = 0.0  # seconds
        self.loads: list[float] = []
        self.own: dict[int, tuple[str, int]] = {}  # pid -> (role, own CPU ticks), last seen
        self.threads: dict[int, tuple[str, int]] = {}  # Java tid -> (name, ticks), last seen
        self._done = threading.Event()
        self._reaped = Reaped()
        self.start()

    def add(self, pid: int) -> None:
        self.roots.append(pid)

    def _sample(self) -> None:
        stats = _stats()
        children: dict[int, list[int]] = {}
        for pid, stat in stats.items():
            children.setdefault(stat.parent, []).append(pid)

        def under(pids: list[int]) -> list[int]:
            out, todo = [], list(pids)
            while todo:
                pid = todo.pop()
                out.append(pid)
                todo += children.get(pid, [])
            return out

        tree = under([r for r in self.roots if r in stats])
        if self.adopt:
            inside = set(tree)
            found = [p for p in stats if p not in inside and self._adopted(p)]
            adopted = list(dict.fromkeys(under(found)))  # once, if nested
            self.adopted_cpu = sum(stats[p].own + stats[p].reaped for p in adopted) / TICK
            tree += adopted
        if not tree:
            return
        self.cpu = max(self.cpu, sum(stats[p].own + stats[p].reaped for p in tree) / TICK)
        self.peak = max(self.peak, sum(stats[p].rss for p in tree))
        self.loads.append(load_average())
        for pid in tree:
            role = self.root if pid == self.roots[0] and self.root else stats[pid].name
            self.own[pid] = (role, stats[pid].own)
            if stats[pid].name == "java":
                for tid, thread in _threads(pid).items():
                    self.threads[tid] = (re.sub(r"[#\d]+", "", thread.name).strip(), thread.own)

    def _adopted(self, pid: int) -> bool:
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return False
        return self.adopt is not None and self.adopt.encode() in command

    def run(self) -> None:
        while not self._done.is_set():
            self._sample()
            self._done.wait(self.interval)

    def stop(self) -> None:
        """Stop sampling, after the roots have exited and been waited for."""
        self._done.set()
        self.join()
        self.cpu = max(self.cpu, self._reaped.seconds() + self.adopted_cpu)

    def breakdown(self, top: int = 6) -> str:
        """CPU seconds by role (each process as last seen; what no sample saw, such as
        short-lived processes and the last moments, as "unsampled") and the Java
        processes' by thread name (the largest `top`)."""
        roles: Counter[str] = Counter()
        for role, ticks in self.own.values():
            roles[role] += ticks
        threads: Counter[str] = Counter()
        for name, ticks in self.threads.values():
            threads[name] += ticks
        rest = self.cpu - sum(roles.values()) / TICK
        out = ", ".join(f"{k} {v / TICK:.1f}s" for k, v in roles.most_common())
        out += f", unsampled {rest:.1f}s" if rest >= 0.05 else ""
        top_threads = ", ".join(f"{k} {v / TICK:.1f}s" for k, v in threads.most_common(top))
        return out + (f"; Java threads: {top_threads}" if top_threads else "")

    def load(self) -> str:
        """The load average while sampled: first, highest, last."""
        if not self.loads:
            return "n/a"
        return f"{self.loads[0]:.1f}/{max(self.loads):.1f}/{self.loads[-1]:.1f}"
