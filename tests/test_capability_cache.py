"""`spec.capability.supports` reads each method's signature once (`_binds`' memo), and reads it again
when the method is given another code or defaults: the memo never answers for a function that changed."""

from __future__ import annotations

from stallfree.reference import Scheduler
from stallfree.spec.capability import CANCEL, STOP, supports


def _make() -> type:
    class Changing:
        def complete(self, plan: object, stopped: object = ()) -> None:
            pass

        def cancel(self, rid: int) -> None:
            pass

    return Changing


def test_stop_is_read_again_when_complete_loses_its_second_argument() -> None:
    cls = _make()
    assert supports(cls()) == {STOP, CANCEL}
    assert supports(cls()) == {STOP, CANCEL}  # from the memo

    def plain(self: object, plan: object) -> None:
        pass

    cls.complete.__code__ = plain.__code__  # the same function object, a one-argument body
    cls.complete.__defaults__ = None
    assert supports(cls()) == {CANCEL}


def test_stop_is_read_again_when_defaults_change() -> None:
    cls = _make()

    def two(self: object, plan: object, stopped: object) -> None:
        pass

    cls.complete = two
    assert STOP in supports(cls())
    cls.complete.__code__ = (lambda self, plan, stopped, extra: None).__code__  # three arguments, no default
    assert STOP not in supports(cls())
    cls.complete.__defaults__ = (None,)  # `extra` defaulted: two arguments bind again
    assert STOP in supports(cls())


def test_a_declared_signature_is_honoured_not_memoised() -> None:
    import inspect

    cls = _make()
    assert STOP in supports(cls())
    cls.complete.__signature__ = inspect.signature(lambda self, plan: None)
    assert STOP not in supports(cls())


def test_the_reference_supports_both() -> None:
    assert supports(Scheduler(8, 2, 64)) == {STOP, CANCEL}


def test_a_wrapper_is_read_through_to_what_it_wraps_and_again_when_that_changes() -> None:
    """A wrapper naming `__wrapped__` (prove's timed methods, `cli/commands/timed.py`) is memoised too,
    with the wrapped function's code: a change there is read again."""
    cls = _make()
    inner = cls.complete

    def wrapper(self: object, *args: object) -> None:
        return inner(self, *args)

    wrapper.__wrapped__ = inner  # type: ignore[attr-defined]
    cls.complete = wrapper
    assert supports(cls()) == {STOP, CANCEL}
    assert supports(cls()) == {STOP, CANCEL}  # from the memo
    inner.__code__ = (lambda self, plan: None).__code__  # the wrapped function loses its second argument
    inner.__defaults__ = None
    assert supports(cls()) == {CANCEL}
