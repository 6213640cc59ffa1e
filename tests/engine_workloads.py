"""The small hand-written workloads the engine adapters' tests (vLLM, SGLang) replay: one config
and requests as (prompt_len, max_new, arrival_step), rids in order."""

from __future__ import annotations

from stallfree.spec import Workload


def workload(config: tuple[int, int, int], *requests: tuple[int, int, int]) -> Workload:
    budget, max_seqs, kv = config
    return Workload.from_json({
        "config": {"token_budget": budget, "max_seqs": max_seqs, "kv_tokens": kv},
        "requests": [{"rid": rid, "prompt_len": p, "max_new": m, "arrival_step": a}
                     for rid, (p, m, a) in enumerate(requests)],
    })


def plans_only(factory: type) -> type:
    """`factory` with its `free_kv` hidden, so that rule KV judges its plans alone (the reservations
    its admissions make against K), as it judges a scheduler that shows no account."""
    return type(f"{factory.__name__}PlansOnly", (factory,), {"free_kv": None})
