"""Exit 0 only for a verdict that holds (the README's exit-status table): a reader that goes away does
not make a broken run read as held; the trace `trace --jsonl` writes of a broken run breaks the same
rule under check-trace; JSON that Python's reader takes but JSON does not mean (a key twice, NaN, a
nesting too deep) is an input error, exit 2, naming it; a trace with nothing to judge exits 4."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hostile import EVENT_LIMIT_S, assert_refused, call, env

HOSTILE = "hostile_schedulers"
TRACES = Path(__file__).parent / "data" / "engine-traces"
HEADER = '{"stallfree_trace": 1, "config": {"token_budget": 8, "max_seqs": 4, "kv_tokens": 64}}\n'
LATE = ["--request", "0:3000:2@0", "--budget", "1", "--kv", "4000", "--scheduler", f"{HOSTILE}:BreaksLate"]


def test_a_broken_pipe_after_a_late_break_exits_1_not_0() -> None:
    """`stallfree trace ... | head -1`: the reader takes one line and goes; the 2,000 rows before the
    break at step 2,000 fill the pipe long before, yet the status is the verdict's."""
    proc = subprocess.Popen([sys.executable, "-m", "stallfree", "trace", *LATE], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env())
    assert proc.stdout is not None and proc.stdout.readline().startswith("budget 1")
    proc.stdout.close()  # as head does
    _, err = proc.communicate(timeout=EVENT_LIMIT_S)
    assert proc.returncode == 1, err
    assert "Traceback" not in err and "Exception ignored" not in err, err


def test_a_broken_pipe_of_a_run_that_holds_exits_0() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "stallfree", "trace", "--request", "0:3000:2@0", "--budget", "1",
                             "--kv", "4000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    assert proc.stdout is not None and proc.stdout.readline()
    proc.stdout.close()
    _, err = proc.communicate(timeout=EVENT_LIMIT_S)
    assert proc.returncode == 0 and "Traceback" not in err, err


@pytest.mark.parametrize(("argv", "rule", "step"), [
    (LATE, "BUDGET", 2000),  # broken by a check of the plan: the step never ran
    (["--example", "hand", "--scheduler", "stallfree.faults.catalog:LateFirstToken"], "FIRST-TOKEN", 0),  # once it ran
], ids=["plan broken", "step broken"])
def test_trace_jsonl_of_a_broken_run_breaks_the_same_rule_under_check_trace(
        argv: list[str], rule: str, step: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "run.jsonl"
    assert call(["trace", *argv, "--jsonl", str(path)], capsys).status == 1
    last = json.loads(path.read_text().splitlines()[-1])
    assert last["step"] == step, last
    checked = call(["check-trace", str(path), "--json", "-"], capsys)
    assert checked.status == 1, checked.out[-2000:]
    verdict = json.loads(checked.out)["rules"][rule]
    assert verdict["verdict"] == "broken" and verdict["step"] == step, verdict


def test_check_trace_refuses_a_key_given_twice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An honest plan after a breaking one: with json's last-wins the break would be read away."""
    path = tmp_path / "dup.jsonl"
    path.write_text(HEADER + '{"step": 0, "add": [[0, 8, 6]], "plan": [[0, 80]], "plan": [[0, 8]], '
                             '"emitted": [0], "finished": []}\n')
    assert_refused(call(["check-trace", str(path)], capsys), str(path), "line 2", "'plan' appears twice")


def test_a_workload_with_a_key_given_twice_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "w.json"
    path.write_text('{"config": {"token_budget": 8, "max_seqs": 4, "kv_tokens": 64}, "requests": [], '
                    '"requests": [{"rid": 0, "prompt_len": 3, "max_new": 2, "arrival_step": 0}]}')
    assert_refused(call(["trace", "--workload", str(path)], capsys), "--workload", "'requests' appears twice")


def test_import_trace_refuses_a_key_given_twice_and_NaN(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = (TRACES / "vllm-0.33-v1" / "w4_kv_pressure_preempt.jsonl").read_text().splitlines()
    where = ["--workload", str(TRACES / "workloads" / "w4_kv_pressure_preempt.json"),
             "--config", str(TRACES / "workloads" / "w4_kv_pressure_preempt.config.json")]
    for name, line, named in [("dup", source[0].replace('"step": 0,', '"step": 0, "step": 0,'), "'step' appears twice"),
                              ("nan", source[0].replace('"emitted": [0, 1]', '"emitted": [0, NaN]'), "NaN")]:
        path = tmp_path / f"{name}.jsonl"
        path.write_text("\n".join([line, *source[1:]]) + "\n")
        out = tmp_path / f"{name}.out.jsonl"
        assert_refused(call(["import-trace", str(path), *where, "-o", str(out)], capsys), "line 1", named)
        assert not out.exists()


@pytest.mark.parametrize("command", ["trace", "check-trace", "import-trace"])
def test_json_nested_5000_deep_is_an_input_error(command: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    deep = "[" * 5000 + "]" * 5000
    path = tmp_path / "deep.json"
    if command == "trace":
        path.write_text(deep)
        argv = ["trace", "--workload", str(path)]
    elif command == "check-trace":
        path.write_text(HEADER + deep + "\n")
        argv = ["check-trace", str(path)]
    else:
        path.write_text(deep + "\n")
        argv = ["import-trace", str(path), "--workload", str(TRACES / "workloads" / "w4_kv_pressure_preempt.json"),
                "--config", str(TRACES / "workloads" / "w4_kv_pressure_preempt.config.json"),
                "-o", str(tmp_path / "out.jsonl")]
    assert_refused(call(argv, capsys), "nested too deeply")


def test_a_trace_with_a_header_and_no_step_exits_4_not_judged(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text(HEADER)
    ran = call(["check-trace", str(path), "--json", "-"], capsys)
    assert ran.status == 4, ran.out[-2000:]
    verdicts = {r["verdict"] for r in json.loads(ran.out)["rules"].values()}
    assert verdicts == {"not judged"}, verdicts
    path.write_text(HEADER + '{"end": true}\n')  # an end line, still no step
    assert call(["check-trace", str(path)], capsys).status == 4


def test_a_ctrl_c_wrapped_by_python_while_a_class_is_made_reads_as_interrupted() -> None:
    from stallfree import exits

    class Interrupting:
        def __set_name__(self, owner: type, name: str) -> None:
            raise KeyboardInterrupt

    try:
        type("Made", (), {"field": Interrupting()})
    except RuntimeError as error:  # Python 3.11 wraps what __set_name__ raises
        wrapped: BaseException = error
    except KeyboardInterrupt as error:  # later Pythons let it through
        wrapped = error
    assert exits.interrupted(wrapped)
    plain = RuntimeError("a bug")
    looped = RuntimeError("a cause that loops")
    looped.__context__ = ValueError()
    looped.__context__.__context__ = looped
    assert not exits.interrupted(plain) and not exits.interrupted(looped)  # the negative controls
