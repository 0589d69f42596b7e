"""`groupscope workload`: help, one-line errors for bad input (exit 2), and a real run on
tansu stopped by SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from services.cli import build_parser, main
from services.workload.commands import build_config

ROOT = Path(__file__).resolve().parents[2]


def test_help_explains_the_groups_the_steps_and_gives_examples(capsys):
    with pytest.raises(SystemExit):
        main(["workload", "--help"])
    text = capsys.readouterr().out
    for word in ("cooperative-sticky", "--kip848", "crash-loop", "scale-down", "examples:"):
        assert word in text
    assert "GROUPSCOPE_BOOTSTRAP_SERVERS" in text


@pytest.mark.parametrize(
    "flags, message",
    [
        ([], "give --bootstrap-servers"),
        (["-b"], "--members must be at least 1"),
        (["-b", "--members", "0"], "--members must be at least 1"),
        (["-b", "--steps", "scale-up,reboot"], "--steps: unknown step 'reboot'"),
        (["-b", "--duration", "soon"], "--duration: bad duration 'soon'"),
        (["-b", "--step-interval", "0s"], "--step-interval must be positive"),
        (["-b", "--rate", "0"], "--rate must be positive"),
        (["-b", "--replication-factor", "0"], "--replication-factor must be at least 1"),
        (["-b", "--cycles", "0"], "--cycles must be at least 1"),
        (["-b", "--prefix", "a b"], "--prefix must be a non-empty name"),
        (["-b", "--kafka-config", "acks"], "--kafka-config expects KEY=VALUE"),
        (["-b", "--kafka-config", "no.such.property=1"], "--kafka-config: group "),
    ],
)
def test_bad_input_is_one_line_and_exit_status_2(flags, message, capsys, monkeypatch):
    monkeypatch.delenv("GROUPSCOPE_BOOTSTRAP_SERVERS", raising=False)
    if flags[:1] == ["-b"]:
        # a port nothing listens on: every case must fail before connecting
        flags = ["--bootstrap-servers", "127.0.0.1:9", *flags[1:]]
        if message.startswith("--members must") and "--members" not in flags:
            flags += ["--members", "-1"]
    assert main(["workload", *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("groupscope workload: ") and message in err, err
    assert "\n" not in err


def test_environment_variables_are_the_flags_defaults(monkeypatch):
    monkeypatch.setenv("GROUPSCOPE_BOOTSTRAP_SERVERS", "broker:9092")
    monkeypatch.setenv("GROUPSCOPE_WORKLOAD_KIP848", "true")
    monkeypatch.setenv("GROUPSCOPE_WORKLOAD_PREFIX", "demo")
    monkeypatch.setenv("GROUPSCOPE_WORKLOAD_MEMBERS", "2")
    monkeypatch.setenv("GROUPSCOPE_WORKLOAD_STEP_INTERVAL", "45s")
    monkeypatch.setenv("GROUPSCOPE_WORKLOAD_STEPS", "crash-loop")
    config = build_config(build_parser().parse_args(["workload"]))
    assert config.bootstrap_servers == "broker:9092"
    assert [(g.name, g.assignor, g.members, g.max_members) for g in config.groups] == [
        ("demo-range", "range", 2, 4),
        ("demo-cooperative", "cooperative-sticky", 2, 4),
        ("demo-kip848", None, 2, 4),
    ]
    assert config.topics == ("demo-orders", "demo-payments")
    assert (config.step_interval_s, config.steps) == (45.0, ("crash-loop",))


def _children(pid: int) -> set[int]:
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's zombie stays if nothing reaps it, as here)."""
    try:
        return "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def test_sigterm_stops_every_member_cleanly_and_kip848_is_reported(kafka_broker, tmp_path):
    """tansu has no KIP-848 (ConsumerGroupHeartbeat): the group gets no assignment, and
    the workload says so instead of failing; the classic groups run on."""
    prefix = f"cli-{uuid.uuid4().hex[:8]}"
    health = tmp_path / "alive"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "services.cli",
            "workload",
            "--bootstrap-servers",
            kafka_broker.bootstrap_servers,
            "--prefix",
            prefix,
            "--members",
            "1",
            "--kip848",
            "--join-timeout",
            "6s",
            "--step-interval",
            "10m",
            "--health-file",
            str(health),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    lines: list[str] = []
    warned = threading.Event()

    def read() -> None:
        for line in process.stderr:  # type: ignore[union-attr]
            lines.append(line.rstrip())
            if f"warning: {prefix}-kip848" in line:
                warned.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert warned.wait(45), "\n".join(lines)
        members = _children(process.pid)
        assert len(members) >= 3  # one process per member (and multiprocessing's helper)
        assert time.time() - health.stat().st_mtime < 5
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=40)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    reader.join(5)
    assert process.returncode == 0, "\n".join(lines)
    assert any("stopping: every member leaves its group" in line for line in lines)
    # multiprocessing's resource tracker ends on its own once the parent has gone
    deadline = time.monotonic() + 10
    while (left := [pid for pid in members if _running(pid)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in left]
    assert "KIP-848 (group.protocol=consumer) needs Apache Kafka 4.0" in out
    summary = {line.split(" ")[0]: line for line in out.splitlines()}
    assert "0 rebalance callbacks" in summary[f"{prefix}-kip848"]
    assert "1 members, 1 started, 1 stopped, 0 crashed" in summary[f"{prefix}-range"]
    assert "exited unexpectedly" not in "\n".join(lines)
