"""Which call into the scheduler raised: a thin stand-in in front of a paged or prefix scheduler (in
process or hosted) that forwards every call and attribute read, and keeps the exception that came out
of one, with the call's name. `trace` tells by it the scheduler's crash (the CRASH verdict line, exit 3,
as the reservation design's step recorder does) from an error of its own (an internal error)."""

from __future__ import annotations

from typing import Any

from stallfree.spec.capability import supports

CALLS = ("add", "schedule", "complete", "cancel", "set_budget")


class Witness:
    """Forwards to `inner`; `raised` is (the call, what it raised) for the last call that raised."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.raised: tuple[str, BaseException] | None = None
        self.stallfree_capabilities = supports(inner)  # the monitor asks the stand-in: the inner's
        self.stallfree_name = getattr(inner, "stallfree_name", None) or type(inner).__name__

    def __getattr__(self, name: str) -> Any:
        try:
            value = getattr(self._inner, name)
        except AttributeError:
            raise
        except Exception as error:  # a property that raised (a hosted one: its host's answer)
            self.raised = (f"reading {name}", error)
            raise
        if name in CALLS and callable(value):
            return self._forward(f"{name}()", value)
        return value

    def _forward(self, label: str, method: Any) -> Any:
        def call(*args: Any) -> Any:
            try:
                return method(*args)
            except Exception as error:
                self.raised = (label, error)
                raise

        return call


class Witnessed:
    """A factory whose schedulers stand behind a `Witness`; `last` is the latest one made."""

    def __init__(self, factory: Any) -> None:
        self._factory = factory
        self.last: Witness | None = None
        if hasattr(factory, "design"):
            self.design = factory.design

    def __call__(self, **config: int) -> Witness:
        self.last = Witness(self._factory(**config))
        return self.last

    def crash(self, error: BaseException) -> str | None:
        """How the scheduler's crash reads (`schedule() raised KeyError: 'lost track'`), if `error` is
        what the last call into it raised; None if it came from elsewhere."""
        raised = self.last.raised if self.last is not None else None
        if raised is None or raised[1] is not error:
            return None
        return f"{raised[0]} raised {type(error).__name__}: {error}"
