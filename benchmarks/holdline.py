"""Every speed figure of stallfree, the working tree against an older commit, side by side in one run.

The commit (`--base`, default 1e2414f) and the working tree are each laid out as the installed package
in a temporary folder (benchmarks/holdstage.py) and imported by a worker process of their own
(benchmarks/holdfigures.py); both workers stay up for the whole run. Each figure runs in rounds, and
each round runs it once on each copy, the order swapped every round, so that whatever else loads the
machine hits both alike. Costs are CPU seconds of the worker (children included), or the median
microseconds of one step for the step figures; a ratio is the median over rounds of head / base on
the same round (above 1: the working tree is slower). Both copies must do the same work (steps,
tokens, verdicts): a figure where they differ is marked so.

Then the limits: within each copy, check-trace against json.loads of the same lines, the monitor
against the shadow's own bookkeeping (the monitor with no rule), checked simulation against unchecked.

    python benchmarks/holdline.py [--base 1e2414f] [--quick] [--rounds N] [--only step,trace] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from holdstage import resolve, stage_commit, stage_tree

HERE = Path(__file__).resolve().parent
# name: (rounds, step figure steps, monitor workloads, campaign sims, sim requests, trace steps, kit examples)
PROFILES = {
    "full": (3, 2000, 400, 500, 3000, 100_000, 25),
    "quick": (3, 500, 100, 100, 1000, 20_000, 3),
}


class Worker:
    """One copy of stallfree in a process of its own, answering figure requests."""

    def __init__(self, name: str, path: Path) -> None:
        self.name = name
        env = {**os.environ, "PYTHONPATH": str(path)}
        self.process = subprocess.Popen([sys.executable, str(HERE / "holdfigures.py")], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, env=env, cwd=str(path))
        imported = self.receive()["stallfree"]
        if not imported.startswith(str(path)):
            raise SystemExit(f"the {name} worker imported stallfree from {imported}, not from {path}")

    def receive(self) -> dict[str, Any]:
        line = self.process.stdout.readline()  # type: ignore[union-attr]
        if not line:
            raise SystemExit(f"the {self.name} worker ended (exit status {self.process.wait()})")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def ask(self, figure: str, params: dict[str, Any]) -> dict[str, Any]:
        self.process.stdin.write(json.dumps({"figure": figure, "params": params}) + "\n")  # type: ignore[union-attr]
        self.process.stdin.flush()  # type: ignore[union-attr]
        return self.receive()

    def close(self) -> None:
        self.process.stdin.close()  # type: ignore[union-attr]
        self.process.wait()


@dataclass
class Job:
    """One figure with its parameters, and the samples each copy gave, round by round."""

    label: str
    figure: str
    params: dict[str, Any]
    samples: dict[str, list[dict[str, list[Any]]]] = field(default_factory=lambda: {"base": [], "head": []})
    absent: dict[str, str] = field(default_factory=dict)


def jobs(profile: str, files: dict[str, str]) -> list[Job]:
    _, steps, workloads, sims, requests, _, examples = PROFILES[profile]
    out = [Job("reference step", "step", {"target": "stallfree.reference:Scheduler", "steps": steps}),
           Job("paged step", "step", {"target": "stallfree.paged:Scheduler", "steps": steps}),
           Job(f"play, {workloads} workloads", "monitor", {"workloads": workloads}),
           Job(f"campaign, {sims} sims", "campaign", {"sims": sims})]
    out += [Job(f"simulate {t}, {requests} req", "simulate", {"trace": t, "requests": requests})
            for t in ("conv", "code")]
    out += [Job(f"check-trace v{v} {kind}", "trace", {"path": files[f"{kind}{v}"], "version": v})
            for v in (1, 2) for kind in ("sparse", "dense")]
    return [*out, Job(f"kit, default grid x {examples}", "kit", {"examples": examples})]


def write_traces(folder: Path, steps: int) -> dict[str, str]:
    """The sparse (one request decoding) and dense (about 16 running) traces, v1 and the same lines as v2."""
    from check_trace_throughput import as_v2, dense_workload

    from stallfree.conformance.trace.record import record_trace
    from stallfree.conformance.trace.synthetic import decoding_trace
    from stallfree.reference import Scheduler

    sparse, dense = folder / "sparse1.jsonl", folder / "dense1.jsonl"
    sparse.write_bytes(b"".join(decoding_trace(steps)))
    with dense.open("w") as out:
        record_trace(dense_workload(steps), Scheduler, out)
    files = {"sparse1": str(sparse), "dense1": str(dense)}
    for kind, v1 in (("sparse", sparse), ("dense", dense)):
        v2 = folder / f"{kind}2.jsonl"
        as_v2(v1, v2)  # the recorder writes its header without spaces: a plain replace would leave it v1
        files[f"{kind}2"] = str(v2)
    return files


def run_rounds(todo: list[Job], workers: dict[str, Worker], rounds: int) -> None:
    for r in range(rounds):
        for job in todo:
            for side in ("base", "head") if r % 2 == 0 else ("head", "base"):
                if side in job.absent:
                    continue
                answer = workers[side].ask(job.figure, job.params)
                if "absent" in answer:
                    job.absent[side] = answer["absent"]
                else:
                    job.samples[side].append(answer["samples"])
            print(f"round {r + 1}/{rounds}: {job.label} done", file=sys.stderr, flush=True)


def steps_of(figure: str, key: str, work: Any) -> int | None:
    """The steps a sample's work holds (None for the step figures, whose cost is already per step)."""
    if figure == "step":
        return None
    if figure == "monitor" or key == "json.loads":
        return int(work)
    return int(work[1] if figure in ("campaign", "kit") else work[0])


def series(job: Job, side: str, key: str) -> list[float]:
    return [float(s[key][0]) for s in job.samples[side]]


def per_step(job: Job, side: str, key: str) -> list[float]:
    """Each round's cost, per step of its work where the work counts steps (the kit's examples differ
    between commits: the same runs take other steps)."""
    out = []
    for sample in job.samples[side]:
        cost, work = sample[key]
        steps = steps_of(job.figure, key, work)
        out.append(float(cost) / steps if steps else float(cost))
    return out


def paired(a: list[float], b: list[float]) -> float:
    """The median over rounds of a / b, round by round."""
    return statistics.median(x / y for x, y in zip(a, b, strict=False))


def cell(job: Job, side: str, key: str) -> str:
    if side in job.absent:
        return "absent"
    costs = series(job, side, key)
    cost = statistics.median(costs)
    steps = steps_of(job.figure, key, job.samples[side][0][key][1])
    return f"{cost:8.1f} us" if steps is None else f"{steps / cost:9,.0f}/s"


def same_work(job: Job, key: str) -> str:
    """"same", or what each copy did, base first (each side's works, where its rounds differ)."""
    seen = {side: sorted({json.dumps(s[key][1]) for s in job.samples[side]}) for side in ("base", "head")}
    if len(set(seen["base"]) | set(seen["head"])) == 1:
        return "same"
    return f"DIFFERENT: base {' '.join(seen['base'])} | head {' '.join(seen['head'])}"[:200]


def comparison(todo: list[Job]) -> list[dict[str, Any]]:
    rows = []
    for job in todo:
        side = "head" if job.samples["head"] else "base"
        for key in job.samples[side][0] if job.samples[side] else ():
            both = not job.absent and job.samples["base"] and job.samples["head"]
            ratio = paired(per_step(job, "head", key), per_step(job, "base", key)) if both else None
            rows.append({"figure": f"{job.label}{' ' + key if key else ''}", "base": cell(job, "base", key),
                         "head": cell(job, "head", key), "ratio": ratio,
                         "work": same_work(job, key) if both else "-"})
    return rows


def limit_pairs(todo: list[Job]) -> list[tuple[str, Job, str, str, Job | None]]:
    """(what, job, numerator key, denominator key, denominator job when another) of each limit."""
    by = {job.label: job for job in todo}
    out: list[tuple[str, Job, str, str, Job | None]] = []
    for job in todo:
        if job.figure == "trace":
            out.append((f"{job.label} / json.loads", job, "check", "json.loads", None))
        elif job.figure == "simulate":
            out.append((f"{job.label}: checked / unchecked", job, "checked", "unchecked", None))
        elif job.figure == "monitor":
            out.append((f"{job.label}: monitor / shadow", job, "monitor", "shadow", None))
    if "paged step" in by and "reference step" in by:
        out.append(("paged step / reference step", by["paged step"], "", "", by["reference step"]))
    return out


def limits(todo: list[Job]) -> list[dict[str, Any]]:
    rows = []
    for what, job, top, bottom, other in limit_pairs(todo):
        row: dict[str, Any] = {"limit": what}
        for side in ("base", "head"):
            under = other or job
            if side in job.absent or side in under.absent or not job.samples[side]:
                row[side] = None
                continue
            row[side] = paired(series(job, side, top), series(under, side, bottom))
            if job.figure == "monitor":  # the monitor's own time over the shadow's, the scheduler's taken out
                bare = series(job, side, "bare")
                own = [m - b for m, b in zip(series(job, side, top), bare, strict=True)]
                shadow = [s - b for s, b in zip(series(job, side, bottom), bare, strict=True)]
                row[f"{side} less scheduler"] = paired(own, shadow)
        rows.append(row)
    return rows


def show(rows: list[dict[str, Any]], limit_rows: list[dict[str, Any]], base: str, rounds: int) -> None:
    print(f"base {base[:9]} vs working tree: {rounds} rounds interleaved, medians; ratio = head / base CPU time "
          "per step of the work (above 1: slower)")
    print(f"{'figure':<44} {'base':>12} {'head':>12} {'ratio':>7}  work")
    for r in rows:
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        print(f"{r['figure']:<44} {r['base']:>12} {r['head']:>12} {ratio:>7}  {r['work']}")
    print("\nlimits (cost / cost of the same work, within one copy; median over rounds)")
    print(f"{'limit':<58} {'base':>7} {'head':>7}")
    for r in limit_rows:
        cells = ["-" if r[s] is None else f"{r[s]:.2f}x" for s in ("base", "head")]
        print(f"{r['limit']:<58} {cells[0]:>7} {cells[1]:>7}")
        if "head less scheduler" in r or "base less scheduler" in r:
            extra = ["-" if r.get(f"{s} less scheduler") is None else f"{r[f'{s} less scheduler']:.2f}x"
                     for s in ("base", "head")]
            print(f"{'  the same, the scheduler alone subtracted from both':<58} {extra[0]:>7} {extra[1]:>7}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="1e2414f", help="the commit to compare against")
    parser.add_argument("--quick", action="store_true", help="smaller work and 3 rounds (a few minutes)")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--only", default=None,
                        help="figures to run, by kind: step,monitor,campaign,simulate,trace,kit")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    profile = "quick" if args.quick else "full"
    base = resolve(args.base)
    rounds = args.rounds or PROFILES[profile][0]
    with tempfile.TemporaryDirectory(prefix="holdline-") as tmp:
        folder = Path(tmp)
        files = write_traces(folder, PROFILES[profile][5])
        todo = jobs(profile, files)
        if args.only:
            todo = [job for job in todo if job.figure in args.only.split(",")]
        workers = {"base": Worker("base", stage_commit(base, folder / "base")),
                   "head": Worker("head", stage_tree(folder / "head"))}
        try:
            run_rounds(todo, workers, rounds)
        finally:
            for w in workers.values():
                w.close()
    rows, limit_rows = comparison(todo), limits(todo)
    show(rows, limit_rows, base, rounds)
    if args.json is not None:
        args.json.write_text(json.dumps({"base": base, "profile": profile, "rounds": rounds, "figures": rows,
                                         "limits": limit_rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
