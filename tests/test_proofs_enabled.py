"""The reservation design's `enabled` (proofs/explicit/design.py) leaves out, before a state is copied,
exactly the cancels of live requests the state does not have: each action it leaves out raises
lifecycle.Disabled, and each it keeps either runs or is a stop the plan decides (`Stop`)."""

from __future__ import annotations

from dataclasses import replace

from stallfree.proofs.explicit import lifecycle
from stallfree.proofs.explicit.bounds import Bounds
from stallfree.proofs.explicit.design import Reservation
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
            if index not in kept:  # left out: must be a cancel that names no live request
                assert disabled and isinstance(action, lifecycle.CancelNow | lifecycle.CancelPending), action
                checked += 1
            elif disabled:  # kept yet disabled: only a stop, whose due requests the plan decides
                assert isinstance(action, lifecycle.Stop), action
    assert checked > 0  # some cancels were left out, so the test judged the filter


def test_without_lifecycle_nothing_is_left_out() -> None:
    design = Reservation(Bounds.parse(BOUND))
    for state in _states(design):
        expected = design.every if state.num_adds < design.bounds.num_requests else design.no_adds
        assert design.enabled(state) == expected
