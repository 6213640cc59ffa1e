"""Z3 theorems of the prefix design's ADMISSION step, proved of the scheduler's own `schedule()` then
`complete()` (the admission loop around `match` and `hold`, the budget it spends, and `prefilled`, which
registers the blocks the chunks filled) by symbolic execution (`symexec.paths`), every feasible path.

The state before the step is built by the scheduler itself, concretely: running requests that hold the
cached blocks are added, prefilled and made ready by its own add/schedule/complete, and those whose
blocks are to be free and cached are cancelled, so every cache state below is one the code reaches.
Then, for the step, the budget, the slots, the free blocks and the watermark are symbolic (Z3 integers:
any budget at least the decodes, any slots at least the running requests, any free count at least the
free cached blocks, any watermark the pool and the waiting requests' NEVER-FIT allow), and the code runs
schedule() then complete() down every path: how many requests it admits, whether the decodes preempt,
which free cached blocks evict() takes, how long each chunk is.

What stays concrete is the shape, enumerated in full within the bound, not sampled (`symexec` cannot run
`range()` of a symbolic length, which `match` does over the prefill's blocks, nor hash a symbolic key):

- the cache before the step, a system prompt of `blocks` (`BLOCKS` = 1; `prove --profile deep`: 2)
  leading blocks: each leading prefix of it not cached, held by ready requests (one or two: the counts of
  holders are concrete), or free and cached, or a held prefix with the rest free (`CACHES`; a block is
  cached only with the blocks before it, as EVICT-LRU frees and evicts last block first);
- the waiting line: one fresh request of 1 .. blocks * bs + 2 tokens, or two of blocks * bs + 1 tokens
  each, each with 0 .. its whole blocks of the system prompt as content (so two requests may share
  blocks); max_new 2;
- block sizes of `BLOCK_SIZES`.

Not in the bound: a request waiting after a preemption (its own blocks revived from the cache), a
running request in partial prefill beside the admissions, longer prompts and caches (the time grows with
the shapes: deep's bound is a few times the default's). A path on which the code leaves symexec's
fragment is refused (the theorem reads unknown, never holds); the scheduler's own step never does within
the bound, and a step that raises is a counterexample.

The theorems, each from its rule's text, judged on every admission of the step, in plan order:

- **CACHED-NOT-CHARGED**: its first chunk is min(prefill after its hit, budget left at its turn): the
  budget less the decodes and the chunks planned before it (controls: `faults.ChargeCached`, and
  `prefix_planted.ChargeInLoop`, whose first chunks are right but whose loop charges a hit's cached
  tokens to the budget the next admission gets).
- **SHARED-READONLY**: its chunk writes from a position past every block it holds from the cache, and
  complete() leaves the blocks it holds as they were (controls: `prefix_planted.WriteHeldQuietly`, which
  writes the last held block while its plan reports the hit whole; `faults.WriteShared` breaks it too,
  with the other two, since its plan reports the shorter hit).
- **CACHED-NOT-PREFILLED**: it holds at least the longest run of its leading blocks cached at its turn
  (the cache as the code's own evict() left it: EVICT-LRU's theorem is about that), within its prefill
  less its last token; its plan's hit covers them, so only the rest is prefilled; and complete()
  registers every whole content block its chunk filled, as cached from then on (its key held, or already
  cached by another request's block, a private copy) (controls: `faults.HitOneShort`, and
  `prefix_planted.SkipPrefilled`, whose complete() registers nothing).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import z3

from . import symexec
from .symexec import Int

BLOCKS = 1  # the bound: a system prompt of this many blocks (`_lines` says the prompts)
DEEP_BLOCKS = 2  # prove --profile deep
BLOCK_SIZES = (1, 2, 3)
SYSTEM = 1  # the system prompt's content id
HOLDERS = (50, 51)  # rids of the running requests that hold cached blocks
WAITING = (1, 2)  # rids of the waiting requests
MAX_NEW = 2
HOLDER_NEW = 8  # a holder runs past the step
# The cache before the step, per leading block of the system prompt: "held" by a ready request, "free"
# and cached, "none". A cached block's prefix is cached (EVICT-LRU frees and evicts last block first).
CACHES = ("", "h", "f", "hh", "hf", "ff")


def _term(v: object) -> Any:
    return v.term if isinstance(v, Int) else z3.IntVal(int(v))  # type: ignore[call-overload]


def _min(a: Any, b: Any) -> Any:
    return z3.If(a < b, a, b)


def _setup(scheduler: Any, bs: int, cache: str) -> Any:
    """A copy of `scheduler` (blocks of `bs`) in the state `cache`, reached by the prefix scheduler's own
    add, schedule, complete and cancel on a roomy pool: a ready holder per held prefix, a cancelled one per
    free block. The state is the correct scheduler's (a fault's theorem is about its step from a state the
    code reaches); the step that follows is `scheduler`'s class's."""
    from stallfree.prefix import Scheduler

    s = Scheduler(64, 8, 64 * bs, block_size=bs, watermark=0)
    held, cached = cache.count("h"), len(cache)
    plan = [(HOLDERS[0], cached)] if cached else []  # the first holder covers every cached block
    if held and held < cached:
        plan.append((HOLDERS[1], held))  # a second holds the held prefix, admitted after the first's are cached
    for rid, num in plan:
        s.add(rid, num * bs + 1, HOLDER_NEW, ((SYSTEM, num * bs),))
        s.complete(s.schedule())
    if held < cached:
        s.cancel(HOLDERS[0])  # the second holder, if any, keeps the held prefix; the rest is free and cached
    checked = copy.deepcopy(scheduler)
    checked.__dict__.update(s.__dict__)  # a fault's own fields (FreeShared's) stay
    return checked


def _requests(bs: int, blocks: int, longest: int) -> list[tuple[int, int]]:
    """Every (prompt_len, content blocks) of one waiting request of at most `longest` tokens, its content
    at most `blocks` whole blocks of the system prompt."""
    return [(p, k) for p in range(1, longest + 1) for k in range(min(blocks, p // bs) + 1)]


def _lines(bs: int, blocks: int) -> list[tuple[tuple[int, int], ...]]:
    """Every waiting line within the bound: one request of up to blocks * bs + 2 tokens (a prefill of two
    or more past a whole hit), or two of blocks * bs + 1 tokens (the longest whole hit and one token to
    prefill; so the first's chunk takes blocks the second's turn may evict, or fills ones it shares)."""
    two = [r for r in _requests(bs, blocks, blocks * bs + 1) if r[0] == blocks * bs + 1]
    return [(a,) for a in _requests(bs, blocks, blocks * bs + 2)] + [(a, b) for a in two for b in two]


_RUNS: dict[tuple[type, int, int], list[tuple[Any, Any]]] = {}  # one exploration, three theorems


def admissions(scheduler: Any, bs: int, blocks: int = BLOCKS) -> list[tuple[Any, Any]]:
    """Every path, for every shape within the bound, of schedule() then complete(): (its hypothesis and
    condition, what the step did). Explored once per class, block size and bound; the three theorems read it."""
    memo = (type(scheduler), bs, blocks)
    if memo in _RUNS:
        return _RUNS[memo]
    found = []
    for cache in CACHES:
        if len(cache) > blocks:
            continue
        base = _setup(scheduler, bs, cache)
        for line in _lines(bs, blocks):
            s = copy.deepcopy(base)
            for rid, (prompt, k) in zip(WAITING, line, strict=False):
                s.add(rid, prompt, MAX_NEW, ((SYSTEM, k * bs),) if k else ())
            hyp, run = _step(s, bs)
            shape = f"cache {cache or '-'} (h held, f free), waiting (prompt_len, content blocks) {list(line)}"
            for o in symexec.paths(run, (hyp,)):
                o.result.shape = shape
                found.append((z3.And(hyp, o.condition), o.result))
    _RUNS[memo] = found
    return found


def _step(s: Any, bs: int) -> tuple[Any, Callable[[symexec.Explorer], SimpleNamespace]]:
    """The hypothesis on the step's symbolic limits for state `s`, and one run of its schedule() then
    complete() with them: what each admission did (`_observe`)."""
    from stallfree.paged import blocks_for

    budget, slots, free, watermark = z3.Ints("budget slots free watermark")
    pool = free + (s.num_blocks - s._free_blocks)  # the blocks held now are held in any pool
    peaks = [blocks_for(q.request.prompt_len + q.request.max_new - 1, bs) for q in s._waiting]
    hyp = z3.And(budget >= 1, budget >= len(s._ready), slots >= max(1, len(s._running)), free >= len(s._lru),
                 watermark >= 0, *[peak <= pool - watermark for peak in peaks])
    waiting = [q.rid for q in s._waiting]

    def run(ex: symexec.Explorer) -> SimpleNamespace:
        t = copy.deepcopy(s)
        t.config = SimpleNamespace(token_budget=Int(budget, ex), max_seqs=Int(slots, ex),
                                   kv_tokens=t.config.kv_tokens)
        t._free_blocks, t.watermark = Int(free, ex), Int(watermark, ex)
        turns: dict[int, int] = {}
        t.match = _recording(t, t.match, turns, bs)
        try:
            plan = t.schedule()
            held = {rid: list(t._shared[rid]) for rid in waiting if rid in t._running}
            starts = {rid: t._sequences[rid].stored_computed for rid in held}
            t.complete(plan)
        except TypeError:
            raise  # outside symexec's fragment: refused, never judged
        except Exception as error:  # the step itself fails: a counterexample to every theorem of it
            return SimpleNamespace(admitted=[], raised=f"{type(error).__name__} {error}"[:60], preempted=False)
        return _observe(t, plan, budget, waiting, (turns, held, starts))

    return hyp, run


def _recording(s: Any, match: Callable[[Any], Any], turns: dict[int, int], bs: int) -> Callable[[Any], Any]:
    """`match`, recording for each request it is asked about the longest run of its leading blocks cached
    at that moment (free and cached, or held), within its prefill less its last token: the cache at its turn."""
    from stallfree.prefix.contract.keys import own_key

    def recorded(seq: Any) -> Any:
        keys, run = s._keys[seq.rid], 0
        for j in range((seq.target - 1) // bs):
            key = keys[j] if j < len(keys) else own_key(seq.rid, j)
            if key not in s._lru and key not in s._refs:
                break
            run += 1
        turns[seq.rid] = run
        return match(seq)

    return recorded


def _observe(t: Any, plan: Any, budget: Any, waiting: list[int], seen: tuple[Any, ...]) -> SimpleNamespace:
    """What the step did to each request admitted from `waiting`, in plan order: its budget left at its
    turn, chunk, plan's hit, blocks held from the cache, first position written, the run cached at its
    turn, and after complete() its held blocks, tokens in KV, content keys and which of them are cached."""
    turns, held, starts = seen
    cached, spent, out = dict(plan.cached), z3.IntVal(0), []
    for rid, n in plan.entries:
        if rid in held:
            seq = t._sequences[rid]
            keys = list(t._keys[rid])
            out.append(SimpleNamespace(
                rid=rid, target=seq.target, left=budget - spent, n=_term(n), hit=cached.get(rid, 0),
                held=held[rid], start=_term(starts[rid]), run=turns.get(rid), limit=(seq.target - 1) // t.block_size,
                after=list(t._shared[rid]), stored=_term(seq.stored_computed), keys=keys,
                now_cached=[k in t._lru or k in t._refs for k in keys]))
        spent = spent + _term(n)
    return SimpleNamespace(admitted=out, raised=None, preempted=bool(plan.preempted))


def _cached_not_charged(a: SimpleNamespace, bs: int) -> Any:
    """Its first chunk is min(prefill after its hit, budget left at its turn)."""
    return a.n == _min(a.target - a.hit, a.left)


def _shared_readonly(a: SimpleNamespace, bs: int) -> Any:
    """Its chunk writes from past the blocks it holds from the cache; complete() leaves those as they were."""
    return z3.And(a.start >= len(a.held) * bs, z3.BoolVal(a.after[:len(a.held)] == a.held))


def _cached_not_prefilled(a: SimpleNamespace, bs: int) -> Any:
    """It holds the longest run cached at its turn, its plan's hit covers them, and complete() registers
    each whole content block its chunk filled: cached after it, held by it or a private copy of another's."""
    if a.run is None:
        return z3.BoolVal(False)  # it was admitted without the cache being asked
    goals = [z3.BoolVal(len(a.held) >= a.run), z3.BoolVal(a.hit >= a.run * bs)]
    for j in range(len(a.held), len(a.keys)):
        registered = j < len(a.after) and a.after[j] in (a.keys[j], None) and a.now_cached[j]
        goals.append(z3.Implies(a.stored >= (j + 1) * bs, z3.BoolVal(registered)))
    return z3.And(goals)


def _theorem(goal: Callable[[SimpleNamespace, int], Any]) -> Callable[..., tuple[z3.BoolRef, z3.BoolRef]]:
    last: list[tuple[Any, str]] = []  # the latest obligation's claims and their shapes, for `explain`

    def obligation(scheduler: Any, bs: int, blocks: int = BLOCKS) -> tuple[z3.BoolRef, z3.BoolRef]:
        last.clear()
        for condition, step in admissions(scheduler, bs, blocks):
            if step.raised:  # named in the counterexample: a flag only this path sets
                flag = z3.Bool(f"the step raised {step.raised}")
                last.append((z3.Implies(z3.And(condition, flag), z3.Not(flag)), step.shape))
            else:
                goals = [goal(a, bs) for a in step.admitted]
                last.append((z3.Implies(condition, z3.And(z3.BoolVal(True), *goals)), step.shape))
        return z3.BoolVal(True), z3.And([claim for claim, _ in last])

    def explain(model: z3.ModelRef) -> dict[str, str]:
        """The shape of the first path whose claim `model` (a counterexample of the latest obligation) breaks."""
        for claim, shape in last:
            if z3.is_false(model.eval(claim, model_completion=True)):
                return {"shape": shape}
        return {}

    obligation.__doc__ = goal.__doc__
    obligation.explain = explain  # type: ignore[attr-defined]
    return obligation


cached_not_charged = _theorem(_cached_not_charged)
shared_readonly = _theorem(_shared_readonly)
cached_not_prefilled = _theorem(_cached_not_prefilled)
