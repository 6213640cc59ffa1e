"""The state invariants: facts about one state, each named by ID, that the contract states or that
its rules imply. Shaped like `RULES`: a registry that the model checker, the state machine and the
tests iterate over.

A step rule judges a transition; an invariant judges a state: the monitor's shadow, and, where a
scheduler shows them, its own counts (`Shown`). The shadow alone is the contract's account of a
state, so an invariant over the shadow is a theorem about the rules; an invariant that compares
what the scheduler shows with the shadow can fail on a scheduler that keeps every step rule.
"""

from __future__ import annotations

from ..invariant import Invariant, Origin
from ..shown import Shown
from .shadow import Shadow


def types(s: Shadow, v: Shown) -> str | None:
    """TYPES: every request is in exactly one place with its counters in range: waiting ones have run
    nothing; a running one is partial or ready, never both, ready exactly when its prompt is done;
    0 <= prefilled <= prompt_len, 0 <= emitted <= max_new, a token only once the prompt is done; the
    shadow's counts (ready requests, free KV) are what its requests add up to."""
    for t in s.waiting:
        if t.num_prefilled or t.num_emitted or t.admitted_at is not None or t.rid in s.running:
            return f"waiting rid {t.rid} has run (prefilled {t.num_prefilled}, emitted {t.num_emitted})"
    num_ready = 0
    reserved = 0
    for rid, t in s.running.items():
        r = t.request
        if not 0 <= t.num_prefilled <= r.prompt_len or not 0 <= t.num_emitted <= r.max_new:
            return f"rid {rid}: prefilled {t.num_prefilled} of {r.prompt_len}, emitted {t.num_emitted} of {r.max_new}"
        if t.is_ready != (t.num_prefilled == r.prompt_len) or t.is_ready == (rid in s.prefilling):
            partial = rid in s.prefilling
            return f"rid {rid} is ready={t.is_ready}, partial={partial}, {t.num_prefilled} of {r.prompt_len} prefilled"
        if t.num_emitted and not t.is_ready:
            return f"rid {rid} emitted {t.num_emitted} token(s) before its prompt was done"
        num_ready += t.is_ready
        reserved += r.reservation
    if set(s.prefilling) - set(s.running):
        return f"partial rid(s) {sorted(set(s.prefilling) - set(s.running))} are not running"
    if num_ready != s.num_ready:
        return f"{num_ready} running requests are ready; the shadow counts {s.num_ready}"
    if s.free_kv != s.config.kv_tokens - reserved:
        return f"free KV is {s.free_kv}; K minus the running reservations is {s.config.kv_tokens - reserved}"
    return None


def slots(s: Shadow, v: Shown) -> str | None:
    """SLOTS: running requests never exceed S, and a scheduler that shows its running requests shows
    as many as the contract counts."""
    if len(s.running) > s.config.max_seqs:
        return f"{len(s.running)} requests running; max_seqs is {s.config.max_seqs}"
    if v.num_running is not None and v.num_running != len(s.running):
        return f"the scheduler shows {v.num_running} running request(s); the contract counts {len(s.running)}"
    return None


def kv(s: Shadow, v: Shown) -> str | None:
    """KV: reservations never exceed K; a scheduler that shows its free KV shows K minus the running
    reservations (less, until the next schedule(), those of running requests cancelled since the last
    one: `Shadow.kv_owed`); when nothing is waiting or running, all K is free."""
    if s.free_kv < 0:
        return f"running requests reserve {s.config.kv_tokens - s.free_kv} KV tokens; kv_tokens is {s.config.kv_tokens}"
    if v.free_kv is not None and not s.free_kv - s.kv_owed <= v.free_kv <= s.free_kv:
        owed = f" (or {s.free_kv - s.kv_owed} until the next schedule())" if s.kv_owed else ""
        return f"the scheduler shows free_kv={v.free_kv}; running reservations leave {s.free_kv}{owed}"
    if s.is_idle and s.free_kv != s.config.kv_tokens:
        return f"nothing runs, yet free KV is {s.free_kv} of {s.config.kv_tokens}"
    return None


def ready_within_budget(s: Shadow, v: Shown) -> str | None:
    """READY-WITHIN-BUDGET: ready requests never outnumber the budget, so each gets a token every step."""
    if s.num_ready > s.config.token_budget:
        return f"{s.num_ready} requests are ready; the budget is {s.config.token_budget}"
    return None


def one_partial(s: Shadow, v: Shown) -> str | None:
    """ONE-PARTIAL: at most one request is partially prefilled at any time."""
    if len(s.prefilling) > 1:
        return f"requests {list(s.prefilling)} are all partially prefilled"
    return None


INVARIANTS: tuple[Invariant, ...] = (
    Invariant("TYPES", Origin.STATED,
              "every request is in exactly one place (waiting, partial, ready) with its counters in range, "
              "and the counts of ready requests and free KV are what the requests add up to.", types),
    Invariant("SLOTS", Origin.STATED,
              "running requests never exceed S; a scheduler that shows its running requests shows the "
              "contract's count.", slots, reads_scheduler=True),
    Invariant("KV", Origin.STATED,
              "reservations never exceed K; a scheduler that shows free_kv shows K minus the running "
              "reservations; when idle all K is free.", kv, reads_scheduler=True),
    Invariant("READY-WITHIN-BUDGET", Origin.DERIVED,
              "ready requests never outnumber the budget B, so every ready request gets a token every step.",
              ready_within_budget, premises=("BUDGET", "DECODE-FIRST", "TOKENS")),
    Invariant("ONE-PARTIAL", Origin.DERIVED,
              "at most one request is partially prefilled at any time.",
              one_partial, premises=("PARTIAL-NEXT", "WORK-CONSERVING")),
)
INVARIANT_IDS: tuple[str, ...] = tuple(i.id for i in INVARIANTS)
