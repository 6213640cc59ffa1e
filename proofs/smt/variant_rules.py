"""The plan rules a variant's contract widens or adds, as predicates the variants' code theorems
evaluate on symbolic values: each the statement of its rule in `stallfree.spec.variants` (the same
arithmetic: `aligned_chunk`, `effective`), over what the variant showed before the step (`Views`),
the waiting requests in the contract's order, the plan, and the variant right after schedule().

`own(contract, s)` gives the ones of a contract, keyed by rule ID. The priority contract's
PRIORITY-ORDER and PRIORITY-WORK-CONSERVING are FCFS and WORK-CONSERVING over the line in effective
order, as the spec states them (`stallfree.spec.variants.priority`): `order` gives `contracts` that
order, and those two IDs take the verdicts of the rules they widen (`variant_claims.WIDENED_AS`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stallfree.spec.contract import Contract
from stallfree.spec.variants.aligned import aligned_chunk
from stallfree.spec.variants.priority import effective

from .variant_claims import PARTIAL, READY, WAITING, Views
from .variant_state import line

Check = Callable[[Any, Views, list[Any], list[tuple[int, Any]]], Any]


def order(s: Any, before: Views, contract: Contract) -> list[Any]:
    """The waiting requests (their `Request`s) in the contract's order before the step: arrival
    order, or under priorities the effective order at the contract's aging (ties by arrival)."""
    if not before.arrivals:
        return [seq.request for queue in line(s) for seq in queue]
    step, aging = s.num_steps, getattr(contract, "aging", None)
    ranked = sorted(before.arrivals.items(), key=lambda item: (-effective(item[1][0], item[1][1], step, aging),
                                                                item[1][2]))
    return [s.seqs[rid].request for rid, _ in ranked]


def aging_bound(aging: int, top: int) -> Check:
    """AGING-BOUND: a request of priority p that arrived at step a is never admitted after one that
    arrived after it at or after step a + (P - p) * A."""

    def check(s: Any, before: Views, order: list[Any], entries: list[tuple[int, Any]]) -> Any:
        given, arrivals = dict(entries), before.arrivals
        for x, (_, a_x, number_x) in arrivals.items():
            if x not in given:
                continue
            for t, (p, a, number) in arrivals.items():
                if t not in given and number < number_x and bool(a_x >= a + (top - p) * aging):
                    return False
        return True

    return check


def _decoded(before: Views, entries: list[tuple[int, Any]]) -> tuple[list[int], list[int]]:
    ready = [rid for rid in before.running if before.seen[rid].place == READY]
    given = dict(entries)
    return ready, [rid for rid in ready if rid in given]


def aligned(b: int) -> dict[str, Check]:
    """ALIGNED, ALIGNED-PARTIAL-NEXT, ALIGNED-WORK-CONSERVING for blocks of `b` tokens."""

    def whole_blocks(s: Any, before: Views, order: list[Any], entries: list[tuple[int, Any]]) -> Any:
        """ALIGNED: every chunk that does not finish its prompt is a multiple of b."""
        for rid, n in entries:
            seen = before.seen[rid]
            if seen.place != READY and not bool(n == seen.prompt_len - seen.num_prefilled) and bool(n % b != 0):
                return False
        return True

    def partial_next(s: Any, before: Views, order: list[Any], entries: list[tuple[int, Any]]) -> Any:
        """ALIGNED-PARTIAL-NEXT: each partial its aligned chunk of the budget left after decodes, and
        nothing admitted behind one left unfinished."""
        _, decoded = _decoded(before, entries)
        left, given = s.config.token_budget - len(decoded), dict(entries)
        for rid in before.running:
            seen = before.seen[rid]
            if seen.place != PARTIAL:
                continue
            rest = seen.prompt_len - seen.num_prefilled
            owed = aligned_chunk(rest, left if left > 0 else 0, b)
            if not bool(given.get(rid, 0) == owed):
                return False
            if owed < rest and any(before.seen[r].place == WAITING for r in given):
                return False
            left -= owed
        return True

    def work_conserving(s: Any, before: Views, order: list[Any], entries: list[tuple[int, Any]]) -> Any:
        """ALIGNED-WORK-CONSERVING: budget unused only with nothing more to run, or fewer than b of it
        while a prompt waits on alignment."""
        unused = s.config.token_budget - sum(n for _, n in entries)
        if unused <= 0:
            return True
        ready, decoded = _decoded(before, entries)
        given = dict(entries)
        if len(decoded) < len(ready):
            return False
        prefills = [(rid, n) for rid, n in entries if before.seen[rid].place != READY]
        unfinished = any(bool(n < before.seen[rid].prompt_len - before.seen[rid].num_prefilled) for rid, n in prefills)
        unserved = any(before.seen[rid].place == PARTIAL and rid not in given for rid in before.running)
        if unfinished or unserved:
            return unused < b
        head = next((r for r in order if r.rid not in given), None)
        if head is None or len(s.running) >= s.config.max_seqs or head.prompt_len + head.max_new > s.free_kv:
            return True
        return head.prompt_len > unused and unused < b

    return {"ALIGNED": whole_blocks, "ALIGNED-PARTIAL-NEXT": partial_next, "ALIGNED-WORK-CONSERVING": work_conserving}


def decode_fair(s: Any, before: Views, order: list[Any], entries: list[tuple[int, Any]]) -> Any:
    """DECODE-FAIR: every ready request decoded when the budget covers them, before any prefill;
    else the B that waited longest since their last token (ties: oldest admitted), and no prefill."""
    ready, decoded = _decoded(before, entries)
    budget, given = s.config.token_budget, dict(entries)
    if any(given[rid] != 1 for rid in decoded):
        return False
    prefill = [rid for rid in given if rid not in ready]
    if len(ready) <= budget:
        return len(decoded) == len(ready) and all(rid in given for rid in ready)
    if prefill or len(decoded) != budget:
        return False
    last, rank = before.last_token, {rid: i for i, rid in enumerate(before.running)}
    served = [(last[r], rank[r]) for r in decoded]
    skipped = [(last[r], rank[r]) for r in ready if r not in given]
    return all(d < u for d in served for u in skipped)


def batch_closed(s: Any, before: Views, order: list[Any], entries: list[tuple[int, Any]]) -> Any:
    """BATCH-CLOSED: no admission in a step that begins with a request running."""
    return not before.running or all(before.seen[rid].place != WAITING for rid, _ in entries)


def batch_conserving(s: Any, before: Views, order: list[Any], entries: list[tuple[int, Any]]) -> Any:
    """BATCH-CONSERVING: budget unused only with the batch served in full and, when nothing ran at the
    step's start, the waiting head blocked or absent."""
    if s.config.token_budget - sum(n for _, n in entries) <= 0:
        return True
    ready, decoded = _decoded(before, entries)
    given = dict(entries)
    partial = [rid for rid in before.running if before.seen[rid].place == PARTIAL]
    if len(decoded) < len(ready) or any(not bool(given.get(rid, 0) == before.seen[rid].prompt_len
                                                 - before.seen[rid].num_prefilled) for rid in partial):
        return False
    if before.running:
        return True
    if any(not bool(given[r.rid] == r.prompt_len) for r in order if r.rid in given):
        return False
    head = next((r for r in order if r.rid not in given), None)
    return head is None or len(s.running) >= s.config.max_seqs or head.prompt_len + head.max_new > s.free_kv


def own(contract: Contract, s: Any) -> dict[str, Check]:
    """The plan rules `contract` widens or adds that this module states, keyed by rule ID."""
    ids = set(contract.ids)
    out: dict[str, Check] = {}
    if "ALIGNED" in ids:
        out.update(aligned(s.block_size))
    if "DECODE-FAIR" in ids:
        out["DECODE-FAIR"] = decode_fair
    if "AGING-BOUND" in ids:
        out["AGING-BOUND"] = aging_bound(contract.aging, contract.max_priority)  # type: ignore[attr-defined]
    if "BATCH-CLOSED" in ids:
        out["BATCH-CLOSED"] = batch_closed
        out["BATCH-CONSERVING"] = batch_conserving
    return out
