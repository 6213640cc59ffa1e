"""bf16 and FP8 against fp32 on the real model (SmolLM2-135M-Instruct), the shipped chat prompts:
measurements, not pass/fail. Two views:

- teacher-forced: every dtype reads the fp32 run's sequences; at each emitted position, how often
  its top token is fp32's, the KL divergence of its distribution from fp32's, the largest logit error;
- free-running: each dtype generates greedily on its own; how many leading tokens equal fp32's.

FP8 is measured twice: as the executor builds it (decoder matmuls in fp8, LM head and embedding in
the activations' dtype) and with the LM head in fp8 too, the choice the executor does not make.

    python benchmarks/real_accuracy.py [--max-new 24]
"""

from __future__ import annotations

import argparse
import sys


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--max-new", type=int, default=24)
    args = p.parse_args()

    import torch

    from stallfree.executor.engine.job import Job
    from stallfree.executor.exactness.accuracy import measure
    from stallfree.executor.exactness.equivalence import reference_logits, reference_model
    from stallfree.executor.layers.fp8 import FP8
    from stallfree.executor.layers.parallel import ParallelLMHead
    from stallfree.executor.models.tokenizer import text_codec
    from stallfree.executor.runs.launch import run_local
    from stallfree.executor.runs.prompts import PROMPTS, chat_requests
    from stallfree.executor.runs.runspec import RunSpec
    from stallfree.spec import Config

    torch.set_num_threads(1)
    probe = RunSpec((), model="smollm2", tp=1, dtype="fp32")
    chat = chat_requests(text_codec(probe.gguf), PROMPTS, args.max_new, Config(64, 8, 1024))
    job = Job(chat.workload, prompts=chat.prompts)
    spec = RunSpec((job,), model="smollm2", tp=1, dtype="fp32")

    def fp8_head_in_fp8() -> torch.nn.Module:
        model = reference_model(spec, "fp8")
        cfg = model.cfg
        model.lm_head = ParallelLMHead(cfg.hidden, cfg.vocab, model.group, FP8)
        model.lm_head.load(probe.gguf.tensor("lm_head.weight", (cfg.vocab, cfg.hidden)))  # type: ignore[union-attr]
        return model

    models = {"fp32": reference_model(spec), "bf16": reference_model(spec, "bf16"),
              "fp8": reference_model(spec, "fp8"), "fp8, LM head fp8": fp8_head_in_fp8()}
    runs = {name: run_local(spec, model).results[0] for name, model in models.items()}  # type: ignore[arg-type]
    base = runs["fp32"]
    fp32 = reference_logits(models["fp32"], base)  # type: ignore[arg-type]
    print(f"{len(PROMPTS)} chat prompts, {args.max_new} tokens each, one rank")
    for name, model in models.items():
        if name == "fp32":
            continue
        a = measure(name, reference_logits(model, base), fp32)  # type: ignore[arg-type]
        prefixes = []
        for rid, r in sorted(runs[name].requests.items()):
            ref = base.requests[rid].outputs
            prefixes.append(next((i for i, (x, y) in enumerate(zip(r.outputs, ref, strict=True)) if x != y),
                                 len(ref)))
        print(f"{name:<17} teacher-forced: top-1 {a.top1_agree}/{a.num_tokens}, KL mean {a.mean_kl:.2e} max "
              f"{a.max_kl:.2e}, max |logit err| {a.max_logit_err:.2f}; free-running: equal prefix "
              f"{', '.join(map(str, prefixes))} of {args.max_new}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
