"""A fast structural copy of a scheduler's state, for branching the search.

`copy.deepcopy` spends most of its time on generic dispatch (about 0.6 ms for a small reference
state, and the model checker copies once per transition). This copier knows the few shapes
scheduler state takes (dicts, ordered dicts, lists, deques, sets, objects with `__dict__` or `__slots__`) and shares
what cannot change: ints, strings, frozen dataclasses, enums, functions, types, and tuples of those.
Aliasing is kept: an object reachable twice is copied once. It reads no scheduler's layout, so it
serves any scheduler. Two classes are copied their own way, 1.3 to 1.5 times faster than this walk
(benchmarks/proofs_modelcheck.py), and the only way a compiled one (scripts/compiled.sh) can be
copied: the reference scheduler, by `reference_copy` here beside the walk, and any class that defines
`__deepcopy__` itself (not by inheritance), as the shadow does.
"""

from __future__ import annotations

import dataclasses
import enum
import types
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any

from stallfree.reference import Scheduler
from stallfree.spec.utils.copies import slot_names

from .reference_copy import copy_scheduler

Memo = dict[int, Any]

_SHARED: set[type] = {
    int, str, bool, float, bytes, complex, range, frozenset, type(None),
    types.FunctionType, types.BuiltinFunctionType, type,
}


def clone(obj: Any) -> Any:
    """A copy of `obj` that shares nothing mutable with it."""
    return _clone(obj, {})


def clone_each(*objs: Any) -> list[Any]:
    """A copy of each of `objs`, sharing nothing mutable with them; what two of them share, their
    copies share (one copy, as `clone` of the tuple of them would make)."""
    memo: Memo = {}
    return [_clone(obj, memo) for obj in objs]


def clone_pair(first: Any, second: Any) -> tuple[Any, Any]:
    """`clone_each(first, second)`, without the argument tuple and list: the model checker's fork."""
    memo: Memo = {}
    return _clone(first, memo), _clone(second, memo)


def _clone(obj: Any, memo: Memo) -> Any:
    cls = type(obj)
    if cls in _SHARED:
        return obj
    found = memo.get(id(obj))
    if found is not None:
        return found
    copier = _COPIERS.get(cls)
    if copier is None:
        copier = _copier_for(cls)
        if copier is None:
            _SHARED.add(cls)
            return obj
        _COPIERS[cls] = copier
    return copier(obj, memo)


def _dict(obj: dict, memo: Memo) -> dict:
    new: dict = {}
    memo[id(obj)] = new
    for k, v in obj.items():
        new[k if type(k) in _SHARED else _clone(k, memo)] = v if type(v) in _SHARED else _clone(v, memo)
    return new


def _list(obj: list, memo: Memo) -> list:
    new: list = []
    memo[id(obj)] = new
    new.extend(v if type(v) in _SHARED else _clone(v, memo) for v in obj)
    return new


def _deque(obj: deque, memo: Memo) -> deque:
    new: deque = deque(maxlen=obj.maxlen)
    memo[id(obj)] = new
    new.extend(v if type(v) in _SHARED else _clone(v, memo) for v in obj)
    return new


def _set(obj: set, memo: Memo) -> set:
    new = {_clone(v, memo) for v in obj}
    memo[id(obj)] = new
    return new


def _tuple(obj: tuple, memo: Memo) -> tuple:
    for v in obj:
        if type(v) not in _SHARED:
            break
    else:
        return obj
    items = [_clone(v, memo) for v in obj]
    if all(a is b for a, b in zip(items, obj, strict=True)):
        return obj
    cls = type(obj)
    new = cls(*items) if hasattr(cls, "_fields") else cls(items)
    memo[id(obj)] = new
    return new


def _own_copy(obj: Any, memo: Memo) -> Any:
    new = obj.__deepcopy__(memo)
    memo[id(obj)] = new
    return new


def _object_copier(cls: type) -> Callable[[Any, Memo], Any]:
    """A copier written for `cls`: one line per slot, so a copy costs no loop over names. Falls back
    to the generic copier for an instance with a slot left unset."""
    names = slot_names(cls)
    plain = cls.__setattr__ is object.__setattr__ and all(name.isidentifier() for name in names)
    if not plain:
        return _generic_object_copier(cls, names)
    lines = ["def copy_object(obj, memo):", "    new = new_object(cls)", "    memo[id(obj)] = new"]
    if names:
        lines.append("    try:")
        for name in names:
            lines += [f"        v = obj.{name}", f"        new.{name} = v if type(v) in SHARED else clone(v, memo)"]
        lines += ["    except AttributeError:", "        return generic(obj, memo)"]
    lines += ["    state = getattr(obj, '__dict__', None)", "    if state is not None:",
              "        new.__dict__ = {k: v if type(v) in SHARED else clone(v, memo) for k, v in state.items()}",
              "    return new"]
    scope = {"new_object": object.__new__, "cls": cls, "SHARED": _SHARED, "clone": _clone,
             "generic": _generic_object_copier(cls, names)}
    exec("\n".join(lines), scope)  # the code is built from the class's own slot names only
    copier: Callable[[Any, Memo], Any] = scope["copy_object"]  # type: ignore[assignment]
    return copier


def _generic_object_copier(cls: type, names: tuple[str, ...]) -> Callable[[Any, Memo], Any]:
    new_object = object.__new__
    setattr_ = object.__setattr__

    def copy_object(obj: Any, memo: Memo) -> Any:
        new: Any = new_object(cls)
        memo[id(obj)] = new
        for name in names:
            try:
                value = getattr(obj, name)
            except AttributeError:
                continue
            setattr_(new, name, value if type(value) in _SHARED else _clone(value, memo))
        state = getattr(obj, "__dict__", None)
        if state is not None:
            new.__dict__.update({k: v if type(v) in _SHARED else _clone(v, memo) for k, v in state.items()})
        return new

    return copy_object


def _copier_for(cls: type) -> Callable[[Any, Memo], Any] | None:
    """How to copy an instance of `cls`; None when instances never change and may be shared."""
    params = getattr(cls, "__dataclass_params__", None)
    if (dataclasses.is_dataclass(cls) and params is not None and params.frozen) or issubclass(cls, enum.Enum):
        return None
    if issubclass(cls, tuple):
        return _tuple
    if "__deepcopy__" in cls.__dict__:  # the class says how it is copied (`copy.deepcopy`'s protocol)
        return _own_copy
    if cls.__new__ is not object.__new__:
        raise TypeError(f"cannot clone a {cls.__name__}: it has its own __new__")
    return _object_copier(cls)


def _ordered_dict(obj: OrderedDict[Any, Any], memo: Memo) -> OrderedDict[Any, Any]:
    new: OrderedDict[Any, Any] = OrderedDict()
    memo[id(obj)] = new
    for k, v in obj.items():
        new[k if type(k) in _SHARED else _clone(k, memo)] = v if type(v) in _SHARED else _clone(v, memo)
    return new


_COPIERS: dict[type, Callable[[Any, Memo], Any]] = {dict: _dict, list: _list, deque: _deque, set: _set, tuple: _tuple,
                                                    OrderedDict: _ordered_dict, Scheduler: copy_scheduler}
