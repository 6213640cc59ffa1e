"""The state graph of a model check at a tiny bound, drawn: every state the scheduler can reach,
each step and add between them, and, for a scheduler that breaks a rule, the path to the break.

The graph is the model checker's own (`stallfree.proofs.explicit.modelcheck`): the same search, the same
canonical states, every transition judged by the monitor. A state is labelled by its key: the
requests waiting (prompt+max_new) and running (prompt+max_new, positions prefilled, tokens emitted).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stallfree.proofs.explicit import modelcheck
from stallfree.proofs.explicit.bounds import Bounds
from stallfree.proofs.explicit.counterexample import Action, Counterexample
from stallfree.proofs.explicit.graph import STEP, Graph
from stallfree.reference import Scheduler


@dataclass(frozen=True, slots=True)
class StateGraph:
    bounds: Bounds
    graph: Graph
    actions: tuple[Action, ...]
    keys: list[Any]  # each state's canonical key, by state number
    complete: bool  # every reachable state explored (no break stopped the search)
    counterexample: Counterexample | None
    path: list[int]  # the states along the counterexample, from the initial one; [] when none

    @property
    def num_states(self) -> int:
        return self.graph.num_states

    def label(self, state: int) -> str:
        """`w 2+1` a waiting request, `p 2+1 1/2` a partial one, `r 1+1 0/1` a ready one (emitted/max_new)."""
        _, _, waiting, running = self.keys[state]
        parts = [f"w {p}+{m}" for p, m in waiting]
        for p, m, f, e in running:
            parts.append(f"p {p}+{m} {f}/{p}" if f < p else f"r {p}+{m} {e}/{m}")
        return "\n".join(parts) or "idle"

    def action_name(self, slot: int) -> str:
        action = self.actions[slot]
        return "step" if action is None else f"add {action[0]}+{action[1]}"


def explore(bounds: Bounds, factory: Callable[..., Any] = Scheduler) -> StateGraph:
    """Run the model checker at `bounds` (its liveness check included) and keep its graph."""
    explored = modelcheck.explore(bounds, factory)
    cx = explored.result.counterexample
    path = _path(explored, cx) if cx is not None else []
    return StateGraph(bounds, explored.graph, explored.actions, explored.keys, explored.result.holds, cx, path)


def _path(explored: modelcheck.Explored, cx: Counterexample) -> list[int]:
    """The states the counterexample's workload walks through, following the graph's edges."""
    actions: list[Action] = []
    step = 0
    for a in sorted(cx.workload.requests, key=lambda a: a.arrival_step):
        actions += [None] * (a.arrival_step - step)
        step = a.arrival_step
        actions.append((a.prompt_len, a.max_new))
    actions += [None] * (cx.num_steps - step)
    graph, width = explored.graph, len(explored.actions)
    state, states = 0, [0]
    for action in actions:
        child = graph.succ[state * width + explored.actions.index(action)]
        if child < 0:
            break  # the breaking transition: its target was never recorded
        state = child
        states.append(state)
    return states


def levels(sg: StateGraph) -> dict[int, int]:
    """Each state's breadth-first depth: the fewest actions from the initial state."""
    depth = {0: 0}
    frontier = [0]
    while frontier:
        nxt = []
        for s in frontier:
            for _, child in sg.graph.edges(s):
                if child not in depth:
                    depth[child] = depth[s] + 1
                    nxt.append(child)
        frontier = nxt
    return depth


def plot(sg: StateGraph, path: Path, title: str) -> Path:
    """Draw `sg` into `path`: states in columns by depth, steps solid, adds dashed, the path to a break red."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    depth = levels(sg)
    columns: dict[int, list[int]] = {}
    for state, d in sorted(depth.items()):
        columns.setdefault(d, []).append(state)
    tallest = max(len(c) for c in columns.values())
    pos = {s: (d, (tallest - 1) / 2 - i) for d, states in columns.items() for i, s in enumerate(states)}
    fig, ax = plt.subplots(figsize=(2.1 * (len(columns) + 1), 0.95 * tallest + 1.6))
    on_path = set(zip(sg.path, sg.path[1:], strict=False))
    for state in depth:
        for slot, child in sg.graph.edges(state):
            if child not in pos or child == state:
                continue
            red = (state, child) in on_path
            (x0, y0), (x1, y1) = pos[state], pos[child]
            bend = 0.25 if x1 <= x0 else 0.0  # a step back to an earlier column curves around the others
            ax.annotate("", xy=(x1, y1), xytext=(x0, y0), arrowprops={
                "arrowstyle": "-|>", "color": "#d62728" if red else ("#444" if slot == STEP else "#999"),
                "linestyle": "-" if slot == STEP else "--", "linewidth": 2.2 if red else 0.9,
                "shrinkA": 22, "shrinkB": 22, "connectionstyle": f"arc3,rad={bend}", "mutation_scale": 9})
    path_states = set(sg.path)
    for state, (x, y) in pos.items():
        ax.text(x, y, sg.label(state), ha="center", va="center", fontsize=7, family="monospace",
                bbox={"boxstyle": "round,pad=0.3", "facecolor": "#fde0dd" if state in path_states else "#eef3fb",
                      "edgecolor": "#d62728" if state in path_states else "#6b8cc7"})
    if sg.counterexample is not None and sg.path:
        x, y = pos[sg.path[-1]]
        broken = f"{sg.counterexample.rule}\nbroken"
        ax.annotate(broken, xy=(x, y), xytext=(x + 0.45, y - 0.55), fontsize=9, color="#d62728", va="top",
                    arrowprops={"arrowstyle": "<|-", "color": "#d62728", "linewidth": 2.2, "shrinkA": 4,
                                "shrinkB": 22})
    ax.set_xlim(-0.6, len(columns) + 0.4)
    ax.set_ylim(-tallest / 2 - 0.2, tallest / 2 + 0.2)
    ax.axis("off")
    ax.set_title(title, fontsize=10, loc="left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    """python -m stallfree.view.stategraph B,S,K,R,P,M FILE.png [--scheduler MODULE:FACTORY] [--never-fit]"""
    import argparse

    from stallfree.spec.utils.loader import load_target

    parser = argparse.ArgumentParser(prog="python -m stallfree.view.stategraph", description=main.__doc__)
    parser.add_argument("bound", help="B,S,K,R,P,M as `stallfree prove --bound` takes it")
    parser.add_argument("file", type=Path, help="the PNG to write")
    parser.add_argument("--scheduler", default="stallfree.reference:Scheduler", metavar="MODULE:FACTORY")
    parser.add_argument("--never-fit", action="store_true", help="also add the request add() must refuse")
    args = parser.parse_args(argv)
    try:
        b = Bounds.parse(args.bound)
        bounds = Bounds(b.token_budget, b.max_seqs, b.kv_tokens, b.num_requests, b.max_prompt, b.max_new,
                        never_fit=args.never_fit)
        factory = load_target(args.scheduler, "--scheduler")
    except ValueError as error:
        parser.error(str(error))
    sg = explore(bounds, factory)
    if sg.counterexample is None:
        print(f"{args.scheduler} at {args.bound}: {sg.num_states} states; every transition judged by the "
              "monitor, every rule held; no cycle of steps with work pending")
    else:
        print(f"{args.scheduler} at {args.bound}: {sg.counterexample.rule} broken, found after "
              f"{sg.num_states} states")
        print(f"path: {' -> '.join(sg.label(s).replace(chr(10), ', ') for s in sg.path)} -> step")
        print(f"replay: {sg.counterexample.workload.dumps()}")
    title = (f"{args.scheduler}, bound B,S,K,R,P,M = {args.bound}: {sg.num_states} states; solid: a step, "
             "dashed: an add")
    print(f"plot: {plot(sg, args.file, title)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
