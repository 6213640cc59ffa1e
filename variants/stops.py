"""complete()'s `stopped` argument, checked the same way by every rendering of the variants.

A stop ends a request only on a token it emitted in that step (TOKENS); complete() refuses any other,
changing nothing. Which rids emit a token is the rendering's to say (`emits`); what a well-formed
`stopped` is, and the errors that name the field and the value, are written once here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from stallfree.spec import FieldTypeError, InvalidField, ProtocolError


def check_stopped(stopped: object, emits: Callable[[int], bool], step: int) -> tuple[int, ...]:
    """`stopped` as a tuple of rids, each an int listed once that `emits` a token in step `step`;
    raise naming the first that is not (FieldTypeError, InvalidField, ProtocolError)."""
    if isinstance(stopped, str | bytes) or not isinstance(stopped, Iterable):
        raise FieldTypeError(f"stopped must be an iterable of rids, got {type(stopped).__name__} {stopped!r:.40}")
    rids = tuple(stopped)
    for i, rid in enumerate(rids):
        if type(rid) is not int:
            raise FieldTypeError(f"stopped[{i}] must be an int rid, got {type(rid).__name__} {rid!r:.40}")
        if rid in rids[:i]:
            raise InvalidField(f"stopped[{i}]: rid {rid} is listed twice")
        if not emits(rid):
            raise ProtocolError(f"stopped[{i}]: rid {rid} emits no token in step {step}")
    return rids
