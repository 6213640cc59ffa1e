"""`stallfree serve --design paged` as users run it: vLLM's OpenAI-compatible server on 127.0.0.1 (tiny
model, dummy weights, engine core in its own process) takes a burst of concurrent requests over HTTP,
streamed and not, some clients disconnecting mid-stream, some ending on a stop string. Every answer
arrives; the greedy texts are those of vLLM's own scheduler on the same prompts (run in process here);
a disconnected stream's text is a prefix of the full one; the monitor's report says every rule holds."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from vllm_guard import require_vllm

require_vllm()

from vllm import SamplingParams  # noqa: E402

from stallfree.serving.burst import burst, standard_asks  # noqa: E402
from stallfree.serving.offline import Arrival, build, drive  # noqa: E402
from stallfree.serving.tiny import model_folder, text  # noqa: E402

PROMPTS = [text([(i * 31 + j) % 900 + 2 for j in range(10 + i * 7)]) for i in range(6)]
STOPS = {5: "w609 w211 w609"}  # prompt 5's greedy answer holds it (see test_vllm_serving)
ENGINE = ["--load-format", "dummy", "--dtype", "float32", "--enforce-eager", "--block-size", "32",
          "--max-model-len", "128", "--num-gpu-blocks-override", "6", "--max-num-seqs", "4",
          "--max-num-batched-tokens", "32", "--kv-cache-memory-bytes", str(64 << 20)]
HEALTH_POLLS = 600  # half a second each: a cold start on a busy CPU takes minutes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Path, subprocess.Popen[bytes]]:
    port, report = free_port(), tmp_path_factory.mktemp("serve") / "report.json"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "VLLM_CPU_OMP_THREADS_BIND": "nobind", "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "stallfree.main", "serve", "--design", "paged", "--json", str(report), "--",
               model_folder(), *ENGINE, "--host", "127.0.0.1", "--port", str(port)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(HEALTH_POLLS):
            if healthy(port) or process.poll() is not None:
                break
            time.sleep(0.5)
        assert process.poll() is None and healthy(port), "the server did not come up"
        yield port, report, process
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()


def test_a_burst_over_http_is_answered_as_vllms_own_scheduler_answers_it(server: tuple) -> None:
    port, report, _ = server
    asks = standard_asks(PROMPTS, STOPS)
    answers = burst(port, model_folder(), asks)
    theirs = drive(build(num_blocks=6, max_model_len=128, budget=32, max_seqs=4), [
        Arrival(p, SamplingParams(max_tokens=16, temperature=0.0, stop=[STOPS[i]] if i in STOPS else []))
        for i, p in enumerate(PROMPTS)]).outputs
    assert all(a.status == 200 for a in answers)
    for k, (ask, answer) in enumerate(zip(asks, answers, strict=True)):
        expected = theirs[k // 2].outputs[0]
        if answer.disconnected:  # an answer whose chunks came fewer than its disconnect point (a loaded
            assert ask.disconnect_after is not None  # machine merges steps in a chunk) ran to its end: below
            assert expected.text.startswith(answer.text) and answer.text
        else:
            assert (answer.text, answer.finish_reason) == (expected.text, expected.finish_reason), k
    assert {answers[10].finish_reason, answers[11].finish_reason} == {"stop"}  # the stop string, both ways
    assert any(a.disconnected for a in answers)
    verdicts = {}
    for _ in range(100):  # the report is written when the scheduler goes idle, after the aborts land
        verdicts = {r: v["verdict"] for r, v in json.loads(report.read_text()).get("rules", {}).items()} \
            if report.exists() else {}
        if verdicts.get("PROGRESS") == "holds":
            break
        time.sleep(0.2)
    assert verdicts and set(verdicts.values()) == {"holds"}, verdicts
    assert json.loads(report.read_text())["stops"] >= 2  # the two stop strings: stops inside the engine
