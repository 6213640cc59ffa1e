"""The worker process: imports the target once, then plays the workloads it is sent, one at a time,
and answers each with an Outcome. Run as `python -m stallfree.conformance.isolation.worker`.

The target runs here, not in the kit's process, so that nothing it does (raise, hang, exit, print,
crash the interpreter) can take the kit down. The pipe protocol is JSON lines on the process's
original stdin and stdout; the target's own prints go to stderr, which the parent keeps in a file.
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys
from collections.abc import Callable
from typing import Any, BinaryIO

from stallfree.spec import PROTOCOL, Config, Player, RuleViolation, Workload, registry, supports
from stallfree.spec.contract import Contract
from stallfree.spec.utils.alarm import Alarm
from stallfree.spec.utils.loader import TargetError, load_target

from . import forked
from .guard import CallTimeout, Guard, JunkReturn, target_traceback
from .outcome import CRASH, KIT_ERROR, REFUSED, TIMEOUT, Outcome

DUMP_SIGNAL = signal.SIGUSR1  # the parent's watchdog asks for a traceback with it, then kills


def run_one(
    factory: Callable[..., Any], workload: Workload, rules: list[str], timeout: float, known: list[str] | None = None,
    contract: Contract | None = None,
) -> Outcome:
    """Play one workload through the target; every way it can end becomes an Outcome.

    `known` are rules already found broken: they are checked too, and where one breaks again the run
    ends there as judged so far (`cut_by`), never as a new finding or as PROTOCOL."""
    guards: list[Guard] = []
    known = [r for r in known or () if r not in rules]

    alarm = Alarm(timeout, CallTimeout, counting=False)  # held over the run; counts during each call
    contract = contract or registry.of(factory)
    guard_class = load_target(contract.guard) if contract.guard else Guard

    def make(**config: int) -> Guard:
        guard = guard_class(alarm)
        guards.append(guard)
        return guard.start(factory, Config(**config))

    player = Player(workload, make, [*rules, *(known or [])], contract=contract)
    try:
        with alarm:
            counts = player.play()
        return Outcome(steps=counts.steps, adds=counts.adds, stopped_at_bound=counts.stopped_at_bound is not None,
                       free_kv_shown=guards[-1].free_kv_shown, exercised=exercised(player))
    except BaseException as error:  # the target may raise anything, KeyboardInterrupt and SystemExit too
        guard = guards[-1] if guards else None
        if isinstance(error, RuleViolation) and error.rule in known:
            monitor = player.monitor
            return Outcome(steps=monitor.num_steps if monitor else 0, adds=monitor.num_adds if monitor else 0,
                           cut_by=error.rule, free_kv_shown=guard.free_kv_shown if guard else None,
                           exercised=exercised(player))
        if player.monitor is None and guard is not None and guard.error is error and isinstance(
                error, ValueError | TypeError):
            return Outcome(REFUSED, None, f"{guard.call} raised {type(error).__name__}: {error}", guard.call)
        return failed(error, player, guard, set(rules), timeout)


def exercised(player: Player) -> dict[str, int]:
    """How often the run reached each checked rule's premise, as its monitor counted (none: no monitor)."""
    return dict(getattr(player.monitor, "exercised", None) or {})


def failed(error: BaseException, player: Player, guard: Guard | None, rules: set[str], timeout: float) -> Outcome:
    monitor = player.monitor
    steps = monitor.num_steps if monitor else 0
    adds = monitor.num_adds if monitor else 0
    call = guard.call if guard else ""
    if isinstance(error, RuleViolation):
        rule, message = error.rule, error.message
        if rule not in rules and rule != PROTOCOL:  # a fact that breaks the protocol as well as the rule
            rule, message = PROTOCOL, f"{message} (a {error.rule} fact; {error.rule} itself is not checked)"
        return Outcome(rule, error.step, message, call, "", steps, adds)
    if isinstance(error, JunkReturn):
        return Outcome(PROTOCOL, player.step, str(error), call, "", steps, adds)
    if isinstance(error, CallTimeout):
        message = f"{call} did not return within the per-call timeout of {timeout:g} s"
        return Outcome(TIMEOUT, player.step, message, call, target_traceback(error), steps, adds)
    if guard is not None and guard.error is error:
        message = f"{call} raised {type(error).__name__}: {error}"
        return Outcome(CRASH, player.step, message, call, target_traceback(error), steps, adds)
    message = f"stallfree failed while judging {call or 'the run'}: {type(error).__name__}: {error}"
    return Outcome(KIT_ERROR, player.step, message, call, target_traceback(error), steps, adds)


def not_applicable(factory: object) -> dict[str, str]:
    """The rules the target says do not apply to it, each with the reason: its factory's optional
    `stallfree_not_applicable`, a dict of rule ID to reason (anything else is ignored and said so)."""
    value = getattr(factory, "stallfree_not_applicable", None)
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(type(k) is str and type(v) is str and v for k, v in value.items()):
        return {"?": f"stallfree_not_applicable must be a dict of rule ID to a reason, got {value!r:.80}"}
    return dict(value)


def capabilities(factory: Callable[..., Any], min_budget: int = 1) -> list[str] | None:
    """What an instance of the target supports beyond the plain protocol (`stallfree.spec.capability`),
    read off one instance's methods, built with a budget the contract allows (`min_budget`: an aligned
    scheduler refuses a budget below its block size); None if building one failed (the runs will say how)."""
    try:
        return sorted(supports(factory(token_budget=max(8, min_budget), max_seqs=2, kv_tokens=64)))
    except Exception:
        return None


def send(out: BinaryIO, message: dict[str, Any]) -> None:
    if forked.WORKER is not None and os.getpid() != forked.WORKER:  # a copy the target forked: unheard
        forked.end_copy()
    out.write(json.dumps(message).encode() + b"\n")
    out.flush()


def serve(requests: BinaryIO, out: BinaryIO) -> None:
    hello = json.loads(requests.readline())
    sys.path[:] = hello["sys_path"]
    try:
        factory = load_target(hello["target"])
    except TargetError as error:
        send(out, {"load_error": str(error)})
        return
    try:  # after the target's import, which may register its own design (`stallfree.spec.registry.register`)
        contract = registry.contract(hello["contract"]) if hello.get("contract") else registry.of(factory)
    except ValueError as error:
        send(out, {"load_error": f"{hello['target']}: {error}"})
        return
    send(out, {"ready": True, "not_applicable": not_applicable(factory),
               "capabilities": capabilities(factory, contract.min_budget)})
    for line in requests:
        request = json.loads(line)
        workload = Workload.from_json(request["workload"])
        outcome = run_one(factory, workload, request["rules"], request["timeout"], request.get("known"), contract)
        send(out, outcome.to_json())


def main() -> None:
    # Keep the pipe to ourselves: the protocol moves to duplicates of fds 0 and 1; the target's
    # reads see /dev/null and its prints land on stderr.
    requests = os.fdopen(os.dup(0), "rb")
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    faulthandler.register(DUMP_SIGNAL, file=sys.stderr, all_threads=True)
    forked.watch()  # a child the target forks ends at its return into the worker (forked.py)
    serve(requests, out)


if __name__ == "__main__":
    main()
