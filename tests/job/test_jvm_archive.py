"""The driver JVM's class-data-sharing archive: where it lives, how it is built, and that
a broken one never stops the job."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from spark_jobs import jvm_archive
from spark_jobs.jvm_archive import archive_options, archive_path

# Builds the archive with a real driver JVM and starts Spark sessions on it.
pytestmark = pytest.mark.spark

SESSION = (
    "from spark_jobs.session import spark_session; s = spark_session('local[1]'); "
    "print('rows', s.range(4).count())"
)


def test_archive_path_is_keyed_on_java_and_spark(monkeypatch) -> None:
    monkeypatch.delenv(jvm_archive.ENV, raising=False)
    first = archive_path()
    assert first is not None and first.suffix == ".jsa"
    assert first.parent == Path(sys.prefix) / "share" / "groupscope"
    import pyspark

    monkeypatch.setattr(pyspark, "__version__", "0.0.0-other")
    assert archive_path() != first  # another Spark, another archive


def test_archive_switched_off_or_elsewhere(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv(jvm_archive.ENV, "off")
    assert archive_path() is None and archive_options() == ""
    target = tmp_path / "x.jsa"
    monkeypatch.setenv(jvm_archive.ENV, str(target))
    assert archive_options() == ""  # not built: nothing to map
    target.write_bytes(b"\0")
    assert f"-XX:SharedArchiveFile={target}" in archive_options()


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("jvm") / "archive.jsa"
    done = subprocess.run(
        [sys.executable, "-m", "spark_jobs.jvm_archive"],
        env={**os.environ, jvm_archive.ENV: str(target)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return target


def test_build_dumps_checks_and_renames(built: Path) -> None:
    assert built.is_file() and built.stat().st_size > 10_000_000
    assert not list(built.parent.glob("*.partial"))  # nothing half-written left behind


def test_a_truncated_archive_falls_back_to_a_plain_start(built: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.jsa"
    broken.write_bytes(built.read_bytes()[:1_000_000])  # a JVM mapping this dies of SIGBUS
    done = subprocess.run(
        [sys.executable, "-c", SESSION],
        env={**os.environ, jvm_archive.ENV: str(broken)},
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "rows 4" in done.stdout
    assert "retrying without" in done.stderr
    assert not list(tmp_path.glob("hs_err*"))  # the crash report went to the temp dir


def test_an_unwritable_place_leaves_setup_working(monkeypatch, capsys) -> None:
    monkeypatch.setenv(jvm_archive.ENV, "/proc/groupscope-nowhere/archive.jsa")
    assert jvm_archive.main([]) == 0  # `make setup` goes on; the job runs without it
    assert "not built" in capsys.readouterr().err
