"""Replay a Quint trace on a scheduler: every arrival, step, stop and cancel the spec took is made
through the plain protocol, and after each the scheduler must have planned, emitted and left what
the spec did. This binds the spec to the code: a change to either that changes a decision shows as a
disagreement, named with the state and both sides.

Compared after each action: the plan (rid, n in order), the emitted rids (in order), a refused
add() raising, and, where the scheduler shows them (the reference does), the waiting line, the
running requests with their progress, and the free KV."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stallfree.reference import Scheduler

Factory = Callable[..., Any]


@dataclass(frozen=True, slots=True)
class Replayed:
    states: int  # states of the trace replayed (the initial one included) before it ended or disagreed
    disagreement: str | None  # None: every state agreed


def decode(value: Any) -> Any:
    """An ITF value as plain Python: bigints as ints, records as dicts, lists as lists."""
    if isinstance(value, dict):
        if "#bigint" in value:
            return int(value["#bigint"])
        if "#tup" in value or "#set" in value:
            return [decode(v) for v in value.get("#tup", value.get("#set"))]
        return {k: decode(v) for k, v in value.items() if not k.startswith("#")}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def states(itf: dict[str, Any]) -> list[dict[str, Any]]:
    """The trace's states, each a dict of the spec's variables by their short name."""
    return [{name.rsplit("::", 1)[-1]: decode(v) for name, v in s.items() if not name.startswith("#")}
            for s in itf["states"]]


def replay(itf: dict[str, Any], config: dict[str, Any], factory: Factory = Scheduler) -> Replayed:
    """Replay `itf` on a fresh `factory(token_budget=B, max_seqs=S, kv_tokens=KV)`."""
    trace = states(itf)
    sched = factory(token_budget=config["B"], max_seqs=config["S"], kv_tokens=config["KV"])
    for i, state in enumerate(trace[1:], start=1):
        problem = _act(sched, state)
        if problem is None:
            problem = _compare_state(sched, state)
        if problem is not None:
            return Replayed(i, f"state {i} ({_describe(state['last'])}): {problem}")
    return Replayed(len(trace), None)


def _describe(last: dict[str, Any]) -> str:
    if last["kind"] in ("add", "refused"):
        return f"{last['kind']} rid {last['rid']} prompt {last['prompt']} max_new {last['maxNew']}"
    if last["kind"] == "cancel":
        return f"cancel rid {last['rid']}"
    return "step" + (f", rid {last['stopped']} stops" if last["stopped"] >= 0 else "")


def _act(sched: Any, state: dict[str, Any]) -> str | None:
    last = state["last"]
    kind = last["kind"]
    if kind in ("add", "refused"):
        try:
            sched.add(last["rid"], last["prompt"], last["maxNew"])
        except (ValueError, TypeError) as error:
            return None if kind == "refused" else f"add() refused what the spec accepts: {error}"
        return "add() accepted what the spec refuses (NEVER-FIT)" if kind == "refused" else None
    if kind == "cancel":
        try:
            sched.cancel(last["rid"])
        except (ValueError, TypeError) as error:
            return f"cancel() refused: {error}"
        return None
    plan = sched.schedule()
    planned = [(int(rid), int(n)) for rid, n in getattr(plan, "entries", plan)]
    expected = [(e["rid"], e["n"]) for e in state["plan"]]
    if planned != expected:
        return f"the scheduler planned {planned}; the spec plans {expected}"
    stopped = () if last["stopped"] < 0 else (last["stopped"],)
    emitted = list(sched.complete(plan, stopped=stopped) if stopped else sched.complete(plan))
    if emitted != state["emitted"]:
        return f"the scheduler emitted {emitted}; the spec emits {state['emitted']}"
    return None


def _compare_state(sched: Any, state: dict[str, Any]) -> str | None:
    if not hasattr(sched, "progress"):  # a scheduler without the reference's views: the protocol alone
        return None
    waiting = [(r.rid, r.prompt_len, r.max_new) for r in sched.waiting]
    expected = [(w["rid"], w["prompt"], w["maxNew"]) for w in state["waiting"]]
    if waiting != expected:
        return f"the scheduler's waiting line is {waiting}; the spec's is {expected}"
    running = [(p.rid, p.prompt_len, p.max_new, p.num_prefilled, p.num_emitted)
               for p in (sched.progress(r.rid) for r in sched.running)]
    expected_running = [(r["rid"], r["prompt"], r["maxNew"], r["prefilled"], r["emitted"]) for r in state["running"]]
    if running != expected_running:
        return f"the scheduler's running requests are {running}; the spec's are {expected_running}"
    free_kv = getattr(sched, "free_kv", None)
    if free_kv is not None and free_kv != state["freeKv"]:
        return f"the scheduler's free KV is {free_kv}; the spec's is {state['freeKv']}"
    return None
