"""State invariants the model checker evaluates in every state it reaches.

The step rules (BUDGET ... WORK-CONSERVING) are judged on every transition by the spec's own monitor;
these are the facts about a single state that the contract states or derives, read off the shadow.
READY-WITHIN-BUDGET and ONE-PARTIAL are derived properties of the policy: they hold while the budget
is fixed, which it is within one model check.
"""

from __future__ import annotations

from collections.abc import Callable

from stallfree.spec import Monitor, Shadow

StateCheck = Callable[[Shadow, "int | None"], "str | None"]


def slots(s: Shadow, reported_free_kv: int | None) -> str | None:
    """SLOTS: admitted, unfinished requests never exceed the slots S."""
    if len(s.running) > s.config.max_seqs:
        return f"{len(s.running)} requests running; max_seqs is {s.config.max_seqs}"
    return None


def kv(s: Shadow, reported_free_kv: int | None) -> str | None:
    """KV: reservations never exceed K; the scheduler's free KV is K minus the running reservations;
    when nothing is waiting or running, all K is free."""
    if s.free_kv < 0:
        return f"running requests reserve {s.config.kv_tokens - s.free_kv} KV tokens; kv_tokens is {s.config.kv_tokens}"
    if reported_free_kv is not None and reported_free_kv != s.free_kv:
        return f"the scheduler shows free_kv={reported_free_kv}; running reservations leave {s.free_kv}"
    if s.is_idle and s.free_kv != s.config.kv_tokens:
        return f"nothing runs, yet free KV is {s.free_kv} of {s.config.kv_tokens}"
    return None


def ready_within_budget(s: Shadow, reported_free_kv: int | None) -> str | None:
    """READY-WITHIN-BUDGET: ready requests never outnumber the budget, so each gets a token every step."""
    if s.num_ready > s.config.token_budget:
        return f"{s.num_ready} requests are ready; the budget is {s.config.token_budget}"
    return None


def one_partial(s: Shadow, reported_free_kv: int | None) -> str | None:
    """ONE-PARTIAL: at most one request is partially prefilled at any time."""
    partial = s.partial()
    if len(partial) > 1:
        return f"requests {[t.rid for t in partial]} are all partially prefilled"
    return None


STATE_CHECKS: tuple[tuple[str, StateCheck], ...] = (
    ("SLOTS", slots),
    ("KV", kv),
    ("READY-WITHIN-BUDGET", ready_within_budget),
    ("ONE-PARTIAL", one_partial),
)


def broken(monitor: Monitor) -> tuple[str, str] | None:
    """The first state invariant `monitor`'s state breaks, as (rule ID, what happened), or None."""
    reported = getattr(monitor.scheduler, "free_kv", None)
    reported = reported if type(reported) is int else None
    for rule_id, check in STATE_CHECKS:
        message = check(monitor.shadow, reported)
        if message is not None:
            return rule_id, message
    return None
