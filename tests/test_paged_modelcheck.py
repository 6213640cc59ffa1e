"""The paged model check runs on the shared search: with fingerprints (`compact`) and in worker
processes it explores the same states and transitions and reaches the same verdicts as in one
process with whole keys, on the correct paged scheduler and on each paged fault."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from stallfree.faults.paged import PAGED_FAULTS, RequeueAtBack, small
from stallfree.paged import Scheduler, small_blocks
from stallfree.paged.progress import Phase
from stallfree.paged.scheduler import PagedSequence
from stallfree.proofs.explicit import modelcheck
from stallfree.proofs.explicit.bounds import Bounds
from stallfree.proofs.explicit.paged import Paged, PagedResult, check
from stallfree.proofs.explicit.snapshot import fork
from stallfree.spec import InvalidField

CI_BOUND = "2,2,6,3,3,3"  # preempts; ~2,400 states
FAULT_BOUND = {RequeueAtBack: "2,3,6,3,2,3"}  # a preempted request and a later arrival both waiting
MODES = {"compact": {"compact": True}, "workers=2": {"workers": 2}}


def figures(r: PagedResult) -> tuple[object, ...]:
    rule = None if r.counterexample is None else r.counterexample.rule
    return (r.states, r.transitions, r.complete, r.longest_steps, r.drain_bound, r.max_preemptions,
            r.preempting_states, r.running_states, rule)


def test_compact_and_workers_explore_what_one_process_does() -> None:
    bounds = Bounds.parse(CI_BOUND)
    one = check(bounds, small)
    assert one.holds and one.preempting_states > 0
    for mode, options in MODES.items():
        assert figures(check(bounds, small, **options)) == figures(one), mode  # type: ignore[arg-type]


@pytest.mark.parametrize("fault", PAGED_FAULTS, ids=lambda f: f.breaks)
def test_compact_and_workers_name_each_faults_rule(fault: type) -> None:
    bounds = Bounds.parse(FAULT_BOUND.get(fault, "2,2,6,2,3,3"))
    one = check(bounds, fault)
    assert one.counterexample is not None and one.counterexample.rule == fault.breaks
    for mode, options in MODES.items():
        assert figures(check(bounds, fault, **options)) == figures(one), mode  # type: ignore[arg-type]


def test_max_states_stops_the_paged_search_unfinished() -> None:
    result = check(Bounds.parse(CI_BOUND), small, max_states=200)
    assert not result.complete and not result.holds and 200 < result.states < 300


def test_progress_is_reported_while_the_paged_search_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(modelcheck, "PROGRESS_EVERY", 100)
    reports: list[tuple[int, int, int, float]] = []
    result = check(Bounds.parse("2,2,6,2,3,3"), small, on_progress=lambda *r: reports.append(r))
    counts = [0] + [states for states, *_ in reports]
    assert len(reports) >= 2 and counts[-1] <= result.states
    assert all(b - a >= 100 for a, b in itertools.pairwise(counts))  # one report per 100 states


def test_the_paged_design_refuses_symmetry_naming_it() -> None:
    bounds = Bounds.parse(CI_BOUND)
    with pytest.raises(InvalidField, match="symmetry=True: Paged"):
        modelcheck.check(bounds, small, symmetry=True, design=Paged(bounds))


class TiredAfterTwo(Scheduler):
    """Admits nothing once two requests have ended, by a count of its own that no key holds: a state
    reached first with fewer ended requests hides it, unless the checker looks again on a revisit."""

    design = "paged"

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        super().__init__(token_budget, max_seqs, kv_tokens, block_size=2, watermark=1)
        self.num_ended = 0

    def end(self, seq: PagedSequence, phase: Phase) -> None:
        super().end(seq, phase)
        self.num_ended += 1

    def admits(self, seq: PagedSequence, n: int) -> bool:
        return self.num_ended < 2 and super().admits(seq, n)


def test_the_revisit_check_finds_a_paged_schedulers_hidden_state(monkeypatch: pytest.MonkeyPatch) -> None:
    bounds = Bounds.parse("2,2,6,3,2,2")
    found = check(bounds, TiredAfterTwo)  # a revisit's step stalls where the known state's did not
    assert found.counterexample is not None and found.counterexample.rule == "PROGRESS"
    assert "stepped without it" in found.counterexample.message
    in_workers = check(bounds, TiredAfterTwo, workers=2)  # the revisits stepped in the workers
    assert in_workers.counterexample is not None and in_workers.counterexample.rule == "PROGRESS"
    declared = check(bounds, TiredAfterTwo, hidden=lambda s: s.num_ended)  # in the key: found in the search
    assert declared.counterexample is not None and declared.counterexample.rule == "PROGRESS"
    monkeypatch.setattr(modelcheck, "REVISITS_CHECKED", 0)
    assert check(bounds, TiredAfterTwo).holds  # the control: merged states hide it without the revisits


def continue_alike(factory: Any, seed: int, rules: tuple[str, ...] | None = None) -> int:
    """Random walks of adds, steps, stops and cancels on `factory`'s scheduler; whenever a key recurs
    on another walk with another step count, both copies are driven by the same actions and must keep
    one key after each (AssertionError otherwise). Returns how many recurrences were compared."""
    bounds = Bounds.parse("2,2,6,4,3,3")
    design, config, rng = Paged(bounds, events=2), bounds.config, random.Random(seed)
    seen: dict[object, Any] = {}
    compared = 0
    for _ in range(300):
        m = design.monitor(factory(config.token_budget, config.max_seqs, config.kv_tokens), config, rules)
        for _ in range(rng.randint(1, 14)):
            design.act(m, design.actions[rng.choice(design.enabled(m))])
            other = seen.setdefault(design.key(m, None), fork(m))
            if other.num_steps == m.num_steps:
                continue
            compared += 1
            a, b = fork(m), fork(other)
            for _ in range(8):
                index = rng.choice(design.enabled(a))
                design.act(a, design.actions[index])
                design.act(b, design.actions[index])
                assert design.key(a, None) == design.key(b, None), "one key, two continuations"
    return compared


def test_the_paged_scheduler_has_no_hidden_state_states_with_one_key_continue_alike() -> None:
    """What `prove --scheduler paged` assumes without --hidden, checked as for the reference; a
    scheduler with a count of its own fails the same check (judged on BLOCKS alone, so that the stall
    its count causes is not reported first as PROGRESS)."""
    assert continue_alike(small_blocks, 5) > 20
    with pytest.raises(AssertionError, match="two continuations"):
        for seed in range(5):
            continue_alike(TiredAfterTwo, seed, rules=("BLOCKS",))


@pytest.mark.deep
def test_six_blocks_preempt_and_hold() -> None:
    """A pool of 6 blocks (K = 12, 2-token blocks) with three requests: long answers make running
    requests outgrow the pool, so preemption and recompute occur inside the bound, and every rule holds."""
    r = check(Bounds.parse("2,2,12,3,2,6"), small_blocks)
    assert r.holds and r.preempting_states > 0 and r.states > 10_000
