"""The model checker's copy of a reference scheduler (`stallfree.reference.Scheduler`), registered
with `clone`: what a field-by-field deep copy makes, faster than `clone`'s generic walk
(benchmarks/proofs_modelcheck.py), and the only way to copy the compiled core (scripts/compiled.sh),
whose classes cannot be walked field by field.

The copy is written once, at import, from the state the reference declares (`reference.views.Views`
and the dataclasses its fields hold): one line per field, shaped by the field's declared type. A
container is copied with its items' copies; a frozen value (an int, a config, a request, a plan
entry, an enum) is shared; a mutable dataclass (a `Sequence`, the step record `Step`) is copied once per
copy (`memo`), so that every container of the copy points at the one copy of each sequence, as in the
original. A field the copy does not know how to copy stops the import, naming it. Subclasses are not
copied here (their fields of their own are not known): `clone` walks them.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import sys
import types
import typing
from collections import OrderedDict, deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stallfree.reference import Scheduler
from stallfree.reference.views import Views

Memo = dict[int, Any]
_FROZEN = (int, str, bool, float, type(None))


def declared(cls: type) -> dict[str, Any]:
    """`cls`'s declared fields and their types. A class the core compiled (mypyc) keeps none of its
    own annotations, so they are read from its module's source beside it (scripts/compiled.sh keeps
    it there), evaluated in that module's namespace."""
    module = sys.modules[cls.__module__]
    source = Path(module.__file__ or "")
    if source.suffix == ".py":
        return typing.get_type_hints(cls)
    source = source.parent / f"{cls.__module__.rsplit('.', 1)[-1]}.py"
    tree = ast.parse(source.read_text())
    body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls.__name__).body
    return {n.target.id: eval(ast.unparse(n.annotation), vars(module))
            for n in body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}


class Writer:
    """The copy's source: an expression per declared type, a function per mutable dataclass."""

    def __init__(self) -> None:
        self.functions: dict[type, str] = {}  # class -> the name of its copy function
        self.lines: list[str] = []
        self.scope: dict[str, Any] = {"deque": deque, "OrderedDict": OrderedDict}

    def expr(self, tp: Any, value: str, field: str, depth: int = 0) -> str:
        """An expression copying `value`, of declared type `tp` (`field` names it in an error)."""
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        item = f"x{depth}"
        if origin in (types.UnionType, typing.Union):
            arms = [a for a in args if a is not type(None)]
            if len(arms) != 1:
                raise TypeError(f"reference_copy: field {field}: {tp} is not one type or None")
            inner = self.expr(arms[0], value, field, depth)
            return value if inner == value else f"(None if {value} is None else {inner})"
        if origin in (deque, list):
            inner = self.expr(args[0], item, field, depth + 1)
            items = f"[{inner} for {item} in {value}]"
            if origin is list:
                return f"list({value})" if inner == item else items
            return f"deque({value})" if inner == item else f"deque({items})"
        if origin in (dict, OrderedDict):
            if self.expr(args[0], item, field, depth + 1) != item:
                raise TypeError(f"reference_copy: field {field}: the keys of {tp} are not frozen")
            inner = self.expr(args[1], item, field, depth + 1)
            pairs = f"{{k{depth}: {inner} for k{depth}, {item} in {value}.items()}}"
            if origin is OrderedDict:  # in its order: a dict comprehension keeps it, the class does not
                return f"OrderedDict({value})" if inner == item else f"OrderedDict({pairs})"
            return f"dict({value})" if inner == item else pairs
        if origin is tuple:
            parts = [self.expr(a, f"{value}[{i}]", field, depth + 1) for i, a in enumerate(args)]
            return value if all(p == f"{value}[{i}]" for i, p in enumerate(parts)) else f"({', '.join(parts)},)"
        if isinstance(tp, type) and _is_frozen(tp):
            return value
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            return f"{self.function(tp)}({value}, memo)"
        raise TypeError(f"reference_copy: field {field}: cannot copy a {tp!r}")

    def function(self, cls: type, fields: dict[str, Any] | None = None) -> str:
        """The name of `cls`'s copy function (written on first use): a new instance, each field copied."""
        name = self.functions.get(cls)
        if name is not None:
            return name
        name = self.functions[cls] = f"copy_{cls.__name__}"
        self.scope[cls.__name__] = cls
        body = [f"def {name}(obj, memo):", "    twin = memo.get(id(obj))", "    if twin is not None:",
                "        return twin", f"    new = memo[id(obj)] = {_blank(cls)}"]
        for field, tp in (declared(cls) if fields is None else fields).items():
            copied = self.expr(tp, "v", f"{cls.__name__}.{field}", 0)
            body += [f"    new.{field} = obj.{field}"] if copied == "v" else [f"    v = obj.{field}",
                                                                            f"    new.{field} = {copied}"]
        self.lines += [*body, "    return new", ""]
        return name


def _blank(cls: type) -> str:
    """An expression making an instance of `cls` to fill in: bare where the class allows it, else (the
    compiled scheduler, whose `__new__` runs its constructor) built from the original's config."""
    try:
        cls.__new__(cls)
    except TypeError:
        if cls is not Scheduler:
            raise
        return "Scheduler(obj.config.token_budget, obj.config.max_seqs, obj.config.kv_tokens)"
    return f"{cls.__name__}.__new__({cls.__name__})"


def _is_frozen(tp: type) -> bool:
    """True for a type whose values never change: shared by the copy."""
    params = getattr(tp, "__dataclass_params__", None)
    return issubclass(tp, (*_FROZEN, enum.Enum)) or (params is not None and params.frozen) or \
        (issubclass(tp, tuple) and hasattr(tp, "_fields"))


def _written() -> Callable[[Scheduler, Memo], Scheduler]:
    writer = Writer()
    name = writer.function(Scheduler, declared(Views))
    exec("\n".join(writer.lines), writer.scope)
    copier: Callable[[Scheduler, Memo], Scheduler] = writer.scope[name]
    return copier


copy_scheduler = _written()
copy_scheduler.__doc__ = "A copy of a Scheduler sharing nothing that changes with it; `memo` as `clone`'s."
