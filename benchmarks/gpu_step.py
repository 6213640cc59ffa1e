"""Step time on a CUDA GPU for a few layers of the Llama 3.3 70B shape in FP8, against the roofline
floor. Prepared to run unedited in one command on a machine with an H100 or H200; not part of CI.

    python benchmarks/gpu_step.py                       # 4 layers, 1 GPU, steps of 512, 2048, 8192 tokens
    python benchmarks/gpu_step.py --tp 4 --layers 8     # 4 GPUs over nccl
    python benchmarks/gpu_step.py --device cpu --model tiny --tokens 64,128   # the code path, on a CPU

Each step is one whole prompt of T tokens from position 0 (prompt T, one token out, budget T),
run through the executor's real step path (the monitor and the rule checks included). The floor of
a step is max(FLOPs / peak, weight bytes / bandwidth) per GPU: FLOPs are 2 x matmul parameters x T
plus causal attention (2 x T^2 x hidden a layer); bytes are the layers' FP8 weights, read once.
Peak figures are the cost model's presets (`stallfree.costs`: H100 SXM and H200, in the --dtype
timed); other GPUs need --peak-tflops and --tbps.
"""

from __future__ import annotations

import argparse
import statistics
import sys

PRESETS = {"H100": "h100-sxm", "H200": "h200"}  # CUDA device name -> the cost model's GPU preset


def peaks(args: argparse.Namespace) -> tuple[float, float] | None:
    if args.peak_tflops and args.tbps:
        return args.peak_tflops * 1e12, args.tbps * 1e12
    if args.device != "cuda":
        return None
    import torch

    from stallfree.costs import gpu

    name = torch.cuda.get_device_name(0)
    for key, preset in PRESETS.items():
        if key in name:
            return gpu(preset).flops(args.dtype), gpu(preset).mem_bandwidth
    print(f"unknown GPU {name!r}: give --peak-tflops and --tbps for a floor", file=sys.stderr)
    return None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="llama-3.3-70b")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--tp", type=int, default=1)
    p.add_argument("--tokens", default="512,2048,8192")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--dtype", default="fp8", choices=("fp8", "bf16"))
    p.add_argument("--peak-tflops", type=float, default=None)
    p.add_argument("--tbps", type=float, default=None)
    args = p.parse_args()

    import torch

    from stallfree.costs import bytes_per_value
    from stallfree.executor.job import Job
    from stallfree.executor.launch import launch
    from stallfree.executor.runspec import RunSpec
    from stallfree.executor.workloads import one_prompt_per_step
    from stallfree.spec import InvalidField

    token_counts = [int(t) for t in args.tokens.split(",")]
    jobs = tuple(Job(one_prompt_per_step(t, args.reps), label=f"T={t}") for t in token_counts)
    try:  # RunSpec checks the CUDA devices against --tp, among the rest
        spec = RunSpec(jobs, model=args.model, num_layers=args.layers, dtype=args.dtype, tp=args.tp,
                       device=args.device)
    except InvalidField as error:
        print(f"gpu_step: {error}", file=sys.stderr)
        return 2
    cfg = spec.model_config()
    name = torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu"
    print(f"{cfg.name}, {cfg.num_layers} layers, {args.dtype}, tp={args.tp} on {name}; "
          f"{cfg.layer_params * cfg.num_layers / 1e9:.2f} B matmul parameters in the layers timed")
    print("building and running (weights are random, generated on the device) ...", file=sys.stderr, flush=True)
    outcome = launch(spec, timeout_s=590)
    figures = peaks(args)
    weight_bytes = cfg.layer_params * cfg.num_layers * bytes_per_value("--dtype", args.dtype)
    print(f"{'T':>6} {'forward ms':>11} {'step ms':>9} {'floor ms':>9} {'of floor':>9} {'monitor %':>10}")
    for t, result in zip(token_counts, outcome.results, strict=True):
        if not result.ok:
            print(f"{t:>6} rule broken: {result.violation}")
            continue
        steps = result.steps[2:] or result.steps[1:]  # the first steps warm up kernels and caches
        forward = statistics.median(s.forward_ms for s in steps)
        step = statistics.median(s.ms for s in steps)
        monitor = statistics.median(s.monitor_ms / s.ms for s in steps)
        floor_text, share = "-", "-"
        if figures is not None:
            flops = 2 * cfg.layer_params * cfg.num_layers * t + 2 * t * t * cfg.hidden * cfg.num_layers
            floor = max(flops / (args.tp * figures[0]), weight_bytes / (args.tp * figures[1])) * 1e3
            floor_text, share = f"{floor:.2f}", f"{floor / forward:.0%}"
        print(f"{t:>6} {forward:>11.2f} {step:>9.2f} {floor_text:>9} {share:>9} {100 * monitor:>9.2f}%")
    print("'of floor': the floor as a share of the measured forward (100% = at the roofline).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
