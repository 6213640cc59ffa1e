"""Z3 theorems of the paged design: the arithmetic its liveness rests on, for every size.

`blocks(t, bs)` is not division here but its definition, h with (h - 1) * bs < t <= h * bs (h = 0 for
t = 0), so each theorem holds for every block size, pool, watermark, prompt and output length:

- LONE-BLOCK: a request NEVER-FIT accepts (peak ceil((prompt_len + max_new - 1) / bs) <= N - W) always
  has room in the pool for its next token while it runs (e <= max_new - 1 emitted): the blocks for
  prompt_len + e tokens are at most N. So the preemption loop never takes the last running request.
- ALONE-ADMITS: with the pool empty, the waiting head's first chunk, min(prompt_len + e, B) tokens,
  leaves at least W blocks free: a request alone is always admitted (the termination argument's step).
- NO-PREEMPTION: while the running requests' peaks sum to at most N (two requests, symbolically), the
  blocks every running request needs for its next token fit the pool: no preemption is needed.

Each is proved by asking Z3 for a counterexample to it; the negative controls are the same theorems
with NEVER-FIT weakened (the watermark left out, or the peak taken as prompt_len alone), which Z3 must
refute with a model.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import z3

from stallfree.spec.verdict import Verdict


@dataclass(frozen=True, slots=True)
class ArithmeticResult:
    claim: str
    verdict: Verdict  # holds (proved), BROKEN (Z3 found values) or unknown (the solver gave up)
    seconds: float
    counterexample: str = ""  # the values that break it, or why the solver gave up


def blocks(h: z3.ArithRef, tokens: z3.ArithRef, bs: z3.ArithRef) -> z3.BoolRef:
    """h is ceil(tokens / bs): the blocks that hold `tokens` tokens."""
    return z3.And(h >= 0, (h - 1) * bs < tokens, tokens <= h * bs)


def accepted(p: z3.ArithRef, m: z3.ArithRef, bs: z3.ArithRef, n: z3.ArithRef, w: z3.ArithRef,
             peak: z3.ArithRef, weak: str | None) -> z3.BoolRef:
    """NEVER-FIT accepts (p, m): its peak, in blocks, is at most the pool less the watermark."""
    tokens = p if weak == "peak-is-prompt" else p + m - 1
    limit = n if weak == "no-watermark" else n - w
    return z3.And(blocks(peak, tokens, bs), peak <= limit)


def _prove(claim: str, hypothesis: z3.BoolRef, conclusion: z3.BoolRef,
           names: dict[str, z3.ArithRef]) -> ArithmeticResult:
    solver = z3.Solver()
    solver.set("timeout", 20_000)
    solver.add(hypothesis, z3.Not(conclusion))
    start = time.perf_counter()
    verdict = solver.check()
    seconds = time.perf_counter() - start
    if verdict == z3.unsat:
        return ArithmeticResult(claim, Verdict.HOLDS, seconds)
    if verdict == z3.sat:
        model = solver.model()
        values = ", ".join(f"{k}={model.eval(v, model_completion=True)}" for k, v in names.items())
        return ArithmeticResult(claim, Verdict.BROKEN, seconds, values)
    return ArithmeticResult(claim, Verdict.UNKNOWN, seconds, str(solver.reason_unknown()))


def lone_block(weak: str | None = None) -> ArithmeticResult:
    p, m, e, bs, n, w, peak, h = z3.Ints("prompt_len max_new emitted block_size num_blocks watermark peak h")
    hyp = z3.And(p >= 1, m >= 1, e >= 0, e <= m - 1, bs >= 1, w >= 0, w <= n,
                 accepted(p, m, bs, n, w, peak, weak), blocks(h, p + e, bs))
    return _prove("LONE-BLOCK", hyp, h <= n, {"prompt_len": p, "max_new": m, "emitted": e, "block_size": bs,
                                               "num_blocks": n, "watermark": w, "blocks needed": h})


def alone_admits(weak: str | None = None) -> ArithmeticResult:
    p, m, e, bs, n, w, peak, c, budget = z3.Ints("prompt_len max_new emitted block_size num_blocks watermark peak c B")
    chunk = z3.If(p + e < budget, p + e, budget)
    hyp = z3.And(p >= 1, m >= 1, e >= 0, e <= m - 1, bs >= 1, w >= 0, w <= n, budget >= 1,
                 accepted(p, m, bs, n, w, peak, weak), blocks(c, chunk, bs))
    return _prove("ALONE-ADMITS", hyp, n - c >= w, {"prompt_len": p, "max_new": m, "emitted": e, "block_size": bs,
                                                     "num_blocks": n, "watermark": w, "B": budget, "chunk blocks": c})


def no_preemption() -> ArithmeticResult:
    """Two running requests whose peaks fit the pool together: their next tokens' blocks fit it too."""
    bs, n = z3.Ints("block_size num_blocks")
    hyp = [bs >= 1, n >= 0]
    need, peaks, names = [], [], {"block_size": bs, "num_blocks": n}
    for i in range(2):
        p, m, e, peak, h = z3.Ints(f"p{i} m{i} e{i} peak{i} h{i}")
        hyp += [p >= 1, m >= 1, e >= 0, e <= m - 1, blocks(peak, p + m - 1, bs), blocks(h, p + e, bs)]
        need.append(h)
        peaks.append(peak)
        names.update({f"p{i}": p, f"m{i}": m, f"e{i}": e})
    hyp.append(z3.Sum(peaks) <= n)
    return _prove("NO-PREEMPTION", z3.And(hyp), z3.Sum(need) <= n, names)


def theorems() -> list[ArithmeticResult]:
    return [lone_block(), alone_admits(), no_preemption()]


def controls() -> list[ArithmeticResult]:
    """The theorems with NEVER-FIT weakened: each must be refuted."""
    return [lone_block("peak-is-prompt"), alone_admits("no-watermark")]
