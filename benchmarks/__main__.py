"""Run the benchmarks: `python -m benchmarks [NAME ...]`.

Each `benchmarks/bench_*.py` exposes `main() -> None` and prints its own figures.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time

import benchmarks
from benchmarks.settings import BenchSettingsError, settings


def main(argv: list[str]) -> int:
    names = sorted(
        m.name for m in pkgutil.iter_modules(benchmarks.__path__) if m.name.startswith("bench_")
    )
    wanted = [n if n.startswith("bench_") else f"bench_{n}" for n in argv]
    unknown = sorted(set(wanted) - set(names))
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; have: {', '.join(names)}")
        return 2
    try:
        settings()
    except BenchSettingsError as exc:
        print(exc, file=sys.stderr)
        return 2
    for name in wanted or names:
        print(f"== {name}", flush=True)
        started = time.perf_counter()
        importlib.import_module(f"benchmarks.{name}").main()
        print(f"== {name} done in {time.perf_counter() - started:.1f}s\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
