"""What the policy-level induction rows take for granted of `Policy.step`'s phases, checked before they
judge a policy: each row runs a phase as `getattr(policy, name)` and reads each plan entry from one
phase alone, while `Policy.step` runs the callables `phases()` returns on one shared draft.

- **The phases judged are the phases run** (`unjudged`): every callable `phases()` returns is the
  policy's own bound method of that name, each of `OWN_ENTRIES`' names once. Else the row is not
  judged, naming why: it would judge methods the step never runs (`phase_planted.AliasIdle`, a
  false holds before; `SpuriousAlias`, a correct step read BROKEN before), or a phase it has no loop
  for (`NoPartials`, `ExtraPhase`, a KeyError before).
- **Each phase writes only its own entries** (`foreign_writes`): the decodes phase the decode entry,
  the partials phase the chunk, admission the admit flag and the first chunk. A later phase writing an
  earlier one's entry replaces it in the plan the step completes, which no loop sees
  (`EraseDecodes`, `EraseChunks`). Read off one iteration of the loop body in FOLD's frame
  (`fold_frame.iteration`): the frame rules out symbolic branching, so that one run is every
  iteration's. A phase the frame refuses is read as `Policy.step` runs it on 1 to 4 requests, the N
  its FOLD is checked at then (`fold_induction`), no further (the rows that rest on FOLD say so).
"""

from __future__ import annotations

import inspect

import z3

from .fold_frame import ENTRIES, FrameError, iteration
from .policy import Draft, Policy
from .symbolic import SymConfig, SymRequest, SymState

REFUSED_UP_TO = 4  # the most requests a phase the frame refuses is read on (FOLD's fallback N, `fold_induction`)
OWN_ENTRIES: dict[str, tuple[str, ...]] = {"plan_decodes": ("decode",), "plan_partials": ("chunk",),
                                           "admit": ("admit", "first_chunk")}


def unjudged(policy: Policy) -> str | None:
    """Why the rows cannot judge `policy`'s phases (None: they can): the first phase `phases()` returns
    that is not the policy's own method of its name, a name twice, or a name with no loop."""
    names: list[str] = []
    for phase in policy.phases():
        name = getattr(phase, "__name__", repr(phase))
        own = getattr(type(policy), name, None)
        if not inspect.ismethod(phase) or phase.__self__ is not policy or phase.__func__ is not own:
            return (f"not judged: phases() returns a callable named {name!r} that is not the policy's own method "
                    f"{name}, which the rows run (Policy.step runs what phases() returns)")
        if name not in OWN_ENTRIES:
            return f"not judged: phases() returns {name!r}, a phase no loop of the rows runs ({', '.join(OWN_ENTRIES)})"
        if name in names:
            return f"not judged: phases() returns {name!r} twice; the rows run each phase once"
        names.append(name)
    missing = [n for n in OWN_ENTRIES if n not in names]
    if missing:
        return f"not judged: phases() leaves out {missing[0]!r}, whose loop the rows run"
    return None


def foreign_writes(policy: Policy) -> dict[str, str]:
    """The phases whose loop body writes a plan entry not its own, each with the entries (a phase the
    frame refuses read on 1 to `REFUSED_UP_TO` requests: its entries cannot be read off one iteration)."""
    carried = (z3.Int("guard.left"), z3.Int("guard.running"), z3.Int("guard.free"), z3.Bool("guard.stopped"),
               z3.Int("guard.admitted"))
    out: dict[str, str] = {}
    for name, own in OWN_ENTRIES.items():
        try:
            it = iteration(policy, name, SymConfig.fresh(), SymRequest.fresh("guard.r"), carried, "guard.")
        except FrameError:
            foreign = _written_up_to(policy, name, REFUSED_UP_TO)
        else:
            foreign = [e for e, v in it.entry.items() if v is not None and e not in own]
        if foreign:
            out[name] = (f"{name} writes d.{', d.'.join(foreign)}, not its own entry ({', '.join(own)}): the plan "
                         "the step completes holds that write, which no loop reads")
    return out


def _written_up_to(policy: Policy, phase: str, most: int) -> list[str]:
    """The entries not its own that `phase` replaces when `Policy.step` runs it on 1 to `most` requests
    (a phase the frame refuses: read at the N its FOLD is checked at, no further)."""
    own = OWN_ENTRIES[phase]
    for n in range(1, most + 1):
        s = SymState.fresh(f"guard{n}", n, SymConfig.fresh())
        d = Draft(s)
        for run in policy.phases():
            before = {e: list(getattr(d, e)) for e in ENTRIES if e not in own}
            run(s, d)
            if run.__name__ == phase:
                changed = [e for e, was in before.items() if len(getattr(d, e)) != n
                           or not all(_same(a, b) for a, b in zip(getattr(d, e), was, strict=True))]
                if changed:
                    return changed
    return []


def _same(after: z3.ExprRef, before: z3.ExprRef) -> bool:
    """Whether an entry is the one the phase found: the same term, or one Z3's simplifier makes it (a
    rewrite it cannot show equal counts as a write: unknown, never holds)."""
    return after is before or (z3.is_expr(after) and z3.is_true(z3.simplify(after == before)))
