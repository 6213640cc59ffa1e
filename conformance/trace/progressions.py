"""A set of rids in memory that grows with the irregularities of their numbering, not with their number:
what the trace checkers keep of ended requests (`ended.EndedRids`).

An engine numbers its requests regularly: 0, 1, 2, ..., or every k-th (the rids one of k data-parallel
ranks serves, or the accepted ones when each is followed by a refused one), or as strings with a counter
in them ("req-17", "17"). So the ints are kept as arithmetic progressions (start, step, count):
the step is learned from the first `SAMPLE` ints kept (the gcd of their distances; 1 until then), and
each residue modulo the step keeps its progressions as runs of quotients (`runs.RidRuns`), which merge
as the gaps between them end. A string whose last run of digits is a counter is kept as that int, in a
family of its own (the text around the counter; `MAX_FAMILIES` at most). Anything else is kept one by
one: an int that fits no progression costs a run; a string an entry when it has no counter (a uuid), or
its counter is not its last run of digits ("cmpl-17-0": each a family of its own), or it is the first of
its family, or past the families.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import reduce
from math import gcd

from .runs import RidRuns

SAMPLE = 32  # the first ints kept, from which the step is learned
MAX_STEP = 1024  # a larger learned step reads as no step (1): a wrong one would cost a run per residue
PENDING = 64  # string families seen once, remembered so that their second member starts the family
MAX_FAMILIES = 64  # families kept as progressions; past them a string is kept one by one
DIGITS = "0123456789"
_REVERSED_COUNTER = re.compile(r"([^0-9]*)([0-9]+)")  # matched on the reversed string: tail, then digits


def counter_of(rid: str) -> tuple[tuple[str, str], int] | None:
    """(head, tail) and the counter between them, so that rid == head + str(counter) + tail; None if the
    string has no digits. Leading zeros stay in the head ("req-007": head "req-00", counter 7)."""
    head = rid.rstrip(DIGITS)
    if len(head) < len(rid):  # it ends in its counter, as most do: no tail, and no pattern to match
        tail, digits = "", rid[len(head) :]
    else:
        found = _REVERSED_COUNTER.match(rid[::-1])
        if found is None:
            return None
        tail, digits = found.group(1)[::-1], found.group(2)[::-1]
        head = rid[: len(rid) - found.end()]
    if len(digits) > 1 and digits[0] == "0":
        kept = digits.lstrip("0") or "0"
        head, digits = head + digits[: len(digits) - len(kept)], kept
    return (head, tail), int(digits)


class IntProgressions:
    """A set of ints as arithmetic progressions of one learned step: `in`, keep, drop."""

    __slots__ = ("_by_residue", "_sample", "_step", "_top")

    def __init__(self) -> None:
        self._step = 1  # until it is learned from the first SAMPLE ints kept
        self._sample: list[int] | None = []  # those ints, while they are being sampled
        self._by_residue: dict[int, RidRuns] = {}  # rid % step -> the runs of rid // step
        self._top = 0  # above every int kept: a new rid is answered at once

    def __contains__(self, rid: int) -> bool:
        if rid >= self._top:
            return False
        step = self._step
        runs = self._by_residue.get(rid % step)
        return runs is not None and RidRuns.__contains__(runs, rid // step)

    def keep(self, rid: int) -> None:
        """`rid` is in the set from now on."""
        if rid >= self._top:
            self._top = rid + 1
        elif self._sample is not None and rid in self:
            return
        step = self._step
        runs = self._by_residue.get(rid % step)
        if runs is None:
            runs = self._by_residue[rid % step] = RidRuns()
        his, q = runs._his, rid // step
        if his and his[-1] == q:  # next after the last run, as requests end in order
            his[-1] = q + 1
        else:
            runs.keep(q)
        sample = self._sample
        if sample is not None:
            sample.append(rid)
            if len(sample) >= SAMPLE:
                self._learn(sample)

    def drop(self, rid: int) -> None:
        """`rid` is no longer in the set (its run is split around it)."""
        step = self._step
        runs = self._by_residue.get(rid % step)
        if runs is not None:
            runs.drop(rid // step)
            if not runs:
                del self._by_residue[rid % step]

    def _learn(self, sample: list[int]) -> None:
        """The step is the gcd of the sampled ints' distances from the least; the ints kept (no more than
        the sample) are kept again as progressions of that step."""
        least = min(sample)
        step = reduce(gcd, (rid - least for rid in sample), 0)
        self._sample = None
        if step == 1 or not 0 < step <= MAX_STEP:
            return
        kept = [
            q * self._step + residue
            for residue, runs in self._by_residue.items()
            for lo, hi in zip(runs._los, runs._his, strict=True)
            for q in range(lo, hi)
        ]
        self._step, self._by_residue = step, {}
        for rid in kept:
            self.keep(rid)

    @property
    def runs(self) -> int:
        """The progressions kept (what the memory grows with)."""
        return sum(runs.runs for runs in self._by_residue.values())


class RidProgressions:
    """A set of rids as progressions: `in`, keep, drop, and how many runs are kept. The rids are a trace's,
    ints and strings: another value is kept one by one, and is not the int it equals (True is not 1 here)."""

    __slots__ = ("_families", "_ints", "_loose", "_pending")

    def __init__(self) -> None:
        self._ints = IntProgressions()
        self._families: dict[tuple[str, str], IntProgressions] = {}  # (head, tail) -> the counters kept
        self._loose: set[object] = set()  # strings with no family (yet), and any other rid, one by one
        self._pending: dict[tuple[str, str], tuple[str, int]] = {}  # last PENDING families seen once

    def __bool__(self) -> bool:
        return bool(self._ints.runs or self._families or self._loose)

    def __contains__(self, rid: object) -> bool:
        if type(rid) is int:  # IntProgressions.__contains__, written out: the checkers ask it most
            ints = self._ints
            if rid >= ints._top:
                return False
            step = ints._step
            runs = ints._by_residue.get(rid % step)
            if runs is None:
                return False
            q = rid // step
            i = bisect_right(runs._los, q) - 1
            return i >= 0 and q < runs._his[i]
        if rid in self._loose:
            return True
        families = self._families
        if not families or type(rid) is not str:
            return False
        head = rid.rstrip(DIGITS)
        cut = len(head)
        if cut < len(rid) and (rid[cut] != "0" or cut == len(rid) - 1):  # counter_of's common case, written out
            family = families.get((head, ""))
            if family is None:
                return False
            counter = int(rid[cut:])
            return counter < family._top and counter in family
        found = counter_of(rid)
        if found is None:
            return False
        family = families.get(found[0])
        return family is not None and found[1] in family

    def keep(self, rid: object) -> None:
        """`rid` is in the set from now on."""
        if type(rid) is int:
            self._ints.keep(rid)
            return
        if rid in self._loose:
            return
        found = counter_of(rid) if type(rid) is str else None
        if found is None:
            self._loose.add(rid)
            return
        key, counter = found
        family = self._families.get(key)  # if it holds `rid` already, keep() leaves it as it is
        if family is None:
            if len(self._families) >= MAX_FAMILIES:
                self._loose.add(rid)
                return
            first = self._pending.pop(key, None)
            if first is None or first[0] not in self._loose:
                self._remember(key, rid, counter)
                return
            self._loose.discard(first[0])  # its family's second member: both go into the family's progressions
            family = self._families[key] = IntProgressions()
            family.keep(first[1])
        family.keep(counter)

    def _remember(self, key: tuple[str, str], rid: str, counter: int) -> None:
        """`rid`, the first seen of its family, is kept one by one, and its family remembered a while."""
        self._loose.add(rid)
        pending = self._pending
        pending[key] = (rid, counter)
        if len(pending) > PENDING:
            del pending[next(iter(pending))]

    def drop(self, rid: object) -> None:
        """`rid` is no longer in the set."""
        if type(rid) is int:
            self._ints.drop(rid)
            return
        if rid in self._loose:
            self._loose.discard(rid)
            return
        found = counter_of(rid) if type(rid) is str else None
        family = self._families.get(found[0]) if found is not None else None
        if found is not None and family is not None:
            family.drop(found[1])
            if not family.runs:
                del self._families[found[0]]

    @property
    def runs(self) -> int:
        """Progressions and rids kept one by one, over ints and every family: what the memory grows with."""
        return self._ints.runs + sum(family.runs for family in self._families.values()) + len(self._loose)
