"""Java sources of the tests, compiled against the Kafka 4.3.1 classpath.

``make kafka`` writes the classpath beside the virtualenv (``share/groupscope/
kafka.classpath``). `compiled` runs ``javac`` on one source file once per version of its
text: the classes are cached under ``share/groupscope/<cache>/<hash of the source>``, so a
session only pays for javac when the source changed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SHARE = Path(sys.prefix) / "share" / "groupscope"
CLASSPATH_FILE = SHARE / "kafka.classpath"
JAVAC_TIMEOUT_S = 300


class JavaUnavailable(RuntimeError):
    """Java, the Kafka classpath or a compiled class cannot be had; the reason says which."""


def kafka_classpath() -> str:
    """The Kafka 4.3.1 classpath written by ``make kafka``."""
    if not CLASSPATH_FILE.is_file():
        raise JavaUnavailable(f"no Kafka classpath at {CLASSPATH_FILE} (run `make kafka`)")
    classpath = CLASSPATH_FILE.read_text().strip()
    missing = [jar for jar in classpath.split(os.pathsep) if not Path(jar).exists()]
    if not classpath or missing:
        raise JavaUnavailable(f"the Kafka classpath lists missing jars: {missing[:3]}")
    return classpath


def compiled(source: Path, classpath: str, cache: str) -> Path:
    """The folder holding `source`'s classes, compiled once per version of its text into
    ``SHARE/cache/<digest>`` (renamed into place, so that concurrent sessions compiling
    the same source never see a half-written folder)."""
    javac = shutil.which("javac")
    if javac is None:
        raise JavaUnavailable("javac is not installed")
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    target = SHARE / cache / digest
    if (target / f"{source.stem}.class").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{digest}-", dir=target.parent))
    result = subprocess.run(
        [javac, "-nowarn", "-d", str(staging), "-cp", classpath, str(source)],
        capture_output=True,
        text=True,
        timeout=JAVAC_TIMEOUT_S,
        check=False,
    )
    if result.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise JavaUnavailable(f"javac failed:\n{result.stderr.strip()}")
    try:
        staging.rename(target)
    except OSError:  # another session compiled the same source first
        shutil.rmtree(staging, ignore_errors=True)
    return target
