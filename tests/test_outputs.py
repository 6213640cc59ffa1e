"""Outputs that lose nothing: a device or a FIFO given as an output is written in place (never
replaced by a renamed file), a symlink's target is written and the link kept, an output that names
an input or another output is refused (exit 2) before anything is read or written, and SIGTERM ends
a command as Ctrl-C does (status 130, no temporary file left, no worker left)."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hostile import EVENT_LIMIT_S, assert_refused, call, children, env, wait_for

HAND = ["trace", "--example", "hand"]


def test_json_to_dev_null_writes_into_it_and_leaves_the_device(capsys: pytest.CaptureFixture[str]) -> None:
    before = os.stat(os.devnull)
    assert call([*HAND, "--json", os.devnull, "--jsonl", os.devnull], capsys).status == 0
    after = os.stat(os.devnull)
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)


def test_json_to_a_fifo_is_written_into_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    read: list[str] = []
    reader = threading.Thread(target=lambda: read.append(fifo.read_text()), daemon=True)
    reader.start()
    assert call([*HAND, "--json", str(fifo)], capsys).status == 0
    reader.join(EVENT_LIMIT_S)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert json.loads(read[0])["rules"]["BUDGET"]["verdict"] == "holds"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.fifo"]  # no temporary file beside it


@pytest.mark.parametrize("flag", ["--json", "--jsonl"])
def test_an_output_through_a_symlink_writes_its_target(flag: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "real.out"
    target.write_text("old")
    link = tmp_path / "link.out"
    link.symlink_to(target)
    assert call([*HAND, flag, str(link)], capsys).status == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() != "old" and target.read_text().strip()


@pytest.mark.parametrize("argv", [
    ["check-trace", "TRACE", "--json", "TRACE"],
    ["trace", "--workload", "WORKLOAD", "--jsonl", "WORKLOAD"],
    ["trace", "--workload", "WORKLOAD", "--json", "WORKLOAD"],
    ["trace", "--example", "hand", "--jsonl", "OUT", "--json", "OUT"],
    ["trace", "--workload", "WORKLOAD", "--jsonl", "LINK"],  # a symlink to the input
], ids=["check-trace X --json X", "trace --workload W --jsonl W", "trace --workload W --json W",
        "two outputs", "an output linked to the input"])
def test_an_output_that_names_an_input_or_another_output_is_refused(
        argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.jsonl"
    assert call([*HAND, "--jsonl", str(trace)], capsys).status == 0
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps({"config": {"token_budget": 8, "max_seqs": 2, "kv_tokens": 64},
                                    "requests": [{"rid": 0, "prompt_len": 3, "max_new": 2, "arrival_step": 0}]}))
    (tmp_path / "link").symlink_to(workload)
    names = {"TRACE": trace, "WORKLOAD": workload, "OUT": tmp_path / "out", "LINK": tmp_path / "link"}
    before = {p: p.read_text() for p in (trace, workload)}
    ran = call([str(names.get(a, a)) for a in argv], capsys)
    assert_refused(ran, "an output may not name an input or another output")
    assert {p: p.read_text() for p in (trace, workload)} == before
    assert not (tmp_path / "out").exists()


def test_import_trace_refuses_to_write_over_its_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    traces = Path(__file__).parent / "data" / "engine-traces"
    steps = tmp_path / "steps.jsonl"
    steps.write_text((traces / "vllm-0.33-v1" / "w4_kv_pressure_preempt.jsonl").read_text())
    before = steps.read_text()
    ran = call(["import-trace", str(steps), "--workload", str(traces / "workloads" / "w4_kv_pressure_preempt.json"),
                "--config", str(traces / "workloads" / "w4_kv_pressure_preempt.config.json"), "-o", str(steps)], capsys)
    assert_refused(ran, "--output", "is also STEPS")
    assert steps.read_text() == before


def test_sigterm_to_trace_is_an_interrupt_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "stallfree", "trace", "--example", "hand", "--timeout", "600",
                             "--scheduler", "hostile_schedulers:HangsInSchedule", "--jsonl", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    wait_for(lambda: any(tmp_path.iterdir()) or proc.poll() is not None, "the trace's temporary file")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=EVENT_LIMIT_S)
    assert proc.returncode == 130 and err.strip().splitlines()[-1] == "stallfree trace: interrupted", err
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_sigterm_to_a_campaign_stops_it_and_its_workers() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "stallfree", "campaign", "--sims", "3000", "--jobs", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    wait_for(lambda: len(children(proc.pid)) >= 2 or proc.poll() is not None, "the campaign's two workers")
    workers = children(proc.pid)
    proc.send_signal(signal.SIGTERM)  # to the campaign alone, as a supervisor sends it
    _, err = proc.communicate(timeout=EVENT_LIMIT_S)
    assert proc.returncode == 130 and err.strip().splitlines()[-1] == "stallfree campaign: interrupted", err
    assert "Traceback" not in err
    wait_for(lambda: not any(os.path.exists(f"/proc/{pid}") and _alive(pid) for pid in workers), "every worker gone")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False
