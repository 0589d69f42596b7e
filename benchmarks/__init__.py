"""Benchmarks: `make bench` runs every `bench_*.py` module here (or the ones named)."""
