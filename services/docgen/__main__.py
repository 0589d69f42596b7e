"""`python -m services.docgen [--check]`: write (or check) the generated pages of docs/."""

from __future__ import annotations

import argparse
import sys

from services.docgen import pages


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m services.docgen", description=__doc__)
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if a page is out of date"
    )
    args = parser.parse_args()
    problems = pages.undocumented()
    for line in problems:
        print(f"configuration: {line}", file=sys.stderr)
    if args.check:
        out_of_date = pages.stale()
        for path in out_of_date:
            print(f"{path} is out of date: run 'make docs'", file=sys.stderr)
        return 1 if problems or out_of_date else 0
    for path in pages.write():
        print(f"wrote {path}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
