"""Step time on a CUDA GPU for decode-only, prefill and mixed steps at budgets 512, 2,048 and
8,192 tokens, against the cost model's roofline for the same shapes. Prepared to run unedited in
one short command on a machine with an H100 or H200; not part of CI, and no test depends on it.

    python benchmarks/gpu_step.py                       # 4 layers of Llama 3.3 70B, fp8, 1 GPU
    python benchmarks/gpu_step.py --tp 4 --layers 8     # 4 GPUs over nccl
    python benchmarks/gpu_step.py --model smollm2 --dtype bf16      # the real checkpoint
    python benchmarks/gpu_step.py --device cpu --model tiny --budgets 16,64 --context 32   # the code path here

Steps are flat batches built directly (`executor/engine/stepbench.py`): decode-only (B decodes at
context --context), prefill (one chunk of B from position 0) and mixed (B/4 decodes, then a chunk
of 3B/4 after a prefix of --context). Each is timed whole (synchronized), median of --reps after a
warm-up. The floor is the cost model's `full` roofline (`stallfree.costs`) for the decoder layers
timed: max(compute, memory) with matmul FLOPs at the weight dtype's peak, attention FLOPs per
(query, cached position) pair at the bf16 peak, the layers' weights and the KV cache read and
written; plus the LM head (kept in bf16) on the rows that emit. Peaks are the cost model's presets
(H100 SXM, H200); other GPUs need --peak-tflops and --tbps (then one peak serves every dtype).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from typing import Any

PRESETS = {"H100": "h100-sxm", "H200": "h200"}  # CUDA device name -> the cost model's GPU preset
HEAD_BYTES = 2  # the LM head stays in bf16 on CUDA (see docs/executor.md, FP8)


def gpu_figures(args: argparse.Namespace) -> Any:
    """(matmul FLOP/s in --dtype, bf16 FLOP/s, bytes/s) of one GPU, or None when unknown."""
    if args.peak_tflops and args.tbps:
        return args.peak_tflops * 1e12, args.peak_tflops * 1e12, args.tbps * 1e12
    if args.device != "cuda":
        return None
    import torch

    from stallfree.costs import gpu

    name = torch.cuda.get_device_name(0)
    for key, preset in PRESETS.items():
        if key in name:
            g = gpu(preset)
            return g.flops(args.dtype), g.flops("bf16"), g.mem_bandwidth
    print(f"unknown GPU {name!r}: give --peak-tflops and --tbps for a floor", file=sys.stderr)
    return None


def floor_seconds(cfg: Any, shape: Any, tp: int, dtype: str, figures: tuple[float, float, float]) -> float:
    """The roofline of one step of `shape` on `tp` GPUs: the cost model for the decoder layers, plus
    the LM head on the emitting rows."""
    from stallfree.costs import Deployment, Gpu, Model, Roofline

    matmul, bf16, bandwidth = figures
    layers = Model(cfg.name, cfg.layer_params * cfg.num_layers, cfg.num_layers, cfg.hidden, cfg.num_heads,
                   cfg.num_kv_heads, cfg.head_dim, cfg.ffn, cfg.vocab, "the executor's shape")
    device = Gpu("this GPU", {dtype: matmul, "bf16": bf16}, bandwidth, 0, "preset or --peak-tflops/--tbps")
    layer_load = Roofline(Deployment(layers, device, tp, dtype, "bf16"), "full").step_seconds(shape.load())
    emit_rows = shape.num_decodes + (1 if shape.chunk else 0)
    head_params = cfg.hidden * cfg.vocab
    head = max(2 * emit_rows * head_params / (tp * bf16), head_params * HEAD_BYTES / (tp * bandwidth))
    return layer_load + head


def rank_main(rank: int, args: argparse.Namespace, port: int, out: Any) -> None:
    import torch

    from stallfree.executor.engine.stepbench import shapes, time_steps
    from stallfree.executor.layers.group import join
    from stallfree.executor.runs.runspec import RunSpec

    if args.device == "cuda":
        torch.cuda.set_device(rank)
    group = join(rank, args.tp, port, "nccl" if args.device == "cuda" else "gloo")
    spec = RunSpec((), model=args.model, num_layers=args.layers, dtype=args.dtype, tp=args.tp, device=args.device)
    model = spec.build(group)
    cfg = spec.model_config()
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    for budget in args.budgets:
        for shape in shapes(budget, args.context):
            steps, _ = time_steps(model, shape, args.reps, cfg.vocab, spec.device_for(rank), by_kind=False, sync=sync)
            if rank == 0:
                out.put((budget, shape, statistics.median(steps)))
            del steps


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="llama-3.3-70b")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--tp", type=int, default=1)
    p.add_argument("--budgets", default="512,2048,8192")
    p.add_argument("--context", type=int, default=256, help="the context of each decode, the mixed chunk's prefix")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--dtype", default="fp8", choices=("fp8", "bf16"))
    p.add_argument("--peak-tflops", type=float, default=None)
    p.add_argument("--tbps", type=float, default=None)
    args = p.parse_args()
    args.budgets = [int(b) for b in args.budgets.split(",")]

    import torch
    import torch.multiprocessing as mp

    from stallfree.executor.engine.stepbench import shapes
    from stallfree.executor.runs.launch import free_port
    from stallfree.executor.runs.runspec import RunSpec
    from stallfree.spec import InvalidField

    try:  # RunSpec checks the CUDA devices against --tp and the shape against the ranks
        spec = RunSpec((), model=args.model, num_layers=args.layers, dtype=args.dtype, tp=args.tp, device=args.device)
        for budget in args.budgets:
            spec.check_kv_fits(max(s.kv_tokens for s in shapes(budget, args.context)))
    except InvalidField as error:
        print(f"gpu_step: {error}", file=sys.stderr)
        return 2
    cfg = spec.model_config()
    name = torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu"
    print(f"{cfg.name}, {cfg.num_layers} layers, {args.dtype} (LM head {spec.dtypes()[1]}), tp={args.tp} on {name}; "
          f"{cfg.layer_params * cfg.num_layers / 1e9:.2f} B matmul parameters in the layers timed; "
          f"decodes at context {args.context}")
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=rank_main, args=(r, args, port, out)) for r in range(args.tp)]
    for proc in procs:
        proc.start()
    figures = gpu_figures(args)
    print(f"{'B':>6} {'step':<8} {'tokens':>6} {'ms':>9} {'us/token':>9} {'floor ms':>9} {'of floor':>9}")
    for _ in range(len(args.budgets) * 3):
        budget, shape, seconds = out.get(timeout=590)
        floor_text, share = "-", "-"
        if figures is not None:
            floor = floor_seconds(cfg, shape, args.tp, args.dtype, figures)
            floor_text, share = f"{floor * 1e3:.2f}", f"{floor / seconds:.0%}"
        print(f"{budget:>6} {shape.name:<8} {shape.num_tokens:>6} {seconds * 1e3:>9.2f} "
              f"{seconds * 1e6 / shape.num_tokens:>9.1f} {floor_text:>9} {share:>9}", flush=True)
    for proc in procs:
        proc.join()
    print("'of floor': the roofline as a share of the measured step (100% = at the roofline).")
    return 0 if all(proc.exitcode == 0 for proc in procs) else 1


if __name__ == "__main__":
    sys.exit(main())
