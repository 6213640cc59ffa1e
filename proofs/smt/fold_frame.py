"""The frame of a phase's loop body: what one iteration reads and writes, checked for every iteration
at once, the premise of FOLD for any N (`fold_induction`).

A phase written `for i, r in enumerate(s.requests): BODY` runs BODY once per request, in index
order, with the draft `d` carried (Python's `for`). So it is the left fold of BODY over the requests
if BODY reads nothing but request r, the config, the carried part of the draft and the policy, writes
nothing but request i's plan entry and the carried part, and treats every iteration alike. That is
what is checked here, once, with BODY compiled from the method's own source as a function of
(self, s, d, i, r) and run on guards that raise on anything else:

- `i` is an opaque index (`Index`): usable only as the key of request i's plan entry; any other use
  (arithmetic, comparison, formatting, hashing) raises, so no iteration is told apart from another;
- `s` shows only its config (`OnlyConfig`): reading its requests, its free KV or anything else raises;
- `d` is a draft of the five carried values (budget left, running, free KV, stopped, admitted) and
  four plan entries (`Entry`) that take a write at key `i` only and give back only what was written;
  its other attributes (the defs' count, the name prefix) are not shown, and no new one can be set;
- Python branching on a symbolic value raises (`no_symbolic_branches`): the iteration's control flow
  is the same for every request and carried state, so this one run stands for every iteration;
- a local read before it is written raises (BODY is a function, so no local carries over from the
  iteration before), and the policy's own attributes must be the same objects after as before, none
  of them (its classes' included) a mutable container (`MUTABLE`: a list appended to is the same
  object, `phase_planted.CountingIdle`).

Refused outright, from the source: a phase that is not exactly that loop (a docstring and the `for`),
one whose body returns, declares a global or nonlocal, catches an exception or yields, and one that is
a closure, and one that names `locals`, `vars`, `eval`, a frame and the like (`INTROSPECTION`).
Assumed, not checked: Python's semantics of `for` over `enumerate` of a tuple; that the body and the
methods it calls inspect neither the type or identity of the index (`type(i)`, `id(i)`, `is`) nor the
type, identity, text or hash of a symbolic value, read no caller's frame and change no module state.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import z3

from .symbolic import SymConfig, SymRequest

MUTABLE = (list, dict, set, bytearray)  # attribute values the identity check below cannot see change
CARRIED = ("left", "num_running", "free_kv", "stopped", "num_admitted")
ENTRIES = ("decode", "chunk", "admit", "first_chunk")
REFUSED_NODES = (ast.Return, ast.Global, ast.Nonlocal, ast.Try, ast.Yield, ast.YieldFrom, ast.Await)
# names and attributes that read a frame's locals or run code unseen: what a carried local would hide behind
INTROSPECTION = frozenset({"locals", "vars", "dir", "globals", "eval", "exec", "compile", "__import__", "breakpoint",
                           "f_locals", "f_back", "_getframe", "currentframe"})


class FrameError(Exception):
    """The loop body reads or writes outside its frame, or treats iterations apart."""


class Index:
    """Request i's index, opaque: it keys request i's plan entry and nothing else."""


def _refuse(name: str) -> Callable[..., Any]:
    def refused(self: Index, *args: Any) -> Any:
        raise FrameError(f"the body uses its index i as a value ({name})")
    return refused


for _name in ("__bool__", "__index__", "__int__", "__float__", "__hash__", "__eq__", "__ne__", "__lt__", "__le__",
              "__gt__", "__ge__", "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__mod__",
              "__floordiv__", "__neg__", "__format__", "__str__", "__repr__", "__len__", "__iter__", "__getitem__"):
    setattr(Index, _name, _refuse(_name))


def _shown(key: Any) -> str:
    return "i" if isinstance(key, Index) else repr(key)


class OnlyConfig:
    """The state as one iteration may see it: its config only."""

    __slots__ = ("config",)

    def __init__(self, config: SymConfig) -> None:
        self.config = config

    def __getattr__(self, name: str) -> Any:
        raise FrameError(f"the body reads the state's {name!r}, not only request r and the config")


class Entry:
    """One plan entry list (decode, chunk ...) as one iteration may touch it: written at i, read back."""

    def __init__(self, name: str, index: Index) -> None:
        self.name, self.index, self.written = name, index, None

    def __setitem__(self, key: Any, value: Any) -> None:
        if key is not self.index:
            raise FrameError(f"the body writes d.{self.name}[{_shown(key)}], not request i's entry")
        self.written = value

    def __getitem__(self, key: Any) -> Any:
        if key is not self.index or self.written is None:
            raise FrameError(f"the body reads d.{self.name}[{_shown(key)}] before writing it")
        return self.written

    def __len__(self) -> int:
        raise FrameError(f"the body reads the length of d.{self.name}")

    def __iter__(self) -> Iterator[Any]:
        raise FrameError(f"the body iterates over d.{self.name}")


class FramedDraft:
    """The draft as one iteration may see it: the carried values, request i's entries, `let`."""

    def __init__(self, carried: tuple[Any, ...], index: Index, prefix: str) -> None:
        fields = dict(zip(CARRIED, carried, strict=True)) | {e: Entry(e, index) for e in ENTRIES}
        object.__setattr__(self, "_fields", fields)
        object.__setattr__(self, "_defs", [])  # not shown: their count tells how many iterations came before
        object.__setattr__(self, "_prefix", prefix)

    def let(self, name: str, term: z3.ArithRef) -> z3.ArithRef:
        const = z3.Int(f"{self._prefix}{name}.{len(self._defs)}")
        self._defs.append(const == term)
        return const

    def __getattr__(self, name: str) -> Any:
        if name in self._fields:
            return self._fields[name]
        raise FrameError(f"the body reads d.{name}, not a carried value")

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in CARRIED:
            raise FrameError(f"the body sets d.{name}, not a carried value")
        self._fields[name] = value


@contextmanager
def no_symbolic_branches() -> Iterator[None]:
    """While it lasts, Python branching on a Z3 term raises: control flow cannot depend on a value."""
    def refused(self: z3.AstRef) -> bool:
        raise FrameError(f"the body branches in Python on the symbolic value {self}")

    saved = z3.AstRef.__bool__, z3.AstRef.__nonzero__
    z3.AstRef.__bool__ = z3.AstRef.__nonzero__ = refused  # type: ignore[method-assign]
    try:
        yield
    finally:
        z3.AstRef.__bool__, z3.AstRef.__nonzero__ = saved  # type: ignore[method-assign]


def parsed(func: Any) -> ast.Module:
    """The syntax tree of `func`'s own source; FrameError if it is a closure or its source cannot be read."""
    if func.__code__.co_freevars:
        raise FrameError(f"{func.__qualname__} is a closure (it reads {', '.join(func.__code__.co_freevars)})")
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError) as error:
        raise FrameError(f"{func.__qualname__}: its source cannot be read ({error})") from None
    return tree


def loop_body(method: Callable[..., Any]) -> Callable[..., Any]:
    """The body of `method`'s one loop over its state's requests, compiled as a function of
    (self, s, d, i, r); FrameError if the method is no such loop."""
    func = method.__func__
    tree = parsed(func)
    loop, params = _the_loop(tree.body[0], func.__qualname__)
    step = ast.parse(f"def _iteration({', '.join(params)}): pass").body[0]
    assert isinstance(step, ast.FunctionDef)
    step.body = loop.body
    module = ast.Module(body=[step], type_ignores=[])
    ast.fix_missing_locations(module)
    ast.increment_lineno(module, func.__code__.co_firstlineno - 1)
    namespace: dict[str, Any] = {}
    try:
        exec(compile(module, inspect.getsourcefile(func) or "<phase>", "exec"), func.__globals__, namespace)
    except SyntaxError as error:  # a break or continue, outside the loop it belonged to
        raise FrameError(f"{func.__qualname__}: its body is no function of one iteration ({error.msg})") from None
    return namespace["_iteration"]


def _the_loop(node: ast.stmt, name: str) -> tuple[ast.For, list[str]]:
    """The method's `for i, r in enumerate(s.requests)` and the step's parameters (self, s, d, i, r)."""
    if not isinstance(node, ast.FunctionDef):
        raise FrameError(f"{name} is not a plain method")
    a = node.args
    params = [p.arg for p in a.args]
    if len(params) != 3 or a.posonlyargs or a.vararg or a.kwonlyargs or a.kwarg or a.defaults or node.decorator_list:
        raise FrameError(f"{name} is not a method (self, s, d)")
    body = node.body[1:] if _is_docstring(node.body[0]) else node.body
    loop = body[0] if len(body) == 1 else None
    if not isinstance(loop, ast.For) or loop.orelse:
        raise FrameError(f"{name} is not one loop over its state's requests")
    target, it = loop.target, loop.iter
    names = [e.id for e in target.elts if isinstance(e, ast.Name)] if isinstance(target, ast.Tuple) else []
    over = (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "enumerate"
            and not it.keywords and len(it.args) == 1 and isinstance(it.args[0], ast.Attribute)
            and it.args[0].attr == "requests" and isinstance(it.args[0].value, ast.Name)
            and it.args[0].value.id == params[1])
    if len(names) != 2 or len(set(names) | set(params)) != 5 or not over:
        raise FrameError(f"{name}'s loop is not `for i, r in enumerate({params[1]}.requests)`")
    nodes = list(ast.walk(ast.Module(body=loop.body, type_ignores=[])))
    refused = [type(n).__name__ for n in nodes if isinstance(n, REFUSED_NODES)]
    refused += [n.id for n in nodes if isinstance(n, ast.Name) and n.id in INTROSPECTION]
    refused += [n.attr for n in nodes if isinstance(n, ast.Attribute) and n.attr in INTROSPECTION]
    refused += [f"a rebinding of {b}" for b in _bound(nodes) if b in params]  # the next iteration's self, s, d
    if refused:
        raise FrameError(f"{name}'s loop body holds {refused[0]}: it is no function of one iteration")
    return loop, params + names


def _bound(nodes: list[ast.AST]) -> list[str]:
    """The names `nodes` bind or delete (comprehensions' own included: refused the same, to be safe)."""
    found = [n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))]
    found += [(a.asname or a.name).split(".")[0] for n in nodes if isinstance(n, (ast.Import, ast.ImportFrom))
              for a in n.names]
    return found + [n.name for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


@dataclass(frozen=True)
class Iteration:
    """What one iteration of a phase does, as terms: the carried values it leaves, request i's entry
    (None: not written, the draft's default), and the definitions of its named terms."""

    carried: tuple[Any, ...]
    entry: dict[str, Any]
    defs: tuple[z3.BoolRef, ...]


def iteration(policy: Any, phase: str, config: SymConfig, r: SymRequest, carried: tuple[Any, ...],
              prefix: str) -> Iteration:
    """One run of `phase`'s loop body on request `r`, entered with `carried`, inside the frame's
    guards; FrameError if the body steps outside it (or raises: then it is no total step)."""
    method = getattr(policy, phase, None)
    if not inspect.ismethod(method):
        raise FrameError(f"{phase} is not a method of the policy")
    if "enumerate" in method.__func__.__globals__:
        raise FrameError(f"{phase}: its module rebinds enumerate")
    body = loop_body(method)
    index = Index()
    d = FramedDraft(carried, index, prefix)
    before = _attributes(policy)
    mutable = [k for k, v in before.items() if not k[1].startswith("__") and isinstance(v, MUTABLE)]
    if mutable:
        raise FrameError(f"{phase}: the policy's attribute {'.'.join(mutable[0])} is a mutable "
                         f"{type(before[mutable[0]]).__name__}, which an iteration could change unseen")
    try:
        with no_symbolic_branches():
            body(policy, OnlyConfig(config), d, index, r)
    except FrameError:
        raise
    except Exception as error:  # an UnboundLocalError (a local carried over), a super() with no cell ...
        raise FrameError(f"{phase}: one iteration alone raises {type(error).__name__}: {error}") from None
    after = _attributes(policy)
    if after.keys() != before.keys() or any(after[k] is not before[k] for k in before):
        raise FrameError(f"{phase}: an iteration changes the policy's own attributes or its class's")
    left = [c for c in CARRIED if not z3.is_expr(d._fields[c])]
    left += [e for e in ENTRIES if d._fields[e].written is not None and not z3.is_expr(d._fields[e].written)]
    if left:
        raise FrameError(f"{phase}: an iteration leaves d.{left[0]} no Z3 term")
    return Iteration(tuple(d._fields[c] for c in CARRIED), {e: d._fields[e].written for e in ENTRIES},
                     tuple(d._defs))


def _attributes(policy: Any) -> dict[tuple[str, str], Any]:
    """The policy's attributes and its classes', by (owner, name): what an iteration may not change."""
    found = {("self", k): v for k, v in getattr(policy, "__dict__", {}).items()}
    for cls in type(policy).__mro__:
        found |= {(cls.__qualname__, k): v for k, v in vars(cls).items()}
    return found
