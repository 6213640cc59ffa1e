"""`stallfree trace`'s step view options: the PNG and HTML views of the run, milliseconds from the
cost model, and keeping going past a broken rule."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from stallfree.spec import RuleViolation
from stallfree.view import Recording, StepView

from .commands.args import check_output_file, path_error, write_output

INVARIANTS_HEADER = "the safety rules' quantities, step by step (the verdicts above are the monitor's):"


@dataclass(frozen=True, slots=True)
class Price:
    """Milliseconds of a step on one deployment and cost mode."""

    roofline: object  # stallfree.costs.Roofline (imported with the cost model, only when --ms is given)

    def __call__(self, view: StepView) -> float:
        from stallfree.view.timing import step_ms

        return step_ms(self.roofline, view)  # type: ignore[arg-type]

    def describe(self) -> str:
        r = self.roofline
        return f"{r.deployment.describe()}; {r.mode} cost mode, at 100% of peak"  # type: ignore[attr-defined]


def add_view_arguments(p: argparse.ArgumentParser) -> None:
    from .commands.budget import add_deployment_arguments

    p.add_argument("--keep-going", action="store_true",
                   help="past a broken rule: show the step, then replay with that rule unchecked and go on")
    p.add_argument("--invariants", action="store_true",
                   help="after the verdicts, the safety rules' quantities step by step (tokens <= B, ...)")
    view = p.add_argument_group("step view")
    view.add_argument("--plot", type=Path, metavar="FILE.png",
                      help="draw the run: tokens by kind, every request by step (and why it waits), KV in use")
    view.add_argument("--html", type=Path, metavar="FILE.html",
                      help="the same as one self-contained HTML page with a step slider (works offline)")
    # A group takes the same add_argument calls as the parser the deployment arguments are typed for.
    cost = p.add_argument_group("milliseconds (--ms): the roofline cost model, as `stallfree budget` prices a step")
    cost.add_argument("--ms", action="store_true", help="add each step's milliseconds to the table and the views")
    add_deployment_arguments(cost)  # type: ignore[arg-type]
    cost.add_argument("--mode", default="floor", choices=("floor", "full"),
                      help="floor (default): weights only; full: attention and KV traffic priced too")


def check_view_arguments(args: argparse.Namespace) -> None:
    """Before the run: the output files can be written, matplotlib is there for --plot."""
    if args.plot is not None:
        check_output_file("--plot", args.plot)
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise ValueError("--plot needs matplotlib: pip install 'stallfree[plot]'") from None
    if args.html is not None:
        check_output_file("--html", args.html)
    if args.ms:
        pricing(args)  # a deployment that cannot be priced is a bad argument


def wants_views(args: argparse.Namespace) -> bool:
    """Whether the run is drawn or tabulated after it ends, and so every step must be kept."""
    return any(getattr(args, name, None) for name in ("plot", "html", "invariants"))


def pricing(args: argparse.Namespace) -> Price | None:
    if not getattr(args, "ms", False):
        return None
    from stallfree.costs import Roofline

    from .commands.budget import deployment_from

    return Price(Roofline(deployment_from(args), args.mode))


def write_views(args: argparse.Namespace, recording: Recording, price: Price | None,
                broken: Sequence[RuleViolation] = ()) -> list[str]:
    """Write the views asked for (`broken`: rules broken in earlier runs, marked); the lines to print."""
    ms = [price(v) for v in recording.shown_steps] if price is not None else None
    lines = []
    if getattr(args, "invariants", False):
        from stallfree.view.invariants import rows

        lines += ["", INVARIANTS_HEADER, *rows(recording)]
    if getattr(args, "plot", None) is not None:
        from stallfree.view.plot import plot

        try:
            plot(recording, args.plot, ms, broken)
        except OSError as error:
            raise path_error("--plot", args.plot, error) from None
        lines.append(f"plot: {args.plot}")
    if getattr(args, "html", None) is not None:
        from stallfree.view.html import page

        write_output("--html", args.html, page(recording, ms, broken))
        lines.append(f"html: {args.html}")
    return lines
