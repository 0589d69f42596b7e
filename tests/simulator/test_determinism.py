"""Identical seeds give identical output; another seed gives another history."""

from __future__ import annotations

from tests.simulator.helpers import run


def _files(root):
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_identical_seeds_give_identical_output(tmp_path):
    first = run(tmp_path / "a", "mixed", seed=7, transactional=0.2, aborted=0.5)
    second = run(tmp_path / "b", "mixed", seed=7, transactional=0.2, aborted=0.5)
    assert first.rows
    assert _files(first.out) == _files(second.out)


def test_identical_seeds_give_identical_parquet(tmp_path):
    first = run(tmp_path / "a", "kip848,crash-loop", seed=3, fmt="parquet")
    second = run(tmp_path / "b", "kip848,crash-loop", seed=3, fmt="parquet")
    assert first.rows == second.rows
    assert _files(first.out / "truth") == _files(second.out / "truth")


def test_another_seed_gives_another_history(tmp_path):
    first = run(tmp_path / "a", "crash-loop", seed=1)
    second = run(tmp_path / "b", "crash-loop", seed=2)
    assert first.rows != second.rows


def test_a_group_does_not_depend_on_its_neighbours(tmp_path):
    alone = run(tmp_path / "a", "crash-loop", seed=5)
    together = run(tmp_path / "b", "crash-loop,steady", seed=5)
    assert alone.truth["generations"] == [
        g for g in together.truth["generations"] if g["group"] == "crash-loop-0"
    ]
