"""Checking an engine's trace against the rules, from the trace alone, streaming.

The trace is turned back into a plain-protocol scheduler (`TraceScheduler`, answering each call from
the current line) and driven by the same monitor that judges live schedulers. An ordinary step, one
shown to break no rule, is taken by a shortcut beside the monitor (`cleanstep_v1`); every other step,
and so every break, is the monitor's. Memory holds the monitor's shadow (its ended requests kept as
runs of rids, `endings`) and one line at a time, never the trace.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import IO, Any

from stallfree.spec import PROTOCOL, Config, Monitor, RuleViolation
from stallfree.spec.contract import BUDGETS, Contract
from stallfree.spec.registry import RESERVATION
from stallfree.spec.reservation.shadow import Shadow

from . import repeats
from .cleanstep_v1 import Shortcut, usable
from .endings import Endings
from .fastread import parse_line
from .refused import RefusedRids
from .tracefile import EMPTY, TraceEnd, TraceError, TraceStep, parse_header
from .v2 import VERSION as VERSION_2
from .v2 import version_of

MAX_LINE = 16 << 20  # bytes: a longer line is not a step, and reading it whole would cost memory
PROGRESS_EVERY = 1_000_000  # lines between progress reports
PROGRESS_RULE = "PROGRESS"


class Refused(ValueError):
    """add() as the trace tells it: the engine refused this request."""


class TraceScheduler:
    """The engine of a trace, speaking the plain protocol. Its `free_kv` is K minus the reservations
    of requests planned and not yet listed in "finished", so rule KV judges when KV came back."""

    def __init__(self, config: Config) -> None:
        self.line: TraceStep | None = None
        self.refusing = False
        self.free_kv = config.kv_tokens
        self._reservations: dict[int, int] = {}  # accepted, not finished
        self._admitted: set[int] = set()  # planned at least once, not finished

    def add(self, rid: Any, prompt_len: Any, max_new: Any, *priority: Any) -> None:
        if self.refusing:
            call = ", ".join(map(repr, (rid, prompt_len, max_new, *priority)))
            raise Refused(f"the trace says add({call}) was refused")
        self._reservations[rid] = prompt_len + max_new

    def schedule(self) -> list[list[int]]:
        assert self.line is not None
        return self.line.plan

    def set_budget(self, token_budget: Any) -> None:
        """As the trace tells it: the line's "budget" was accepted."""

    def cancel(self, rid: Any) -> None:
        """The trace says the engine cancelled `rid` (it lists accepted cancels only). Between steps
        a running request's reservation comes back at once; while a plan is pending, with the step's
        "finished"."""
        if self.line is not None and rid in self.line.cancel_pending:
            return
        reservation = self._reservations.pop(rid, None)
        if reservation is not None and rid in self._admitted:
            self._admitted.discard(rid)
            self.free_kv += reservation

    def complete(self, plan: object, stopped: object = ()) -> list[int]:
        line = self.line
        assert line is not None
        for rid, _ in line.plan:
            if rid not in self._admitted and rid in self._reservations:
                self._admitted.add(rid)
                self.free_kv -= self._reservations[rid]
        for rid in line.finished:
            reservation = self._reservations.pop(rid, None)
            if reservation is None:
                message = f'"finished" names rid {rid}, which is not an accepted, unfinished request'
                raise RuleViolation(PROTOCOL, line.step, message)
            self._admitted.discard(rid)
            self.free_kv += reservation  # returned even if never taken: rule KV then sees the difference
        return line.emitted


@dataclass(slots=True)
class TraceVerdict:
    config: Config | None
    checked: tuple[str, ...]
    steps: int = 0
    lines: int = 0
    ended: bool = False  # the trace has its end line
    violation: RuleViolation | None = None
    violation_line: int | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.violation is None


def read_lines(stream: IO[bytes]) -> Iterator[bytes]:
    """The stream's lines; a line longer than MAX_LINE is an error, not a memory spike."""
    for number, text in enumerate(iter(partial(stream.readline, MAX_LINE + 1), b""), 1):
        if len(text) > MAX_LINE:
            raise TraceError(number, f"longer than {MAX_LINE} bytes")
        yield text


def check_trace(
    lines: Iterable[bytes | str], rules: Iterable[str] | None = None, progress: Callable[[str], None] | None = None,
    contract: Contract | None = None,
) -> TraceVerdict:
    """Judge a trace (its lines, header first) against `rules` of the reference's contract, or of a
    variant's `contract`. Returns the verdict with the first broken rule, if any; raises TraceError
    (with the line number) if the trace does not follow the format."""
    contract = contract or RESERVATION
    checked = tuple(r.id for r in contract.select(None if rules is None else list(rules)))
    verdict = TraceVerdict(None, checked)
    started = time.monotonic()
    numbered = enumerate(lines, 1)
    first = next(numbered, None)
    if first is None:
        raise TraceError(1, "the trace is empty: the header line is missing")
    if version_of(first[1]) == VERSION_2:  # an engine's trace: judged by the engine checker (see enginecheck)
        from itertools import chain

        from .enginecheck import check_engine_trace

        return check_engine_trace(chain([first[1]], (text for _, text in numbered)), checked, progress)  # type: ignore[return-value]
    config = verdict.config = parse_header(first[1])
    engine = TraceScheduler(config)
    monitor = contract.watch(engine, config, checked)
    if isinstance(monitor.shadow, Shadow):  # rid -> how it ended, kept as runs: memory bounded by what is live
        shadow = monitor.shadow
        shadow.ended = Endings()
        # The refused rids as runs reaching over the accepted ones (live or ended, and staying so): the
        # monitor asks it only of a rid neither live nor ended (`facts.observe`).
        shadow.rejected = RefusedRids(partial(_accepted, shadow))
    verdict.lines = judge_lines(numbered, monitor, engine, verdict, contract, progress)
    verdict.steps = monitor.num_steps
    verdict.seconds = time.monotonic() - started
    return verdict


def _accepted(shadow: Shadow, rid: int) -> bool:
    """Whether `rid` was accepted: it is live or ended, and stays one of the two."""
    return rid in shadow.tracks or rid in shadow.ended


def judge_lines(
    numbered: Iterator[tuple[int, bytes | str]], monitor: Monitor, engine: TraceScheduler, verdict: TraceVerdict,
    contract: Contract, progress: Callable[[str], None] | None,
) -> int:
    """Judge every line after the header, recording the first broken rule in `verdict`; returns the number of
    the last line read. A step the clean-step shortcut (`cleanstep_v1`) does not take whole is judged by the
    monitor. A line that repeats a step of decodes alone the shortcut took (`repeats`) is that step again:
    `Shortcut.again` takes it unread, or it is judged as the step it repeats, under its number."""
    budgets = BUDGETS in contract.carries
    shortcut = Shortcut(monitor) if usable(monitor) else None
    started = time.monotonic()
    number, expected = 1, 0
    last: TraceStep | None = None  # the step the next line may repeat: one the shortcut took, with no add
    form: bytes | str = b""  # the head of `last`'s line, to be filled with the next step number
    rest: bytes | str = b""  # `last`'s line after its head
    try:
        for number, text in numbered:
            if last is not None and type(text) is type(rest) and text.endswith(rest) \
                    and len(text) == len(head := form % expected) + len(rest) and text.startswith(head):
                if shortcut.again():  # type: ignore[union-attr]  # `last` is only set where there is a shortcut
                    expected += 1
                    if progress is not None and number % PROGRESS_EVERY == 0:
                        progress(f"{number} lines, {time.monotonic() - started:.1f} s")
                    continue
                item = TraceStep(expected, last.plan, last.emitted, last.finished, EMPTY, EMPTY, None, False,
                                 EMPTY, EMPTY, EMPTY)
            else:
                if verdict.ended:
                    raise TraceError(number, "nothing may follow the end line")
                item = parse_line(number, text, expected)  # type: ignore[assignment]
                if (type(item) is TraceEnd or item.add or item.refuse or item.cancel or item.budget is not None) \
                        and before_step(monitor, engine, shortcut, item, budgets, number):
                    verdict.ended = True
                    judge_end(monitor, verdict.checked)
                    continue
            last = None
            engine.line = item
            if shortcut is None:
                step(monitor, item)
            elif not shortcut.step(engine, item):
                shortcut.sync()
                step(monitor, item)
            elif shortcut.repeatable is item and not (item.add or item.refuse or item.cancel) and item.budget is None:
                found = repeats.after_head(text, expected)
                if found is not None:
                    last, (form, rest) = item, found
            expected += 1
            if progress is not None and number % PROGRESS_EVERY == 0:
                progress(f"{number} lines, {time.monotonic() - started:.1f} s")
    except RuleViolation as violation:
        verdict.violation, verdict.violation_line = violation, number
    finally:
        if shortcut is not None:
            shortcut.sync()
    return number


def before_step(monitor: Monitor, engine: TraceScheduler, shortcut: Shortcut | None, item: TraceStep | TraceEnd,
                budgets: bool, number: int) -> bool:
    """What the line says happened before its step: a budget accepted, its adds and refusals, its cancels; True
    for the end line (its refusals and cancels offered), whose PROGRESS the caller judges."""
    if type(item) is TraceStep and item.budget is not None:
        if not budgets:
            message = '"budget" needs a budget-change contract: --profile budget-change or rotation'
            raise TraceError(number, message)
        monitor.set_budget(item.budget)
    if item.priorities and not hasattr(monitor.shadow, "priority"):
        message = "an add with a priority needs a priority contract: --profile aging or priority"
        raise TraceError(number, message)
    if type(item) is TraceEnd:
        if shortcut is not None:
            shortcut.sync()  # its cancels may end a ready request
        offer(monitor, engine, item)
        return True
    if shortcut is not None and item.add and not (item.refuse or item.cancel):
        shortcut.add(engine, item.add)
    elif item.add or item.refuse or item.cancel:
        if shortcut is not None:
            shortcut.sync()  # a cancel may end a ready request
        offer(monitor, engine, item)
    return False


def judge_end(monitor: Monitor, checked: tuple[str, ...]) -> None:
    """PROGRESS at the end line: every accepted request has ended."""
    if PROGRESS_RULE in checked and not monitor.is_idle:
        shadow = monitor.shadow
        raise RuleViolation(
            PROGRESS_RULE, shadow.step, f"the trace ends with {len(shadow.waiting)} request(s) waiting "
            f"and {len(shadow.running)} running: every accepted request must finish",
        )


def offer(monitor: Monitor, engine: TraceScheduler, item: TraceStep | TraceEnd) -> None:
    """The line's add() calls, accepted ones first, then the refused ones; then its cancels before
    the plan."""
    if isinstance(item, TraceStep):
        engine.refusing = False
        for entry in item.add:
            monitor.add(*entry)  # a fourth item, the priority, only under a priority contract (checked above)
    engine.refusing = True
    for entry in item.refuse:
        monitor.add(*entry)
    for rid in item.cancel:
        monitor.cancel(rid)


def step(monitor: Monitor, item: TraceStep) -> None:
    """The line's step: its plan judged, its pending cancels, then its stops and what it emitted. A
    stop of a rid that emits no token in the step breaks TOKENS (a stop ends a request only on a
    token it emitted)."""
    monitor.plan()
    for rid in item.cancel_pending:
        monitor.cancel(rid)
    if item.stop:
        due = set(monitor.due())
        for rid in item.stop:
            if rid not in due:
                raise RuleViolation("TOKENS", item.step, f'"stop" names rid {rid}, which emits no token in step '
                                    f"{item.step}: a stop ends a request only on a token it emitted")
    monitor.complete(item.stop)
