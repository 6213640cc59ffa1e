"""Printing a run: the step table with milliseconds, time to first token and time per output token
per request, a verdict per rule on the real path and in the monitor, and the result as JSON."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from stallfree.spec import registry
from stallfree.spec.utils.loader import load_target
from stallfree.spec.verdict import Judgement, Verdict

from ..engine.checks import REAL_PATH_END_RULES, REAL_PATH_RULES
from ..engine.job import Job, JobResult
from .runspec import RunSpec

HEADER = f"{'step':>5}  {'entries':<40} {'tokens':>9} {'ms':>8}  {'emitted':<18} {'finished':<10} {'free KV':>7}"


def describe(preempted: str, plan: list[tuple[int, int]]) -> str:
    text = preempted + (" ".join(f"r{rid}:{n}" for rid, n in plan) or "(empty)")
    return text if len(text) <= 40 else text[:37] + "..."


def step_table(result: JobResult, budget: int) -> list[str]:
    lines = [HEADER]
    for s in result.steps:
        emitted = " ".join(f"r{r}" for r in s.emitted) or "-"
        finished = " ".join(f"r{r}" for r in s.finished) or "-"
        preempted = "".join(f"-r{r} " for r in s.preempted)  # the plan took their KV back first
        lines.append(
            f"{s.step:>5}  {describe(preempted, s.plan):<40} {f'{s.num_tokens}/{budget}':>9} {s.ms:>8.1f}  "
            f"{emitted[:18]:<18} {finished[:10]:<10} {s.free_kv:>7}"
        )
    return lines


def request_table(result: JobResult) -> list[str]:
    lines = [f"{'rid':>4} {'prompt':>7} {'tokens':>7} {'arrived':>8}  {'TTFT steps':>10} {'TTFT ms':>9}  "
             f"{'TPOT steps':>10} {'TPOT ms':>8}  ended"]
    for rid, r in sorted(result.requests.items()):
        tpot_steps = "-" if r.tpot_steps is None else f"{r.tpot_steps:.2f}"
        tpot_ms = "-" if r.tpot_ms is None else f"{r.tpot_ms:.1f}"
        lines.append(f"{rid:>4} {len(r.prompt):>7} {len(r.outputs):>7} {r.arrival_step:>8}  {r.ttft_steps:>10} "
                     f"{r.ttft_ms:>9.1f}  {tpot_steps:>10} {tpot_ms:>8}  {r.finish_reason} at step {r.emitted_at[-1]}"
                     + (f", preempted {r.num_preemptions}x" if r.num_preemptions else "")
                     + (f", {r.num_cached} tokens from the cache" if r.num_cached else ""))
    for rid in result.cancelled_silent:
        lines.append(f"{rid:>4} {'-':>7} {0:>7} {'-':>8}  {'-':>10} {'-':>9}  {'-':>10} {'-':>8}  cancel "
                     "before its first token")
    for rid, step, accepted in result.cancels:
        if not accepted:
            lines.append(f"cancel({rid}) before step {step} refused: rid {rid} was not waiting or running "
                         "then (not yet arrived, or already ended)")
    return lines


def verdicts(result: JobResult, monitor_rules: tuple[str, ...] | None, ends: tuple[str, ...] = ()) -> list[str]:
    """One line per rule: on the real path (the six rules checked on the batch, the tensors and the allocator,
    and `ends`: TOKENS in a run with a stop token, CANCEL in one with cancels) and in the monitor (every rule
    it checks, from the plain protocol)."""
    lines = []
    sections, unlisted = judgements(result, monitor_rules, ends)
    for where, judged in sections.items():
        lines.append(f"-- {where}")
        lines += [j.line() for j in judged]
    return lines + [j.line() for j in unlisted]


def judgements(
    result: JobResult, monitor_rules: tuple[str, ...] | None, ends: tuple[str, ...] = ()
) -> tuple[dict[str, list[Judgement]], list[Judgement]]:
    """The verdicts of a run by where they were judged, and a broken rule not listed where it broke; a
    rule holds only over a run that ended."""
    broken = result.violation
    steps = len(result.steps)
    real = REAL_PATH_RULES + tuple(rule for rule in REAL_PATH_END_RULES if rule in ends)
    design = registry.contract(result.design)
    executor = load_target(design.executor)  # it names the real path's checks its own way (BLOCKS, TOKENS-KEPT)
    renamed = {"KV": executor.memory_rule, "TOKENS": executor.tokens_rule, "PREFILL-ONCE": executor.prefill_rule}
    real = tuple(dict.fromkeys((*(renamed.get(rule, rule) for rule in real), *executor.own_rules)))
    sections = {"real path": real, "monitor": monitor_rules or design.ids}
    judged: dict[str, list[Judgement]] = {}
    for where, rules in sections.items():
        judged[where] = []
        for rule in rules:
            if broken is not None and broken[0] == rule and broken[3] == where:
                judged[where].append(Judgement(rule, Verdict.BROKEN, f"at step {broken[1]}: {broken[2]}"))
            elif broken is not None:
                judged[where].append(Judgement(rule, Verdict.NOT_JUDGED,
                                               f"(held until step {broken[1]}, where {broken[0]} broke)"))
            elif steps == 0:
                judged[where].append(Judgement(rule, Verdict.NOT_JUDGED, "(no step ran)"))
            else:
                judged[where].append(Judgement(rule, Verdict.HOLDS, f"({steps} steps)"))
    unlisted = []
    if broken is not None and broken[0] not in sections.get(broken[3], ()):  # not listed above where it broke
        unlisted.append(Judgement(broken[0], Verdict.BROKEN, f"at step {broken[1]} ({broken[3]}): {broken[2]}"))
    return judged, unlisted


def describe_run(spec: RunSpec, job: Job) -> dict[str, Any]:
    """What ran, so that two reports can be told apart: the model and where its weights came from
    (with the file's sha256), the parallelism and dtypes, the contract's configuration, the
    scheduler, the software and the device."""
    import os
    import platform

    import torch

    cfg, model = job.workload.config, spec.model_config()
    device = (torch.cuda.get_device_name(0) if spec.device == "cuda" else
              f"cpu ({platform.machine()}, {os.cpu_count()} cores; one torch thread per rank)")
    real = model.real_heads or (model.num_heads, model.num_kv_heads)
    return {
        "stallfree": software(),
        "model": {"name": model.name, "layers": model.num_layers, "hidden": model.hidden, "heads": real[0],
                  "kv_heads": real[1], "ffn": model.ffn, "vocab": model.vocab,
                  "padded_heads": None if model.real_heads is None else [model.num_heads, model.num_kv_heads]},
        "source": spec.source_description(),
        "tp": spec.tp, "dtype": spec.dtype, "layer_dtypes": spec.layer_dtypes(),
        "token_budget": cfg.token_budget, "max_seqs": cfg.max_seqs, "kv_tokens": cfg.kv_tokens,
        "kv_bytes_per_rank": spec.kv_bytes(cfg.kv_tokens),
        "scheduler": job.scheduler, "monitor_rules": list(job.monitor_rules) if job.monitor_rules else "all",
        "temperature": job.temperature, "seed": spec.seed, "stop_token": job.stop_token,
        "torch": torch.__version__, "python": platform.python_version(), "device": spec.device,
        "device_name": device,
    }


# How each output check's tolerance is derived (the JSON report carries it beside the verdict).
DERIVATIONS = {
    "exactness": "fp32 rounding: the runs add the same products in other orders; EXACT_RTOL = 1e-5 of the largest "
                 "|logit| (at least 1), about 170 fp32 ulps (2^-24) at the logits' scale",
    "isolation": "none (0): the same plans run the same orders, so another request's logits must be bit for bit "
                 "equal",
    "recompute": "the exactness tolerance (fp32 rounding)",
    "agreement": "e4m3 rounding propagated (executor/exactness/agreement.py): each row's centred RMS logit "
                 "difference from the request run alone in fp8, relative to that row's centred RMS, at most 4 sigma "
                 "x sqrt(2 runs x 2 operands x 2 matmuls in series) x e4m3's RMS rounding error 2^-3/sqrt(12) = 0.408",
    "independent": "fp32 rounding over the depth (executor/exactness/independent.py): 2 x layers x sqrt(ffn) "
                   "x 2^-24 x the largest |logit| (at least 1); the independent reference is float64",
    "accuracy": "none: measurements of rounding, not a pass/fail",
}


def with_derivations(checks: dict[str, Any]) -> dict[str, Any]:
    """`checks` with each check's tolerance derivation beside its figures."""
    return {name: ([dict(c, derivation=DERIVATIONS[name]) for c in check] if isinstance(check, list)
                   else dict(check, derivation=DERIVATIONS[name])) for name, check in checks.items()}


def software() -> dict[str, Any]:
    """stallfree's version and, from a git checkout, its commit (and whether files differ from it)."""
    import subprocess
    from importlib.metadata import PackageNotFoundError, version
    from pathlib import Path

    try:
        installed: str | None = version("stallfree")
    except PackageNotFoundError:
        installed = None
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip() != ""
    except (OSError, subprocess.SubprocessError):
        commit, dirty = None, None
    return {"version": installed, "commit": commit, "modified": dirty}


def as_json(result: JobResult, run: dict[str, Any] | None = None, checks: dict[str, Any] | None = None,
            texts: dict[int, Any] | None = None) -> dict[str, Any]:
    return {
        "run": run,
        "label": result.label,
        "violation": None if result.violation is None else dict(zip(("rule", "step", "message", "where"),
                                                                      result.violation, strict=True)),
        "checks": with_derivations(checks or {}),
        "steps": [asdict(s) for s in result.steps],
        "requests": [
            {"rid": r.rid, "prompt_len": len(r.prompt), "outputs": r.outputs, "arrival_step": r.arrival_step,
             "emitted_at": r.emitted_at, "ttft_steps": r.ttft_steps, "ttft_ms": r.ttft_ms,
             "tpot_steps": r.tpot_steps, "tpot_ms": r.tpot_ms, "finish_reason": r.finish_reason,
             "num_preemptions": r.num_preemptions, "num_cached": r.num_cached,
             **(texts or {}).get(r.rid, {})}
            for _, r in sorted(result.requests.items())
        ] + [{"rid": rid, "outputs": [], "finish_reason": "cancel"} for rid in result.cancelled_silent],
        "cancels": [{"rid": rid, "before_step": step, "accepted": accepted} for rid, step, accepted in result.cancels],
        "refused": result.refused,
    }


def check_json(check: Any) -> dict[str, Any]:
    """A check's result as JSON: its fields and its verdict (`ok`, where it has one)."""
    data = asdict(check)
    if hasattr(check, "ok"):
        data["ok"] = check.ok
    return data
