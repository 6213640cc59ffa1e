"""A symbolic state of a variant: its own class, its own containers, Z3 values.

The variants' counterpart of `symstate` (which builds the reference's fields). `build` makes the
variant by its own constructor (`make`, the factory the model checker uses), then fills the fields
`Stepwise` declares (`seqs`, the waiting line, `running`, `free_kv`, `num_steps`), or those of the
batched rendering (`variant_batched`), and the variant's own (`last_token` under rotation, `levels`
under priorities) with N requests, each waiting, partial or
ready as the layout says, whose lengths, progress, steps and the config are unbounded symbolic
integers. Two things stay concrete: a waiting request's priority level (a list index: each of
`PRIORITIES` in turn) and the variant's constants (the block size, the aging period).

Which of these states are states of the variant is the hypothesis `broken` states: the reference's
post-conditions written over the variant's fields (TYPES, SLOTS, KV, ONE-PARTIAL, READY-WITHIN-BUDGET
where the budget is fixed) and what the variant's own fields must satisfy. Every transition of
`variant_code` ends by checking the same, so the hypothesis is inductive over the variant's code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import product
from typing import Any

import z3

from stallfree.spec.types import Config, Request, admissible
from stallfree.variants.batched import Batched
from stallfree.variants.stepwise import StepwiseSequence

from . import variant_batched
from .symexec import Explorer, Int
from .symstate import Shape, _unchecked, shapes

PRIORITIES = (0, 3)  # the levels a waiting request of a priority variant takes in turn: equal, and apart by P


@dataclass(frozen=True, slots=True)
class Layout:
    """A shape, and the priority level of each waiting request (a priority variant's only)."""

    shape: Shape
    levels: tuple[int, ...] = ()

    def label(self) -> str:
        return self.shape.label() + (f", priorities {list(self.levels)}" if self.levels else "")


def layouts(make: Callable[[], Any], n: int) -> Iterator[Layout]:
    """Every layout of at most `n` requests; at most one partial (ONE-PARTIAL refuses more)."""
    prioritized = hasattr(make(), "levels")
    for shape in shapes(n):
        if shape.partial > 1:
            continue
        for levels in product(PRIORITIES, repeat=shape.waiting if prioritized else 0):
            yield Layout(shape, levels)


def names(make: Callable[[], Any], layout: Layout) -> list[str]:
    """The symbolic integers of a layout's state: the config, the free KV, the steps, each request's."""
    s, shape = make(), layout.shape
    out = ["B", "S", "K", "free_kv", "num_steps"]
    for rid in range(shape.size):
        out += [f"prompt_len{rid}", f"max_new{rid}"]
        role = shape.role(rid)
        if role == "ready":
            out.append(f"due{rid}" if isinstance(s, Batched) else f"num_emitted{rid}")
            out += [f"last_token{rid}"] if hasattr(s, "last_token") else []
        elif role == "partial":
            out.append(f"num_prefilled{rid}")
        elif hasattr(s, "levels"):
            out.append(f"arrival{rid}")
    return out


def type_assumptions(v: dict[str, z3.ArithRef], layout: Layout) -> list[z3.BoolRef]:
    """What `Config`'s and `Request`'s validation guarantees (every limit and length at least 1)."""
    facts = [v["B"] >= 1, v["S"] >= 1, v["K"] >= 1, v["num_steps"] >= 0]
    for rid in range(layout.shape.size):
        facts += [v[f"prompt_len{rid}"] >= 1, v[f"max_new{rid}"] >= 1]
    return facts


def build(make: Callable[[], Any], layout: Layout, v: dict[str, z3.ArithRef], ex: Explorer) -> Any:
    """The variant `make` builds, in the symbolic state of `layout`; raises the variant's own error if a
    waiting request is one add() refuses (that path is no state of the variant)."""
    sym = {name: Int(term, ex) for name, term in v.items()}
    shape, s = layout.shape, make()
    s.config = _unchecked(Config, token_budget=sym["B"], max_seqs=sym["S"], kv_tokens=sym["K"])
    s.free_kv, s.num_steps = sym["free_kv"], sym["num_steps"]
    requests = [_unchecked(Request, rid=rid, prompt_len=sym[f"prompt_len{rid}"], max_new=sym[f"max_new{rid}"])
                for rid in range(shape.size)]
    for rid, request in enumerate(requests):
        if shape.role(rid) == "waiting":
            admissible(request, s.config)
    if isinstance(s, Batched):
        variant_batched.fill(s, shape, layout.levels, sym, requests)
    else:
        _fill(s, layout, sym, requests)
    return s


def _fill(s: Any, layout: Layout, sym: dict[str, Any], requests: list[Any]) -> None:
    """Put `requests` (rid order) into the `Stepwise` variant `s` as `layout` says, with `sym`'s values."""
    shape, levels = layout.shape, getattr(s, "levels", None)
    for rid, request in enumerate(requests):
        seq = s.seqs[rid] = StepwiseSequence(request)
        role = shape.role(rid)
        if role == "waiting":
            if levels is None:
                s.waiting.append(seq)
            else:
                levels[layout.levels[rid - shape.ready - shape.partial]].append((sym[f"arrival{rid}"], rid, seq))
            continue
        s.running[rid] = seq
        if role == "partial":
            seq.num_prefilled = sym[f"num_prefilled{rid}"]
        else:
            seq.num_prefilled, seq.num_emitted = request.prompt_len, sym[f"num_emitted{rid}"]
            if hasattr(s, "last_token"):
                s.last_token[rid] = sym[f"last_token{rid}"]
    if levels is not None:
        s.num_arrivals = shape.size


def pending(s: Any) -> bool:
    """A plan awaits complete() (`Stepwise` keeps it, `Batched` a flag)."""
    return s.pending is not None and s.pending is not False


def is_ready(s: Any, seq: Any) -> bool:
    return seq.request.rid in s.ready if isinstance(s, Batched) else seq.is_ready


def num_emitted(s: Any, seq: Any) -> Any:
    """The tokens `seq` has emitted as the variant keeps them (None where it keeps none: `variant_batched`)."""
    return variant_batched.emitted(s, seq) if isinstance(s, Batched) else seq.num_emitted


def line(s: Any) -> list[tuple[StepwiseSequence, ...]]:
    """The waiting line as the variant keeps it: one queue (`waiting`), or one per priority level."""
    levels = getattr(s, "levels", None)
    if levels is None:
        return [tuple(s.waiting)]
    return [tuple(entry[2] for entry in queue) for queue in levels]


def broken(s: Any, fixed_budget: bool) -> tuple[str, str] | None:
    """The first post-condition `s` breaks, as (rule, what), or None: the reference's, over `Stepwise`'s
    fields (READY-WITHIN-BUDGET only where the budget is `fixed_budget`), then the variant's own."""
    c, running = s.config, list(s.running.values())
    waiting = [seq for queue in line(s) for seq in queue]
    ready = [seq for seq in running if is_ready(s, seq)]
    partial = [seq for seq in running if not is_ready(s, seq)]
    if any(seq.request.rid in s.running for seq in waiting) or pending(s) or s.cancelling:
        return "CANCEL", "a request both waits and runs, or a plan or cancel is pending between steps"
    for seq in waiting:
        if seq.num_prefilled != 0 or num_emitted(s, seq) != 0:
            return "TYPES", f"waiting rid {seq.request.rid} has run {seq.num_prefilled} positions"
    for seq in partial:
        if not 0 <= seq.num_prefilled < seq.request.prompt_len or num_emitted(s, seq) != 0:
            return "TYPES", f"partial rid {seq.request.rid}: {seq.num_prefilled} of {seq.request.prompt_len}"
    for seq in ready:
        if seq.num_prefilled != seq.request.prompt_len or not 1 <= num_emitted(s, seq) < seq.request.max_new:
            return "TYPES", f"ready rid {seq.request.rid}: {num_emitted(s, seq)} of {seq.request.max_new} tokens"
    if len(running) > c.max_seqs:
        return "SLOTS", f"{len(running)} running for {c.max_seqs} slots"
    if s.free_kv != c.kv_tokens - sum(seq.request.reservation for seq in running) or s.free_kv < 0:
        return "KV", f"free_kv {s.free_kv} is not K less the running reservations"
    if len(partial) > 1:
        return "ONE-PARTIAL", f"rids {[seq.request.rid for seq in partial]} are all partial"
    if fixed_budget and len(ready) > c.token_budget:
        return "READY-WITHIN-BUDGET", f"{len(ready)} ready for a budget of {c.token_budget}"
    if isinstance(s, Batched):
        return variant_batched.broken(s, waiting) or _own(s, ready)
    return _own(s, ready)


def _own(s: Any, ready: list[StepwiseSequence]) -> tuple[str, str] | None:
    """What the variant's own fields must satisfy: a budget of at least one block (aligned), a last
    token for each ready request and only for them (rotation), arrivals in order (priorities)."""
    block = getattr(s, "block_size", None)
    if block is not None and s.config.token_budget < block:
        return "TYPES", f"budget {s.config.token_budget} below the block size {block}"
    last = getattr(s, "last_token", None)
    if last is not None:
        if sorted(last) != sorted(seq.rid for seq in ready):
            return "DECODE-FAIR", f"last tokens kept for {sorted(last)}; ready: {[seq.rid for seq in ready]}"
        if any(not 0 <= step < s.num_steps for step in last.values()):
            return "DECODE-FAIR", "a last token at a step not yet completed"
    levels = getattr(s, "levels", None)
    if levels is not None:
        entries = sorted((entry for queue in levels for entry in queue), key=lambda entry: entry[1])
        for i, (arrival, _, seq) in enumerate(entries):
            if not 0 <= arrival <= s.num_steps or (i and arrival < entries[i - 1][0]):
                return "PRIORITY-ORDER", f"rid {seq.request.rid} arrived at step {arrival}, out of arrival order"
    return None
