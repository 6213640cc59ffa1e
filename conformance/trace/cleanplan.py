"""What the v1 shortcut's judgement of one step found (`cleanstep_v1`, `cleanstep_admit`), for the move."""

from __future__ import annotations

from stallfree.spec.reservation.shadow import Track


class Clean:
    """What the judgement of one step found, for the move: its admissions and chunks (track, start + n) in
    plan order, the chunks that end their prompt, the requests that emit their last token, and the
    engine's new reservations."""

    __slots__ = ("admitted", "completing", "ending", "fresh", "got", "prefill_tokens", "prefills", "reserved", "tokens")

    def __init__(self, got: dict[int, int] | None, tokens: int) -> None:
        self.got = got  # rid -> n (None where the plan was judged whole: `cleanstep_admit`)
        self.tokens = tokens  # the plan's tokens
        self.prefill_tokens = 0  # of which in chunks and admissions
        self.admitted: list[Track] = []
        self.prefills: list[tuple[Track, int]] = []
        self.completing: list[Track] = []
        self.ending: list[Track] = []
        self.fresh: list[int] = []  # rids the engine admits in this step (first planned)
        self.reserved = 0  # the admissions' reservations, by the shadow's account
