"""Step time per token of the real model (SmolLM2-135M-Instruct, from its GGUF wheel) at TP=1 and
TP=3, in fp32, bf16 and fp8, and where the time goes: collectives (the all-reduces, the fp8 row-max
all-reduce, the LM head's gather), attention, linear layers, the rest of the forward (norms,
rotary, embedding, KV writes), and the host (batch building, rule checks, the monitor and the
scheduler) from a run of the chat workload through the executor.

    python benchmarks/real_step.py                     # TP 1 and 3; fp32, bf16, fp8; decode, prefill, mixed
    python benchmarks/real_step.py --tp 1 --dtypes fp32 --reps 3

Steps are built directly (`executor/engine/stepbench.py`): decode-only (8 decodes at context 128),
prefill (one 64-token chunk from position 0) and mixed (2 decodes at context 128 and a 62-token
chunk after a 128-token prefix). Every rank runs one torch thread; medians of --reps steps after one
warm-up (the split: mean seconds in each kind over the mean step). "collectives" includes waiting
for the slowest rank: on a CPU shared by more ranks than cores it is mostly that. CPU figures on a
shared machine: the shape of the split is what carries over, not the milliseconds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from typing import Any

SHAPES = (("decode", 8, 128, 0, 0), ("prefill", 0, 0, 64, 0), ("mixed", 2, 128, 62, 128))


def rank(rank: int, tp: int, port: int, dtypes: list[str], reps: int, out: Any) -> None:
    import torch

    from stallfree.executor.engine.stepbench import StepShape, time_steps
    from stallfree.executor.layers.group import join
    from stallfree.executor.runs.runspec import RunSpec

    torch.set_num_threads(1)
    group = join(rank, tp, port, "gloo")
    for dtype in dtypes:
        spec = RunSpec((), model="smollm2", tp=tp, dtype=dtype)
        model = spec.build(group)
        for name, decodes, context, chunk, start in SHAPES:
            shape = StepShape(name, decodes, context, chunk, start)
            steps, kinds = time_steps(model, shape, reps, spec.model_config().vocab)
            if rank == 0:
                out.put((tp, dtype, name, shape.num_tokens, statistics.median(steps), statistics.mean(steps), kinds))
        del model


def host_share(reps: int) -> tuple[float, float]:
    """Median share of a step spent on the host (batch, checks) and in the monitor (scheduler
    included), from the chat workload on the executor at TP=1 in fp32."""
    from stallfree.executor.engine.job import Job
    from stallfree.executor.models.tokenizer import text_codec
    from stallfree.executor.runs.launch import launch
    from stallfree.executor.runs.prompts import PROMPTS, chat_requests
    from stallfree.executor.runs.runspec import RunSpec
    from stallfree.spec import Config

    probe = RunSpec((), model="smollm2", tp=1, dtype="fp32")
    chat = chat_requests(text_codec(probe.gguf), PROMPTS, 8, Config(16, 8, 1024))
    result = launch(RunSpec((Job(chat.workload, prompts=chat.prompts),), model="smollm2", tp=1,
                            dtype="fp32")).results[0]
    return (statistics.median(s.host_ms / s.ms for s in result.steps),
            statistics.median(s.monitor_ms / s.ms for s in result.steps))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tp", default="1,3")
    p.add_argument("--dtypes", default="fp32,bf16,fp8")
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args()

    import torch.multiprocessing as mp

    from stallfree.executor.runs.launch import free_port

    dtypes = args.dtypes.split(",")
    ctx = mp.get_context("spawn")
    rows = []
    for tp in (int(t) for t in args.tp.split(",")):
        out = ctx.Queue()
        port = free_port()
        procs = [ctx.Process(target=rank, args=(r, tp, port, dtypes, args.reps, out)) for r in range(tp)]
        for proc in procs:
            proc.start()
        rows.extend(out.get(timeout=1800) for _ in range(len(dtypes) * len(SHAPES)))
        for proc in procs:
            proc.join()
            if proc.exitcode:
                print(f"real_step: a rank of tp={tp} exited with {proc.exitcode}", file=sys.stderr)
                return 1
    print(f"{'tp':>3} {'dtype':<5} {'step':<8} {'tokens':>6} {'ms':>8} {'ms/token':>9} "
          f"{'collect.':>9} {'attention':>9} {'linear':>7} {'rest':>6}")
    for tp, dtype, name, tokens, seconds, mean, kinds in rows:
        share = {k: v / mean for k, v in kinds.items()}  # the kinds are means over the steps
        rest = 1 - sum(share.values())
        print(f"{tp:>3} {dtype:<5} {name:<8} {tokens:>6} {seconds * 1e3:>8.1f} {seconds * 1e3 / tokens:>9.2f} "
              f"{share['collectives']:>9.0%} {share['attention']:>9.0%} {share['linear']:>7.0%} {rest:>6.0%}")
    host, monitor = host_share(args.reps)
    print(f"host (batch building, real-path checks): {host:.2%} of a step; monitor and scheduler: {monitor:.2%} "
          "(chat workload, TP=1, fp32, through the executor)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
