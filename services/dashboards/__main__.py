"""`python -m services.dashboards` (`make dashboards`): regenerate the Grafana dashboards;
with --check, only report those that differ from the code and exit 1."""

from __future__ import annotations

import argparse
import sys

from services.dashboards import DIRECTORY, ROOT, stale, write


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m services.dashboards", description=__doc__)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    args = parser.parse_args(argv)
    where = DIRECTORY.relative_to(ROOT)
    if args.check:
        names = stale()
        for name in names:
            print(f"{where}/{name} differs from the code: run 'make dashboards'")
        return 1 if names else 0
    for name in write():
        print(f"wrote {where}/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
