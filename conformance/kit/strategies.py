"""Hypothesis strategies for workloads at one point of the grid (imports hypothesis: the `conform` extra).

Workloads are small on purpose: a handful of requests, prompts up to a few budgets long (so chunking
happens), a few tokens each, staggered arrivals. Rules break on small cases, and small cases shrink
fast. When NEVER-FIT is checked, a few requests are ones add() must refuse. For a target that
supports them, some requests stop before max_new (`stop_after`) and some are cancelled, between steps
or while a plan is pending, a few after they ended or with a rid never added (they must be refused).
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache, lru_cache
from typing import Any

from hypothesis import strategies as st

from stallfree.spec import Arrival, Cancel, Config, Workload

from .grid import KvRoom, Shape

MAX_REQUESTS = 8
MAX_NEW = 6
MAX_GAP = 4  # steps between consecutive arrivals
MAX_PROMPT = 200
PROMPT_BUDGETS = 3  # prompts run up to this many budgets long, plus a little

# Requests add() must refuse (rule NEVER-FIT), each a way the contract's validation can be missed.
NEVER_FIT = "never-fit"  # prompt_len + max_new = K + 1
ZERO_PROMPT = "zero-prompt"
ZERO_NEW = "zero-new"
NEGATIVE_RID = "negative-rid"
TAKEN_RID = "taken-rid"
FLOAT_PROMPT = "float-prompt"  # 3.0 is not an int: refused, never coerced
REFUSALS = (NEVER_FIT, ZERO_PROMPT, ZERO_NEW, NEGATIVE_RID, TAKEN_RID, FLOAT_PROMPT)
VALID_SHARE = 30  # one request in six is a refusal of some kind (6 kinds among 36 choices)
MAX_CANCEL_DELAY = 12  # steps after its arrival a request's cancel may come
NEVER_ADDED = 10_000  # a rid no workload adds: its cancel must be refused


# Every strategy a workload draws from is built once and kept (`cache`): Hypothesis looks each one up in
# a cache of its own on every call (some 10 us) and works out a new one's properties on its first draw,
# and a workload draws some twenty. The same strategies, so the same draws: only their cost changes.
BOOLEANS = st.booleans()


@cache
def integers(low: int, high: int) -> st.SearchStrategy[int]:
    return st.integers(low, high)


@lru_cache(maxsize=None, typed=True)  # typed: just(True) is not just(1)
def just(value: int | None) -> st.SearchStrategy[int | None]:
    return st.just(value)


@cache
def kinds(refusals: bool) -> st.SearchStrategy[str | None]:
    """None (a valid request) most of the time; a refusal now and then. Shrinks toward valid."""
    if not refusals:
        return just(None)
    return st.sampled_from((None,) * VALID_SHARE + REFUSALS)


@cache
@st.composite
def workloads(draw: Any, shape: Shape, refusals: bool, stops: bool = False, cancels: bool = False,
              shared: bool = False) -> Workload:
    """A workload for `shape`; with `shared` (the prefix-caching design), valid requests may start with
    one of two system prompts (`content`), so that they share blocks and hit the cache."""
    budget, kv = shape.token_budget, shape.kv_tokens
    # One workload in two is of the plain protocol, so a capable target is explored as hard as any
    # other on it; shrinking goes towards plain.
    lifecycle = (stops or cancels) and draw(BOOLEANS)
    stops, cancels = stops and lifecycle, cancels and lifecycle
    max_prompt = min(MAX_PROMPT, PROMPT_BUDGETS * budget + 2)
    if kv is not None:
        max_prompt = min(max_prompt, kv - 1)
    num = draw(integers(1, MAX_REQUESTS))
    drafts = []
    for _ in range(num):
        kind = draw(kinds(refusals)) if max_prompt >= 1 else NEVER_FIT
        prompt_len = draw(integers(1, max_prompt)) if max_prompt >= 1 else 1
        room = MAX_NEW if kv is None else min(MAX_NEW, kv - prompt_len)
        max_new = draw(integers(1, max(1, room)))
        gap = draw(integers(0, MAX_GAP))
        drafts.append((kind, prompt_len, max_new, gap))
    if not refusals:
        drafts = [d for d in drafts if d[0] is None]
    kv_tokens = kv if kv is not None else draw(_kv_for([p + m for k, p, m, _ in drafts if k is None], shape.kv_room))
    arrivals = []
    step = 0
    for rid, (kind, prompt_len, max_new, gap) in enumerate(drafts):
        step += gap
        arrival = _arrival(kind, rid, prompt_len, max_new, step, kv_tokens)
        if stops and kind is None and max_new > 1 and draw(BOOLEANS):
            arrival = Arrival(rid, prompt_len, max_new, step, stop_after=draw(integers(1, max_new - 1)))
        if shared and kind is None and draw(BOOLEANS):
            arrival = replace(arrival, content=((draw(integers(0, 1)), draw(integers(1, prompt_len))),))
        arrivals.append(arrival)
    cancelled = draw(_cancels(arrivals)) if cancels else ()
    return Workload(Config(budget, shape.max_seqs, kv_tokens), tuple(arrivals), cancels=cancelled)


@st.composite
def _cancels(draw: Any, arrivals: list[Arrival]) -> tuple[Cancel, ...]:
    """Cancels of some requests, each a few steps after its arrival (so it may be waiting, partial,
    ready or ended by then), between steps or while a plan is pending; and maybe one never added."""
    cancels = []
    for a in arrivals:
        if draw(BOOLEANS):
            delay = draw(integers(0, MAX_CANCEL_DELAY))
            cancels.append(Cancel(a.rid, a.arrival_step + delay, draw(BOOLEANS)))
    if draw(integers(0, 5)) == 0:
        cancels.append(Cancel(NEVER_ADDED, draw(integers(0, MAX_CANCEL_DELAY))))
    return tuple(cancels)


def _kv_for(reservations: list[int], room: KvRoom) -> st.SearchStrategy[int]:
    largest = max(reservations, default=2)
    if room is KvRoom.BARELY:
        return just(largest)
    if room is KvRoom.TIGHT:
        return integers(largest, 2 * largest)
    return just(max(largest, sum(reservations)))


def _arrival(kind: str | None, rid: int, prompt_len: int, max_new: int, step: int, kv_tokens: int) -> Arrival:
    if kind == NEVER_FIT:
        return Arrival(rid, kv_tokens, 1, step)
    if kind == ZERO_PROMPT:
        return Arrival(rid, 0, max_new, step)
    if kind == ZERO_NEW:
        return Arrival(rid, prompt_len, 0, step)
    if kind == NEGATIVE_RID:
        return Arrival(-1, prompt_len, max_new, step)
    if kind == TAKEN_RID and rid > 0:
        return Arrival(rid - 1, prompt_len, max_new, step)
    if kind == FLOAT_PROMPT:
        return Arrival(rid, float(prompt_len), max_new, step)
    return Arrival(rid, prompt_len, max_new, step)
