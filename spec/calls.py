"""How a call the contract accepts or refuses is judged, in every design:
add() for NEVER-FIT, cancel() for CANCEL, a complete() with a bad stop for TOKENS."""

from __future__ import annotations


def never_fit(verdict: str | None, raised: BaseException | None, may_refuse: bool = False) -> str | None:
    """NEVER-FIT, judged on each add() call.

    `verdict` is the spec's reason to refuse the request (None: it must be accepted); `raised` is
    what add() raised (None: it returned). `may_refuse`: the rid is an ended request's, which the
    scheduler may accept or refuse."""
    if verdict is not None and raised is None:
        return f"add() accepted a request it must refuse: {verdict}"
    if verdict is None and raised is not None and not may_refuse:
        return f"add() refused a valid request: {type(raised).__name__}: {raised}"
    if raised is not None and not isinstance(raised, ValueError | TypeError):
        return f"add() refused with {type(raised).__name__}, not ValueError or TypeError: {raised}"
    if raised is not None and not str(raised):
        return f"add() refused with an empty {type(raised).__name__}: the error must say what was wrong"
    return None


def call_judged(call: str, verdict: str | None, raised: BaseException | None) -> str | None:
    """A call the contract either accepts (`verdict` None) or refuses (`verdict`: why), judged on
    what it did (`raised`: None if it returned). A refusal must be an exception that says what was
    wrong. Judges cancel() for CANCEL and a complete() with a bad stop for TOKENS."""
    if verdict is not None and raised is None:
        return f"{call} was accepted but must be refused: {verdict}"
    if verdict is None and raised is not None:
        return f"{call} was refused but must be accepted: {type(raised).__name__}: {raised}"
    if raised is not None and not str(raised):
        return f"{call} was refused with an empty {type(raised).__name__}: the error must say what was wrong"
    return None
