"""The phases' loops of LIVENESS-STEPS for any N (`liveness_induction`): each phase of the step as a
loop over the requests, the policy's own phase code on request i its body (`induction._iteration`),
entered with what the phase before left (`Draft`'s budget left, running count, free KV, stopped flag
and admissions so far; the first phase with B, the state's running count and free KV, not stopped,
none admitted), in the policy's `phases()` order.

Each loop's invariant states what the ranking needs, no more: at least the budget entered less what
the decodes or chunks took is left (admission: exactly, with the running count, free KV and
admissions it counts), and, for every request met, what the body decided: a decode only for a
ready request, which goes without only once the requests before it had as many decodes as the
budget entered; a chunk within the prompt, only for a partial one, short of it only when no budget
is left; an admission only of a waiting request, its first chunk min(prompt, budget left), and a
waiting request met before any admission or refusal refused only for want of budget, a slot or KV.
The counts are prefix sums over the arrays, each defined by its recurrence, as in `chain`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import z3

from .chain import FREE_BEFORE, Chain
from .induction import INT, Obligation, _iteration
from .liveness_steps import emit_left, prompt_left
from .policy import Policy, smin

COUNTS = ("P0", "P1", "D0", "D1", "tok", "dec", "rdy", "par", "wai", "run", "rkv", "sp", "sa", "adm", "akv", "ref")
State = tuple[z3.ArithRef, z3.ArithRef, z3.ArithRef, z3.BoolRef, z3.ArithRef]  # left, running, free, stopped,
# admissions so far: the `Draft` fields a phase reads and writes
R0 = z3.Int("R0")  # the running count of the state before the step


def ranking_chain(policy: Policy) -> Chain:
    """The chain's requests and plan arrays, with the ranking's prefix sums as its counts."""
    c = Chain.fresh(policy)
    return dataclasses.replace(c, count={k: z3.Function(f"live_{k}", INT, INT) for k in COUNTS})


def _weights(c: Chain, j: z3.ArithRef) -> dict[str, z3.ArithRef]:
    """What request j adds to each prefix sum."""
    r, p, a = c.reqs.at(j), c.plan, c.after(j)

    def one(b: z3.BoolRef) -> z3.ArithRef:
        return z3.If(b, 1, 0)

    return {"P0": prompt_left(r), "P1": prompt_left(a), "D0": emit_left(r), "D1": emit_left(a),
            "tok": a.num_emitted - r.num_emitted, "dec": one(p["DEC"][j]), "rdy": one(r.ready),
            "par": one(r.partial), "wai": one(r.waiting), "run": one(r.running),
            "rkv": z3.If(r.running, r.reservation, 0), "sp": p["CH"][j], "sa": p["FC"][j], "adm": one(p["ADM"][j]),
            "akv": z3.If(p["ADM"][j], r.reservation, 0), "ref": one(z3.And(r.waiting, z3.Not(p["ADM"][j])))}


def recurrences(c: Chain, names: tuple[str, ...], at: z3.ArithRef) -> z3.BoolRef:
    """The definitions of the named prefix sums, at index `at`: F(at + 1) = F(at) + request at's share."""
    w = _weights(c, at)
    return z3.And([c.c(k, at + 1) == c.c(k, at) + w[k] for k in names])


def zero(c: Chain) -> z3.BoolRef:
    """Every prefix sum is 0 over no requests."""
    return z3.And([c.c(k, z3.IntVal(0)) == 0 for k in COUNTS])


# -- the phases' loops ------------------------------------------------------------------------------


def _carried(e: State, now: State) -> z3.BoolRef:
    """A phase that admits nothing leaves the running count, the free KV, the stopped flag and the
    admissions so far alone."""
    return z3.And(now[1] == e[1], now[2] == e[2], now[3] == e[3], now[4] == e[4])


def _decodes(c: Chain, at: z3.ArithRef, e: State, now: State) -> z3.BoolRef:
    """At least the budget entered less one a decode is left (the ranking needs no more: BUDGET is
    another row's)."""
    return z3.And(now[0] >= e[0] - c.c("dec", at), now[0] >= 0, _carried(e, now))


def _decoded(c: Chain, j: z3.ArithRef, e: State, now: State) -> z3.BoolRef:
    """A decode only for a ready request; a ready one goes without only once the requests before it
    had as many decodes as the budget the loop was entered with."""
    r, dec = c.reqs.at(j), c.plan["DEC"][j]
    return z3.And(z3.Implies(dec, r.ready), z3.Implies(z3.And(r.ready, z3.Not(dec)), c.c("dec", j) >= e[0]))


def _partials(c: Chain, at: z3.ArithRef, e: State, now: State) -> z3.BoolRef:
    """At least the budget entered less the chunks given is left."""
    return z3.And(now[0] >= e[0] - c.c("sp", at), now[0] >= 0, _carried(e, now))


def _chunked(c: Chain, j: z3.ArithRef, e: State, now: State) -> z3.BoolRef:
    """A chunk within the prompt, only for a partial one; one short of the prompt leaves no budget."""
    r, ch = c.reqs.at(j), c.plan["CH"][j]
    rem = r.prompt_len - r.num_prefilled
    return z3.And(ch >= 0, ch <= rem, z3.Implies(ch > 0, r.partial),
                  z3.Implies(z3.And(r.partial, ch < rem), now[0] == 0))


def _admissions(c: Chain, at: z3.ArithRef, e: State, now: State) -> z3.BoolRef:
    return z3.And(now[0] == e[0] - c.c("sa", at), now[0] >= 0, c.c("ref", at) >= 0, c.c("adm", at) >= 0,
                  now[1] == e[1] + c.c("adm", at),
                  now[2] == e[2] - c.c("akv", at), now[4] == e[4] + c.c("adm", at),
                  z3.Implies(now[3], z3.Or(e[3], c.c("ref", at) + c.c("adm", at) >= 1)))


def _admitted(c: Chain, j: z3.ArithRef, e: State, now: State) -> z3.BoolRef:
    """An admission only of a waiting request, its first chunk min(prompt, budget left); a waiting
    request met before any admission or refusal is refused only for want of budget, a slot or KV."""
    r, adm, fc = c.reqs.at(j), c.plan["ADM"][j], c.plan["FC"][j]
    left, first = e[0] - c.c("sa", j), z3.And(z3.Not(e[3]), e[4] == 0, c.c("ref", j) + c.c("adm", j) == 0)
    refused = z3.Or(left <= 0, e[1] + c.c("adm", j) >= c.config.max_seqs, r.reservation > e[2] - c.c("akv", j))
    return z3.And(fc >= 0, z3.Implies(adm, z3.And(r.waiting, fc == smin(r.prompt_len, left))),
                  z3.Implies(z3.Not(adm), fc == 0), z3.Implies(z3.And(r.waiting, z3.Not(adm), first), refused))


Part = Callable[[Chain, z3.ArithRef, State, State], z3.BoolRef]


@dataclass(frozen=True)
class Loop:
    """One phase's loop: the plan array it writes, the prefix sums it defines, its invariant's parts."""

    array: str
    counts: tuple[str, ...]
    scalar: Part  # the loop's state at `at`, entered with the first State, now the second
    each: Part  # what it decided for request j, once met

    def invariant(self, c: Chain, at: z3.ArithRef, e: State, now: State) -> z3.BoolRef:
        j = z3.Int("j")
        return z3.And(at >= 0, at <= c.n, self.scalar(c, at, e, now),
                      z3.ForAll([j], z3.Implies(z3.And(j >= 0, j < at), self.each(c, j, e, now))))


LOOPS: dict[str, Loop] = {
    "plan_decodes": Loop("DEC", ("dec",), _decodes, _decoded),
    "plan_partials": Loop("CH", ("sp",), _partials, _chunked),
    "admit": Loop("ADM", ("sa", "adm", "akv", "ref"), _admissions, _admitted),
}


def _state(name: str) -> State:
    return (z3.Int(f"{name}.left"), z3.Int(f"{name}.running"), z3.Int(f"{name}.free"), z3.Bool(f"{name}.stopped"),
            z3.Int(f"{name}.admitted"))


def _phase(c: Chain, name: str, e: State) -> list[Obligation]:
    """Initiation and consecution of phase `name`'s loop, entered with `e`."""
    loop, now = LOOPS[name], _state(name)
    i, p = c.i, c.plan
    d = _iteration(c.policy, name, c.reqs.at(i), c.config, now[0], now[1], now[2], now[3], now[4])
    writes = {"DEC": p["DEC"][i] == d.decode[0], "CH": p["CH"][i] == d.chunk[0],
              "ADM": z3.And(p["ADM"][i] == d.admit[0], p["FC"][i] == d.first_chunk[0])}[loop.array]
    base = z3.And(c.config.valid(), c.n >= 0, e[0] >= 0, zero(c))
    step = z3.And(base, loop.invariant(c, i, e, now), i < c.n, c.reqs.valid_at(i, c.config), z3.And(d.defs), writes,
                  recurrences(c, loop.counts, i))
    after = (d.left, d.num_running, d.free_kv, d.stopped, d.num_admitted)
    return [Obligation(f"{name}: initiation", base, loop.invariant(c, z3.IntVal(0), e, e)),
            Obligation(f"{name}: consecution", step, loop.invariant(c, i + 1, e, after), i == 0)]


def phases(c: Chain) -> tuple[list[Obligation], dict[str, tuple[State, State]], z3.BoolRef]:
    """Every phase's loop in the policy's order; each phase's (entered, exit) states; their exits."""
    obligations: list[Obligation] = []
    states: dict[str, tuple[State, State]] = {}
    exits = []
    entered: State = (c.config.token_budget, R0, FREE_BEFORE, z3.BoolVal(False), z3.IntVal(0))
    for k, phase in enumerate(c.policy.phases()):
        name, exited = phase.__name__, _state(f"X{k + 1}")
        obligations += _phase(c, name, entered)
        states[name] = (entered, exited)
        exits.append(z3.And(LOOPS[name].scalar(c, c.n, entered, exited), exited[0] >= 0))
        entered = exited
    return obligations, states, z3.And(exits)
