"""`stallfree trace --compare A,B,...`: several schedulers on one workload, each judged under its own
contract (or the one --contract names) with every broken rule left unchecked after it is found, so
that each run is whole; a table of what each did, and, with --plot / --html, one picture and one page
with the runs side by side (a shared slider, a play button, the running worst gap between two tokens)."""

from __future__ import annotations

import argparse
import sys

from stallfree.spec import InvalidField, Workload, registry
from stallfree.view.compare import Run, worst_ttft

from .. import exits
from ..explain import explain
from ..stepviews import pricing
from .args import contract_of, guarded, load_scheduler, path_error, write_output

MAX_COMPARED = 8  # policies on one page; more would not read side by side


def policies(text: str) -> list[str]:
    """`--compare A,B,...`: two to MAX_COMPARED names, each once."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not 2 <= len(names) <= MAX_COMPARED or len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(f"expected 2 to {MAX_COMPARED} different schedulers, comma-separated, "
                                         f"got {text!r}")
    return names


def quiet(line: str) -> None:
    """A line of one run's own step table, dropped: the comparison prints its own."""


def run_one(args: argparse.Namespace, workload: Workload, name: str, target: str) -> Run:
    loaded = load_scheduler(target)
    if registry.of(loaded).drawer:  # a design with its own step view is drawn on its own
        raise InvalidField(f"--compare {name!r}: the comparison draws the reservation design; trace the paged "
                           "scheduler on its own")
    contract = contract_of(args.contract, name, loaded)
    price = pricing(args)
    done = explain(workload, guarded(loaded, name), args.rules, name, quiet, price, True, keep=True,
                   contract=contract)
    broken = [*done.broken, *([done.recording.violation] if done.recording.violation is not None else [])]
    ms = [price(v) for v in done.recording.shown_steps] if price is not None else None
    return Run(name, done.recording, broken, ms)


def label(name: str) -> str:
    """The contract a policy is judged under, as --contract names it ("reference": the reservation design's)."""
    policy = registry.policies().get(name)
    return "reference" if policy is None or policy[1].is_design else policy[1].name


def table(runs: list[Run], contracts: list[str]) -> list[str]:
    priced = all(r.ms is not None for r in runs)
    head = (f"{'policy':<16} {'contract':<10} {'steps':>5}  {'worst TTFT':>10}  {'worst gap':>9}"
            + ("  worst gap ms" if priced else ""))
    lines = [head + "  rules broken"]
    for run, contract in zip(runs, contracts, strict=True):
        gaps, gaps_ms = run.gaps, run.gaps_ms
        worst = f"{gaps[-1] if gaps else 0} step(s)"
        ms = f"  {(gaps_ms[-1] if gaps_ms else 0.0):>12.1f}" if priced else ""
        broke = ", ".join(f"{v.rule} at step {v.step}" for v in run.broken) or "none"
        ttft = f"{worst_ttft(run.recording) or '-'} step(s)"
        lines.append(f"{run.name:<16} {contract:<10} {len(run.recording.shown_steps):>5}  {ttft:>10}  {worst:>9}{ms}"
                     f"  {broke}")
    return lines


def compare(args: argparse.Namespace, workload: Workload, targets: dict[str, str]) -> int:
    """Run, tabulate and draw the policies `targets` (name -> MODULE:FACTORY) on `workload`."""
    cfg = workload.config
    try:
        runs = [run_one(args, workload, name, target) for name, target in targets.items()]
    except (InvalidField, ValueError, ImportError) as error:
        print(f"stallfree trace: {error}", file=sys.stderr)
        return exits.USAGE
    contracts = [args.contract or label(name) for name in targets]
    print(f"budget {cfg.token_budget}, max_seqs {cfg.max_seqs}, kv_tokens {cfg.kv_tokens}; "
          f"comparing {', '.join(targets)}")
    price = pricing(args)
    if price is not None:
        print(f"ms: {price.describe()}")
    for line in table(runs, contracts):
        print(line)
    try:
        for line in write_compare_views(args, runs):
            print(line)
    except ValueError as error:
        print(f"stallfree trace: {error}", file=sys.stderr)
        return exits.USAGE
    return exits.BROKEN if any(r.broken for r in runs) else exits.HOLDS


def write_compare_views(args: argparse.Namespace, runs: list[Run]) -> list[str]:
    lines = []
    if args.plot is not None:
        from stallfree.view.compare import plot_compare

        try:
            plot_compare(runs, args.plot)
        except OSError as error:
            raise path_error("--plot", args.plot, error) from None
        lines.append(f"plot: {args.plot}")
    if args.html is not None:
        from stallfree.view.compare_html import page

        write_output("--html", args.html, page(runs))
        lines.append(f"html: {args.html}")
    return lines
