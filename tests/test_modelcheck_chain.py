"""The compact search rebuilds each state from the deepest state of the last rebuilt path that lies on
its own (`proofs.explicit.chain`), not by replaying its whole path: every state it rebuilds, in the
frontier's order, must be the state a replay from the initial state makes (its key, and the
scheduler's and shadow's every field). Shown failing on a chain that rebuilds from its deepest link
without asking whether that link lies on the path."""

from __future__ import annotations

from typing import Any

from stallfree.proofs.explicit.bounds import Bounds
from stallfree.proofs.explicit.chain import Chain
from stallfree.proofs.explicit.design import Reservation
from stallfree.proofs.explicit.modelcheck import explore
from stallfree.proofs.explicit.snapshot import encode, fork
from stallfree.reference import Scheduler
from stallfree.spec import Monitor

BOUND = "2,3,8,3,3,3"


class Careless(Chain):
    """Rebuilds from its deepest link, on the path or not: the state a wrong ancestor leads to."""

    def rebuild(self, path: list[int], sibling_follows: bool) -> Any:
        if not self.links:
            self.links.append((-1, self.fresh()))
        state = self.fork(self.links[-1][1])
        for index in path[len(self.links) - 1:]:
            self.act(state, self.actions[index])
        self.links.append((path[-1], fork(state)))
        return state


def _fields(scheduler: Any) -> str:
    """The scheduler's every field, by name: the order its attributes were set in is no state (a copy
    sets them in the declared order, the constructor in its own)."""
    return repr(sorted(vars(scheduler).items()))


def rebuilt_otherwise(kind: type[Chain]) -> int:
    """How many states, rebuilt by a `kind` chain in each level's frontier order, differ from the state
    a replay of their path makes."""
    bounds = Bounds.parse(BOUND)
    design = Reservation(bounds)
    cfg = bounds.config

    def fresh() -> Monitor:
        return Monitor(Scheduler(cfg.token_budget, cfg.max_seqs, cfg.kv_tokens), cfg)

    def replay(path: list[int]) -> Monitor:
        monitor = fresh()
        for index in path:
            design.act(monitor, design.actions[index])
        return monitor

    explored = explore(bounds)
    graph, chain = explored.graph, kind(fresh, design.act, fork, design.actions)
    differ = 0
    for state in range(1, graph.num_states):
        follows = state + 1 < graph.num_states and graph.parent[state + 1] == graph.parent[state]
        path = graph.path_to(state)
        rebuilt, replayed = chain.rebuild(path, follows), replay(path)
        same = encode(rebuilt) == explored.keys[state] == encode(replayed) and \
            _fields(rebuilt.scheduler) == _fields(replayed.scheduler) and \
            repr(rebuilt.shadow) == repr(replayed.shadow)
        differ += not same
    return differ


def test_the_chain_rebuilds_every_state_as_its_replay_does() -> None:
    assert rebuilt_otherwise(Chain) == 0


def test_the_check_fails_a_chain_that_rebuilds_from_a_link_off_the_path() -> None:
    assert rebuilt_otherwise(Careless) > 0
