"""`symbolic.check`: only Z3's own Ctrl-C answer stops a proof as KeyboardInterrupt; a search that
Z3 cancelled (as it does when a long timeout fires inside a tactic) or that timed out is an unknown
answer, which the rows print as unknown, never as holds."""

from __future__ import annotations

import pytest

z3 = pytest.importorskip("z3")

from stallfree.proofs.smt.symbolic import check  # noqa: E402


class Answers:
    """A solver that answers unknown for `reason`, as Z3 does after a Ctrl-C or a timeout."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def check(self) -> object:
        return z3.unknown

    def reason_unknown(self) -> str:
        return self.reason


@pytest.mark.parametrize("reason", ["canceled", "timeout"])
def test_a_cancelled_or_timed_out_search_is_unknown(reason: str) -> None:
    assert check(Answers(reason)) == z3.unknown  # type: ignore[arg-type]


def test_a_ctrl_c_is_raised_as_keyboard_interrupt() -> None:
    """The negative control: Z3's Ctrl-C answer is not read as a timeout."""
    with pytest.raises(KeyboardInterrupt):
        check(Answers("interrupted from keyboard"))  # type: ignore[arg-type]

