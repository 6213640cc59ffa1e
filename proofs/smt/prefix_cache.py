"""Z3 theorems of the prefix design's cache rules, proved of the scheduler's own `match`, `hold` and
`release` (the code that uses dicts) by symbolic execution (`symexec.paths`), every feasible path.

The dicts are replaced, for the run, by two containers with the same operations the code uses and a
symbolic content (`SymRefs`: `_refs`, a key's count of running holders a Z3 integer, the key present
while it is >= 1; `SymFree`: `_lru`, a key's membership a Z3 Boolean). A membership test `key in d` is
a branch the explorer decides, so the code runs down every combination of which of its blocks are held,
free and cached, or not cached. The keys themselves are concrete: the request's content keys, then its
own keys. What stays concrete is the shape, enumerated in full within a bound stated here, not sampled:

- admission (`match` then `hold`): every prefill target of 1 .. BLOCKS * bs + 1 tokens (a hit of at
  most BLOCKS = 3 blocks; `prove --profile deep`: 4), every number 0 .. BLOCKS of content keys, block
  sizes of `BLOCK_SIZES`; the cache's state of each of those blocks (its count of holders, whether free
  and cached), the free blocks and the watermark are symbolic, any value the hypothesis allows (a free
  cached block is not held; the free blocks include the free cached ones);
- release (`release`): every number 0 .. BLOCKS of blocks held, each held leading block shared (its key)
  or a private copy, block sizes of `BLOCK_SIZES`; the counts of holders are symbolic (at least one:
  the request releasing is one of them).

The theorems, each from its rule's text:

- **SHARED-READONLY**: an admission's prefill starts on the boundary after the blocks it holds: its chunk
  writes only into blocks it alone holds (control: `faults.WriteShared`).
- **HIT-SAME-TOKENS**: it holds only blocks cached under its own keys, and never its last prefill token
  (control: `faults.HitOneMore`).
- **CACHED-NOT-PREFILLED**: it holds at least the longest run of its leading blocks cached before the
  step, within its prefill less its last token (control: `faults.HitOneShort`).
- **FREE-AT-ZERO**: a released block joins the free cached ones exactly when its count of holders reaches
  zero, and no held block is ever free (control: `prefix_planted.FreeWhileHeld`, a copy of `release`
  that frees a shared block while another request holds it; the registry's `FreeShared` errs in
  `complete`, outside this theorem, which it keeps).

- **EVICT-LRU** (`evict` and `release`): `evict` asks `len()` of the free cached blocks, which Python
  requires to be an int, so that theorem runs it on a concrete list (every length up to BLOCKS + 1, the
  free blocks symbolic): what stays is the most recently freed min(cached, free), in order; and
  `release` (counts symbolic, a real OrderedDict) lets a request's blocks go last block first, at the
  back (controls: `faults.EvictNewest`, and `faults.FreeFirstBlockFirst` in the tests).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import z3

from . import symexec
from .symexec import Bool, Int

BLOCKS = 3  # the bound: a hit of at most this many blocks, a release of at most this many
DEEP_BLOCKS = 4  # prove --profile deep
BLOCK_SIZES = (1, 2, 3)
RID = 7
CONTENT = tuple(range(101, 101 + DEEP_BLOCKS + 1))  # the content keys (concrete, distinct)


def own_key(rid: int, index: int) -> Any:
    """The scheduler's own key of block `index` of `rid` (imported late: the prefix package imports the registry)."""
    from stallfree.prefix.contract.keys import own_key as key

    return key(rid, index)


def _ask(condition: Any, ex: symexec.Explorer) -> Any:
    """A membership test: a plain bool where the condition is a constant (no branch), else a branch."""
    condition = z3.simplify(condition)
    return z3.is_true(condition) if z3.is_true(condition) or z3.is_false(condition) else Bool(condition, ex)


def _term(v: object) -> Any:
    return v.term if isinstance(v, Int) else z3.IntVal(int(v))  # type: ignore[call-overload]


class SymRefs:
    """`_refs` with symbolic counts: key -> Z3 integer; a key is in it while its count is >= 1."""

    def __init__(self, counts: dict[Any, Any], ex: symexec.Explorer) -> None:
        self.counts, self.ex = dict(counts), ex

    def __contains__(self, key: object) -> Any:
        term = self.counts.get(key)
        return False if term is None else _ask(term >= 1, self.ex)

    def __getitem__(self, key: object) -> Int:
        return Int(self.counts[key], self.ex)

    def __setitem__(self, key: object, value: object) -> None:
        self.counts[key] = _term(value)

    def __delitem__(self, key: object) -> None:
        self.counts[key] = z3.IntVal(0)


class SymFree:
    """`_lru` with symbolic membership: key -> Z3 Boolean (order not kept: EVICT-LRU is not claimed)."""

    def __init__(self, flags: dict[Any, Any], ex: symexec.Explorer) -> None:
        self.flags, self.ex = dict(flags), ex

    def __contains__(self, key: object) -> Any:
        term = self.flags.get(key)
        return False if term is None else _ask(term, self.ex)

    def __setitem__(self, key: object, value: None) -> None:
        self.flags[key] = z3.BoolVal(True)

    def __delitem__(self, key: object) -> None:
        self.flags[key] = z3.BoolVal(False)

    def pop(self, key: object, default: object = None) -> object:
        self.flags[key] = z3.BoolVal(False)
        return default


def _state(keys: list[Any]) -> tuple[dict[Any, Any], dict[Any, Any], list[z3.BoolRef]]:
    """Symbolic counts and free flags for `keys` (content keys may be held; own keys only free), and the
    hypothesis on them: counts >= 0, a free cached block held by no one."""
    counts = {k: z3.Int(f"held_{k}") for k in keys if isinstance(k, int)}
    flags = {k: z3.Bool(f"free_{k if isinstance(k, int) else 'own' + str(k[2])}") for k in keys}
    hyp = [c >= 0 for c in counts.values()] + [z3.Not(z3.And(flags[k], counts[k] >= 1)) for k in counts]
    return counts, flags, hyp


def _cached(k: Any, counts: dict[Any, Any], flags: dict[Any, Any]) -> Any:
    return z3.Or(flags[k], counts[k] >= 1) if k in counts else flags[k]


_RUNS: dict[tuple[type, int, int], list[tuple[Any, Any, SimpleNamespace]]] = {}  # one exploration, three theorems


def _admissions(scheduler: Any, bs: int, blocks: int) -> list[tuple[Any, Any, SimpleNamespace]]:
    """Every path, for every shape within the bound, of `match` then `hold` on a symbolic cache: (its
    hypothesis, its condition, what the admission held and what was cached before: block j's key cached
    before the step). Explored once per scheduler class and block size: the three admission theorems read it."""
    memo = (type(scheduler), bs, blocks)
    if memo in _RUNS:
        return _RUNS[memo]
    found = []
    for num_keys in range(blocks + 1):
        content = list(CONTENT[:num_keys])
        keyed = [content[j] if j < num_keys else own_key(RID, j) for j in range(blocks + 1)]
        counts, flags, hyp = _state(keyed)
        free, watermark = z3.Ints("free watermark")
        hyp += [watermark >= 0, free >= z3.Sum([z3.If(f, 1, 0) for f in flags.values()])]
        before = [_cached(k, counts, flags) for k in keyed]
        for target in range(1, blocks * bs + 2):
            run = _admit(scheduler, bs, target, content, (counts, flags, free, watermark), before)
            found += [(z3.And(*hyp), o.condition, o.result) for o in symexec.paths(run, tuple(hyp))]
    _RUNS[memo] = found
    return found


def _admit(scheduler: Any, bs: int, target: int, content: list[int], cache: tuple[Any, ...],
           before: list[Any]) -> Callable[[symexec.Explorer], SimpleNamespace]:
    """One run of `match` then `hold` on a copy of `scheduler` whose cache is `cache` (counts, free
    flags, free blocks, watermark): what the admission held."""
    counts, flags, free, watermark = cache

    def run(ex: symexec.Explorer) -> SimpleNamespace:
        s = copy.deepcopy(scheduler)
        s._refs, s._lru = SymRefs(counts, ex), SymFree(flags, ex)
        s._free_blocks, s.watermark = Int(free, ex), Int(watermark, ex)
        s._keys[RID], s._shared[RID] = list(content), []
        seq = SimpleNamespace(rid=RID, target=target, num_blocks=0, stored_computed=0,
                              request=SimpleNamespace(prompt_len=target, max_new=1))
        num, _ = s.match(seq)
        s.hold(seq, num)
        return SimpleNamespace(stored=_term(seq.stored_computed), blocks=_term(seq.num_blocks), target=target,
                               before=before, limit=(target - 1) // bs)

    return run


def _admission(scheduler: Any, bs: int, goal: Callable[..., Any], blocks: int) -> tuple[z3.BoolRef, z3.BoolRef]:
    claims = [z3.Implies(z3.And(hyp, condition), goal(a, bs))
              for hyp, condition, a in _admissions(scheduler, bs, blocks)]
    return z3.BoolVal(True), z3.And(claims)


def _shared_readonly(a: SimpleNamespace, bs: int) -> Any:
    """Its prefill starts right after the blocks it holds: the chunk's first position is in a new block."""
    return a.stored == a.blocks * bs


def _hit_same_tokens(a: SimpleNamespace, bs: int) -> Any:
    """Short of its prefill, and each whole block it holds was cached under its own key."""
    held = [z3.Implies(a.stored >= (j + 1) * bs, cached) for j, cached in enumerate(a.before)]
    return z3.And(a.stored < a.target, a.stored <= len(a.before) * bs, *held)


def _cached_not_prefilled(a: SimpleNamespace, bs: int) -> Any:
    """It holds at least the longest run of leading blocks cached before, within its prefill less one token."""
    run, prefix = [], z3.BoolVal(True)
    for j in range(a.limit):
        prefix = z3.And(prefix, a.before[j])
        run.append(z3.If(prefix, 1, 0))
    return a.stored >= bs * z3.Sum(run) if run else z3.BoolVal(True)


def shared_readonly(scheduler: Any, bs: int, blocks: int = BLOCKS) -> tuple[z3.BoolRef, z3.BoolRef]:
    return _admission(scheduler, bs, _shared_readonly, blocks)


def hit_same_tokens(scheduler: Any, bs: int, blocks: int = BLOCKS) -> tuple[z3.BoolRef, z3.BoolRef]:
    return _admission(scheduler, bs, _hit_same_tokens, blocks)


def cached_not_prefilled(scheduler: Any, bs: int, blocks: int = BLOCKS) -> tuple[z3.BoolRef, z3.BoolRef]:
    return _admission(scheduler, bs, _cached_not_prefilled, blocks)


def _patterns(held: int) -> list[list[Any]]:
    """Every `_shared` of a request holding `held` blocks: each of them shared (a key) or private (None)."""
    out: list[list[Any]] = [[]]
    for j in range(held):
        out += [[*p, x] for p in out if len(p) == j for x in (CONTENT[j], None)]
    return out


def free_at_zero(scheduler: Any, bs: int, blocks: int = BLOCKS) -> tuple[z3.BoolRef, z3.BoolRef]:
    """`release` of every shape within the bound: each released shared key's count drops by one, it
    joins the free cached blocks exactly when that reaches zero, no key ends both held and free, and the
    count returned is of the released blocks still held."""
    claims = []
    for held in range(blocks + 1):
        keys = list(CONTENT[:held]) + [own_key(RID, j) for j in range(held)]
        counts, flags, hyp = _state(keys)
        for shared in _patterns(held):
            hyp_s = hyp + [counts[k] >= 1 for k in shared if k is not None]  # it is one of the holders
            run = _release(scheduler, bs, held, shared, counts, flags)
            for o in symexec.paths(run, tuple(hyp_s)):
                claims.append(z3.Implies(z3.And(*hyp_s, o.condition), o.result))
    return z3.BoolVal(True), z3.And(claims)


def _release(scheduler: Any, bs: int, held: int, shared: list[Any], counts: dict[Any, Any],
             flags: dict[Any, Any]) -> Callable[[symexec.Explorer], Any]:
    """One run of `release` of `held` blocks (`shared` the keys held) on a copy of `scheduler` with the
    symbolic cache `counts`, `flags`: FREE-AT-ZERO's goal on the state it leaves."""
    mine = [k for k in shared if k is not None]

    def run(ex: symexec.Explorer) -> Any:
        s = copy.deepcopy(scheduler)
        s._refs, s._lru = SymRefs(counts, ex), SymFree(flags, ex)
        s._shared[RID] = list(shared)
        still = s.release(SimpleNamespace(rid=RID, stored_computed=held * bs), held)
        after_c, after_f = s._refs.counts, s._lru.flags
        goals = [_term(still) == z3.Sum([z3.If(counts[k] >= 2, 1, 0) for k in mine] + [z3.IntVal(0)])]
        for k in counts:
            goals.append(z3.Not(z3.And(after_f[k], after_c[k] >= 1)))
            if k in mine:
                goals += [after_c[k] == counts[k] - 1, after_f[k] == (counts[k] == 1)]
            else:
                goals += [after_c[k] == counts[k], after_f[k] == flags[k]]
        return z3.And(goals)

    return run


def evict_lru(scheduler: Any, bs: int, blocks: int = BLOCKS) -> tuple[z3.BoolRef, z3.BoolRef]:
    """EVICT-LRU, of the scheduler's own `evict` and `release`. `evict` with every list of at most
    blocks + 1 free cached blocks (concrete keys in a concrete order: `len()` must be an int) and any
    number of free blocks (>= 0): what stays is the most recently freed min(cached, free), in order.
    `release` of every shape of FREE-AT-ZERO's theorem (the counts symbolic) after one free cached block:
    the blocks it frees join the back in descending block order (last block first), the others keep theirs."""
    from collections import OrderedDict

    claims = []
    free = z3.Int("free")
    for length in range(blocks + 2):
        before = [own_key(RID + 1, j) for j in range(length)]

        def run_evict(ex: symexec.Explorer, before: list[Any] = before) -> Any:
            s = copy.deepcopy(scheduler)
            s._lru, s._free_blocks = OrderedDict.fromkeys(before), Int(free, ex)
            s.evict()
            kept = list(s._lru)
            suffix = kept == before[len(before) - len(kept):]
            want = z3.If(free >= len(before), len(before), free)
            return z3.And(z3.BoolVal(suffix), want == len(kept))

        claims += [z3.Implies(z3.And(free >= 0, o.condition), o.result) for o in symexec.paths(run_evict, (free >= 0,))]
    older = own_key(RID + 1, 0)
    for held in range(blocks + 1):
        keys = list(CONTENT[:held])
        counts = {k: z3.Int(f"held_{k}") for k in keys}
        for shared in _patterns(held):
            hyp = [counts[k] >= 1 for k in shared if k is not None]
            run = _release_order(scheduler, bs, held, shared, counts, older)
            claims += [z3.Implies(z3.And(*hyp, o.condition), o.result) for o in symexec.paths(run, tuple(hyp))]
    return z3.BoolVal(True), z3.And(claims)


def _release_order(scheduler: Any, bs: int, held: int, shared: list[Any], counts: dict[Any, Any],
                   older: Any) -> Callable[[symexec.Explorer], Any]:
    """One run of `release` with a concrete free cached list holding `older`: EVICT-LRU's order."""
    from collections import OrderedDict

    def run(ex: symexec.Explorer) -> Any:
        s = copy.deepcopy(scheduler)
        s._refs, s._lru = SymRefs(counts, ex), OrderedDict.fromkeys([older])
        s._shared[RID] = list(shared)
        s.release(SimpleNamespace(rid=RID, stored_computed=held * bs), held)
        after = list(s._lru)
        index = {k: j for j, k in enumerate(shared) if k is not None}
        index.update({own_key(RID, j): j for j in range(len(shared), held)})
        joined = [index.get(k) for k in after[1:]]
        descending = all(j is not None for j in joined) and joined == sorted(joined, reverse=True)  # type: ignore[type-var]
        return z3.BoolVal(after[:1] == [older] and descending)

    return run
