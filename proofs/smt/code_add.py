"""ADD (code): the scheduler's own `add()` run on symbolic values, every path, from every state of at most
N requests its post-conditions allow, ended records included.

The state is `symstate`'s (ready, partial, waiting requests, every length and count an unbounded
integer) with some requests ended on the last completed step (their records in `_ended`, as progress
and `ended` show them). The call is `add(rid, prompt_len, max_new)` with `prompt_len` and `max_new`
symbolic and unconstrained (zero, negative and past MAX_INT included), and `rid` each rid the state
holds (waiting, running or ended) and one it never held. The claims, read through the public views:

- NEVER-FIT: add() accepts exactly what the rule says (valid fields, prompt_len + max_new <= K, a rid no
  request that has not ended holds; a rid of an ended request either way), refuses with a ValueError
  or TypeError that says why (`rules.never_fit`, the monitor's own judgement), and a refusal changes
  nothing any view shows: the line, the running requests, the free KV, `ended`, every progress.
- FCFS: an accepted request joins the line at its back, shown waiting with its lengths and nothing run;
  nobody else moves. KV: the free KV is unchanged. END: `ended` lists exactly the rids whose progress
  shows an end (an ended rid taken again shows the new request). PROGRESS: the scheduler is not idle.
- The post-conditions hold after the call.

Validation: `Request`'s own `check_int` refuses anything but an int, so for the run it is wrapped
(`symbolic_bounds`): a symbolic value passes its type test (it is an integer by construction) and meets
its bounds as branches of the exploration; any other value goes to the original check. Nothing else
of the code is replaced. A TypeError other than the validation's own `FieldTypeError` is the code
leaving the fragment (hashing a symbolic length, say): the theorem is then unknown, never holds.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import z3

from stallfree.spec import types as spec_types
from stallfree.spec.calls import never_fit
from stallfree.spec.errors import FieldTypeError, InvalidField, ProtocolError
from stallfree.spec.phase import Phase
from stallfree.spec.types import MAX_INT, Request
from stallfree.spec.verdict import Verdict

from . import code_claims
from .code_claims import ENDS, Claim
from .code_theorems import Outcome, allowed_state
from .symexec import Explorer, Int, explore, variables
from .symstate import Shape, _unchecked, build, home, names, shapes, type_assumptions

NAME = "ADD (code)"
DEFAULT_N = 3
# A plan pending while add() runs costs schedule() and complete()'s paths too (at N <= 2 every shape:
# 2,855 paths against 458, about 9 s here): by default only for states of at most one request.
DEFAULT_PENDING_N = 1
MAX_PATHS = 200_000  # per state shape and rid: past it the theorem is unknown (a count, not seconds)


@contextmanager
def symbolic_bounds() -> Iterator[None]:
    """`check_int` for the run: an `Int` meets its bounds symbolically; anything else the original check."""
    original = spec_types.check_int

    def check_int(field: str, value: object, minimum: int = 1) -> Any:
        if not isinstance(value, Int):
            return original(field, value, minimum)
        if value < minimum:
            raise InvalidField(f"{field} must be >= {minimum}, got {value}")
        if value > MAX_INT:
            raise InvalidField(f"{field} must be <= 2**63-1, got {value}")
        return value

    spec_types.check_int = check_int
    try:
        yield
    finally:
        spec_types.check_int = original


@dataclass(frozen=True, slots=True)
class AddShape:
    """A state shape (`symstate.Shape`) and how many requests ended on the last completed step
    (rids after the shape's, each FINISHED: its max_new-th token on that step)."""

    live: Shape
    ended: int

    @property
    def size(self) -> int:
        return self.live.size + self.ended

    def label(self) -> str:
        return f"{self.live.label()}, {self.ended} ended"


def add_shapes(n: int) -> list[AddShape]:
    """Every state of at most `n` requests, live or ended."""
    return [AddShape(live, e) for live in shapes(n) for e in range(n - live.size + 1)]


def add_names(shape: AddShape) -> list[str]:
    out = [*names(shape.live), "new_prompt_len", "new_max_new"]
    for rid in range(shape.live.size, shape.size):
        out += [f"prompt_len{rid}", f"max_new{rid}"]
    return out


def assumptions(v: dict[str, z3.ArithRef], shape: AddShape) -> list[z3.BoolRef]:
    """The state's type assumptions (`symstate`); an ended request's lengths >= 1, its tokens all out by
    the last step. Nothing of the new request: add() must judge any value."""
    facts = type_assumptions(v, shape.live)
    for rid in range(shape.live.size, shape.size):
        facts += [v[f"prompt_len{rid}"] >= 1, v[f"max_new{rid}"] >= 1, v["num_steps"] >= v[f"max_new{rid}"]]
    return facts


def build_state(cls: type, shape: AddShape, v: dict[str, z3.ArithRef], ex: Explorer) -> Any:
    """`symstate.build`, then the ended records: each request ended FINISHED on the last completed step."""
    s = build(cls, shape.live, v, ex)
    module = home(cls)
    steps = Int(v["num_steps"], ex)
    for rid in range(shape.live.size, shape.size):
        request = _unchecked(Request, rid=rid, prompt_len=Int(v[f"prompt_len{rid}"], ex),
                             max_new=Int(v[f"max_new{rid}"], ex))
        seq = module.Sequence(request)
        seq.num_prefilled, seq.first_token_step = request.prompt_len, steps - request.max_new
        s._step.ended[rid] = (seq, Phase.FINISHED)
    return s


def must_refuse(s: Any, rid: int, live: bool, prompt_len: Int, max_new: Int) -> str | None:
    """Why NEVER-FIT refuses add(rid, prompt_len, max_new) in this state, or None: stated from the rule."""
    if not (prompt_len >= 1 and max_new >= 1 and prompt_len <= MAX_INT and max_new <= MAX_INT):
        return "a length below 1 or past 2**63-1"
    if prompt_len + max_new > s.config.kv_tokens:
        return "prompt_len + max_new exceeds kv_tokens"
    if live:
        return f"rid {rid} is taken by a request that has not ended"
    return None


def check_add(claim: Claim, s: Any, shape: AddShape, rid: int, prompt_len: Int, max_new: Int,
              pending: bool) -> None:
    """Run add() once (after schedule(), if `pending`) and check every claim of the module's docstring;
    with a plan pending, complete it after and check that the new request still waits."""
    rids = range(shape.size + 1)
    plan = s.schedule() if pending else None
    before = code_claims.views(s, rids)
    verdict = must_refuse(s, rid, rid < shape.live.size, prompt_len, max_new)
    raised: BaseException | None = None
    try:
        s.add(rid, prompt_len, max_new)
    except TypeError as error:  # a plain TypeError is the code leaving the fragment: nothing is claimed
        if not isinstance(error, FieldTypeError):
            raise
        raised = error
    except Exception as error:  # judged by never_fit: a refusal must be ValueError or TypeError
        raised = error
    message = never_fit(verdict, raised, may_refuse=shape.live.size <= rid < shape.size)
    claim("NEVER-FIT", message is None, f"add({rid}, {prompt_len}, {max_new}): {message}")
    after = code_claims.views(s, rids)
    if raised is not None:
        claim("NEVER-FIT", _same(before, after), f"a refused add({rid}, ...) changed what the views show")
    else:
        _accepted(claim, before, after, rid, prompt_len, max_new)
    code_claims.invariant(claim, s, f"add({rid}, {prompt_len}, {max_new})")
    if plan is not None:
        s.complete(plan)
        code_claims.invariant(claim, s, "complete(plan) after the add")
        if raised is None:
            shown = s.progress(rid)
            claim("FCFS", shown.phase is Phase.WAITING and rid in {r.rid for r in s.waiting},
                  f"rid {rid}, added while the plan of step {plan.step} was pending, shows {shown.phase.value}")


def _same(before: code_claims.Views, after: code_claims.Views) -> bool:
    return (before.waiting, before.running, before.ended, before.idle) == (after.waiting, after.running,
                                                                           after.ended, after.idle) \
        and bool(before.free_kv == after.free_kv) and before.progress == after.progress


def _accepted(claim: Claim, before: code_claims.Views, after: code_claims.Views, rid: int,
              prompt_len: Int, max_new: Int) -> None:
    claim("FCFS", after.waiting == (*before.waiting, rid),
          f"the line {before.waiting} became {after.waiting} on adding {rid}")
    shown = after.progress[rid]
    claim("FCFS", shown is not None and shown.phase is Phase.WAITING and bool(shown.prompt_len == prompt_len)
          and bool(shown.max_new == max_new) and bool(shown.num_prefilled == 0) and bool(shown.num_emitted == 0),
          f"rid {rid}, just added, shows {shown}")
    claim("FCFS", after.running == before.running, f"the running requests {before.running} became {after.running}")
    claim("KV", after.free_kv == before.free_kv, f"add({rid}) moved the free KV")
    claim("PROGRESS", not after.idle, f"idle right after add({rid})")
    for other, p0 in before.progress.items():
        if other != rid and p0 is not None:
            claim("FCFS", after.progress[other] == p0, f"add({rid}) changed rid {other}'s progress")
    ended = {r for r, p in after.progress.items() if p is not None and p.phase in ENDS}
    claim("END", set(after.ended) == ended, f"ended shows {after.ended}; the requests that show an end are "
          f"{sorted(ended)}")


def _path(ex: Explorer, cls: type, shape: AddShape, v: dict[str, z3.ArithRef], rid: int, pending: bool) -> Any:
    """One run: None if the state is none of the scheduler's, else the claims it breaks."""
    s = allowed_state(lambda: build_state(cls, shape, v, ex))
    if s is None:
        return None
    found: list[tuple[str, str]] = []

    def claim(rule: str, ok: Any, message: str) -> None:
        if not ok:
            found.append((rule, message))

    try:
        check_add(claim, s, shape, rid, Int(v["new_prompt_len"], ex), Int(v["new_max_new"], ex), pending)
    except (InvalidField, ProtocolError, AssertionError, KeyError, IndexError) as error:
        found.append(("PROTOCOL", f"the code raised {type(error).__name__}: {str(error)[:200]}"))
    return [(rule, message, {n: ex.model.eval(t, model_completion=True).as_long() for n, t in v.items()})
            for rule, message in found]


def prove(cls: type, n: int = DEFAULT_N, pending_n: int = DEFAULT_PENDING_N, max_paths: int = MAX_PATHS) -> Outcome:
    """Every path of add() of `cls`'s code, every rid, from every state of at most `n` requests, and
    while a plan is pending from every state of at most `pending_n`."""
    started = time.perf_counter()
    out = Outcome(NAME, Verdict.UNKNOWN, 0.0)
    undecided: list[str] = []
    with symbolic_bounds():
        for shape in add_shapes(n):
            v = variables(add_names(shape))
            for rid in range(shape.size + 1):
                for pending in (False, True)[:1 + (shape.size <= pending_n)]:
                    _explore(out, undecided, cls, shape, v, rid, pending, max_paths)
    out.seconds = time.perf_counter() - started
    if out.counterexample is not None:
        out.verdict = Verdict.BROKEN
    elif undecided or out.states == 0:
        out.detail = "; ".join(undecided) or "no state satisfied the hypothesis"
    else:
        out.verdict = Verdict.HOLDS
        out.detail = f"{out.paths} paths, {out.states} from states the post-conditions allow, every one kept"
    return out


def _explore(out: Outcome, undecided: list[str], cls: type, shape: AddShape, v: dict[str, z3.ArithRef],
             rid: int, pending: bool, max_paths: int) -> None:
    choice = f"add({rid}, ...)" + (" while a plan is pending" if pending else "")
    try:
        runs, ex, complete = explore(lambda ex: _path(ex, cls, shape, v, rid, pending), assumptions(v, shape),
                                     max_paths)
    except TypeError as error:  # an operation symbolic values do not support: nothing is claimed
        undecided.append(f"{shape.label()}, {choice}: the code cannot run symbolically ({error})")
        return
    out.tally(undecided, f"{shape.label()}, {choice}", runs, ex, complete)
    for rule, message, values in (f for r in runs if r for f in r):
        out.found(rule, message, values, shape.label(), choice)
