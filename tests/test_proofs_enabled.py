"""The reservation design's `enabled` (proofs/explicit/design.py) leaves out, before a state is copied,
the cancels of live requests the state does not have and the stops of more requests than are live:
each action it leaves out raises lifecycle.Disabled, and each it keeps either runs or is a stop the
plan decides (`Stop`). The explorer then skips the larger stops once one names more requests than are
due (proofs/explicit/modelcheck.py): what it yields is exactly the actions that are not disabled."""

from __future__ import annotations

from dataclasses import replace

from stallfree.proofs.explicit import lifecycle
from stallfree.proofs.explicit.bounds import Bounds
from stallfree.proofs.explicit.design import Reservation
from stallfree.proofs.explicit.modelcheck import _Explorer
from stallfree.proofs.explicit.snapshot import fork
from stallfree.reference import Scheduler

BOUND = "2,2,6,3,2,2"


def _states(design: Reservation) -> list:
    """A few states of the bound: 0 to 3 requests added, one stepped."""
    cfg = design.bounds.config
    monitor = design.monitor(Scheduler(cfg.token_budget, cfg.max_seqs, cfg.kv_tokens), cfg, None)
    out = [fork(monitor)]
    for rid in range(3):
        monitor.add(rid, 2, 2)
        out.append(fork(monitor))
    monitor.step()
    out.append(fork(monitor))
    return out


def test_left_out_actions_are_exactly_the_disabled_cancels() -> None:
    design = Reservation(replace(Bounds.parse(BOUND), lifecycle=True))
    checked = 0
    for state in _states(design):
        kept = set(design.enabled(state))
        everything = design.every if state.num_adds < design.bounds.num_requests else design.no_adds
        for index in everything:
            action = design.actions[index]
            try:
                design.act(fork(state), action)
                disabled = False
            except lifecycle.Disabled:
                disabled = True
            if index not in kept:  # left out: must be a cancel or a stop that names no live request
                assert disabled and isinstance(action, lifecycle.CancelNow | lifecycle.CancelPending | lifecycle.Stop)
                checked += 1
            elif disabled:  # kept yet disabled: only a stop, whose due requests the plan decides
                assert isinstance(action, lifecycle.Stop), action
    assert checked > 0  # some cancels were left out, so the test judged the filter


def _not_disabled(design: Reservation, state: object) -> list[int]:
    """Every action of `state` that runs (or breaks a rule), each tried on its own copy."""
    everything = design.every if state.num_adds < design.bounds.num_requests else design.no_adds  # type: ignore[attr-defined]
    out = []
    for index in everything:
        try:
            design.act(fork(state), design.actions[index])
        except lifecycle.Disabled:
            continue
        out.append(index)
    return out


def test_the_explorer_yields_exactly_the_actions_not_disabled() -> None:
    explorer = _Explorer(replace(Bounds.parse(BOUND), lifecycle=True), Scheduler, None)
    cfg = explorer.design.bounds.config
    two_due = explorer.design.monitor(Scheduler(cfg.token_budget, cfg.max_seqs, cfg.kv_tokens), cfg, None)
    two_due.add(0, 1, 2)
    two_due.add(1, 1, 2)  # both prompts finish in the next step: two requests due, every stop enabled
    skipped = 0
    for state in [*_states(explorer.design), two_due]:
        expected = _not_disabled(explorer.design, state)
        assert [index for index, _ in explorer.successors(fork(state))] == expected
        skipped += len([i for i in explorer.design.enabled(state) if i not in expected])
    assert skipped > 0  # some stops the filter kept were disabled: the skip was exercised


def test_without_lifecycle_nothing_is_left_out() -> None:
    design = Reservation(Bounds.parse(BOUND))
    for state in _states(design):
        expected = design.every if state.num_adds < design.bounds.num_requests else design.no_adds
        assert design.enabled(state) == expected
