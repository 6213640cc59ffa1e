"""Checked simulation's shortcut on the steps that are not decodes alone (sim/cleansteps.py: a plan with a
chunk, an admission or a request due its last token, judged before it runs by the trace checker's
`Shortcut.entries` and `_policy`, its completion by `Decodes._done_with`) gives the monitor's verdicts.
Each kind of such step is taken on the simulate workloads; breaks planted on such a step (and on the
decodes-alone step's new short cuts) are caught at the same step with the same message with and without
the shortcut. Negative controls: each check of the shortcut planted out (`PLANTED`), the break aimed at it
is missed or caught later (the whole outcome differs from the monitor's)."""

from __future__ import annotations

import inspect
import types
from collections import Counter, OrderedDict
from typing import Any

import pytest
from test_checked_shortcut import SERVING, FloatEmitted, outcome

from stallfree.reference import Scheduler
from stallfree.sim import checked, checkedcalls, cleansteps, cleantail
from stallfree.sim.cleansteps import Decodes
from stallfree.sim.cleantail import Tail
from stallfree.spec import Entry, Plan

FROM = 40  # a break is planted on the first step from here that has what it needs


def kinds(clean: Any) -> list[str]:
    """What a step taken by `_done_tail` (or `_done_with`) carried."""
    if isinstance(clean, Tail):
        first_admitted = len(clean.prefills) - clean.admitted
        found = [("whole admission" if end == t.request.prompt_len else "partial admission") if i >= first_admitted
                 else ("completing chunk" if end == t.request.prompt_len else "partial chunk")
                 for i, (t, end, _) in enumerate(clean.prefills)]
        return found + ["end"] * bool(clean.ending) + ["fresh decodes"] * bool(clean.seen)
    found = [("whole admission" if end == t.request.prompt_len else "partial admission") if t in clean.admitted
             else ("completing chunk" if end == t.request.prompt_len else "partial chunk") for t, end in clean.prefills]
    return found + ["end"] * bool(clean.ending)


@pytest.mark.parametrize("trace", ["conv", "code"])
def test_each_kind_of_step_is_taken(trace: str, monkeypatch: pytest.MonkeyPatch) -> None:
    taken: Counter[str] = Counter()
    done_with, done_tail = Decodes._done_with, Decodes._done_tail

    def counted(done: Any) -> Any:
        def count(self: Decodes, clean: Any, emitted: object, free_kv: object) -> bool:
            findings = kinds(clean)  # before the move
            took = done(self, clean, emitted, free_kv)
            taken.update(findings if took else ["declined"])
            return took
        return count

    monkeypatch.setattr(Decodes, "_done_with", counted(done_with))
    monkeypatch.setattr(Decodes, "_done_tail", counted(done_tail))
    fast, _ = outcome(True, monkeypatch, trace, 400, Scheduler, SERVING)
    assert fast[0] == "kept"
    assert taken["declined"] == 0
    assert {"whole admission", "partial admission", "completing chunk", "partial chunk", "end",
            "fresh decodes"} <= taken.keys(), taken


class Planted(Scheduler):
    """A break on the first step from `FROM` whose plan has more entries than decodes (`aim`: "mixed"),
    that ends a request ("end"), or that is decodes alone ending none ("decodes")."""

    aim = "mixed"

    def __init__(self, token_budget: int, max_seqs: int, kv_tokens: int) -> None:
        super().__init__(token_budget, max_seqs, kv_tokens)
        self.armed = True
        self.leak = 0

    def fires(self, plan: Plan) -> bool:
        if not self.armed or plan.step < FROM:
            return False
        num_ready = len(self._ready)
        if self.aim == "mixed":
            hit = len(plan.entries) > num_ready >= 2
        elif self.aim == "end":
            hit = plan.step in self._finishing
        else:
            hit = len(plan.entries) == num_ready >= 2 and plan.step not in self._finishing
        self.armed = not hit
        return hit

    def schedule(self) -> Plan:
        plan = super().schedule()
        return self.planned(plan) if self.fires(plan) else plan

    def planned(self, plan: Plan) -> Plan:
        self.hit = plan.step
        return plan

    def complete(self, plan: Plan, stopped: Any = ()) -> tuple[int, ...]:
        emitted = super().complete(self._step.plan, stopped)  # type: ignore[arg-type]  # the plan it made
        return self.emitted(emitted) if getattr(self, "hit", None) == plan.step else emitted

    def emitted(self, emitted: tuple[int, ...]) -> tuple[int, ...]:
        return emitted

    @property
    def free_kv(self) -> int:
        return self._free_kv + self.leak


class Twice(Planted):
    """A ready request's token twice on a step with a chunk (TOKENS)."""

    def emitted(self, emitted: tuple[int, ...]) -> tuple[int, ...]:
        return (*emitted, emitted[0])


class SilentTwice(Planted):
    """The first ready request silent, the second emitting twice, on a step with a chunk (TOKENS)."""

    def emitted(self, emitted: tuple[int, ...]) -> tuple[int, ...]:
        return (emitted[1], *emitted[1:])


class NoFirstToken(Planted):
    """The last rid emitted (a chunk ending its prompt) given as a ready one again (FIRST-TOKEN)."""

    def fires(self, plan: Plan) -> bool:
        return super().fires(plan) if any(n == self._running[rid].num_remaining_prompt for rid, n in
                                          plan.entries[len(self._ready):]) else False

    def emitted(self, emitted: tuple[int, ...]) -> tuple[int, ...]:
        return (*emitted[:-1], emitted[0])


class FloatToken(Planted):
    """A ready request's rid emitted as a float on a step with a chunk (PROTOCOL)."""

    def emitted(self, emitted: tuple[int, ...]) -> tuple[int, ...]:
        return (float(emitted[0]), *emitted[1:])  # type: ignore[return-value]


class FloatDecodeToken(FloatToken):
    """A ready request's rid emitted as a float on a step of decodes alone (PROTOCOL)."""

    aim = "decodes"


class FloatEndToken(FloatToken):
    """A ready request's rid emitted as a float on a step that ends a request (PROTOCOL)."""

    aim = "end"


class FloatChunk(Planted):
    """The chunk of a step with one given as a float n (PROTOCOL)."""

    def planned(self, plan: Plan) -> Plan:
        super().planned(plan)
        num, (rid, n) = len(self._ready), plan.entries[len(self._ready)]
        return Plan(plan.step, (*plan.entries[:num], (rid, float(n)), *plan.entries[num + 1:]))  # type: ignore[arg-type]


class LeftOut(Planted):
    """On a step with two prompt entries, the first ready request left out and the second given 2 (DECODE-FIRST;
    with one, the plan is as long as the ready set, and judged as decodes alone: `_pairs`)."""

    def fires(self, plan: Plan) -> bool:
        return super().fires(plan) if len(plan.entries) > len(self._ready) + 1 else False

    def planned(self, plan: Plan) -> Plan:
        super().planned(plan)
        _, second = plan.entries[0], plan.entries[1]
        return Plan(plan.step, (Entry(second.rid, 2), *plan.entries[2:]))


class KeptKV(Planted):
    """On a step that ends a request, its reservation shown as not back (KV)."""

    aim = "end"

    def emitted(self, emitted: tuple[int, ...]) -> tuple[int, ...]:
        self.leak = -1
        return emitted


class KeptKVOnChunk(Planted):
    """On a step with a chunk, one KV token shown less free than there is (KV)."""

    def emitted(self, emitted: tuple[int, ...]) -> tuple[int, ...]:
        self.leak = -1
        return emitted


class Withheld(Planted):
    """On a step of decodes alone, the waiting head, which fits, not admitted (WORK-CONSERVING)."""

    def schedule(self) -> Plan:
        if not self.armed or self._step.number < FROM or not self._waiting or len(self._running) > len(self._ready) \
                or len(self._ready) < 2:
            return super().schedule()
        self.armed = False
        waiting, self._waiting = self._waiting, OrderedDict()
        try:
            return super().schedule()
        finally:
            self._waiting = waiting


BREAKS = {Twice: "TOKENS", SilentTwice: "TOKENS", NoFirstToken: "FIRST-TOKEN", FloatToken: "PROTOCOL",
          FloatDecodeToken: "PROTOCOL", FloatEndToken: "PROTOCOL", FloatChunk: "PROTOCOL", LeftOut: "DECODE-FIRST",
          KeptKV: "KV", KeptKVOnChunk: "KV", Withheld: "WORK-CONSERVING"}


@pytest.mark.parametrize("fault", BREAKS, ids=[f.__name__ for f in BREAKS])
def test_a_break_on_a_step_the_shortcut_judges_is_caught_as_without_it(fault: Any,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    fast, taken = outcome(True, monkeypatch, "conv", 120, fault, SERVING)
    slow, _ = outcome(False, monkeypatch, "conv", 120, fault, SERVING)
    assert fast == slow
    assert fast[:2] == ("broken", BREAKS[fault]), fast
    assert fast[2] >= FROM
    assert taken > 0


# a check of cleansteps or checkedcalls planted out (the module, its text, and what replaces it): the breaks it must
# then miss
PLANTED: dict[tuple[str, str, str], tuple[Any, ...]] = {
    ("cleansteps", "len(emitted) != len(ready) + len(firsts):", "False:"): (Twice,),
    ("cleansteps", "(ready <= emitting and ", "("): (SilentTwice,),
    ("cleansteps", "            for rid in firsts:\n                if rid not in emitting:",
     "            for rid in firsts:\n                if False:"): (NoFirstToken,),
    ("cleansteps", " and set(map(type, emitted)) <= INT):", "):"): (FloatToken,),
    ("checkedcalls", "all(map(is_, emitted, rids))", "list(emitted) == list(rids)"): (FloatEmitted, FloatDecodeToken),
    ("cleansteps", "if not all(map(is_, emitted, self._emits(tail))):",
     "if list(emitted) != list(self._emits(tail)):"): (FloatEndToken, FloatToken),
    ("cleantail", "or type(n) is not int or n < 1", "or n < 1"): (FloatChunk,),
    ("cleansteps", "        if free != free_kv:\n", "        if False:\n"): (KeptKV, KeptKVOnChunk),
    ("cleansteps", 'fit again."""\n        self.fits = False\n', 'fit again."""\n'): (Withheld,),
    # the trace checker's predicates, for a plan not in the contract's order (`tail` planted to read none)
    ("generic", "or len(emitted) != num:", ":"): (Twice,),
    ("generic", "not emitting >= ready or ", ""): (SilentTwice,),
    ("generic", "if t.request.rid not in emitting:", "if False:"): (NoFirstToken,),
    ("generic", " or not set(map(type, emitted)) <= INT:", ":"): (FloatToken,),
    ("generic", "return got if set(map(type, got)) <= INT and set(map(type, got.values())) <= INT else None",
     "return got"): (FloatChunk,),
    ("generic", "        if free_kv != free:\n", "        if False:\n"): (KeptKVOnChunk,),
}
ENTRIES_TEST = "if emitting is None and not got.keys() >= ready:"  # in the trace checker's `Shortcut.entries`


def planted(module: Any, text: str, by: str, decodes: Any = None) -> Any:
    """`module` with `text` replaced by `by` (and, given `decodes`, its `Decodes` that one)."""
    source = inspect.getsource(module)
    copy = types.ModuleType("planted")
    copy.__package__ = module.__package__
    if text:
        assert source.count(text) == 1, text
        source = source.replace(text, by)
    if decodes is not None:
        line = "from .cleansteps import Decodes\n"
        assert source.count(line) == 1, line
        source = source.replace(line, "")
        copy.Decodes = decodes  # type: ignore[attr-defined]
    exec(compile(source, "planted", "exec"), copy.__dict__)
    return copy


def planted_calls(where: str, text: str, by: str) -> Any:
    """`Calls` with `text` replaced by `by` in the source of `where`: cleansteps, cleantail or checkedcalls; "generic":
    cleansteps with `tail` reading no plan (every plan with chunks or admissions judged by the trace checker's
    predicates, `Decodes._entries`, and its completion by `_done_with`)."""
    if where == "checkedcalls":
        return planted(checkedcalls, text, by, cleansteps.Decodes).Calls
    if where == "cleantail":
        module, tails = planted(cleansteps, "", ""), planted(cleantail, text, by)
        tails.Tail = cleantail.Tail  # the class cleansteps reads a plan's findings by
        module.tail = tails.tail
    else:
        module = planted(cleansteps, text, by)
        if where == "generic":
            module.tail = lambda *args: None
    return planted(checkedcalls, "", "", module.Decodes).Calls


@pytest.mark.parametrize("where", ["cleansteps", "checkedcalls", "cleantail", "generic"])
def test_a_copy_planted_with_nothing_judges_as_the_monitor(where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The planting itself changes no verdict: a copy of the modules with nothing planted out judges each break
    as the monitor does (so a planted copy that differs differs by what was planted out)."""
    for fault in BREAKS:
        slow, _ = outcome(False, monkeypatch, "conv", 120, fault, SERVING)
        monkeypatch.setattr(checked, "Calls", planted_calls(where, "", ""))
        fast, taken = outcome(True, monkeypatch, "conv", 120, fault, SERVING)
        assert fast == slow, fault.__name__
        assert taken > 0
        monkeypatch.undo()


@pytest.mark.parametrize(("condition", "faults"), list(PLANTED.items()), ids=[f"{w}: {t}" for w, t, _ in PLANTED])
def test_a_shortcut_without_a_check_is_caught(condition: tuple[str, str, str], faults: tuple[Any, ...],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    for fault in faults:
        slow, _ = outcome(False, monkeypatch, "conv", 120, fault, SERVING)
        monkeypatch.setattr(checked, "Calls", planted_calls(*condition))
        try:
            fast, _ = outcome(True, monkeypatch, "conv", 120, fault, SERVING)
        except Exception as error:  # the planted shortcut read past what it checked, or the run stalled
            fast = ("failed", repr(error))
        assert fast != slow, f"without {condition[1]!r}, {fault.__name__} was judged as the monitor judges it"


def test_a_shortcut_without_the_left_out_test_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    from stallfree.conformance.trace import cleanstep_v1

    slow, _ = outcome(False, monkeypatch, "conv", 120, LeftOut, SERVING)
    module = planted(cleanstep_v1, ENTRIES_TEST, "if False:")
    monkeypatch.setattr(cleansteps.Decodes, "entries", module.Shortcut.entries)
    try:
        fast, _ = outcome(True, monkeypatch, "conv", 120, LeftOut, SERVING)
    except Exception as error:
        fast = ("failed", repr(error))
    assert fast != slow, "without the test of a ready request left out, LeftOut was judged as the monitor judges it"
