"""The kit's robustness, each with a scheduler that triggers it: a refused config is skipped and
reported; exploration goes on past a crash; the shrinker stays in the contract's domain; a rule
already broken never resurfaces as PROTOCOL and its consequences are not reported as other rules'
breaks; a partial judgement is labelled; a rule the target declares not applicable says why."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from stallfree.conformance.isolation.outcome import CRASH, Outcome
from stallfree.conformance.kit import FAIL, NOT_APPLICABLE, NOT_JUDGED, PASS, conform
from stallfree.conformance.kit.report import render
from stallfree.conformance.kit.shrink import Shrinker, verdicts
from stallfree.spec import PROTOCOL, Arrival, Config, Workload

TARGETS = textwrap.dedent('''
    from stallfree.reference import Scheduler
    from stallfree.faults.catalog import SkipAhead


    def refuses_small_budgets(token_budget, max_seqs, kv_tokens):
        """Like an engine that cannot run a budget below its slots."""
        if token_budget < max_seqs:
            raise ValueError(f"max_num_batched_tokens ({token_budget}) must be >= max_num_seqs ({max_seqs})")
        return Scheduler(token_budget=token_budget, max_seqs=max_seqs, kv_tokens=kv_tokens)


    def refuses_everything(token_budget, max_seqs, kv_tokens):
        raise ValueError("no config suits me")


    class CrashesWithOneSlot(SkipAhead):
        """Breaks FCFS everywhere, and crashes whenever it has a single slot."""

        def schedule(self):
            if self.config.max_seqs == 1:
                raise RuntimeError("one slot is not supported")
            return super().schedule()


    class AlwaysCrashes(Scheduler):
        def schedule(self):
            raise RuntimeError("out of blocks")


    class EmitsAfterFinishing(Scheduler):
        """Says a request emitted one more token, on the step after its last one (a TOKENS fact)."""

        def __init__(self, **config):
            super().__init__(**config)
            self._finished_now = []

        def complete(self, plan):
            running = [r.rid for r in self.running]
            emitted = list(super().complete(plan)) + self._finished_now
            still = {r.rid for r in self.running}
            self._finished_now = [rid for rid in running if rid not in still][:1]
            return emitted


    class SplitsChunks(Scheduler):
        """Plans a prompt chunk of n >= 2 as two entries of the same rid (ONE-ENTRY), and runs both: the
        kit's model, which follows one entry per rid, falls behind the prompt it runs."""

        def schedule(self):
            self._plan = super().schedule()
            out = []
            for i, (rid, n) in enumerate(self._plan.entries):
                if rid not in self._ready and n >= 2 and i == len(self._plan.entries) - 1:
                    out += [(rid, n - 1), (rid, 1)]
                else:
                    out.append((rid, n))
            return out

        def complete(self, plan):
            return super().complete(self._plan)


    class NoFreeKv:
        """The reference, showing only the plain protocol (no free_kv)."""

        def __init__(self, **config):
            self._inner = Scheduler(**config)

        def add(self, rid, prompt_len, max_new):
            self._inner.add(rid, prompt_len, max_new)

        def schedule(self):
            return self._inner.schedule()

        def complete(self, plan):
            return self._inner.complete(plan)


    class SaysFcfsDoesNotApply(SkipAhead):
        stallfree_not_applicable = {"FCFS": "admission order is the operator's choice here"}


    class SaysNonsense(Scheduler):
        stallfree_not_applicable = {"NO-SUCH-RULE": "why not"}
''')

SMALL = {"budget": 4, "examples": 4}  # 4 slot counts x 3 KV rooms = 12 configs


@pytest.fixture
def targets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "robustness_targets.py").write_text(TARGETS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return "robustness_targets"


def test_a_refused_config_is_skipped_and_reported_never_fatal(targets: str) -> None:
    report = conform(f"{targets}:refuses_small_budgets", **SMALL)  # budget 4: max_seqs 16 is refused
    assert report.ok, render(report)
    assert set(report.refused) == {f"budget 4, max_seqs 16, kv {room}" for room in ("barely", "tight", "roomy")}
    assert all("must be >= max_num_seqs (16)" in why for why in report.refused.values())
    assert all(v == PASS for v in report.verdicts.values())
    assert all("9 of 12 configs (3 refused by the factory)" in report.partial[r] for r in report.verdicts)
    assert "runs; partial: 9 of 12 configs (3 refused by the factory))" in render(report)


def test_a_factory_that_refuses_every_config_judges_nothing(targets: str) -> None:
    report = conform(f"{targets}:refuses_everything", **SMALL)
    assert set(report.verdicts.values()) == {NOT_JUDGED}
    assert report.ended_early == "the factory refused every config" and len(report.refused) == 12


def test_exploration_goes_on_past_a_crash(targets: str) -> None:
    report = conform(f"{targets}:CrashesWithOneSlot", **SMALL)
    assert report.counterexamples[CRASH].workload.config.max_seqs == 1
    assert report.verdicts["FCFS"] == FAIL  # found on the configs with more than one slot
    assert report.verdicts["BUDGET"] == PASS and "3 ended by CRASH" in report.partial["BUDGET"]
    assert report.ended_early is None


def test_the_shrinker_never_leaves_the_contracts_domain() -> None:
    workload = Workload(Config(8, 2, 64), (Arrival(0, 20, 6, 0), Arrival(1, 30, 5, 2)))
    shrunk = Shrinker(lambda w: Outcome(CRASH), CRASH).shrink(workload, Outcome(CRASH))
    # Lowering K (or anything) breaks "the rule" here; K may not drop below a reservation add() accepted.
    assert verdicts(shrunk.workload) == [True]
    [request] = shrunk.workload.requests
    assert shrunk.workload.config.kv_tokens == request.prompt_len + request.max_new == 2


def test_a_refused_request_stays_refused_while_shrinking() -> None:
    workload = Workload(Config(8, 2, 10), (Arrival(0, 4, 2, 0), Arrival(1, 10, 1, 0)))  # rid 1: 11 > K
    shrunk = Shrinker(lambda w: Outcome(CRASH) if len(w.requests) == 2 else Outcome(), CRASH).shrink(
        workload, Outcome(CRASH))
    assert verdicts(shrunk.workload) == [True, False]


def test_a_crash_counterexample_keeps_its_requests_accepted(targets: str) -> None:
    report = conform(f"{targets}:AlwaysCrashes", budget=4, max_seqs=2, kv_tokens=64, examples=2)
    c = report.counterexamples[CRASH]
    assert c.minimal and verdicts(c.workload) == [True] * len(c.workload.requests) and c.workload.requests


def test_a_dropped_rule_never_resurfaces_as_protocol(targets: str) -> None:
    report = conform(f"{targets}:EmitsAfterFinishing", **SMALL)
    assert report.verdicts["TOKENS"] == FAIL and "after it finished" in report.counterexamples["TOKENS"].message
    assert PROTOCOL not in report.counterexamples, render(report)
    assert {r for r, v in report.verdicts.items() if v == FAIL} == {"TOKENS"}
    assert "where TOKENS, already broken, broke again" in report.partial["BUDGET"]


def test_after_one_entry_breaks_its_consequences_are_not_other_rules_breaks(targets: str) -> None:
    report = conform(f"{targets}:SplitsChunks", **SMALL)
    assert {r for r, v in report.verdicts.items() if v == FAIL} == {"ONE-ENTRY"}, render(report)
    assert any("after ONE-ENTRY broke" in note for note in report.notes)
    assert "where ONE-ENTRY, already broken, broke again" in report.partial["FIRST-TOKEN"]


def test_kv_without_free_kv_is_labelled_partial(targets: str) -> None:
    report = conform(f"{targets}:NoFreeKv", rules=["KV"], **SMALL)
    assert report.verdicts["KV"] == PASS and "shows no int free_kv" in report.partial["KV"]
    assert "KV" not in conform("stallfree.reference:Scheduler", rules=["KV"], **SMALL).partial


def test_a_rule_the_target_declares_not_applicable_says_why(targets: str) -> None:
    report = conform(f"{targets}:SaysFcfsDoesNotApply", **SMALL)
    assert report.verdicts["FCFS"] == NOT_APPLICABLE and report.ok
    assert "FCFS             not applicable: admission order is the operator's choice here" in render(report)
    assert report.to_json()["rules"]["FCFS"]["reason"] == "admission order is the operator's choice here"


def test_a_not_applicable_naming_no_rule_is_a_target_error(targets: str) -> None:
    from stallfree.spec.utils.loader import TargetError

    with pytest.raises(TargetError, match="NO-SUCH-RULE"):
        conform(f"{targets}:SaysNonsense", **SMALL)


def test_the_plugin_skips_a_rule_not_applicable_and_warns_on_a_partial_pass(targets: str) -> None:
    from stallfree.conformance.plugin import Explored, judge

    explored = Explored(f"{targets}:SaysFcfsDoesNotApply")
    explored._report = conform(f"{targets}:SaysFcfsDoesNotApply", **SMALL)
    with pytest.raises(pytest.skip.Exception, match="FCFS not applicable: admission order"):
        judge(explored, "FCFS")
    refused = Explored(f"{targets}:refuses_small_budgets")
    refused._report = conform(f"{targets}:refuses_small_budgets", **SMALL)
    with pytest.warns(UserWarning, match="stallfree BUDGET passed partially: 9 of 12 configs"):
        judge(refused, "BUDGET")
