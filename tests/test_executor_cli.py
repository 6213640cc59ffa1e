"""`stallfree run`: exit 0 when every rule holds and the equivalence check passes, 1 when a rule
breaks (a wrong scheduler's plan refused with its rule ID), 2 on bad arguments, naming the field."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from stallfree.main import main
from stallfree.spec import Arrival, Cancel, Config, Workload

torch = pytest.importorskip("torch")

EXAMPLE = Path(__file__).parents[1] / "docs" / "examples" / "preempting.json"
SMALL = Workload(Config(16, 4, 256), (Arrival(0, 6, 5, 0), Arrival(1, 30, 3, 1), Arrival(2, 4, 2, 2)))


@pytest.fixture
def workload(tmp_path):  # type: ignore[no-untyped-def]
    path = tmp_path / "w.json"
    path.write_text(SMALL.dumps())
    return path


def test_run_one_rank_prints_steps_latencies_verdicts_and_output_checks(workload, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    out_json = tmp_path / "run.json"
    code = main(["run", "--tp", "1", "--workload", str(workload), "--json", str(out_json)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "TTFT steps" in out and "TPOT ms" in out
    assert "DECODE-FIRST     holds" in out
    assert "EXACTNESS        holds" in out and "ISOLATION        holds" in out
    assert "ACCURACY fp8    measured" in out
    data = json.loads(out_json.read_text())
    assert data["violation"] is None and data["checks"]["exactness"]["ok"] and data["checks"]["isolation"]["ok"]
    assert [len(r["outputs"]) for r in data["requests"]] == [5, 3, 2]
    run = data["run"]
    assert (run["tp"], run["dtype"], run["token_budget"], run["source"]["kind"]) == (1, "fp32", 16, "random")
    assert run["layer_dtypes"]["lm_head"] == "torch.float32" and run["torch"] == torch.__version__


def test_budget_wrong_scheduler_refused_with_rule_id(workload, capsys) -> None:  # type: ignore[no-untyped-def]
    code = main(["run", "--tp", "1", "--workload", str(workload), "--no-equivalence",
                 "--scheduler", "stallfree.faults.catalog:FreeDecodes"])
    out = capsys.readouterr().out
    assert code == 1
    assert "BUDGET           BROKEN at step" in out


@pytest.mark.parametrize(("argv", "named"), [
    (["--tp", "3"], "tp"),
    (["--model", "llama-9"], "model"),
    (["--scheduler", "no_such_module:Factory"], "no_such_module"),
    (["--temperature", "-1"], "temperature"),
    (["--workload", "/no/such/file.json"], "file.json"),
    pytest.param(["--device", "cuda", "--tp", "1"], "CUDA device",
                 marks=pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")),
])
def test_bad_arguments_exit_2_naming_the_field(argv: list[str], named: str, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["run", *argv]) == 2
    assert named in capsys.readouterr().err


def test_verdicts_show_a_rule_broken_where_it_is_not_listed() -> None:
    # TOKENS is judged on the real path too (a token from a request that ran no position), but it is
    # not one of the six real-path rules listed: the break still shows, under its rule ID.
    from stallfree.executor.engine.job import JobResult
    from stallfree.executor.runs.report import verdicts

    lines = verdicts(JobResult("x", violation=("TOKENS", 3, "two tokens", "real path")), ("BUDGET",))
    assert lines[-1] == "TOKENS           BROKEN at step 3 (real path): two tokens"
    assert "BUDGET           not judged (held until step 3, where TOKENS broke)" in lines
    listed = verdicts(JobResult("x", violation=("BUDGET", 2, "too many", "monitor")), ("BUDGET",))
    assert listed[-1] == "BUDGET           BROKEN at step 2: too many"  # listed: no extra line


SCHEDULERS = '''
from stallfree.reference import Scheduler


def Raising(**config):
    raise RuntimeError("no scheduler today")


class NegativeN(Scheduler):
    def schedule(self):
        return tuple((rid, -1) for rid, _ in super().schedule())
'''


@pytest.fixture
def schedulers(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    (tmp_path / "odd_schedulers.py").write_text(SCHEDULERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "odd_schedulers"


def one_line_error(err: str, *named: str) -> None:
    lines = [line for line in err.splitlines() if line.startswith("stallfree run:")]
    assert "Traceback" not in err and len(lines) == 1, err
    assert all(n in lines[0] for n in named), (named, lines[0])


@pytest.mark.parametrize(("argv", "named"), [
    (["--temperature", "nan"], ("--temperature", "nan")),
    (["--kv", "1000000000000"], ("kv_tokens=1000000000000", "bytes per rank")),
    (["--model", "smollm2", "--tp", "5"], ("ffn=1536", "tp=5")),
    (["--prompt", "hi"], ("--prompt",)),
])
def test_run_refuses_bad_values_in_one_line(argv: list[str], named: tuple[str, ...], capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["run", "--tp", "1", *argv]) == 2
    one_line_error(capsys.readouterr().err, *named)


def test_run_factory_that_raises_is_a_bad_scheduler(schedulers, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["run", "--tp", "1", "--scheduler", f"{schedulers}:Raising"]) == 2
    one_line_error(capsys.readouterr().err, "--scheduler", "Raising", "no scheduler today")


def test_run_negative_n_past_a_narrow_monitor_breaks_one_entry_on_the_real_path(schedulers, workload, capsys) -> None:  # type: ignore[no-untyped-def]
    """With the monitor checking FCFS only, a plan entry with n = -1 reaches the executor, which
    refuses it naming the rule (exit 1, no traceback)."""
    code = main(["run", "--tp", "1", "--workload", str(workload), "--scheduler", f"{schedulers}:NegativeN",
                 "--rules", "FCFS", "--no-equivalence"])
    captured = capsys.readouterr()
    assert code == 1 and "Traceback" not in captured.err
    real_path = captured.out.split("-- real path")[1].split("-- monitor")[0]
    assert "ONE-ENTRY        BROKEN at step 0: rid 0 is given n=-1" in real_path


def test_run_timeout_holds_at_tp1(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["run", "--tp", "1", "--model", "wide", "--timeout", "0.5"]) == 3  # a hang, not a broken rule
    one_line_error(capsys.readouterr().err, "--timeout 0.5", "longer than 0.5 s")


def test_run_seed_past_2_to_the_44_runs(workload, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["run", "--tp", "1", "--workload", str(workload), "--seed", str(10**14)]) == 0, capsys.readouterr()


def test_run_where_every_request_is_refused_judges_nothing(capsys) -> None:  # type: ignore[no-untyped-def]
    """NEVER-FIT refuses the only request: no rule is said to hold and no output check is judged."""
    tiny = Workload(Config(16, 4, 64), (Arrival(0, 60, 10, 0),))
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "w.json"
        path.write_text(tiny.dumps())
        assert main(["run", "--tp", "1", "--workload", str(path)]) == 0
    out = capsys.readouterr().out
    assert " holds" not in out and "BUDGET           not judged (no step ran)" in out
    assert "EXACTNESS        not judged" in out


def test_run_with_stops_and_cancels_reports_how_each_request_ended(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """The default workload with the stop token 1447 (rid 2 samples it as its 19th token, rid 4 as
    its 5th) and rid 1 cancelled before step 10: the JSON and the table say length, stop or cancel."""
    out_json = tmp_path / "run.json"
    code = main(["run", "--tp", "1", "--stop-token", "1447", "--cancel", "1@10", "--json", str(out_json)])
    out = capsys.readouterr().out
    assert code == 0, out
    data = json.loads(out_json.read_text())
    ends = {r["rid"]: (r["finish_reason"], len(r["outputs"])) for r in data["requests"]}
    assert ends == {0: ("length", 24), 1: ("cancel", 10), 2: ("stop", 19), 3: ("length", 24), 4: ("stop", 5)}
    assert data["cancels"] == [{"rid": 1, "before_step": 10, "accepted": True}]
    assert data["checks"]["exactness"]["num_stops"] == 2 and data["checks"]["exactness"]["ok"]
    assert "stop at step" in out
    assert "CANCEL           holds" in out.split("-- monitor")[0]  # judged on the real path too


def test_run_paged_at_tp2_preempts_and_recomputes_exactly(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """`--scheduler paged` on the documented preempting workload, two ranks: rid 2 is preempted and
    recomputed, every paged rule holds on the real path and in the paged monitor, and RECOMPUTE holds."""
    out_json = tmp_path / "run.json"
    code = main(["run", "--tp", "2", "--scheduler", "paged", "--workload", str(EXAMPLE),
                 "--json", str(out_json)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "BLOCKS           holds" in out.split("-- monitor")[0] and "PREEMPT-ORDER    holds" in out
    data = json.loads(out_json.read_text())
    assert [r["num_preemptions"] for r in data["requests"]] == [0, 0, 1, 0]
    assert data["checks"]["recompute"]["ok"] is True and data["checks"]["exactness"]["ok"] is True
    assert any(s["preempted"] == [2] for s in data["steps"])


@pytest.mark.parametrize(("argv", "named"), [
    (["--stop-token", "-3"], "--stop-token"), (["--stop-token", "4096"], "--stop-token 4096"),
    (["--cancel", "1"], "--cancel"), (["--cancel", "a@2"], "--cancel"),
])
def test_run_refuses_bad_stops_and_cancels(argv: list[str], named: str, capsys) -> None:  # type: ignore[no-untyped-def]
    try:
        code = main(["run", "--tp", "1", *argv])
    except SystemExit as exit_:  # argparse's own usage error: the same status
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2 and named in err and "Traceback" not in err, err


def test_a_workload_files_own_cancels_are_played_on_the_real_path(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """A `--workload` file's cancels are the run's, beside any `--cancel`: rid 1 (30 prompt tokens, a
    budget of 16) is cancelled before step 1, mid-prompt; CANCEL is listed and holds. Before, the run
    replaced them with the command line's (none here) and every request ran to its end."""
    path, out_json = tmp_path / "w.json", tmp_path / "run.json"
    path.write_text(replace(SMALL, cancels=(Cancel(1, 1),)).dumps())
    code = main(["run", "--tp", "1", "--workload", str(path), "--cancel", "0@2", "--json", str(out_json)])
    out = capsys.readouterr().out
    assert code == 0, out
    data = json.loads(out_json.read_text())
    assert data["cancels"] == [{"rid": 1, "before_step": 1, "accepted": True},
                               {"rid": 0, "before_step": 2, "accepted": True}]
    ends = {r["rid"]: r["finish_reason"] for r in data["requests"]}
    assert (ends[0], ends[1], ends[2]) == ("cancel", "cancel", "length")
    assert "CANCEL           holds" in out.split("-- monitor")[0]


def test_a_workload_files_pending_cancel_is_refused_before_the_launch(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """The executor runs each step whole: a cancel marked pending cannot happen there, so it is a usage
    error naming the file, the rid and the step, not a crash of the run."""
    path = tmp_path / "w.json"
    path.write_text(replace(SMALL, cancels=(Cancel(1, 2, pending=True),)).dumps())
    code = main(["run", "--tp", "1", "--workload", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and f"--workload {path}: cancel of rid 1 at step 2: pending=true" in err, err
    assert "Traceback" not in err
