"""`stallfree campaign --runner ray`: a campaign's batches as Ray tasks on a local two-worker cluster
give the local pool's counts and verdicts, seed for seed; a worker killed in the middle of a batch,
or its whole node lost, has that batch run again, counted once (the totals equal the local pool's);
a scheduler that ends its process on every try is a CRASH, as in the local pool; a bad --ray-address
is exit 2, naming it."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from stallfree.faults import FAULTS
from stallfree.main import main
from stallfree.reference import Scheduler
from stallfree.spec.verdict import TIMEOUT
from stallfree.testing import campaign_ray
from stallfree.testing.campaign import CRASHED, Campaign, Tally, run
from stallfree.testing.campaign_ray import RayRunner

WAIT_S = 120.0  # generous bound on each wait for an event (a pid file, a worker's death); never asserted on

try:
    import ray
except ImportError:
    ray = None


def needs_ray() -> None:
    if ray is None:
        # Deliberate: ray is the optional `ray` extra, outside `all`, so the default install and CI lack it.
        pytest.skip("deliberate: the optional `ray` extra (outside `all`, not in CI) is not installed; "
                    "pip install 'stallfree[ray]' to run it")  # deliberate: see the line above


def counts(tally: Tally) -> tuple[Any, ...]:
    """Everything a campaign counts and judges; CPU time, which differs from run to run, left out."""
    return (tally.sims, tally.requests, tally.refused, tally.steps, tally.busy_steps, tally.tokens,
            tally.stops, tally.cancels, tally.checks, tally.violation)


@dataclass(frozen=True)
class PausesOnce:
    """The reference scheduler; but the first process to build one writes its pid to `marks`/pid and
    waits there, inside its batch, for `marks`/go: the worker the test kills mid-batch."""

    marks: str

    def __call__(self, **config: int) -> Scheduler:
        try:
            fd = os.open(Path(self.marks) / "pid", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return Scheduler(**config)
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        deadline = time.monotonic() + WAIT_S
        while not (Path(self.marks) / "go").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        return Scheduler(**config)


@dataclass(frozen=True)
class EndsItsProcess:
    """A scheduler whose construction ends the worker's process, on every try."""

    def __call__(self, **config: int) -> Scheduler:
        os._exit(0)


@dataclass(frozen=True)
class Hangs:
    """A scheduler whose construction does not return (for WAIT_S, far past the batch timeout)."""

    def __call__(self, **config: int) -> Scheduler:
        time.sleep(WAIT_S)
        return Scheduler(**config)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """A local Ray cluster: a head with no CPU for tasks and two worker nodes of one CPU each."""
    needs_ray()
    from ray.cluster_utils import Cluster

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import tests/
    local = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    for _ in range(2):
        local.add_node(num_cpus=1)
    local.wait_for_nodes()
    yield local
    local.shutdown()


@pytest.fixture
def runner(cluster: Any) -> Iterator[RayRunner]:
    connected = RayRunner(cluster.address).connect()
    yield connected
    connected.close()


@pytest.mark.parametrize("lifecycle", [False, True])
def test_ray_campaign_counts_equal_the_local_pool(runner: RayRunner, lifecycle: bool) -> None:
    assert runner.num_workers == 2
    local = run(Campaign(120, 7, Scheduler, jobs=2, lifecycle=lifecycle))
    on_ray = runner.run(Campaign(120, 7, Scheduler, lifecycle=lifecycle))
    assert counts(on_ray) == counts(local)
    assert local.violation is None and local.sims == 120


@pytest.mark.parametrize("rule", ["FCFS", "KV"])
def test_ray_campaign_finds_the_local_pools_violation(runner: RayRunner, rule: str) -> None:
    local = run(Campaign(200, 0, FAULTS[rule], jobs=2))
    on_ray = runner.run(Campaign(200, 0, FAULTS[rule]))
    assert local.violation is not None and local.violation.rule == rule
    assert counts(on_ray) == counts(local)  # the same violation (simulation, step, message, workload)


def paused_pid(marks: Path) -> int | None:
    """The pid the paused worker wrote, once written (None if it never was, within WAIT_S)."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        text = (marks / "pid").read_text() if (marks / "pid").exists() else ""
        if text:  # the file is made, then written: an empty one is not yet the pid
            return int(text)
        time.sleep(0.05)
    return None


def kill_when_paused(marks: Path, killed: list[int]) -> None:
    """Wait for the paused worker's pid, kill it (SIGKILL, mid-batch), then let any later run go on."""
    pid = paused_pid(marks)
    if pid is not None:
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)
    (marks / "go").touch()


def campaign_with_a_kill(runner: RayRunner, marks: Path) -> tuple[Tally, list[int]]:
    killed: list[int] = []
    killer = threading.Thread(target=kill_when_paused, args=(marks, killed))
    killer.start()
    try:
        tally = runner.run(Campaign(200, 3, PausesOnce(str(marks))))
    finally:
        (marks / "go").touch()
        killer.join(WAIT_S)
    return tally, killed


def test_killed_workers_batch_is_rerun_and_counted_once(runner: RayRunner, tmp_path: Path) -> None:
    local = run(Campaign(200, 3, Scheduler, jobs=2))
    on_ray, killed = campaign_with_a_kill(runner, tmp_path)
    assert len(killed) == 1, "no worker was killed: the test did not test a kill"
    assert counts(on_ray) == counts(local)  # nothing lost, nothing twice


def test_without_reruns_the_same_kill_is_a_crash(
    runner: RayRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The negative control of the test above: with Ray's reruns off, the kill loses the batch.
    monkeypatch.setattr(campaign_ray, "MAX_RERUNS", 0)
    on_ray, killed = campaign_with_a_kill(runner, tmp_path)
    assert len(killed) == 1
    assert on_ray.violation is not None and on_ray.violation.rule == CRASHED
    assert "died on each of 1 tries" in on_ray.violation.message


def test_scheduler_that_ends_its_process_is_a_crash_as_in_the_local_pool(runner: RayRunner) -> None:
    local = run(Campaign(60, 0, EndsItsProcess(), jobs=2), isolate=True)
    on_ray = runner.run(Campaign(60, 0, EndsItsProcess()))
    assert local.violation is not None and on_ray.violation is not None
    assert (on_ray.violation.rule, on_ray.sims) == (local.violation.rule, local.sims) == (CRASHED, 0)
    assert "died on each of 4 tries" in on_ray.violation.message


def test_batch_past_its_timeout_is_a_timeout_as_in_the_local_pool(runner: RayRunner) -> None:
    local = run(Campaign(50, 0, Hangs(), batch_timeout=2.0), isolate=True)
    on_ray = runner.run(Campaign(50, 0, Hangs(), batch_timeout=2.0))
    assert local.violation is not None and on_ray.violation is not None
    assert (on_ray.violation.rule, on_ray.violation.sim, on_ray.sims) == (local.violation.rule, 0, 0) == (TIMEOUT, 0, 0)


def test_cli_on_the_cluster_prints_the_local_pools_figures(
    cluster: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["campaign", "--sims", "100", "--seed", "5", "--jobs", "2", "--quiet",
                 "--json", str(tmp_path / "local.json")]) == 0
    local_out = capsys.readouterr().out
    assert main(["campaign", "--sims", "100", "--seed", "5", "--quiet", "--runner", "ray",
                 "--ray-address", cluster.address, "--json", str(tmp_path / "ray.json")]) == 0
    ray_out = capsys.readouterr().out
    assert f"Ray ({cluster.address}, 2 worker CPUs)" in ray_out
    local, on_ray = (json.loads((tmp_path / f"{name}.json").read_text()) for name in ("local", "ray"))
    same = ("sims", "requests", "refused", "steps", "busy_steps", "tokens", "checks", "rules", "violation")
    assert {k: on_ray[k] for k in same} == {k: local[k] for k in same}
    assert (local["runner"], on_ray["runner"]) == ("local", "ray")
    assert local_out.splitlines()[-1] == ray_out.splitlines()[-1]  # "no rule broken (checked: ...)"


def test_cli_bad_ray_address_is_exit_2_naming_flag_and_value(capsys: pytest.CaptureFixture[str]) -> None:
    needs_ray()
    assert main(["campaign", "--sims", "1", "--runner", "ray", "--ray-address", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("stallfree campaign: --ray-address '127.0.0.1:1': no Ray cluster answers")
    assert "Traceback" not in err
    assert main(["campaign", "--sims", "1", "--runner", "ray", "--ray-address", "not an address"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("stallfree campaign: --ray-address 'not an address': ") and "Traceback" not in err


def test_cli_ray_address_without_the_ray_runner_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["campaign", "--sims", "1", "--ray-address", "127.0.0.1:1"]) == 2
    assert capsys.readouterr().err == "stallfree campaign: --ray-address '127.0.0.1:1': needs --runner ray\n"


def test_cli_ray_runner_without_ray_is_exit_2_naming_the_extra(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError, installed or not
    assert main(["campaign", "--sims", "1", "--runner", "ray"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("stallfree campaign: --runner ray: ray is not installed")
    assert "pip install 'stallfree[ray]'" in err


def parent_pid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def lose_the_paused_workers_node(cluster: Any, marks: Path, lost: list[int]) -> None:
    """Wait for the paused worker's pid, then end its whole node (raylet and workers, no grace); then let
    any later run go on (on the other node)."""
    pid = paused_pid(marks)
    for node in list(cluster.worker_nodes):
        if pid is not None and node.all_processes["raylet"][0].process.pid == parent_pid(pid):
            cluster.remove_node(node, allow_graceful=False)
            lost.append(pid)
    (marks / "go").touch()


def test_lost_nodes_batch_is_rerun_and_counted_once(cluster: Any, runner: RayRunner, tmp_path: Path) -> None:
    # Last in the file: the cluster ends it with two worker nodes again, one of them new (added here, in
    # the main thread: a node installs signal handlers).
    lost: list[int] = []
    loser = threading.Thread(target=lose_the_paused_workers_node, args=(cluster, tmp_path, lost))
    loser.start()
    try:
        on_ray = runner.run(Campaign(200, 3, PausesOnce(str(tmp_path))))
    finally:
        (tmp_path / "go").touch()
        loser.join(WAIT_S)
        cluster.add_node(num_cpus=1)
    assert len(lost) == 1, "the paused worker's node was not found, so none was lost"
    assert counts(on_ray) == counts(run(Campaign(200, 3, Scheduler, jobs=2)))  # nothing lost, nothing twice
