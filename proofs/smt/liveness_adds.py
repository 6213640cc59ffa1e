"""What the adds between two steps of `LIVENESS (induction, any N)` leave, proved of the policy's own
`arrive` (two of the join's obligations, `liveness_join.join`):

- **the config and the free KV**: `arrive` hands the step after it the config and free KV it got (the
  behaviour has one config for every step, and the ranking enters a step with the free KV its premise
  reads: an add that drains the KV or lowers the budget would change both unseen);
- **the ranking's premise**: from requests with their per-request parts (`induction.valid_request`)
  and FCFS's admitted prefix and PARTIAL-YOUNGEST between neighbours (`liveness_induction.adjacent_pair`),
  `arrive` leaves every request already arrived as it was (admitted, its lengths, prefilled, emitted),
  admits none, and leaves each request with its per-request parts and each pair of neighbours with
  the adjacent premise. KV's free = K - reserved follows: the reserved KV is that of the running
  requests, which are admitted, so arrived before, so unchanged, and no other is admitted.

Each is checked on one, two and three requests (`SIZES`). The join reads request j of any N as what
the adds make of each adjacent pair it is in (`liveness_join.adds`, checked against `arrive` on three
requests, assumed beyond): under that reading each request and each pair of neighbours is one of
these, so both carry to any N with the same assumption. Every call of `arrive` has its own name
(`named`): a policy that draws fresh symbols in `arrive`, named after it, gets fresh ones at each call.
"""

from __future__ import annotations

from itertools import pairwise

import z3

from .induction import Obligation, valid_request
from .liveness_induction import adjacent_pair
from .policy import Policy
from .symbolic import SymConfig, SymRequest, SymState

NAME = "join"
SIZES = (1, 2, 3)  # the numbers of requests the adds' obligations are checked on


def named(policy: Policy, config: SymConfig, requests: tuple[SymRequest, ...], arrived: tuple[z3.BoolRef, ...],
          call: str, free_kv: z3.ArithRef | None = None) -> tuple[SymState, z3.BoolRef]:
    """The policy's `arrive` on `requests` (and `free_kv`, default a fresh one), called under the name
    `join.<call>`, its fresh arrival flags named `arrived`: the state after the adds and what they assume."""
    name = f"{NAME}.{call}"
    kv = z3.Int(f"{name}.free_kv") if free_kv is None else free_kv
    after, facts = policy.arrive(SymState(config, requests, kv), name)
    sub = [(a.arrived, x) for a, x in zip(after.requests, arrived, strict=True)]
    out = tuple(SymRequest(*(z3.substitute(v, *sub) for v in (a.arrived, a.admitted, a.prompt_len, a.max_new,
                                                              a.num_prefilled, a.num_emitted)))
                for a in after.requests)
    kept = SymConfig(*(z3.substitute(v, *sub) for v in (after.config.token_budget, after.config.max_seqs,
                                                          after.config.kv_tokens)))
    return SymState(kept, out, z3.substitute(after.free_kv, *sub)), z3.substitute(facts, *sub)


def fresh_of(call: str, terms: list[z3.ExprRef]) -> list[z3.ExprRef]:
    """The constants in `terms` that the call `join.<call>` drew itself (named after it), but its free KV."""
    prefix, seen, out = f"{NAME}.{call}.", set(), []
    todo = list(terms)
    while todo:
        e = todo.pop()
        if e.get_id() in seen:
            continue
        seen.add(e.get_id())
        drawn = z3.is_const(e) and e.decl().kind() == z3.Z3_OP_UNINTERPRETED
        if drawn and e.decl().name().startswith(prefix) and e.decl().name() != f"{prefix}free_kv":
            out.append(e)
        todo.extend(e.children())
    return out


def _inputs(size: int, call: str) -> tuple[tuple[SymRequest, ...], tuple[z3.BoolRef, ...], z3.ArithRef]:
    xs = tuple(SymRequest.fresh(f"{NAME}.{call}.in{i}") for i in range(size))
    return xs, tuple(z3.Bool(f"{NAME}.{call}.now{i}") for i in range(size)), z3.Int(f"{NAME}.{call}.kv")


def frame(policy: Policy, config: SymConfig, size: int) -> Obligation:
    """`arrive` on `size` requests leaves the config and the free KV as it got them."""
    xs, flags, kv = _inputs(size, f"frame{size}")
    after, facts = named(policy, config, xs, flags, f"frame{size}", kv)
    same = z3.And(after.config.token_budget == config.token_budget, after.config.max_seqs == config.max_seqs,
                  after.config.kv_tokens == config.kv_tokens, after.free_kv == kv)
    return Obligation(f"{NAME}: the adds leave the config and the free KV (N = {size})",
                      z3.And(config.valid(), facts), same)


def _as_it_was(x: SymRequest, y: SymRequest) -> z3.BoolRef:
    return z3.And(y.admitted == x.admitted, y.prompt_len == x.prompt_len, y.max_new == x.max_new,
                  y.num_prefilled == x.num_prefilled, y.num_emitted == x.num_emitted)


def premise(policy: Policy, config: SymConfig, size: int) -> Obligation:
    """`arrive` on `size` requests that meet the ranking's premise leaves them meeting it: the arrived
    ones as they were, none admitted, each with its per-request parts, each pair with the adjacent premise."""
    xs, flags, kv = _inputs(size, f"premise{size}")
    after, facts = named(policy, config, xs, flags, f"premise{size}", kv)
    ys = after.requests
    met = [*(valid_request(x, config) for x in xs), *(adjacent_pair(a, b) for a, b in pairwise(xs))]
    goal = [*(z3.Implies(x.arrived, _as_it_was(x, y)) for x, y in zip(xs, ys, strict=True)),
            *(y.admitted == x.admitted for x, y in zip(xs, ys, strict=True)),
            *(valid_request(y, config) for y in ys), *(adjacent_pair(a, b) for a, b in pairwise(ys))]
    return Obligation(f"{NAME}: the adds keep the ranking's premise (N = {size})",
                      z3.And(config.valid(), *met, facts), z3.And(goal))


def kept_by_adds(policy: Policy, config: SymConfig) -> list[Obligation]:
    """The config and free KV left, then the premise kept, on each of `SIZES`."""
    return [*(frame(policy, config, n) for n in SIZES), *(premise(policy, config, n) for n in SIZES)]
