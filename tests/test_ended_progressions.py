"""The ended rids kept as progressions (`conformance/trace/progressions.py`, issue 31 item 7) answer as the
plain set they replace (`tests/ended_before.py:PlainEndedRids`, the oracle), over 600 seeded cases of rid
patterns (consecutive, every k-th, random ints, "req-i" strings, zero-padded, uuid-like, many families,
ints beside the same numbers as strings), ended in shuffled windows, with rids discarded, added again and
added twice; `Endings` built on them answers as `Endings` built on the plain set. Two planted bugs are
caught by the same comparison. Regular patterns are kept in a few runs (the memory claim), irregular ones
one by one (where it still grows, docs/conformance.md); and both checkers' memory is flat over a trace
whose rids are every other int, where the runs of consecutive ints before grew."""

from __future__ import annotations

import random
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from ended_before import PlainEndedRids, RunEndedRids

from stallfree.conformance.trace import endings, progressions
from stallfree.conformance.trace.ended import EndedRids
from stallfree.conformance.trace.endings import Endings
from stallfree.conformance.trace.progressions import MAX_FAMILIES, counter_of
from stallfree.conformance.trace.runs import RidRuns
from stallfree.spec.ending import Ending, Reason

sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
from ended_memory import every_other, named, peak, ranks_share

CASES = 600
Rid = int | str


def windows(rids: list[Rid], rng: random.Random) -> list[Rid]:
    """`rids` ended near their order: each window of a random width shuffled, as requests end near arrival."""
    width = rng.choice([1, 2, 5, 16, 50])
    out = []
    for start in range(0, len(rids), width):
        block = rids[start : start + width]
        rng.shuffle(block)
        out += block
    return out


def pattern(rng: random.Random) -> tuple[str, list[Rid]]:
    """A named rid pattern, in the order the requests end."""
    n, base, step = rng.randint(1, 300), rng.choice([0, 1, 7, 2**40]), rng.randint(2, 12)
    kind = rng.choice(["consecutive", "every k-th", "random", "named", "zero-padded", "uuid", "families", "mixed"])
    if kind == "consecutive":
        rids: list[Rid] = list(range(base, base + n))
    elif kind == "every k-th":
        rids = list(range(base, base + step * n, step))
    elif kind == "random":
        rids = list({rng.randrange(rng.choice([50, 10**6, 2**63])) for _ in range(n)})
    elif kind == "named":
        rids = [f"{rng.choice(['req-', 'cmpl-', ''])}{base + i}{rng.choice(['', '-0', 'x'])}" for i in range(n)]
    elif kind == "zero-padded":
        rids = [f"r{i:04d}" for i in range(n)]
    elif kind == "uuid":
        rids = [f"cmpl-{rng.getrandbits(64):016x}" for _ in range(n)]
    elif kind == "families":
        rids = [f"conv{c}-turn{t}" for c in range(rng.randint(1, MAX_FAMILIES + 20)) for t in range(rng.randint(1, 4))]
    else:
        rids = [*range(n), *(str(i) for i in range(0, n, 2))]
    return kind, windows(list(dict.fromkeys(rids)), rng)


def probes(rids: list[Rid]) -> list[Rid]:
    """The rids themselves and their neighbours: ints +-1 and +-2 and as strings, strings with their counter
    +-1, zero-padded, or another tail."""
    out: list[Rid] = [0, 1, -1, "", "0", "a"]
    for rid in rids:
        out.append(rid)
        if type(rid) is int:
            out += [rid - 2, rid - 1, rid + 1, rid + 2, str(rid)]
            continue
        assert isinstance(rid, str)
        found = counter_of(rid)
        if found is not None:
            (head, tail), counter = found
            out += [
                f"{head}{counter + 1}{tail}",
                f"{head}{max(0, counter - 1)}{tail}",
                f"{head}0{counter}{tail}",
                f"{head}{counter}{tail}x",
            ]
    return out


def differ(seed: int, make: Callable[[], EndedRids] = EndedRids) -> str | None:
    """The first answer in which progressions and the plain set differ over seeded case `seed`, or None."""
    rng = random.Random(seed)
    kind, rids = pattern(rng)
    kept, oracle = make(), PlainEndedRids()
    ended: list[Rid] = []
    for step, rid in enumerate(rids):
        for record in (kept, oracle):
            record.add(rid, step)
        ended.append(rid)
        roll = rng.random()
        if roll < 0.1:  # a v1 trace accepts an ended rid anew: it is live again
            gone = rng.choice(ended)
            for record in (kept, oracle):
                record.discard(gone)
        elif roll < 0.15:  # added again (discarded or not), at a later step
            again = rng.choice(ended)
            for record in (kept, oracle):
                record.add(again, step)
        elif roll < 0.17:  # a rid never ended, discarded
            for record in (kept, oracle):
                record.discard(rng.choice([-5, "never", 10**18]))
    for rid in probes(rids):
        if (rid in kept) != (rid in oracle):
            return f"seed {seed} ({kind}): {rid!r} in: {rid in kept} against {rid in oracle}"
        if kept.step_of(rid) != oracle.step_of(rid) or (rid in oracle and kept.when(rid) != oracle.when(rid)):
            return f"seed {seed} ({kind}): step of {rid!r}: {kept.step_of(rid)} against {oracle.step_of(rid)}"
    if bool(kept) != bool(oracle):
        return f"seed {seed} ({kind}): bool {bool(kept)} against {bool(oracle)}"
    return None


def test_progressions_answer_as_the_plain_set_over_600_cases() -> None:
    found = [d for seed in range(CASES) if (d := differ(seed)) is not None]
    assert not found, found[:5]


def plain_endings(monkeypatch: pytest.MonkeyPatch) -> Endings:
    with monkeypatch.context() as patch:
        patch.setattr(endings, "EndedRids", PlainEndedRids)
        return Endings()


@pytest.mark.parametrize("seed", range(0, CASES, 4))
def test_endings_on_progressions_answer_as_endings_on_the_plain_set(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    kept, oracle = Endings(), plain_endings(monkeypatch)
    rids = [rid for rid in pattern(rng)[1] if type(rid) is int]  # a v1 rid is an int
    for step, rid in enumerate(rids):
        ending = Ending(step, rng.choice([Reason.LENGTH, Reason.LENGTH, Reason.STOP, Reason.CANCEL]))
        kept[rid] = oracle[rid] = ending
        if rng.random() < 0.1:
            gone = rng.choice(rids[: step + 1])
            assert kept.pop(gone) == oracle.pop(gone), gone
    for rid in probes(rids):
        assert (rid in kept) == (rid in oracle) and kept.get(rid) == oracle.get(rid), rid


def test_a_progression_that_forgets_its_discards_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(RidRuns, "drop", lambda self, rid: None)
    assert any(differ(seed) is not None for seed in range(CASES))


def test_families_keyed_by_their_head_alone_are_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    def headed(rid: str) -> tuple[tuple[str, str], int] | None:
        found = counter_of(rid)
        return None if found is None else ((found[0][0], ""), found[1])  # "req-1x" reads as "req-1"

    monkeypatch.setattr(progressions, "counter_of", headed)
    assert any(differ(seed) is not None for seed in range(CASES))


def ended_all(rids: list[Rid]) -> EndedRids:
    ended = EndedRids()
    for step, rid in enumerate(rids):
        ended.add(rid, step)
    return ended


@pytest.mark.parametrize("step", [1, 2, 3, 4, 5, 8, 12])
@pytest.mark.parametrize("residue", [0, 1])
def test_every_kth_rid_ended_in_shuffled_windows_is_one_run(step: int, residue: int) -> None:
    rng = random.Random(step * 10 + residue)
    rids: list[Rid] = list(range(residue, residue + 3000 * step, step))
    ended = EndedRids()
    for i, rid in enumerate(windows(rids, rng)):
        ended.add(rid, i)
        assert ended.runs <= 60, (i, ended.runs)  # the gaps left by the requests of one window, still live
    assert ended.runs == 1


def test_counted_strings_are_one_run_per_family_and_uuids_one_each() -> None:
    rng = random.Random(7)
    assert ended_all(windows([f"req-{i}" for i in range(3000)], rng)).runs == 1
    assert ended_all(windows([f"{i}.json" for i in range(3000)], rng)).runs == 1
    assert ended_all([f"cmpl-{i}-0" for i in range(300)]).runs == 300  # the counter is not the last: each
    assert ended_all([f"r{i:05d}" for i in range(3000)]).runs == 4  # a family per count of leading zeros
    uuids = [f"cmpl-{rng.getrandbits(64):016x}" for _ in range(500)]
    assert ended_all(uuids).runs == 500  # no counter in common: kept one by one (where memory still grows)
    conversations = [f"conv{c}-turn{t}" for c in range(200) for t in range(3)]
    assert ended_all(conversations).runs == MAX_FAMILIES + 3 * (200 - MAX_FAMILIES)  # past the families, each


def test_counter_of_splits_at_the_last_counter() -> None:
    assert counter_of("req-17") == (("req-", ""), 17)
    assert counter_of("cmpl-17-0") == (("cmpl-17-", ""), 0)
    assert counter_of("r0042x") == (("r00", "x"), 42)
    assert counter_of("000") == (("00", ""), 0)
    assert counter_of("abc") is None
    for rid in ("req-17", "cmpl-17-0", "r0042x", "000", "7", "a1b2c"):
        found = counter_of(rid)
        assert found is not None and found[0][0] + str(found[1]) + found[0][1] == rid


@pytest.mark.parametrize(("make", "versions"), [(every_other, (1, 2)), (ranks_share, (1, 2)), (named, (2,))])
def test_memory_is_flat_where_rids_have_gaps(make: Callable[[int, int], list[str]], versions: tuple[int, ...]) -> None:
    for version in versions:
        few, many = make(600, version), make(2400, version)
        peak(few, version, EndedRids)  # warm: first-use allocations out of the comparison
        small, large = peak(few, version, EndedRids), peak(many, version, EndedRids)
        assert large < 1.25 * small + 20_000, (version, small, large)
        before, grown = peak(few, version, RunEndedRids), peak(many, version, RunEndedRids)
        assert grown > 1.25 * before + 20_000, (version, before, grown)  # negative control: the runs before
