"""Rebuilding the compact search's states: the states along the last path rebuilt, kept.

A compact search keeps no live state in its frontier: each state is rebuilt from the initial one by
its path of actions when it is expanded. A breadth-first frontier comes in the order of the tree of
first visits, so consecutive states share most of their path: their parent, often their grandparent.
The chain keeps the rebuilt state at every depth of the last path (its links), and a new path is
rebuilt from the deepest link it shares, one copy and one action a depth, instead of replaying every
action from the initial state. A state's last action runs on a copy of its parent's link, or on the
link itself (taken off the chain) when no sibling follows it. Replay is deterministic, hidden state
included, so a state rebuilt either way is the same state; the links are never changed once kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .counterexample import Action

Fork = Callable[[Any], Any]  # an independent copy of a monitor (`snapshot.fork`)


class Chain:
    """The rebuilt states along the last path: links[k] is (the path's k-th action, the state after the
    first k), links[0] the initial state."""

    __slots__ = ("act", "actions", "fork", "fresh", "links")

    def __init__(self, fresh: Callable[[], Any], act: Callable[[Any, Action], Any], fork: Fork,
                 actions: tuple[Action, ...]) -> None:
        self.fresh = fresh  # a new initial state
        self.act = act  # applies an action to a state
        self.fork = fork
        self.actions = actions
        self.links: list[tuple[int, Any]] = []

    def rebuild(self, path: list[int], sibling_follows: bool) -> Any:
        """The state at the end of `path` (action indexes, at least one); its parent is kept as a link
        while `sibling_follows` (the next state rebuilt has the same parent)."""
        links = self.links
        if not links:
            links.append((-1, self.fresh()))
        shared = 0  # links[shared] is the deepest link on `path`'s parent's path
        parent_depth = len(path) - 1
        while shared < parent_depth and shared + 1 < len(links) and links[shared + 1][0] == path[shared]:
            shared += 1
        del links[shared + 1:]
        act, fork, actions = self.act, self.fork, self.actions
        state = links[shared][1]
        for index in path[shared:parent_depth]:
            state = fork(state)
            act(state, actions[index])
            links.append((index, state))
        if sibling_follows or len(links) == 1:  # the initial state is kept for every path
            state = fork(state)
        else:
            links.pop()  # no sibling follows: the parent's link is not needed again
        act(state, actions[path[-1]])
        return state

    def clear(self) -> None:
        """Drop every link (the memory they hold)."""
        self.links.clear()
