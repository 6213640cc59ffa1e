"""The reachable state graph a model check builds, and its liveness: livelock, termination bound.

Edges are actions: action 0 of a state is its step, action 1 + u the add of universe shape u, then the
stop and cancel actions where the bounds have them (-1 where the action is not enabled). Adds only
ever raise the count of adds and cancels only remove requests, so a cycle can only be made of steps;
a cycle through states with work pending is a livelock: requests that never finish. `step_actions`
are the actions that run a step (the plain step, and steps with stops or a pending cancel): they count
in the longest behaviour; the drain bound counts plain steps, the environment helping no more.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field

STEP = 0  # the action index of a step; adds follow


@dataclass(slots=True)
class Graph:
    num_actions: int
    step_actions: frozenset[int] = frozenset({STEP})
    # 4-byte ints: a graph of up to 2^31 states, at 4 bytes an edge (10 million states at 14 actions: 560 MB)
    succ: array = field(default_factory=lambda: array("i"))  # state * num_actions + action -> state
    parent: array = field(default_factory=lambda: array("i"))  # the state BFS first reached it from
    via: array = field(default_factory=lambda: array("h"))  # the action index it was reached by
    idle: bytearray = field(default_factory=bytearray)  # nothing waiting or running
    work: array = field(default_factory=lambda: array("i"))  # remaining work (PROGRESS's ranking)

    def add_state(self, parent: int, via: int, idle: bool, work: int) -> int:
        self.parent.append(parent)
        self.via.append(via)
        self.idle.append(idle)
        self.work.append(work)
        self.succ.extend([-1] * self.num_actions)
        return len(self.parent) - 1

    @property
    def num_states(self) -> int:
        return len(self.parent)

    def path_to(self, state: int) -> list[int]:
        """The action indexes from the initial state to `state`."""
        actions: list[int] = []
        while state > 0:
            actions.append(self.via[state])
            state = self.parent[state]
        return actions[::-1]

    def edges(self, state: int) -> list[tuple[int, int]]:
        """(action, successor) of `state`, leaving out the steps of an idle state (time passing) and a
        call that changed nothing (a refused cancel: no time passes either)."""
        base = state * self.num_actions
        out = []
        for action in range(self.num_actions):
            child = self.succ[base + action]
            if child < 0:
                continue
            is_step = action in self.step_actions
            if (is_step and self.idle[state]) or (not is_step and child == state):
                continue
            out.append((action, child))
        return out


@dataclass(frozen=True, slots=True)
class Liveness:
    longest_steps: int  # the most steps any behaviour runs before all its work is done
    drain_bound: int  # the most steps any state needs to finish its work once adds stop
    livelock: list[int] | None  # a cycle of steps with work pending: its states, or None
    over_rank: tuple[int, int, int] | None  # (state, steps to drain, work): a step that did no work


def analyse(graph: Graph) -> Liveness:
    """Depth-first over the graph from the initial state: cycles, longest path, steps to drain."""
    n = graph.num_states
    colour = bytearray(n)  # 0 unseen, 1 on the stack, 2 done
    longest = array("q", bytes(8 * n))
    drain = array("q", bytes(8 * n))
    stack: list[tuple[int, list[tuple[int, int]], int]] = [(0, graph.edges(0), 0)]
    colour[0] = 1
    while stack:
        state, out, i = stack[-1]
        if i < len(out):
            stack[-1] = (state, out, i + 1)
            child = out[i][1]
            if colour[child] == 1:
                cycle = [s for s, _, _ in stack]
                return Liveness(0, 0, cycle[cycle.index(child):], None)
            if colour[child] == 0:
                colour[child] = 1
                stack.append((child, graph.edges(child), 0))
            continue
        stack.pop()
        colour[state] = 2
        best = 0
        for action, child in out:
            best = max(best, longest[child] + (action in graph.step_actions))
            if action == STEP:
                drain[state] = drain[child] + 1
        longest[state] = best
    over = next(((s, drain[s], graph.work[s]) for s in range(n) if drain[s] > graph.work[s]), None)
    return Liveness(longest[0], max(drain, default=0), None, over)
