"""Exercise 5's answer, derived when asked and never stored: one-token edits of the starter's lines
are tried under the judge. An edit puts, in place of one name or attribute read in a step method
(`schedule`, `complete`, `emit`, `release`), another of its kind: a request's other field or property,
the scheduler's other attribute, or the method's other local. An edit is kept when, on a few
workloads, it breaks a strict subset of the rules the starter breaks; then the kept edits, alone and
in pairs on different lines, are judged in full the way a FILE is, and the first that keeps every rule
is the fix. The package holds the faulty starter only; what the fix says is computed here."""

from __future__ import annotations

import ast
import functools
import itertools
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .judge import judge, workloads

STEP_METHODS = ("schedule", "complete", "emit", "release")
SCREEN = 10  # workloads of the seed an edit is screened on before it is judged in full
DERIVED = "_stallfree_derived_fix"


@dataclass(frozen=True, slots=True)
class Edit:
    line: int  # 0-based
    start: int  # columns of the replaced text on that line
    end: int
    text: str

    def apply(self, lines: list[str]) -> list[str]:
        out = list(lines)
        out[self.line] = out[self.line][: self.start] + self.text + out[self.line][self.end:]
        return out


def _attributes(tree: ast.Module) -> tuple[list[str], list[str]]:
    """The request's fields and properties, and the scheduler's attributes (those `__init__` sets)."""
    fields: list[str] = []
    own: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Request":
            fields = [s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
            fields += [s.name for s in node.body if isinstance(s, ast.FunctionDef)]
        if isinstance(node, ast.ClassDef) and node.name == "Scheduler":
            init = next(s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__init__")
            own = [t.attr for t in ast.walk(init) if isinstance(t, ast.Attribute) and isinstance(t.ctx, ast.Store)]
    return fields, own


def _methods(tree: ast.Module) -> Iterator[ast.FunctionDef]:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Scheduler":
            yield from (s for s in node.body if isinstance(s, ast.FunctionDef) and s.name in STEP_METHODS)


def edits(source: str) -> list[Edit]:
    """Every one-token edit of a read in a step method, in the starter's order."""
    tree = ast.parse(source)
    fields, own = _attributes(tree)
    found: list[Edit] = []
    for method in _methods(tree):
        params = {a.arg for a in method.args.args}
        local = sorted({n.id for n in ast.walk(method) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
                       | (params - {"self"}))
        for node in ast.walk(method):
            if not isinstance(getattr(node, "ctx", None), ast.Load) or node.lineno != node.end_lineno:
                continue
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                start, was = node.end_col_offset - len(node.attr), node.attr  # type: ignore[operator]
                if node.value.id == "self":  # self.x: another attribute, or a local in place of the whole
                    found += [Edit(node.lineno - 1, start, node.end_col_offset, a) for a in own if a != was]  # type: ignore[arg-type]
                    found += [Edit(node.lineno - 1, node.col_offset, node.end_col_offset, n) for n in local]  # type: ignore[arg-type]
                elif node.value.id in local:  # r.x: the request's other field or property
                    found += [Edit(node.lineno - 1, start, node.end_col_offset, f) for f in fields if f != was]  # type: ignore[arg-type]
            elif isinstance(node, ast.Name) and node.id in local:
                found += [Edit(node.lineno - 1, node.col_offset, node.end_col_offset, n)  # type: ignore[arg-type]
                          for n in local if n != node.id]
    return sorted(set(found), key=lambda e: (e.line, e.start, e.text))


def factory_of(source: str) -> Callable[..., Any] | None:
    """`Scheduler` of `source`, loaded as a module of its own (a dataclass looks its module up)."""
    module = types.ModuleType(DERIVED)
    sys.modules[DERIVED] = module
    try:
        exec(compile(source, "<derived>", "exec"), module.__dict__)
    except Exception:  # an edit that does not compile or load is no candidate
        return None
    finally:
        del sys.modules[DERIVED]
    return getattr(module, "Scheduler", None)


@functools.cache
def derive_fix(starter: str, seed: int) -> str | None:
    """The starter with the first edit, or pair of edits on two lines, that keeps every rule judged
    on `seed`'s workloads; None if none does. Tried first: single edits, then pairs whose rules still
    broken on the screen do not overlap (each mends what the other leaves), fewest left first."""
    lines = starter.splitlines(keepends=True)
    screen = workloads(seed)[: SCREEN + 1]
    factory = factory_of(starter)
    if factory is None:
        raise RuntimeError("the starter of exercise 5 does not load")
    before = set(judge(factory, seed, screen).broken)
    kept: list[tuple[Edit, frozenset[str]]] = []
    for edit in edits(starter):
        candidate = factory_of("".join(edit.apply(lines)))
        left = frozenset(judge(candidate, seed, screen).broken) if candidate is not None else before
        if left < before:
            kept.append((edit, left))
    pairs = [(a, b) for a, b in itertools.combinations(kept, 2) if a[0].line != b[0].line]
    pairs.sort(key=lambda p: (bool(p[0][1] & p[1][1]), len(p[0][1] | p[1][1])))
    for chosen in [(k,) for k in sorted(kept, key=lambda k: len(k[1]))] + pairs:
        fixed = lines
        for edit, _ in chosen:
            fixed = edit.apply(fixed)
        candidate = factory_of("".join(fixed))
        if candidate is not None and not judge(candidate, seed).broken:
            return "".join(fixed)
    return None
