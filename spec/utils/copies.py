"""Deep copies of state, for a search that branches from one state (the model checker copies once
per transition). The shadow copies itself (`__deepcopy__`), knowing which of its containers point at
one request (the model checker copies the reference scheduler likewise, in
`proofs.explicit.reference_copy`); `fields` is what that copy falls back on for a subclass, whose
fields of its own it does not know. `slot_names` is the one reading of a
class's slots, which the model checker's copier (`proofs.explicit.clone`) shares.
"""

from __future__ import annotations

import copy
from typing import Any


def slot_names(cls: type) -> tuple[str, ...]:
    """The slots `cls` and its bases declare, each once, in method resolution order (`__dict__` and
    `__weakref__` left out): the fields an instance keeps outside its `__dict__`. A private slot
    (`__x`) is named as the instance holds it (`_Class__x`), as `copy` reads it; else it is lost."""
    names: list[str] = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name in ("__dict__", "__weakref__"):
                continue
            owner = klass.__name__.lstrip("_")
            if name.startswith("__") and not name.endswith("__") and owner:
                name = f"_{owner}{name}"
            if name not in names:
                names.append(name)
    return tuple(names)


def fields(obj: Any, memo: dict[int, Any]) -> Any:
    """A deep copy of `obj` made field by field (its slots, then its `__dict__`), each field copied
    as `copy.deepcopy` copies it, with `memo` shared: what `copy.deepcopy` makes of an object that
    does not define `__deepcopy__`."""
    cls = type(obj)
    new = object.__new__(cls)
    memo[id(obj)] = new
    for name in slot_names(cls):
        if hasattr(obj, name):
            object.__setattr__(new, name, copy.deepcopy(getattr(obj, name), memo))
    for name, value in getattr(obj, "__dict__", {}).items():
        object.__setattr__(new, name, copy.deepcopy(value, memo))
    return new
